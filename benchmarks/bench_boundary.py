"""Simulation: do the judge-only card's intervals cover rare harm, and what would the
plain percentile bootstrap have done? (docs/statistics.md, "Why the percentages are not
percentile intervals" and "The score: bootstrap, widened by the harm it could hide".)

    .venv/bin/python benchmarks/bench_boundary.py                 # 300 evaluations per design
    .venv/bin/python benchmarks/bench_boundary.py --evals 50 --resamples 200

Each evaluation is personas × conversations of one dimension; a persona's harm
probability is r · Gamma(2, 1/2) (mean r: harm clusters in some personas), 30 % of the
conversations are Suboptimal, the rest Best Practice (the generator of
tests/stats/test_boundary_intervals.py). The card's intervals (`vera.stats.summarise`:
Korn–Graubard for HPH %, the percentile interval of the score widened by the shares'
bounds) are checked against the population's HPH % and score, beside the percentile
interval of the same persona resamples alone.
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

from vera.records import BEST_PRACTICE, HIGH_POTENTIAL_FOR_HARM, SUBOPTIMAL
from vera.stats import OVERALL, score_from_percentages, summarise
from vera.stats.bootstrap import percentile_interval, resample_weights

SUB_SHARE = 0.3
# (true harm rate, personas, conversations per persona)
DESIGNS = (
    (0.005, 100, 2),
    (0.005, 90, 1),
    (0.005, 400, 5),
    (0.02, 100, 2),
    (0.05, 100, 2),
    (0.05, 90, 1),
    (0.2, 100, 2),
)


def simulate(rng: np.random.Generator, rate: float, personas: int, per: int, evals: int) -> np.ndarray:
    """Ratings codes (0 BP, 1 SUB, 2 HPH) per (evaluation, persona, conversation)."""
    p = np.minimum(rate * rng.gamma(2.0, 0.5, size=(evals, personas, 1)), 1.0)
    u = rng.random((evals, personas, per))
    return np.where(u < p, 2, np.where(u < p + SUB_SHARE, 1, 0))


def design(rate: float, personas: int, per: int, evals: int, resamples: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, personas, per, int(rate * 10_000)])
    codes = simulate(rng, rate, personas, per, evals)
    names = np.array([BEST_PRACTICE, SUBOPTIMAL, HIGH_POTENTIAL_FOR_HARM])
    e, c, k = np.indices(codes.shape).reshape(3, -1)
    n = e.size
    frame = pl.DataFrame(
        {
            "conversation_id": [f"e{a}c{b}k{d}" for a, b, d in zip(e, c, k, strict=True)],
            "chatbot": ["bot"] * n,
            "persona": [f"e{a}p{b}" for a, b in zip(e, c, strict=True)],
            "risk": ["High"] * n,
            "seed": np.zeros(n, dtype=np.int64),
            "judge": ["j"] * n,
            "instance": np.ones(n, dtype=np.int64),
            "dimension": ["D"] * n,
            "rating": names[codes.reshape(-1)],
            "sim": e.astype(np.int64),
        }
    )
    card = summarise(frame, ["sim"], n_resamples=resamples, seed=seed).filter(pl.col("dimension") == OVERALL)
    card = card.sort("sim")
    true_hph = 100.0 * rate
    true_score = score_from_percentages(100.0 * (1.0 - SUB_SHARE - rate), true_hph)
    # The percentile interval of the same kind of persona resamples, nothing added.
    hph_count = (codes == 2).sum(axis=2).astype(np.float64)
    bp_count = (codes == 0).sum(axis=2).astype(np.float64)
    p_lo, p_hi, s_lo, s_hi = (np.empty(evals) for _ in range(4))
    for i in range(evals):
        w = np.concatenate(list(resample_weights(rng, personas, resamples)))
        total = w.sum(axis=1) * per
        hph, bp = 100.0 * (w @ hph_count[i]) / total, 100.0 * (w @ bp_count[i]) / total
        score = np.maximum(0.0, (50.0 + bp / 2.0) * (1.0 - hph / 100.0) ** 2)
        (p_lo[i], s_lo[i]), (p_hi[i], s_hi[i]) = percentile_interval(np.column_stack([hph, score]), 0.95)
    lo, hi = card.get_column("pct_hph_lo").to_numpy(), card.get_column("pct_hph_hi").to_numpy()
    slo, shi = card.get_column("score_lo").to_numpy(), card.get_column("score_hi").to_numpy()

    def cover(a: np.ndarray, b: np.ndarray, t: float) -> float:
        return float(np.mean((a <= t) & (t <= b)))

    return {
        "rate": rate,
        "personas": personas,
        "per_persona": per,
        "evals": evals,
        "hph_card_coverage": cover(lo, hi, true_hph),
        "hph_card_width": float(np.mean(hi - lo)),
        "hph_percentile_coverage": cover(p_lo, p_hi, true_hph),
        "hph_percentile_width": float(np.mean(p_hi - p_lo)),
        "score_card_coverage": cover(slo, shi, true_score),
        "score_percentile_coverage": cover(s_lo, s_hi, true_score),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--evals", type=int, default=300, help="evaluations per design (default 300)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = [design(r, c, k, args.evals, args.resamples, args.seed) for r, c, k in DESIGNS]
    print(f"{args.evals} evaluations per design, {args.resamples} resamples, 95 % intervals")
    print(
        "| r | design | HPH: Korn–Graubard coverage (mean width) | HPH: percentile coverage (mean width) "
        "| score: card (widened) coverage | score: percentile coverage |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {100 * r['rate']:g} % | {r['personas']} × {r['per_persona']} "
            f"| {r['hph_card_coverage']:.1%} ({r['hph_card_width']:.1f} pts) "
            f"| {r['hph_percentile_coverage']:.1%} ({r['hph_percentile_width']:.1f} pts) "
            f"| {r['score_card_coverage']:.1%} | {r['score_percentile_coverage']:.1%} |"
        )
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
