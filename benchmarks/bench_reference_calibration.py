"""Held-out check on the reference data: calibrated, human-only and judge-only scores,
each scored against clinicians' ratings the estimator did not see.

    .venv/bin/python benchmarks/bench_reference_calibration.py RUN_DIR                  # 200 persona splits, ~3 min
    .venv/bin/python benchmarks/bench_reference_calibration.py RUN_DIR --by conversation
    .venv/bin/python benchmarks/bench_reference_calibration.py RUN_DIR --splits 5 --resamples 100   # a quick look
    .venv/bin/python benchmarks/bench_reference_calibration.py RUN_DIR --card   # the card's two columns

RUN_DIR is the reference's 120 human-validation transcripts judged by vera's offline
judge, with the clinicians' ratings imported (benchmarks/README.md, "Calibration on the
reference data", gives the two commands). The clinicians rated 90 of the 120
conversations (three each); those 90 are the population. Each seeded split puts the
conversations of a random half of the personas (`--by persona`, the default: the
persona is what the card's intervals resample, so a held-out persona is new to the
estimator in the way a real run's unrated personas are) or a random half of the
conversations (`--by conversation`) in the *labelled* set; the rest is *held out*. The
estimators see the judge's ratings of all 90 and the clinicians' ratings of the
labelled set only:

- **calibrated**: PPI++ as the card computes it (`vera.stats.ppi`, the judge on all 90);
- **human-only**: the labelled clinicians' ratings alone (the same bootstrap);
- **judge-only**: the judge's mean over all 90 (the same bootstrap, no floor).

The target is the clinicians' overall score over the held-out conversations, their
raters combined by `--raters` (the card's default unless given). The held-out score is
itself a sample (a few personas' conversations), so its own sampling error is in every
estimator's error, and an interval for the population's score covers it less often than
its confidence level even when the interval is right: the report prints the held-out
target's own interval width to read the figures against.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

from vera.records import DEFAULT_RESAMPLES, OVERALL, RaterRule
from vera.report.calibration._calibration import human_labels
from vera.report.card._calibrated import calibrated_by_chatbot
from vera.stats import summarise
from vera.stats.humans import DEFAULT_RATER_RULE, RATER_RULES
from vera.stats.ppi import Estimator, calibrated_summary, calibration_units
from vera.store import read_human_ratings

ESTIMATORS: tuple[Estimator, ...] = ("ppi", "human", "judge")
NAMES = {"ppi": "calibrated", "human": "human-only", "judge": "judge-only"}
SplitBy = Literal["persona", "conversation"]


def reference_data(run_dir: Path, raters: RaterRule) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ratings frame of the run's human-rated conversations, and the humans' one
    rating per (conversation_id, dimension) of them, raters combined by `raters`."""
    ratings = pl.read_parquet(run_dir / "ratings.parquet")
    labels = human_labels(read_human_ratings(run_dir), raters)
    rated = labels.get_column("conversation_id").unique().to_list()
    ratings = ratings.filter(pl.col("conversation_id").is_in(rated))
    labels = labels.filter(
        pl.col("conversation_id").is_in(ratings.get_column("conversation_id").unique().to_list())
    )
    return ratings, labels


def overall(
    units: pl.DataFrame, estimator: Estimator, resamples: int, seed: int
) -> tuple[float, float, float]:
    """The overall score and its interval by `estimator`, as `vera.stats.ppi` computes them."""
    s = calibrated_summary(units, (), estimator=estimator, n_resamples=resamples, seed=seed)
    row = s.filter(pl.col("dimension") == OVERALL).row(0, named=True)
    return float(row["score"]), float(row["score_lo"]), float(row["score_hi"])


def units_for(ratings: pl.DataFrame, labels: pl.DataFrame, labelled: list[str]) -> pl.DataFrame:
    """The calibration units with the humans' ratings of the `labelled` conversations
    only (stratum weights recomputed, as the card would with those ratings)."""
    return calibration_units(ratings, labels.filter(pl.col("conversation_id").is_in(labelled)), by=())


