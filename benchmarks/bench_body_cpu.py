"""What keeping call bodies costs the client's CPU per call, without the network.

    .venv/bin/python benchmarks/bench_body_cpu.py                     # 100 × 20, commits of 1, 7, 20, 100 calls
    .venv/bin/python benchmarks/bench_body_cpu.py --conversations 50 --per-commit 7

A `vera bench` sweep (call bodies on) is run once against the fake server to get real
bodies: each conversation's growing history, the persona-sized system prompts, the fake
server's 400-character replies. The bodies are kept as the run handed them to its store
(the same message and text objects from one call of a conversation to the next, as the
turn loop shares them; bodies read back from the store would share none, and a writer
that relies on identity would look slower than it is), and then written again into
fresh run stores, `RunStore.add_call` as a run calls it, with the loop turning (and
so the bodies committing and the call lines written) every `--per-commit` calls: a live
run commits one loop turn's answers at a time, about 7 in `vera bench`'s default
scenario. Prints the process's CPU per call with bodies, without (the call line alone),
and the difference, the min of `--repeat` runs; and of the bodies' cost, the part spent
at the store's close (format 2: the index written; format 1 folded its log into SQLite). The `--floor` comparison (`vera bench
--floor`) measures the whole client; this isolates the part that writes bodies, where a
change of 5 µs is visible (in `--floor`, rounds minutes apart differ by 20 µs).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

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
from vera.records import CallBody, CallRecord  # noqa: E402
from vera.store import RunStore  # noqa: E402


def real_bodies(conversations: int, turns: int) -> list[CallBody]:
    """The bodies of one `vera bench` sweep (call bodies on, as by default), as the
    run's store was handed them."""
    raise_open_files_limit()
    os.environ[KEY_ENV] = KEY
    opts = BenchOptions(
        conversations=conversations, turns=turns, latency_ms=5, concurrency=conversations, progress=False
    )
    bodies: list[CallBody] = []
    add_call = RunStore.add_call

    def keep(store: RunStore, record: CallRecord, body: CallBody | None = None) -> None:
        if body is not None:
            bodies.append(body)
        add_call(store, record, body)

    RunStore.add_call = keep  # type: ignore[method-assign]
    try:
        with fake_server(opts.latency_ms, None) as server, tempfile.TemporaryDirectory() as tmp:
            _run_on_uvloop(measure(opts, server, Path(tmp)))
    finally:
        RunStore.add_call = add_call  # type: ignore[method-assign]
    return bodies


def replay(bodies: list[CallBody], *, keep: bool, per_commit: int) -> float:
    """CPU seconds to write `bodies` into a fresh store, the loop turning every `per_commit`."""
    return sum(replay_parts(bodies, keep=keep, per_commit=per_commit))


def replay_parts(bodies: list[CallBody], *, keep: bool, per_commit: int) -> tuple[float, float]:
    """`replay`'s CPU seconds, on the loop and at the store's close."""
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(tmp, call_bodies=keep)

        async def write() -> float:
            started = time.process_time()
            for i, body in enumerate(bodies, 1):
                store.add_call(body.call, body)
                if i % per_commit == 0:
                    await asyncio.sleep(0)  # the loop turns: bodies commit, lines are written
            await asyncio.sleep(0)
            return time.process_time() - started

        try:
            spent = asyncio.run(write())
            # The close counts too: it writes the bodies' index (format 2), or folds the
            # bodies' log into the database (format 1: the work the loop's turns no
            # longer do).
            started = time.process_time()
            store.close()
            return spent, time.process_time() - started
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--per-commit", default="1,7,20,100", help="calls per loop turn, e.g. 1,7,20")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bodies = real_bodies(args.conversations, args.turns)
    n = len(bodies)
    print(
        f"{n:,} call bodies from a {args.conversations} × {args.turns} sweep; CPU µs per call, min of {args.repeat}"
    )
    print("calls per commit  without bodies  with bodies  bodies cost  of which at close")
    for per_commit in (int(x) for x in args.per_commit.split(",")):
        without = min(replay(bodies, keep=False, per_commit=per_commit) for _ in range(args.repeat))
        parts = min(
            (replay_parts(bodies, keep=True, per_commit=per_commit) for _ in range(args.repeat)), key=sum
        )
        with_ = sum(parts)
        print(
            f"{per_commit:>16}  {without / n * 1e6:>14.1f}  {with_ / n * 1e6:>11.1f}"
            f"  {(with_ - without) / n * 1e6:>11.1f}  {parts[1] / n * 1e6:>17.1f}"
        )


if __name__ == "__main__":
    main()
