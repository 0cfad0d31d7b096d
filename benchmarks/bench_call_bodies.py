"""What keeping every call's body costs on disk: the same offline sweep run twice, with
call bodies (the default) and with `--no-call-bodies`, and the run directories' sizes
compared, file by file.

    .venv/bin/python benchmarks/bench_call_bodies.py [--personas 100] [--seeds 10]

Conversations = 2 offline chatbots × personas × seeds, each judged once; the offline
stand-ins send and answer what a model run would (the simulated user's full persona
prompt every turn, the judge's transcript with every question), so the bodies' size
per conversation is a real run's, give or take the length of the replies. Not a test:
it measures and prints (docs/running.md and benchmarks/README.md quote it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _size(run: Path) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for path in run.rglob("*"):
        if path.is_file():
            top = path.relative_to(run).parts[0]
            sizes[top] = sizes.get(top, 0) + path.stat().st_size
    return sizes


def _run(out: Path, personas: int, seeds: int, *flags: str) -> float:
    started = time.perf_counter()
    cmd = [sys.executable, "-m", "vera", "run", "--out", str(out), "--quiet"]
    cmd += ["--limit-personas", str(personas), "--seeds", str(seeds), *flags]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ})
    if done.returncode != 0:
        sys.exit(f"vera run failed: {done.stderr.strip()}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--personas", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kept, off = Path(tmp) / "kept", Path(tmp) / "off"
        t_kept = _run(kept, args.personas, args.seeds)
        t_off = _run(off, args.personas, args.seeds, "--no-call-bodies")
        a, b = _size(kept), _size(off)
        calls = len((kept / "calls.jsonl").read_bytes().splitlines())
    conversations = 2 * args.personas * args.seeds
    total_a, total_b = sum(a.values()), sum(b.values())
    print(f"{conversations:,} offline conversations, each judged once")
    print(f"{'file':<22}{'with bodies':>14}{'without':>14}")
    for name in sorted(set(a) | set(b), key=lambda n: -a.get(n, 0)):
        print(f"{name:<22}{a.get(name, 0):>14,}{b.get(name, 0):>14,}")
    print(f"{'run directory':<22}{total_a:>14,}{total_b:>14,}")
    print(f"ratio (with / without): {total_a / total_b:.2f}×")
    # Format 2 (`call_bodies.vlog`) or, from an earlier vera, format 1 (`.sqlite`).
    bodies = sum(size for name, size in a.items() if name.startswith("call_bodies"))
    print(
        f"call bodies per conversation: {bodies / conversations / 1024:.1f} KiB, per call: {bodies / calls:.0f} B"
    )
    print(f"run time: {t_kept:.1f} s with bodies, {t_off:.1f} s without")


if __name__ == "__main__":
    main()
