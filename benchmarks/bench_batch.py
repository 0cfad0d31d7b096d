"""`vera bench --judge --batch`: the judge's money per judged conversation, live and in
batch mode, on the same transcripts-to-be and the same deterministic loopback server.

Both runs go through `vera run`'s own code (`execute_run`) against
`tests.fakes.batch.BatchSweepServer`: the sweep server of the tests (deterministic
replies, so the two runs simulate the same conversations and the judge answers them
alike) plus the OpenAI Files and Batches endpoints with the documented rules (one model
per file, unique custom_id, request and size limits, results in shuffled order). One
run judges live, the other with `[judge] mode = "batch"`; each run's money is read from
its `calls.jsonl`, as the card reads it. Wall time is reported as it is: a batch waits
for its polls (`--batch-poll-s` here; minutes to hours on a real provider).

This needs a source checkout (the fakes live in tests/), like the rest of `vera bench`.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

PERSONAS = 6  # seeds are added until there are at least the asked conversations


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def _one(
    mode: str, folder: Path, conversations: int, concurrency: int, poll_s: float
) -> dict[str, Any]:
    from tests.fakes.batch import BatchSweepServer
    from tests.fakes.sweep import write_sweep_config
    from vera.app import RunOptions, execute_run

    seeds = list(range(1, math.ceil(conversations / PERSONAS) + 1))
    extra = (
        f'[judge]\nmode = "batch"\nbatch_poll_s = {poll_s}\nbatch_collect_s = 0.05\n'
        if mode == "batch"
        else ""
    )
    with BatchSweepServer(polls_to_complete=3) as server:
        cfg = write_sweep_config(
            folder,
            server.base_url,
            personas=PERSONAS,
            seeds=json.dumps(seeds),
            extra=extra,
            max_concurrency=concurrency,
        )
        out = folder / "run"
        started = time.perf_counter()
        outcome = await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))
        wall = time.perf_counter() - started
        violations = list(server.violations)
        batches = len(server.created)
    calls = _jsonl(out / "calls.jsonl")
    judged = sum(1 for j in _jsonl(out / "judgements.jsonl") if j["status"] == "complete")
    judge_usd = sum(c["cost_usd"] for c in calls if c["role"] == "judge")
    run_usd = sum(c["cost_usd"] for c in calls)
    return {
        "mode": mode,
        "exit_code": outcome.exit_code,
        "conversations": outcome.result.conversations,
        "judged_conversations": judged,
        "judge_calls": sum(1 for c in calls if c["role"] == "judge"),
        "judge_tiers": sorted({c.get("tier", "standard") for c in calls if c["role"] == "judge"}),
        "judge_usd": judge_usd,
        "run_usd": run_usd,
        "judge_usd_per_judged": judge_usd / judged if judged else None,
        "run_usd_per_judged": run_usd / judged if judged else None,
        "batches": batches,
        "violations": violations,
        "wall_s": wall,
    }


def run_batch_bench(conversations: int, concurrency: int, poll_s: float) -> dict[str, Any]:
    """Both modes, one after the other; the figures and the ratios batch / live."""
    from tests.fakes.sweep import KEY  # the fake's key, which its profiles name

    os.environ["SWEEP_TEST_KEY"] = KEY
    with tempfile.TemporaryDirectory(prefix="vera-bench-batch-") as tmp:
        live = asyncio.run(_one("live", Path(tmp) / "live", conversations, concurrency, poll_s))
        batch = asyncio.run(_one("batch", Path(tmp) / "batch", conversations, concurrency, poll_s))

    def ratio(key: str) -> float | None:
        a, b = batch[key], live[key]
        return a / b if a is not None and b else None

    return {
        "live": live,
        "batch": batch,
        "judge_ratio": ratio("judge_usd_per_judged"),
        "run_ratio": ratio("run_usd_per_judged"),
        "poll_s": poll_s,
    }


def render_batch_bench(fig: dict[str, Any]) -> str:
    live, batch = fig["live"], fig["batch"]
    rows = [
        ("", "live", "batch"),
        ("judged conversations", str(live["judged_conversations"]), str(batch["judged_conversations"])),
        ("judge calls", str(live["judge_calls"]), str(batch["judge_calls"])),
        ("judge tiers", ",".join(live["judge_tiers"]), ",".join(batch["judge_tiers"])),
        ("batches", str(live["batches"]), str(batch["batches"])),
        (
            "judge $ per judged conversation",
            f"{live['judge_usd_per_judged']:.6f}",
            f"{batch['judge_usd_per_judged']:.6f}",
        ),
        (
            "run $ per judged conversation",
            f"{live['run_usd_per_judged']:.6f}",
            f"{batch['run_usd_per_judged']:.6f}",
        ),
        ("wall time (s)", f"{live['wall_s']:.2f}", f"{batch['wall_s']:.2f}"),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [f"{a:<{width}}  {b:>12}  {c:>12}" for a, b, c in rows]
    lines.append(
        f"judge money, batch / live: {fig['judge_ratio']:.2f}x (target <= 0.5x); "
        f"whole run: {fig['run_ratio']:.2f}x (chatbot and simulated user stay live)"
    )
    lines.append(
        f"wall time: a batch waits for its polls ({fig['poll_s']:g} s apart on the fake; "
        "minutes to 24 h on a real provider): batch mode is cheaper, not faster"
    )
    return "\n".join(lines)
