"""Where the time of `vera bench --judge` goes: calls in flight over time by role, rubric
walk lengths, and the bound the walks put on efficiency.

    .venv/bin/python benchmarks/bench_judge.py                  # the suite's judge scenario
    .venv/bin/python benchmarks/bench_judge.py --no-ask-ahead   # without asking ahead at the end
    .venv/bin/python benchmarks/bench_judge.py --sequential     # the walk one question at a time
    .venv/bin/python benchmarks/bench_judge.py --runs 3 --json judge.json

It runs the same sweep as `vera bench --judge` (same fake server, profiles, default
configuration) but keeps the run directory, and reads its call log: every call's start
(its end minus its latency) and end give the calls in flight, sampled every 0.1 s; the
judgements give each walk's length (calls one after the other) and its *critical path*
(the longest chain of calls that wait for each other once independent parts of the
rubric run side by side). `--sequential` walks one question after the other, as before
the concurrent walk, to show what it changed; `--no-ask-ahead` turns off asking ahead
(the default configuration asks long chains' likely next question early once no job is
left to start: vera.rubric._concurrent).

The bound: all conversations run in step (N = C) for T turns, then are judged. At best
every round of calls takes one latency and is full, so the sweep takes T + L rounds
(L: the longest critical path) for T + J/N rounds' worth of calls (J: judge calls):
efficiency ≤ (T + J/N) / (T + L), with J the judge calls the walks needed (questions
asked ahead and not reached are no calls made; they are counted apart). Asking ahead
shortens the chains below L, so with it the bound is that of the walk without it: what
no schedule of the method's own calls could beat. The simulation rounds themselves
reach the `throughput` scenario's efficiency (~0.93-0.95 here), not 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import (  # noqa: E402
    KEY,
    KEY_ENV,
    BenchOptions,
    _run_on_uvloop,
    fake_server,
    measure,
    raise_open_files_limit,
)
from vera.rubric._concurrent import flow_of  # noqa: E402
from vera.rubric._load import load_rubric  # noqa: E402
from vera.rubric._model import Rubric  # noqa: E402

STEP_S = 0.1


def critical_path(rubric: Rubric, answers: dict[str, str]) -> int:
    """Calls on the longest chain of dependent calls of one walk, parts side by side
    (the same splitting as `vera.rubric._concurrent`)."""
    flow = flow_of(rubric)
    if flow is None:
        return sum(1 for q in answers if not rubric.question(q).automatic)
    longest = 0
    parts: list[tuple[int | None, int | None, int]] = [(0, None, 0)]
    while parts:
        i, stop, depth = parts.pop()
        while i is not None and i != stop:
            certain = flow.ipdom[i]
            if certain is not None and certain != stop:
                parts.append((certain, stop, depth))
                stop = certain
            q = rubric.questions[i]
            depth += not q.automatic
            i = flow.step[i][answers[q.id]]
        longest = max(longest, depth)
    return longest


def analyse(run: Path, opts: BenchOptions, fig: dict[str, Any], sequential: bool) -> dict[str, Any]:
    calls = [orjson.loads(line) for line in (run / "calls.jsonl").read_bytes().splitlines()]
    spans = [(c["at"] - c["latency_ms"] / 1000, c["at"], c["role"] == "judge") for c in calls]
    t0 = min(s for s, _, _ in spans)
    end = max(e for _, e, _ in spans) - t0
    timeline = []
    for k in range(int(end / STEP_S) + 1):
        t = t0 + k * STEP_S
        live = [j for s, e, j in spans if s <= t < e]
        timeline.append((round(k * STEP_S, 1), len(live) - sum(live), sum(live)))
    sim_end = max(e for _, e, j in spans if not j) - t0
    rubric = load_rubric(ROOT / "rubrics" / "vera-si.tsv")
    judgements = [orjson.loads(line) for line in (run / "judgements.jsonl").read_bytes().splitlines()]
    lengths: Counter[int] = Counter()
    critical: Counter[int] = Counter()
    for j in judgements:
        answers = {a["question_id"]: a["answer"] for a in j["answers"]}
        lengths[sum(1 for a in j["answers"] if not a.get("auto"))] += 1
        critical[critical_path(rubric, answers)] += 1
    unused = sum(j.get("unused_questions", 0) for j in judgements)
    judge_calls = sum(1 for *_, j in spans if j) - unused
    n = min(opts.conversations, opts.concurrency)
    # One question after the other, the whole walk is one chain.
    longest = max(lengths) if sequential else max(critical)
    return {
        "figures": {k: fig[k] for k in ("calls", "wall_s", "calls_per_s", "efficiency", "cpu_ms_per_call")},
        "judge_calls": judge_calls,
        "unused_questions": unused,
        "simulation_end_s": round(sim_end, 2),
        "judge_tail_s": round(end - sim_end, 2),
        "walk_lengths": dict(sorted(lengths.items())),
        "critical_paths": dict(sorted(critical.items())),
        "longest_chain": longest,
        "bound": round((opts.turns + judge_calls / n) / (opts.turns + longest), 4),
        "in_flight": timeline,
    }


def run_once(opts: BenchOptions, sequential: bool) -> dict[str, Any]:
    if sequential:
        opts = replace(opts, ask_ahead=False)  # the walk as it was: nothing asked early
        import vera.engine._judge
        from vera.rubric._walk import walk_rubric

        async def one_by_one(rubric: Any, answer: Any, *, answered: Any = None, ahead: Any = None) -> Any:
            return await walk_rubric(rubric, answer, answered=answered)

        vera.engine._judge.walk_rubric_concurrent = one_by_one  # type: ignore[assignment]
    raise_open_files_limit()
    os.environ[KEY_ENV] = KEY
    with fake_server(opts.latency_ms, opts.rpm) as server, tempfile.TemporaryDirectory() as tmp:
        fig = _run_on_uvloop(measure(opts, server, Path(tmp)))
        return analyse(Path(tmp) / "run", opts, fig, sequential)


def report(r: dict[str, Any], show_timeline: bool) -> str:
    f = r["figures"]
    lines = [
        f"calls {f['calls']:,} (judge {r['judge_calls']}, + {r['unused_questions']} asked ahead, unused)"
        f" · wall {f['wall_s']:.2f} s · "
        f"{f['calls_per_s']:.1f} calls/s · efficiency {f['efficiency']:.1%} · "
        f"client CPU {f['cpu_ms_per_call']:.3f} ms/call",
        f"simulation ends at {r['simulation_end_s']:.2f} s, judging {r['judge_tail_s']:.2f} s after",
        "walk lengths (calls: judgements): " + ", ".join(f"{k}: {v}" for k, v in r["walk_lengths"].items()),
        "critical paths (calls: judgements): "
        + ", ".join(f"{k}: {v}" for k, v in r["critical_paths"].items()),
        f"bound of the walk without asking ahead, (T + J/N) / (T + longest chain = {r['longest_chain']}): "
        f"{r['bound']:.1%}",
    ]
    if show_timeline:
        lines.append("   t s  simulation in flight  judge in flight")
        lines += [
            f"{t:6.1f}  {s:20d}  {j:15d}" for t, s, j in r["in_flight"] if t >= r["simulation_end_s"] - 0.5
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequential", action="store_true", help="walk one question after the other")
    parser.add_argument(
        "--no-ask-ahead", action="store_true", help="never ask a question before it is reached"
    )
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeline", action="store_true", help="print calls in flight every 0.1 s")
    parser.add_argument("--json", help="write every run's analysis to this file")
    args = parser.parse_args()
    # 100 conversations × 20 turns at 200 ms, C = 100
    opts = BenchOptions(judge=True, ask_ahead=not args.no_ask_ahead)
    results = []
    for k in range(args.runs):
        r = run_once(opts, args.sequential)
        results.append(r)
        print(f"run {k + 1}: " + report(r, args.timeline), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