def held_out_check(
    run_dir: Path,
    n_splits: int,
    *,
    by: SplitBy = "persona",
    share: float = 0.5,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    raters: RaterRule = DEFAULT_RATER_RULE,
) -> dict[str, Any]:
    """Every estimator against the held-out clinicians' score over `n_splits` seeded splits."""
    ratings, labels = reference_data(run_dir, raters)
    pairs = ratings.select("conversation_id", "persona").unique().sort("conversation_id")
    conversations = pairs.get_column("conversation_id").to_list()
    column = "persona" if by == "persona" else "conversation_id"
    groups = sorted(pairs.get_column(column).unique().to_list())
    k = max(1, min(len(groups) - 1, round(len(groups) * share)))
    all_labelled = units_for(ratings, labels, conversations)
    population = overall(all_labelled, "human", resamples, seed)[0]
    judge = overall(all_labelled, "judge", resamples, seed)
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for s in range(n_splits):
        chosen = set(rng.choice(np.array(groups), size=k, replace=False).tolist())
        lab = pairs.filter(pl.col(column).is_in(list(chosen))).get_column("conversation_id").to_list()
        held = [c for c in conversations if c not in set(lab)]
        held_ratings = ratings.filter(pl.col("conversation_id").is_in(held))
        target, t_lo, t_hi = overall(units_for(held_ratings, labels, held), "human", resamples, s)
        units = units_for(ratings, labels, lab)
        row: dict[str, Any] = {
            "split": s,
            "labelled": len(lab),
            "target": target,
            "target_width": t_hi - t_lo,
        }
        for est in ESTIMATORS:
            row[est] = judge if est == "judge" else overall(units, est, resamples, s)
        rows.append(row)
    target = np.array([r["target"] for r in rows])
    err = {e: np.abs(np.array([r[e][0] for r in rows]) - target) for e in ESTIMATORS}
    best = np.min(np.vstack([err[e] for e in ESTIMATORS]), axis=0)
    out: dict[str, Any] = {
        "by": by,
        "raters": raters,
        "conversations": len(conversations),
        "groups": len(groups),
        "labelled_groups_per_split": k,
        "splits": n_splits,
        "resamples": resamples,
        "clinicians_score_all": population,
        "judge_only_all": list(judge),
        "held_out_score_mean": float(target.mean()),
        "held_out_score_range": [float(target.min()), float(target.max())],
        "held_out_own_width_mean": float(np.mean([r["target_width"] for r in rows])),
        "estimators": {},
    }
    for e in ESTIMATORS:
        pts = np.array([r[e][0] for r in rows])
        lo, hi = np.array([r[e][1] for r in rows]), np.array([r[e][2] for r in rows])
        out["estimators"][NAMES[e]] = {
            "score_mean": float(pts.mean()),
            "score_range": [float(pts.min()), float(pts.max())],
            "mae": float(err[e].mean()),
            "median_error": float(np.median(err[e])),
            # ties count for each estimator that shares the smallest error
            "closest_share": float(np.mean(err[e] <= best + 1e-9)),
            "coverage": float(np.mean((lo <= target) & (target <= hi))),
            "width_mean": float(np.mean(hi - lo)),
        }
    cal, hum = err["ppi"], err["human"]
    out["calibrated_beats_human_share"] = float(np.mean(cal < hum))
    return out


def card_columns(run_dir: Path, raters: RaterRule, resamples: int) -> list[dict[str, Any]]:
    """Per chatbot, the overall score of the card's judge-only and calibrated columns
    with their intervals, as `vera score` computes them (bootstrap seed 0)."""
    frame = pl.read_parquet(run_dir / "ratings.parquet")
    cal = calibrated_by_chatbot(
        frame, read_human_ratings(run_dir), resamples=resamples, confidence=0.95, seed=0, raters=raters
    )
    judge = summarise(frame, ["chatbot"], n_resamples=resamples, seed=0).filter(
        pl.col("dimension") == OVERALL
    )
    rows = []
    for r in judge.sort("chatbot").iter_rows(named=True):
        c = cal.get(r["chatbot"])
        rows.append(
            {
                "chatbot": r["chatbot"],
                "judge_only": [r["score"], r["score_lo"], r["score_hi"]],
                "calibrated": None
                if c is None
                else [c.overall.score, c.overall.score_ci.lo, c.overall.score_ci.hi],
            }
        )
    return rows


