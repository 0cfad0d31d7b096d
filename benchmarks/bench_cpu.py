"""`vera bench --floor`: vera's CPU per call beside a bare aiohttp client's, in one run.

The two alternate, round after round, against one fake server process
(`benchmarks/fake_server.py`, the server `vera bench` uses), so both meet the same
machine at the same moments: on a shared 2-core machine the load of the neighbours moves
CPU per call by tens of percent between runs minutes apart, and alternating cancels
that out of the ratio. Each round is `--conversations` × `--turns` calls at
`--latency-ms`, all conversations in flight:

- **floor**: `benchmarks/bench_floor.py`'s client in its `same_wire` shape: each
  conversation keeps a growing message list (a system prompt the size of a rendered
  persona prompt, then every reply the server sent and a line of its own), encodes it
  with orjson, POSTs it over one aiohttp session, reads and decodes the answer. The same
  requests on the wire as vera's, and nothing else.
- **vera**: `vera bench` in `vera run`'s default configuration (event log, progress
  display, call bodies on; the bodies answer a resume, so no response cache): the real
  run session, client stack and run store.

CPU is `time.process_time()` of this process over the round (every thread), as `vera
bench` measures it; the figure is the median over the rounds, and the ratio vera /
floor is taken round by round (each vera round against the floor round just before
it) and reported as the median of those ratios. The server's byte counts say both
sides sent requests of the same size.

    vera bench --floor                       # 5 rounds of 100 × 20 at 200 ms
    vera bench --floor --rounds 9 --json cpu.json
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.bench_floor import one_run
from benchmarks.harness import (
    KEY,
    KEY_ENV,
    BenchOptions,
    _run_on_uvloop,
    fake_server,
    measure,
    raise_open_files_limit,
)


async def _stats(url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        stats: dict[str, Any] = await response.json()
        return stats


def _bytes_per_request(before: dict[str, Any], after: dict[str, Any]) -> float:
    """What the server counted, as bytes per request (it counts a token per 4 bytes)."""
    requests = after["requests"] - before["requests"]
    return 4 * (after["input_tokens"] - before["input_tokens"]) / requests if requests else 0.0


def run_cpu_comparison(opts: BenchOptions, rounds: int) -> dict[str, Any]:
    """`rounds` alternating rounds of the floor and vera; their figures and ratio."""
    import os

    raise_open_files_limit()
    os.environ[KEY_ENV] = KEY
    floor: list[dict[str, float]] = []
    vera: list[dict[str, float]] = []
    calls = opts.conversations * opts.turns
    with fake_server(opts.latency_ms, None) as server:
        for _ in range(rounds):
            before = _run_on_uvloop(_stats(server.stats_url))
            wall, cpu = _run_on_uvloop(
                one_run(server.base_url, opts.conversations, opts.turns, same_wire=True)
            )
            after = _run_on_uvloop(_stats(server.stats_url))
            floor.append(
                {
                    "cpu_ms_per_call": cpu * 1000 / calls,
                    "wall_s": wall,
                    "bytes_per_request": _bytes_per_request(before, after),
                }
            )
            with tempfile.TemporaryDirectory(prefix="vera-bench-cpu-") as tmp:
                before = after
                fig = _run_on_uvloop(measure(opts, server, Path(tmp)))
                after = _run_on_uvloop(_stats(server.stats_url))
            vera.append(
                {
                    "cpu_ms_per_call": fig["cpu_ms_per_call"],
                    "wall_s": fig["wall_s"],
                    "bytes_per_request": _bytes_per_request(before, after),
                }
            )
            time.sleep(0.2)
    ratios = [v["cpu_ms_per_call"] / f["cpu_ms_per_call"] for f, v in zip(floor, vera, strict=True)]

    def median(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    return {
        "scenario": {
            "conversations": opts.conversations,
            "turns": opts.turns,
            "latency_ms": opts.latency_ms,
            "rounds": rounds,
            "config": {
                "cache": opts.cache and not opts.call_bodies,  # as opened (see harness.figures)
                "events": opts.events,
                "progress": opts.progress,
                "call_bodies": opts.call_bodies,
            },
        },
        "floor": floor,
        "vera": vera,
        "floor_cpu_ms_per_call": median(floor, "cpu_ms_per_call"),
        "vera_cpu_ms_per_call": median(vera, "cpu_ms_per_call"),
        "ratios": ratios,
        "ratio": statistics.median(ratios),
        "floor_bytes_per_request": median(floor, "bytes_per_request"),
        "vera_bytes_per_request": median(vera, "bytes_per_request"),
    }


def render_cpu_comparison(fig: dict[str, Any]) -> str:
    s = fig["scenario"]
    lines = [
        f"{s['conversations']} conversations × {s['turns']} turns at {s['latency_ms']:g} ms, "
        f"{s['rounds']} alternating rounds, one fake server",
        "round  floor ms/call  vera ms/call  vera/floor",
    ]
    for i, (f, v, r) in enumerate(zip(fig["floor"], fig["vera"], fig["ratios"], strict=True), 1):
        lines.append(f"{i:>5}  {f['cpu_ms_per_call']:>13.3f}  {v['cpu_ms_per_call']:>12.3f}  {r:>9.2f}x")
    lines.append(
        f"median: floor {fig['floor_cpu_ms_per_call']:.3f} ms/call, vera {fig['vera_cpu_ms_per_call']:.3f} ms/call, "
        f"vera/floor {fig['ratio']:.2f}x (target <= 1.2x)"
    )
    lines.append(
        f"bytes per request on the wire: floor {fig['floor_bytes_per_request']:,.0f}, "
        f"vera {fig['vera_bytes_per_request']:,.0f}"
    )
    return "\n".join(lines)
