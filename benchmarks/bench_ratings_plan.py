"""Simulation: does `vera ratings plan` predict the width that rating n conversations gives?

    .venv/bin/python benchmarks/bench_ratings_plan.py              # 20 runs per judge
    .venv/bin/python benchmarks/bench_ratings_plan.py --reps 5

Each run is a synthetic run of bench_calibration.py (100 personas × 10 conversations,
five dimensions, a lenient or a noisy judge). A first round of 30 random conversations
is rated; from it the plan predicts the calibrated overall interval's width at 50, 100,
200 and 400 rated (`vera.stats.ppi.planned_width`, with the persona floor F of
`persona_floor`: the judge's mean's width under the same bootstrap, or the humans' own
scaled to all 1,000 where wider). Then that many are actually rated (the first
round plus more, at random) and the width is measured. Printed: the mean predicted and
achieved widths and their ratio, per judge and n; the target is within 15 %.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import polars as pl

from benchmarks.bench_calibration import synthetic_units
from benchmarks.synthetic_labels import JUDGES
from vera.stats.ppi import calibrated_summary, persona_floor, planned_width

FIRST_ROUND = 30
TARGETS = (50, 100, 200, 400)


def width(units: pl.DataFrame, resamples: int, seed: int, estimator: str = "ppi") -> float:
    o = calibrated_summary(units, estimator=estimator, n_resamples=resamples, seed=seed)  # type: ignore[arg-type]
    row = o.filter(pl.col("dimension") == "Overall").row(0, named=True)
    return float(row["score_hi"] - row["score_lo"])


def relabel(units: pl.DataFrame, truth: pl.DataFrame, chosen: list[str]) -> pl.DataFrame:
    """`units` with the true ratings as human labels on the `chosen` conversations only."""
    ys = ("y_bp", "y_hph", "y_nr")
    return (
        units.drop(ys)
        .join(truth, on=["conversation_id", "dimension"])
        .with_columns(
            pl.when(pl.col("conversation_id").is_in(chosen)).then(pl.col(y)).otherwise(None).alias(y)
            for y in ys
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20, help="synthetic runs per judge (default 20)")
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print(f"{args.reps} runs per judge; first round {FIRST_ROUND} rated; 1000 conversations, 100 personas")
    print("| judge | rated | predicted width | achieved width | predicted / achieved |")
    print("|---|---|---|---|---|")
    for name, judge in JUDGES.items():
        rng = np.random.default_rng([args.seed, len(name)])
        predicted: dict[int, list[float]] = {n: [] for n in TARGETS}
        achieved: dict[int, list[float]] = {n: [] for n in TARGETS}
        for r in range(args.reps):
            # Every conversation labelled: the truth, to hand out as ratings.
            full = synthetic_units(rng, judge, 1.0)
            truth = full.select("conversation_id", "dimension", "y_bp", "y_hph", "y_nr")
            order = [
                str(c) for c in rng.permutation(full.get_column("conversation_id").unique().sort().to_list())
            ]
            first = relabel(full, truth, order[:FIRST_ROUND])
            w0 = width(first, args.resamples, r)
            floor = persona_floor(
                width(first, args.resamples, r, estimator="judge"),
                width(first, args.resamples, r, estimator="human"),
                FIRST_ROUND,
                1000,
            )
            for n in TARGETS:
                predicted[n].append(planned_width(w0, FIRST_ROUND, floor, n, 1000))
                achieved[n].append(width(relabel(full, truth, order[:n]), args.resamples, r))
        for n in TARGETS:
            p, a = float(np.mean(predicted[n])), float(np.mean(achieved[n]))
            print(f"| {name} | {n} | {p:.1f} | {a:.1f} | {p / a:.2f} |")
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
