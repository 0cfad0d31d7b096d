"""Calibration on the reference data: does a random half of the clinicians' ratings
bring the offline judge's score closer to the clinicians' own score?

    .venv/bin/python benchmarks/bench_reference_calibration.py RUN_DIR [--splits 200]

RUN_DIR is the reference's 120 human-validation transcripts judged by vera's offline
judge, with the clinicians' ratings imported (benchmarks/README.md, "Calibration on the
reference data", gives the two commands). The reference's clinicians rated 90 of the 120
conversations (three clinicians each); those 90 are the population here, and the
clinicians' own overall score over them (their consensus, ties to the most severe
rating) is the target. In each random split the humans' ratings of half of the 90 are
the labelled set and the judge's ratings of all 90 the unlabelled set; the calibrated
overall score (PPI++) and the judge-only score are compared with the target.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from vera.records import OVERALL
from vera.report._calibration import human_labels
from vera.stats.ppi import calibrated_summary, calibration_units
from vera.store import read_human_ratings


def reference_units(run_dir: Path) -> pl.DataFrame:
    """The calibration units of the run's human-rated conversations, all labelled."""
    ratings = pl.read_parquet(run_dir / "ratings.parquet")
    labels = human_labels(read_human_ratings(run_dir))
    units = calibration_units(ratings, labels, by=())
    rated = units.filter(pl.col("y_bp").is_not_null()).get_column("conversation_id").unique()
    return units.filter(pl.col("conversation_id").is_in(rated.to_list()))


def overall(units: pl.DataFrame, estimator: str, resamples: int, seed: int) -> dict[str, Any]:
    s = calibrated_summary(units, (), estimator=estimator, n_resamples=resamples, seed=seed)  # type: ignore[arg-type]
    return s.filter(pl.col("dimension") == OVERALL).row(0, named=True)


def splits(run_dir: Path, n_splits: int, *, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    units = reference_units(run_dir)
    ids = np.array(sorted(units.get_column("conversation_id").unique().to_list()))
    target = overall(units, "human", resamples, seed)["score"]
    judge = overall(units, "judge", resamples, seed)
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_splits):
        half = set(rng.choice(ids, size=len(ids) // 2, replace=False).tolist())
        masked = units.with_columns(
            pl.when(pl.col("conversation_id").is_in(list(half))).then(pl.col(c)).otherwise(None).alias(c)
            for c in ("y_bp", "y_hph", "y_nr")
        )
        cal = overall(masked, "ppi", resamples, s)
        rows.append((cal["score"], cal["score_lo"], cal["score_hi"]))
    cal_scores = np.array([r[0] for r in rows])
    lo, hi = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
    cal_err = np.abs(cal_scores - target)
    judge_err = abs(judge["score"] - target)
    return {
        "conversations": len(ids),
        "labelled_per_split": len(ids) // 2,
        "splits": n_splits,
        "clinicians_score": target,
        "judge_only_score": judge["score"],
        "judge_only_ci": [judge["score_lo"], judge["score_hi"]],
        "judge_only_distance": judge_err,
        "calibrated_score_mean": float(cal_scores.mean()),
        "calibrated_score_range": [float(cal_scores.min()), float(cal_scores.max())],
        "calibrated_ci_mean": [float(lo.mean()), float(hi.mean())],
        "calibrated_distance_mean": float(cal_err.mean()),
        "calibrated_distance_median": float(np.median(cal_err)),
        "calibrated_closer_share": float((cal_err < judge_err).mean()),
        "calibrated_ci_covers_clinicians": float(((lo <= target) & (target <= hi)).mean()),
        "judge_only_ci_covers_clinicians": bool(judge["score_lo"] <= target <= judge["score_hi"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    r = splits(args.run_dir, args.splits, resamples=args.resamples)
    print(
        f"{r['conversations']} clinician-rated conversations, {r['labelled_per_split']} labelled per split, {r['splits']} splits"
    )
    print(f"clinicians' own overall score: {r['clinicians_score']:.1f}")
    print(
        f"judge-only:  {r['judge_only_score']:.1f} [{r['judge_only_ci'][0]:.1f}, {r['judge_only_ci'][1]:.1f}]"
        f"  distance {r['judge_only_distance']:.1f}"
    )
    print(
        f"calibrated:  mean {r['calibrated_score_mean']:.1f} (mean interval [{r['calibrated_ci_mean'][0]:.1f}, "
        f"{r['calibrated_ci_mean'][1]:.1f}])  mean distance {r['calibrated_distance_mean']:.1f}, "
        f"median {r['calibrated_distance_median']:.1f}"
    )
    print(
        f"calibrated closer than judge-only in {r['calibrated_closer_share']:.0%} of splits; its interval "
        f"covers the clinicians' score in {r['calibrated_ci_covers_clinicians']:.0%}"
    )
    if args.json:
        args.json.write_text(json.dumps(r, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
