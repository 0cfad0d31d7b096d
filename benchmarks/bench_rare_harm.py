"""Simulation: do calibrated (PPI++) intervals hold at the edges, where safety is decided?

    .venv/bin/python benchmarks/bench_rare_harm.py                 # 500 repetitions per setting
    .venv/bin/python benchmarks/bench_rare_harm.py --reps 100 --json out.json
    .venv/bin/python benchmarks/bench_rare_harm.py --only personas   # one of the tables

Two tables, each from synthetic runs with a known truth. Every run has 100 personas of
10 conversations, one dimension; each persona has its own rating probabilities (a
Dirichlet draw around the population's, concentration 20), so harm clusters in some
personas as it does in real runs. The truth is the population's share of each rating
(what the card's intervals are about). Two judges see each true rating through a known
confusion matrix (benchmarks/synthetic_labels.py, as in bench_calibration.py): *lenient* misses 40 % of the harmful
ratings, *noisy* is right 75 % of the time.

- **rare harm**: the true share rated High Potential for Harm is 0.5, 1, 2 or 5 % (Best
  Practice 60 %, Suboptimal the rest); 40, 100 or 200 random conversations carry human
  ratings.
- **few rated personas**: harm is common (Best Practice 50 %, HPH 20 %); the human
  ratings are every conversation of 1, 2, 5, 10 or 20 random personas.

For each setting: how often the calibrated 95 % interval (`vera.stats.ppi`, the code
the card runs, called on arrays) covers the true overall score and the true HPH %,
and how often it misses on the side that calls the chatbot *safer than it is* (the
score's interval above the truth, or HPH's below it); with the mean widths.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.synthetic_labels import JUDGES, draw_ratings, persona_probabilities, random_mask, shares
from vera.stats.bootstrap import score_from_percentages
from vera.stats.ppi import summarise_features

PERSONAS, PER_PERSONA = 100, 10
RARE_HPH = (0.005, 0.01, 0.02, 0.05)
LABELS = (40, 100, 200)
RATED_PERSONAS = (1, 2, 5, 10, 20)


def population(hph: float, bp: float) -> np.ndarray:
    """The population's (BP, SUB, HPH, NR) probabilities."""
    return np.array([bp, 1.0 - bp - hph, hph, 0.0])


def draw_features(
    rng: np.random.Generator, base: np.ndarray, judge: np.ndarray, labelled: np.ndarray
) -> np.ndarray:
    """One run's (personas × 1 × features) sums, as `vera.stats.ppi` builds them from
    a run's calibration units: N, n, Σf, Σy, Σf·[labelled], Σy·f, Σf²·[labelled] for the
    shares BP, HPH, NR. `labelled` is a boolean mask over the conversations."""
    probs = np.repeat(persona_probabilities(rng, base, PERSONAS), PER_PERSONA, axis=0)
    truth, said = draw_ratings(rng, probs, judge)
    f = shares(said)
    y = shares(truth) * labelled[:, None]
    lab = labelled.astype(np.float64)[:, None]
    feats = np.hstack([np.ones_like(lab), lab, f, y, f * lab, y * f, f * f * lab])
    out: np.ndarray = feats.reshape(PERSONAS, PER_PERSONA, -1).sum(axis=1)[:, None, :]
    return out