def render_card(rows: list[dict[str, Any]]) -> str:
    def cell(v: list[float | None] | None) -> str:
        if v is None or None in v:
            return "no human ratings"
        score, lo, hi = (float(x) for x in v)  # type: ignore[arg-type]
        return f"{score:.1f} [{lo:.1f}, {hi:.1f}] ({hi - lo:.1f} wide)"

    lines = ["| chatbot | judge-only | calibrated |", "|---|---|---|"]
    lines += [f"| {r['chatbot']} | {cell(r['judge_only'])} | {cell(r['calibrated'])} |" for r in rows]
    return "\n".join(lines)


def render(r: dict[str, Any]) -> str:
    lines = [
        f"{r['conversations']} clinician-rated conversations, {r['groups']} {r['by']}s; "
        f"{r['labelled_groups_per_split']} {r['by']}s labelled per split, the rest held out; "
        f"{r['splits']} splits, {r['resamples']} resamples, raters combined: {r['raters']}",
        f"clinicians' overall score over all {r['conversations']}: {r['clinicians_score_all']:.1f}; "
        f"judge-only over all {r['conversations']}: {r['judge_only_all'][0]:.1f} "
        f"[{r['judge_only_all'][1]:.1f}, {r['judge_only_all'][2]:.1f}]",
        f"held-out clinicians' score (the target): mean {r['held_out_score_mean']:.1f}, range "
        f"{r['held_out_score_range'][0]:.1f} to {r['held_out_score_range'][1]:.1f}; its own interval "
        f"{r['held_out_own_width_mean']:.1f} points wide on average",
        "",
        "| estimator | mean score (range) | mean abs. error | median error | closest | covers held-out | mean width |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, e in r["estimators"].items():
        lines.append(
            f"| {name} | {e['score_mean']:.1f} ({e['score_range'][0]:.1f}–{e['score_range'][1]:.1f}) "
            f"| {e['mae']:.2f} | {e['median_error']:.2f} | {e['closest_share']:.0%} | {e['coverage']:.0%} "
            f"| {e['width_mean']:.1f} |"
        )
    lines.append("")
    lines.append(
        f"calibrated closer than human-only in {r['calibrated_beats_human_share']:.0%} of splits "
        "(closest: ties count for each)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--splits", type=int, default=200, help="seeded random splits (default 200)")
    parser.add_argument(
        "--by", choices=("persona", "conversation"), default="persona", help="what a split divides"
    )
    parser.add_argument(
        "--labelled-share", type=float, default=0.5, help="share of personas/conversations labelled"
    )
    parser.add_argument(
        "--resamples", type=int, default=DEFAULT_RESAMPLES, help="bootstrap resamples (the card's default)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--raters", choices=RATER_RULES, default=DEFAULT_RATER_RULE)
    parser.add_argument(
        "--card",
        action="store_true",
        help="print the card's judge-only and calibrated overall columns instead",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if not (args.run_dir / "ratings.parquet").exists():
        parser.error(f"{args.run_dir} is not a judged run directory (no ratings.parquet)")
    start = time.perf_counter()
    if args.card:
        rows = card_columns(args.run_dir, args.raters, args.resamples)
        print(render_card(rows))
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2) + "\n")
        return 0
    r = held_out_check(
        args.run_dir,
        args.splits,
        by=args.by,
        share=args.labelled_share,
        resamples=args.resamples,
        seed=args.seed,
        raters=args.raters,
    )
    print(render(r))
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
