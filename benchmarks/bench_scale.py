"""The scale record: `vera bench` at growing sweep sizes in the default configuration
(response cache, event log and progress display on, as `vera run` has them), each size
in a fresh process, then one Markdown table row per size.

    .venv/bin/python benchmarks/bench_scale.py                        # 1k, 10k, 30k, 100k
    .venv/bin/python benchmarks/bench_scale.py --sizes 1000,10000 --json scale.json

Every size runs the same work per conversation (`--turns`, `--latency-ms`) at the same
concurrency, so only the length of the sweep changes: wall time should grow with it,
while calls/s, CPU per call and peak RSS should not.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(size: int, args: argparse.Namespace, folder: Path) -> dict:
    out = folder / f"{size}.json"
    command = [
        *(sys.executable, "-m", "vera", "bench", "--conversations", str(size)),
        *("--turns", str(args.turns), "--latency-ms", str(args.latency_ms)),
        *("--concurrency", str(args.concurrency), "--json", str(out)),
    ]
    print("$ vera bench " + " ".join(command[4:-2]), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def table(results: list[dict]) -> str:
    rows = [
        "| conversations | calls | wall s | calls/s | efficiency | client CPU ms/call "
        "| RSS at start MB | peak RSS MB | peak vs smallest |",
        "|" + " --- |" * 9,
    ]
    first = results[0]["rss_mb_peak"]
    for f in results:
        rows.append(
            f"| {f['scenario']['conversations']:,} | {f['calls']:,} | {f['wall_s']:.1f} | {f['calls_per_s']:,.0f} "
            f"| {f['efficiency']:.1%} | {f['cpu_ms_per_call']:.3f} | {f['rss_mb_start']:.0f} "
            f"| {f['rss_mb_peak']:.0f} | {f['rss_mb_peak'] / first - 1:+.1%} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,30000,100000")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--json", help="write every size's figures to this file")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="vera-bench-scale-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            results.append(run(size, args, Path(tmp)))
            if args.json:  # kept as it goes: a long sweep's figures survive a later failure
                Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
