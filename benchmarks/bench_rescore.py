"""`vera score` on a finished run, again and again: wall time and conversation pages written.

    make eval OUT=/tmp/big SEEDS=20                       # 4,000 conversations, 1,808 pages
    .venv/bin/python benchmarks/bench_rescore.py /tmp/big  # --repeats 3 --json FILE

Each round runs `vera score RUN_DIR` as a user does (a fresh process: imports, reading
the records, the card, the pages), times it (wall, and the process's CPU) and counts the pages in conversations/ that were
written: a page written again (a temporary file renamed over it) has a new inode, so a
page rewritten with the same bytes counts too. The first round may find pages drawn by
another version of vera (or no note of what was drawn): it is reported on its own line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def pages(run: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (run / "conversations").glob("*.html")}


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes (the load of other work
    on the machine moves the wall time; this moves much less)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the figures to this file")
    args = ap.parse_args()
    rounds = []
    for i in range(args.repeats):
        before = pages(args.run_dir)
        os.sync()  # what earlier commands left unwritten is not this round's to flush
        cpu = _children_cpu()
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "vera", "score", str(args.run_dir)], capture_output=True, text=True
        )
        wall = time.perf_counter() - t
        cpu = _children_cpu() - cpu
        if proc.returncode != 0:
            sys.exit(f"vera score failed ({proc.returncode}): {proc.stderr.strip()}")
        after = pages(args.run_dir)
        written = sum(1 for name, sig in after.items() if before.get(name) != sig)
        rounds.append(
            {
                "round": i + 1,
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "pages": len(after),
                "pages_written": written,
            }
        )
        print(
            f"round {i + 1}: {wall:.2f} s wall, {cpu:.2f} s CPU, {written:,} of {len(after):,} pages written"
        )
    if args.json:
        args.json.write_text(json.dumps({"run_dir": str(args.run_dir), "rounds": rounds}, indent=2) + "\n")


if __name__ == "__main__":
    main()
