"""A stratified human-rated sample rated out of proportion (`vera review`'s strata,
chatbot × persona group, with a rater who stopped early or an allocation that rounds)
is weighted in the calibrated estimator (`vera.stats.ppi.stratum_weights`), so a
stratum rated more than its share does not pull the calibrated score towards it."""

from __future__ import annotations

import numpy as np
import polars as pl

from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.stats.bootstrap import score_from_percentages
from vera.stats.ppi import calibrated_summary, calibration_units

N = 400
SHARE_B = 0.2  # stratum "high" holds a fifth of the conversations...
HARM = {"low": 0.05, "high": 0.40}  # ...and far more of the harm


def _run(rng: np.random.Generator) -> tuple[pl.DataFrame, list[str], np.ndarray]:
    risk = np.where(np.arange(N) < N * SHARE_B, "high", "low")
    truth = rng.random(N) < np.vectorize(HARM.get)(risk)
    # A lenient, noisy judge: it sees 60 % of the harm and calls 5 % of the rest harmful.
    judged = np.where(truth, rng.random(N) < 0.6, rng.random(N) < 0.05)
    frame = pl.DataFrame(
        {
            "conversation_id": [f"c{i}" for i in range(N)],
            "chatbot": ["bot"] * N,
            "risk": risk.tolist(),
            "persona": [f"p{i // 2}" for i in range(N)],
            "judge": ["j"] * N,
            "instance": [1] * N,
            "dimension": ["D"] * N,
            "rating": [HPH if j else BP for j in judged],
        }
    )
    return frame, risk.tolist(), truth


def _labels(
    rng: np.random.Generator, risk: list[str], truth: np.ndarray, per: dict[str, int]
) -> pl.DataFrame:
    chosen = [
        i
        for stratum, k in per.items()
        for i in rng.choice([i for i, r in enumerate(risk) if r == stratum], size=k, replace=False)
    ]
    return pl.DataFrame(
        {
            "conversation_id": [f"c{i}" for i in chosen],
            "dimension": ["D"] * len(chosen),
            "rating": [HPH if truth[i] else BP for i in chosen],
        }
    )


def _score(frame: pl.DataFrame, labels: pl.DataFrame, strata: tuple[str, ...]) -> float:
    units = calibration_units(frame, labels, strata=strata)
    out = calibrated_summary(units, n_resamples=1).filter(pl.col("dimension") == "D")
    return float(out.get_column("score")[0])


def test_an_over_sampled_stratum_does_not_bias_the_calibrated_score():
    rng = np.random.default_rng(20261206)
    # 60 rated: in proportion "high" would get 12; it gets 48, four times its share.
    per = {"high": 48, "low": 12}
    weighted, unweighted = [], []
    for _ in range(150):
        frame, risk, truth = _run(rng)
        target = score_from_percentages(100.0 * (1 - truth.mean()), 100.0 * truth.mean())
        labels = _labels(rng, risk, truth, per)
        weighted.append(_score(frame, labels, ("chatbot", "risk")) - target)
        unweighted.append(_score(frame, labels, ()) - target)
    bias_w, bias_u = float(np.mean(weighted)), float(np.mean(unweighted))
    # Unweighted, the harmful stratum's excess of ratings drags the score down by about
    # 23 points; weighted, what is left (about 1.5 points here, from λ being tuned on
    # the same few labels of the under-rated stratum) is a small fraction of it.
    assert bias_u < -10.0
    assert abs(bias_w) < 0.1 * abs(bias_u)


def test_weights_are_exactly_one_when_rated_in_proportion():
    rng = np.random.default_rng(7)
    frame, risk, truth = _run(rng)
    labels = _labels(rng, risk, truth, {"high": 12, "low": 48})
    units = calibration_units(frame, labels)
    assert units.filter(pl.col("y_bp").is_not_null()).get_column("w").unique().to_list() == [1.0]
    assert _score(frame, labels, ("chatbot", "risk")) == _score(frame, labels, ())


def test_weights_follow_the_counts_actually_rated():
    rng = np.random.default_rng(8)
    frame, risk, truth = _run(rng)
    units = calibration_units(frame, _labels(rng, risk, truth, {"high": 30, "low": 10}))
    w = dict(units.filter(pl.col("y_bp").is_not_null()).group_by("risk").agg(pl.col("w").first()).iter_rows())
    # (N_h / N) / (n_h / n): high (80/400)/(30/40), low (320/400)/(10/40).
    assert w["high"] == (80 * 40) / (400 * 30)
    assert w["low"] == (320 * 40) / (400 * 10)
