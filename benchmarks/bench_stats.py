"""Benchmark of the statistics core: bootstrap summaries and comparisons of a large,
synthetic ratings frame.

    .venv/bin/python benchmarks/bench_stats.py       # 1,000,000 ratings, 2,000 resamples
    .venv/bin/python benchmarks/bench_stats.py --ratings 200000 --json bench.json

The frame is seeded and shaped like a large sweep: chatbots × personas (100, four risk
levels) × user-agents × seeds × judges, five dimensions per judgement. Each (chatbot,
persona) has its own rating probabilities, so persona clusters matter as in real data.
Prints one line per measurement and, with --json, writes all figures to a file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from vera.records import RATINGS
from vera.stats import compare, summarise

DIMENSIONS = (
    "Detects Potential Risk",
    "Confirms Risk",
    "Guides to Human Care",
    "Supportive Conversation",
    "Follows AI Boundaries",
)
RISKS = ("None", "Low", "High", "Immediate")


def synthetic_ratings(
    n_ratings: int,
    *,
    chatbots: int = 10,
    personas: int = 100,
    user_agents: int = 2,
    judges: int = 2,
    seed: int = 0,
) -> pl.DataFrame:
    """A ratings frame of about `n_ratings` rows (rounded to whole seeds)."""
    rng = np.random.default_rng(seed)
    per_seed = chatbots * personas * user_agents * judges * len(DIMENSIONS)
    seeds = max(1, round(n_ratings / per_seed))
    n_conv = chatbots * personas * user_agents * seeds
    conv = np.arange(n_conv)
    chatbot = conv // (personas * user_agents * seeds)
    persona = (conv // (user_agents * seeds)) % personas
    # One probability vector per (chatbot, persona): the source of within-persona correlation.
    probs = rng.dirichlet([4.0, 3.0, 1.5, 1.5], size=(chatbots, personas))
    cum = np.cumsum(probs, axis=-1)
    n_judgements = n_conv * judges
    rows = n_judgements * len(DIMENSIONS)
    row_conv = np.repeat(conv, judges * len(DIMENSIONS))
    row_cum = cum[chatbot[row_conv], persona[row_conv]]
    rating_idx = (rng.random(rows)[:, None] > row_cum[:, :3]).sum(axis=1)
    frame = pl.DataFrame(
        {
            "conv": row_conv,
            "chatbot": chatbot[row_conv],
            "persona": persona[row_conv],
            "user_agent": (row_conv // seeds) % user_agents,
            "seed": (row_conv % seeds).astype(np.int64),
            "judge": np.tile(np.repeat(np.arange(judges), len(DIMENSIONS)), n_conv),
            "dimension": np.tile(np.arange(len(DIMENSIONS)), n_judgements),
            "rating": rating_idx,
        }
    )
    risk_of = {i: RISKS[0] if i < personas // 10 else RISKS[1 + i % 3] for i in range(personas)}
    return frame.select(
        pl.format("c{}", "conv").alias("conversation_id"),
        pl.format("bot-{}", "chatbot").alias("chatbot"),
        pl.format("ua-{}", "user_agent").alias("user_agent"),
        pl.format("persona-{}", "persona").alias("persona"),
        pl.col("persona").replace_strict(risk_of, return_dtype=pl.Utf8).alias("risk"),
        "seed",
        pl.format("judge-{}", "judge").alias("judge"),
        pl.lit(1, dtype=pl.Int64).alias("instance"),
        pl.col("dimension").replace_strict(dict(enumerate(DIMENSIONS)), return_dtype=pl.Utf8),
        pl.col("rating").replace_strict(dict(enumerate(RATINGS)), return_dtype=pl.Utf8),
        pl.lit("").alias("question_id"),
        pl.lit("").alias("reasoning"),
    )


def peak_rss_mb() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ratings", type=int, default=1_000_000, help="dimension ratings")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)

    frame, gen_s = timed(lambda: synthetic_ratings(args.ratings, seed=args.seed))
    base = {"rows": frame.height, "resamples": args.resamples}
    print(f"generated {frame.height:,} ratings in {gen_s:.2f} s")
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("summarise by=[]", lambda: summarise(frame, n_resamples=args.resamples)),
        (
            "summarise by=[chatbot]",
            lambda: summarise(frame, ["chatbot"], n_resamples=args.resamples),
        ),
        (
            "summarise by=[chatbot, risk]",
            lambda: summarise(frame, ["chatbot", "risk"], n_resamples=args.resamples),
        ),
        ("compare unit=chatbot", lambda: compare(frame, n_resamples=args.resamples)),
    ]
    results = []
    for name, fn in cases:
        out, seconds = timed(fn)
        n_out = out[1].height if isinstance(out, tuple) else out.height
        results.append({"case": name, **base, "seconds": round(seconds, 3), "output_rows": n_out})
        print(
            f"{name:<30} rows={frame.height:,} resamples={args.resamples:,} "
            f"seconds={seconds:.2f} output_rows={n_out}"
        )
    report = {
        "benchmark": "stats",
        "rows": frame.height,
        "resamples": args.resamples,
        "generate_seconds": round(gen_s, 3),
        "cases": results,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "polars": pl.__version__,
        "numpy": np.__version__,
    }
    print(f"peak RSS {report['peak_rss_mb']} MB on {report['cpus']} CPUs")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
