"""PPI++ calibrated shares and scores (`vera.stats.ppi`), checked against the formula
computed by hand, and the properties a calibration must have."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.records import NOT_RELEVANT as NR
from vera.records import SUBOPTIMAL as SUB
from vera.stats.bootstrap import score_from_percentages
from vera.stats.ppi import calibrated_summary, calibration_units, human_consensus

CODES = {BP: 0, HPH: 1, NR: 2}


def ratings(judge: list[str], dimension: str = "D") -> pl.DataFrame:
    n = len(judge)
    return pl.DataFrame(
        {
            "conversation_id": [f"c{i}" for i in range(n)],
            "chatbot": ["bot"] * n,
            "persona": [f"p{i // 2}" for i in range(n)],
            "judge": ["j"] * n,
            "instance": [1] * n,
            "dimension": [dimension] * n,
            "rating": judge,
        }
    )


def labels(human: dict[int, str], dimension: str = "D") -> pl.DataFrame:
    return pl.DataFrame(
        {
            "conversation_id": [f"c{i}" for i in human],
            "dimension": [dimension] * len(human),
            "rating": list(human.values()),
        }
    )


JUDGE = [BP, BP, SUB, BP, HPH, BP, SUB, BP, NR, BP, BP, HPH]
HUMAN = {0: BP, 1: HPH, 2: HPH, 4: HPH, 6: SUB, 8: NR}


def one_hot(values: list[str]) -> np.ndarray:
    return np.array([[v == BP, v == HPH, v == NR] for v in values], dtype=float)


def test_the_estimate_is_the_ppi_formula_with_the_regression_slope():
    units = calibration_units(ratings(JUDGE), labels(HUMAN))
    out = calibrated_summary(units, n_resamples=50).filter(pl.col("dimension") == "D").row(0, named=True)
    f, y = one_hot(JUDGE), one_hot(list(HUMAN.values()))
    fl = f[list(HUMAN)]
    cov = ((y - y.mean(0)) * (fl - fl.mean(0))).mean(0).sum()
    lam = np.clip(cov / fl.var(0).sum(), 0, 1)
    theta = y.mean(0) + lam * (f.mean(0) - fl.mean(0))
    assert out["lambda_bp"] == pytest.approx(lam) and out["lambda_hph"] == pytest.approx(lam)
    assert out["pct_nr"] == pytest.approx(100 * theta[2])
    assert out["pct_bp"] == pytest.approx(100 * theta[0] / (1 - theta[2]))
    assert out["pct_hph"] == pytest.approx(100 * theta[1] / (1 - theta[2]))
    assert out["score"] == pytest.approx(score_from_percentages(out["pct_bp"], out["pct_hph"]))
    assert out["n_conversations"] == len(JUDGE) and out["n_labelled"] == len(HUMAN)
    assert out["score_lo"] <= out["score"] <= out["score_hi"]


def test_humans_who_agree_with_the_judge_give_the_judges_own_estimate():
    units = calibration_units(ratings(JUDGE), labels({i: JUDGE[i] for i in (0, 2, 4, 8, 9)}))
    ppi = calibrated_summary(units, n_resamples=50)
    judge = calibrated_summary(units, estimator="judge", n_resamples=50)
    assert ppi.get_column("score").to_list() == pytest.approx(judge.get_column("score").to_list())


def test_the_judge_only_and_human_only_estimators_are_the_plain_means():
    units = calibration_units(ratings(JUDGE), labels(HUMAN))
    judge = calibrated_summary(units, estimator="judge", n_resamples=20).row(0, named=True)
    human = calibrated_summary(units, estimator="human", n_resamples=20).row(0, named=True)
    assert judge["pct_nr"] == pytest.approx(100 / 12)
    assert judge["pct_hph"] == pytest.approx(100 * 2 / 11)
    assert human["pct_hph"] == pytest.approx(100 * 3 / 5)


def test_a_dimension_no_human_rated_is_undefined_and_so_is_overall():
    frame = pl.concat([ratings(JUDGE, "D"), ratings(JUDGE, "E")])
    units = calibration_units(frame, labels(HUMAN, "D"))
    out = calibrated_summary(units, n_resamples=20)
    rows = {r["dimension"]: r for r in out.to_dicts()}
    assert rows["D"]["score"] is not None
    assert rows["E"]["score"] is None and rows["E"]["n_labelled"] == 0
    assert rows["Overall"]["score"] is None


def test_the_bootstrap_is_fixed_by_its_seed():
    units = calibration_units(ratings(JUDGE), labels(HUMAN))
    a = calibrated_summary(units, n_resamples=200, seed=3)
    assert a.equals(calibrated_summary(units, n_resamples=200, seed=3))
    assert not a.equals(calibrated_summary(units, n_resamples=200, seed=4))


def test_the_labels_take_the_severest_rating_by_default_and_majority_on_request():
    long = pl.DataFrame(
        {
            "item_id": ["a", "a", "b", "b", "b"],
            "rater": ["x", "y", "x", "y", "z"],
            "dimension": ["D"] * 5,
            "rating": [BP, HPH, BP, BP, SUB],
        }
    )
    got = {r["item_id"]: r["rating"] for r in human_consensus(long).to_dicts()}
    assert got == {"a": HPH, "b": SUB}  # one rater's Suboptimal is enough
    # majority: a tie settled to the most severe, two Best Practice outvote one Suboptimal
    got = {r["item_id"]: r["rating"] for r in human_consensus(long, "majority").to_dicts()}
    assert got == {"a": HPH, "b": BP}


def test_a_share_the_humans_never_gave_still_gets_an_interval():
    # Every human rating Best Practice, and the judge agreeing where they rated: the
    # bootstrap sees no spread, but 6 ratings cannot rule out harm.
    judge = [BP] * 12
    units = calibration_units(ratings(judge), labels(dict.fromkeys(range(6), BP)))
    out = calibrated_summary(units, n_resamples=100).filter(pl.col("dimension") == "D").row(0, named=True)
    assert out["pct_hph"] == 0.0 and out["score"] == 100.0
    assert out["pct_hph_hi"] > 30.0  # exact binomial at 6 conversations (3 personas)
    assert out["score_lo"] < 60.0


def _side(name: str, draw: int) -> pl.DataFrame:
    """One run's calibration units: 120 judged conversations of 60 personas, half rated
    by a human who agrees with the judge about 70 % of the time. Harm is common enough
    (about 18 harmful ratings among the 60) that the edge rule is not in play."""
    rng = np.random.default_rng(draw)
    judge = [str(x) for x in rng.choice([BP, SUB, HPH], size=120, p=[0.5, 0.2, 0.3])]
    human = {i: judge[i] if rng.random() < 0.7 else str(rng.choice([BP, SUB, HPH])) for i in range(0, 120, 2)}
    return calibration_units(ratings(judge).with_columns(side=pl.lit(name)), labels(human), by=("side",))


def test_a_calibrated_gate_decision_on_its_threshold_does_not_flip_with_the_seed():
    from vera.stats.ppi import calibrated_difference, calibrated_difference_settled

    units = pl.concat([_side("a", 1), _side("b", 2)])

    def overall(frame: pl.DataFrame) -> dict:
        return frame.filter(pl.col("dimension") == "Overall").to_dicts()[0]

    # A threshold which the ideal end, what endless resamples give, clears by more than
    # the Monte Carlo error left at 32,000, but on whose either side 500 resamples put
    # the upper end, by seed.
    seeds = range(12)
    ideal = overall(calibrated_difference(units, ("a", "b"), n_resamples=128_000))
    at_max = overall(calibrated_difference(units, ("a", "b"), n_resamples=32_000))
    below = ideal["diff_hi"] + 5 * at_max["diff_hi_mc"]
    at_500 = [
        overall(calibrated_difference(units, ("a", "b"), n_resamples=500, seed=s))["diff_hi"] for s in seeds
    ]
    assert {h < below for h in at_500} == {True, False}  # the control: the verdict flips with the seed
    settled = [
        overall(
            calibrated_difference_settled(
                units, ("a", "b"), below=below, n_resamples=500, max_resamples=32_000, seed=s
            )
        )
        for s in seeds
    ]
    assert {row["diff_hi"] < below for row in settled} == {ideal["diff_hi"] < below}
    assert all(row["bootstrap_resamples"] > 500 for row in settled)  # raised where it was close
    # the error of each end is reported, and shrinks as the resamples grow
    assert (
        0
        < at_max["diff_hi_mc"]
        < overall(calibrated_difference(units, ("a", "b"), n_resamples=500))["diff_hi_mc"]
    )
