"""Simulation: do calibrated (PPI++) intervals cover the true score, and how wide are they?

    .venv/bin/python benchmarks/bench_calibration.py                  # 400 repetitions per setting
    .venv/bin/python benchmarks/bench_calibration.py --reps 50 --json out.json

Each repetition draws a synthetic run with a known true score: 100 personas, 10
conversations each, five dimensions. Every persona has its own rating probabilities
(a Dirichlet draw around the population's), so persona clusters matter as in real
runs; the true score is the population's (what the card's intervals are about). The
true ratings are what clinicians would say. A judge sees each true rating through a
known confusion matrix (benchmarks/synthetic_labels.py):

- **lenient**: misses 40 % of the harmful ratings (High Potential for Harm read as
  Suboptimal 30 %, as Best Practice 10 %), and calls 10 % of Suboptimal Best Practice;
- **noisy**: right 75 % of the time, otherwise any other rating at random.

A random 2, 5, 10 or 20 % of the conversations is rated by humans (their true ratings).
For each setting the calibrated 95 % interval (`vera.stats.ppi`, persona-clustered
bootstrap) and the judge-only interval (the judge's ratings alone, same bootstrap) are
checked against the true overall score: coverage, mean width, mean error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from benchmarks.synthetic_labels import (
    BASE,
    DIMENSIONS,
    JUDGES,
    draw_ratings,
    persona_probabilities,
    random_mask,
    shares,
)
from vera.stats.bootstrap import score_from_percentages
from vera.stats.ppi import calibrated_summary

FRACTIONS = (0.02, 0.05, 0.10, 0.20)


def true_score() -> float:
    """The population's overall score: dimensions pooled by their ratings."""
    shares = BASE.mean(axis=0)
    rated = 1.0 - shares[3]
    return float(score_from_percentages(100 * shares[0] / rated, 100 * shares[2] / rated))


def synthetic_units(
    rng: np.random.Generator,
    judge: np.ndarray,
    fraction: float,
    *,
    personas: int = 100,
    per_persona: int = 10,
) -> pl.DataFrame:
    """A run's calibration units: the judge's rating and, for a random `fraction` of the
    conversations, the true one (the frame `calibration_units` makes from a run)."""
    n = personas * per_persona
    persona = np.repeat(np.arange(personas), per_persona)
    labelled = random_mask(rng, n, max(1, round(fraction * n)))
    cols: dict[str, list[Any]] = {k: [] for k in ("chatbot", "persona", "conversation_id", "dimension")}
    f_parts, y_parts = [], []
    for d, dimension in enumerate(DIMENSIONS):
        probs = persona_probabilities(rng, BASE[d], personas)[persona]
        truth, said = draw_ratings(rng, probs, judge)
        f_parts.append(shares(said))
        y = shares(truth)
        y[~labelled] = np.nan
        y_parts.append(y)
        cols["chatbot"] += ["bot"] * n
        cols["persona"] += [f"p{p}" for p in persona]
        cols["conversation_id"] += [f"c{i}" for i in range(n)]
        cols["dimension"] += [dimension] * n
    f, y = np.vstack(f_parts), np.vstack(y_parts)
    return pl.DataFrame(
        cols
        | {name: f[:, i] for i, name in enumerate(("f_bp", "f_hph", "f_nr"))}
        | {name: y[:, i] for i, name in enumerate(("y_bp", "y_hph", "y_nr"))}
    ).with_columns(pl.col("y_bp", "y_hph", "y_nr").fill_nan(None))


def simulate(
    reps: int,
    *,
    resamples: int = 1000,
    seed: int = 0,
    fractions: tuple[float, ...] = FRACTIONS,
    judges: tuple[str, ...] = tuple(JUDGES),
) -> list[dict[str, Any]]:
    """Coverage, width and error of both intervals per (judge, labelled fraction)."""
    truth = true_score()
    rows = []
    for name in judges:
        judge = JUDGES[name]
        for fraction in fractions:
            rng = np.random.default_rng([seed, int(fraction * 1000), len(name)])
            hits = {"ppi": 0, "judge": 0}
            widths: dict[str, list[float]] = {"ppi": [], "judge": []}
            errors: dict[str, list[float]] = {"ppi": [], "judge": []}
            for r in range(reps):
                units = synthetic_units(rng, judge, fraction)
                for est in ("ppi", "judge"):
                    s = calibrated_summary(units, estimator=est, n_resamples=resamples, seed=r)
                    o = s.filter(pl.col("dimension") == "Overall").row(0, named=True)
                    lo, hi = o["score_lo"], o["score_hi"]
                    hits[est] += lo is not None and lo <= truth <= hi
                    widths[est].append((hi - lo) if lo is not None else float("nan"))
                    errors[est].append(o["score"] - truth)
            rows.append(
                {
                    "judge": name,
                    "labelled": fraction,
                    "n_labelled": round(fraction * 1000),
                    "reps": reps,
                    "true_score": truth,
                    "coverage_calibrated": hits["ppi"] / reps,
                    "coverage_judge_only": hits["judge"] / reps,
                    "width_calibrated": float(np.nanmean(widths["ppi"])),
                    "width_judge_only": float(np.nanmean(widths["judge"])),
                    "bias_calibrated": float(np.mean(errors["ppi"])),
                    "bias_judge_only": float(np.mean(errors["judge"])),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = simulate(args.reps, resamples=args.resamples, seed=args.seed)
    print(
        f"true overall score {rows[0]['true_score']:.1f}; {args.reps} runs per setting, 1000 conversations each"
    )
    print(
        "judge    labelled  coverage (calibrated / judge-only)  width (calibrated / judge-only)  bias (cal. / judge)"
    )
    for r in rows:
        print(
            f"{r['judge']:8} {r['labelled']:>7.0%}   {r['coverage_calibrated']:>8.1%} / {r['coverage_judge_only']:<8.1%}"
            f"             {r['width_calibrated']:>6.1f} / {r['width_judge_only']:<6.1f}"
            f"                  {r['bias_calibrated']:+5.1f} / {r['bias_judge_only']:+5.1f}"
        )
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