def run_setting(
    rng: np.random.Generator,
    base: np.ndarray,
    judge: np.ndarray,
    reps: int,
    resamples: int,
    label_mask: Any,
) -> dict[str, float]:
    """Coverage and safe-side misses of the score and HPH % over `reps` runs."""
    true_hph = 100.0 * base[2] / (1.0 - base[3])
    true_score = float(score_from_percentages(100.0 * base[0] / (1.0 - base[3]), true_hph))
    hits = {"score": 0, "hph": 0}
    safe_miss = {"score": 0, "hph": 0}
    widths: dict[str, list[float]] = {"score": [], "hph": []}
    for _ in range(reps):
        labelled = label_mask(rng)
        x = draw_features(rng, base, judge, labelled)
        n_lab = float(labelled.sum())
        out = summarise_features(x, np.array([n_lab, n_lab]), n_resamples=resamples, confidence=0.95, rng=rng)
        for name, key, truth in (("score", "score", true_score), ("hph", "pct_hph", true_hph)):
            lo, hi = out[f"{key}_lo"][-1], out[f"{key}_hi"][-1]
            if not (np.isfinite(lo) and np.isfinite(hi)):
                continue
            hits[name] += lo <= truth <= hi
            # "Safer than it is": the score's interval above the truth, HPH's below it.
            safe_miss[name] += (lo > truth) if name == "score" else (hi < truth)
            widths[name].append(hi - lo)
    return {
        "true_score": true_score,
        "true_hph": true_hph,
        "coverage_score": hits["score"] / reps,
        "coverage_hph": hits["hph"] / reps,
        "safe_side_misses_score": safe_miss["score"] / reps,
        "safe_side_misses_hph": safe_miss["hph"] / reps,
        "width_score": float(np.mean(widths["score"])) if widths["score"] else float("nan"),
        "width_hph": float(np.mean(widths["hph"])) if widths["hph"] else float("nan"),
    }


def rare_harm(reps: int, resamples: int, seed: int) -> list[dict[str, Any]]:
    rows = []
    n = PERSONAS * PER_PERSONA
    for name, judge in JUDGES.items():
        for hph in RARE_HPH:
            for labels in LABELS:
                rng = np.random.default_rng([seed, int(hph * 10_000), labels, len(name)])

                def mask(g: np.random.Generator, k: int = labels) -> np.ndarray:
                    return random_mask(g, n, k)

                row = run_setting(rng, population(hph, 0.6), judge, reps, resamples, mask)
                rows.append(
                    {"table": "rare harm", "judge": name, "hph": hph, "labels": labels, "reps": reps} | row
                )
    return rows


def few_personas(reps: int, resamples: int, seed: int) -> list[dict[str, Any]]:
    rows = []
    for name, judge in JUDGES.items():
        for k in RATED_PERSONAS:
            rng = np.random.default_rng([seed, 7, k, len(name)])

            def mask(g: np.random.Generator, k: int = k) -> np.ndarray:
                return np.repeat(random_mask(g, PERSONAS, k), PER_PERSONA)

            row = run_setting(rng, population(0.2, 0.5), judge, reps, resamples, mask)
            rows.append(
                {
                    "table": "few personas",
                    "judge": name,
                    "rated_personas": k,
                    "labels": k * PER_PERSONA,
                    "reps": reps,
                }
                | row
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500, help="synthetic runs per setting (default 500)")
    parser.add_argument(
        "--resamples", type=int, default=1000, help="bootstrap resamples per run (default 1000)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("rare", "personas"), help="one table only")
    parser.add_argument("--json", type=Path, help="write the rows to this file")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    if args.only in (None, "rare"):
        part = rare_harm(args.reps, args.resamples, args.seed)
        rows += part
        print(f"Rare harm: {args.reps} runs per setting, 1000 conversations of 100 personas each")
        print(
            "| judge | true HPH | rated | score coverage | HPH coverage | safe-side misses (score / HPH) | width (score / HPH) |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in part:
            print(
                f"| {r['judge']} | {100 * r['hph']:g} % | {r['labels']} | {r['coverage_score']:.1%} |"
                f" {r['coverage_hph']:.1%} | {r['safe_side_misses_score']:.1%} / {r['safe_side_misses_hph']:.1%} |"
                f" {r['width_score']:.1f} / {r['width_hph']:.1f} |"
            )
    if args.only in (None, "personas"):
        part = few_personas(args.reps, args.resamples, args.seed)
        rows += part
        print(f"\nFew rated personas: {args.reps} runs per setting, every conversation of k personas rated")
        print(
            "| judge | rated personas | score coverage | HPH coverage | safe-side misses (score / HPH) | width (score / HPH) |"
        )
        print("|---|---|---|---|---|---|")
        for r in part:
            print(
                f"| {r['judge']} | {r['rated_personas']} | {r['coverage_score']:.1%} | {r['coverage_hph']:.1%} |"
                f" {r['safe_side_misses_score']:.1%} / {r['safe_side_misses_hph']:.1%} |"
                f" {r['width_score']:.1f} / {r['width_hph']:.1f} |"
            )
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
