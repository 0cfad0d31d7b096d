"""Where `vera bench --floor`'s CPU goes, split by what does the work, from py-spy samples.

`vera bench --floor` says how much more CPU a call costs in vera than in a bare aiohttp
client; this says where that excess is. It runs one side's rounds alone (the same rounds
`bench_cpu.py` alternates) under `py-spy record`, then splits the samples of the event
loop's thread by the innermost frame that names what was working: the loop itself and the
socket (uvloop's C code and the send system call: py-spy attributes them to the Python
frame that entered them), aiohttp, asyncio, the floor's own code, and vera's by area.
Shares, not times: py-spy slows the process it samples, but every part alike, so the
split holds where the absolute figures do not, and it does not move with the machine's
load as CPU per call does.

    pip install py-spy    # not a dependency of vera: a tool for this one job
    py-spy record -r 1000 -f raw -o vera.raw -- .venv/bin/python benchmarks/profile_split.py run vera
    py-spy record -r 1000 -f raw -o floor.raw -- .venv/bin/python benchmarks/profile_split.py run floor
    .venv/bin/python benchmarks/profile_split.py split vera.raw floor.raw

`run` takes `--rounds` (default 4) of 100 conversations × 20 turns at 200 ms, as `vera
bench --floor` does.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# vera's modules by the part of a call's work they do, first match wins.
AREAS: list[tuple[str, tuple[str, ...]]] = [
    ("vera: call bodies", ("vera/store/_bodylog.py", "vera/store/_bodies.py", "vera/app/_session.py")),
    ("vera: records (calls.jsonl, conversations)", ("vera/store/",)),
    ("vera: JSON encode and decode", ("vera/clients/_transport.py",)),
    (
        "vera: protocol (request body, reply)",
        ("vera/clients/openai.py", "vera/clients/_provider.py", "vera/clients/structured.py"),
    ),
    ("vera: client stack (limits, prices, recorder)", ("vera/clients/",)),
    ("vera: turn loop (prompts, histories)", ("vera/engine/", "vera/inputs/")),
    ("vera: other", ("vera/",)),
]
# Frames of set-up and tear-down, outside the measured window of a round.
SETUP = (
    "Inputs.load",
    "write_profiles",
    "open_pool",
    "plan_sweep",
    "load_profiles",
    "RunSession.__aenter__",
    "RunFacts",
    "_stats (",
    "TemporaryDirectory",
)
_FILE = re.compile(r"\((.*?):\d+\)$")


def category(leaf: str) -> str:
    """What the innermost frame of a sample was doing."""
    if leaf.startswith("Runner.run "):
        return "event loop and sockets (uvloop, C)"
    if "StreamWriter._writelines" in leaf:
        return "socket writes (send)"
    match = _FILE.search(leaf)
    path = match.group(1) if match else leaf
    if "/vera/" in path or path.startswith("vera/"):
        path = path[path.index("vera/") :]
        return next(name for name, prefixes in AREAS if path.startswith(prefixes))
    if any(lib in path for lib in ("aiohttp", "yarl", "multidict", "aiohappyeyeballs")):
        return "aiohttp"
    if "asyncio" in path:
        return "asyncio"
    if "bench_floor.py" in path:
        return "floor: its own code (JSON, loop)"
    return "other"


def split(raw: Path) -> Counter[str]:
    """Samples of the event loop's thread inside a round's window, by category."""
    counts: Counter[str] = Counter()
    for line in raw.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if not any("_run_on_uvloop" in f for f in frames):
            continue  # another thread, or the process starting
        if any(s in f for f in frames for s in SETUP):
            continue
        counts[category(frames[-1])] += int(n)
    return counts


def render(files: list[Path]) -> str:
    splits = [split(f) for f in files]
    totals = [sum(s.values()) for s in splits]
    names = sorted(
        {c for s in splits for c in s},
        key=lambda c: -max(s[c] / t for s, t in zip(splits, totals, strict=True)),
    )
    head = "| part | " + " | ".join(f.stem for f in files) + " |"
    lines = [head, "| --- |" + " ---: |" * len(files)]
    for name in names:
        cells = [
            f"{s[name]:,} ({s[name] / t:.1%})" if s[name] else "" for s, t in zip(splits, totals, strict=True)
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| **samples** | " + " | ".join(f"{t:,}" for t in totals) + " |")
    if len(files) > 1 and totals[-1]:
        lines.append("")
        lines.append(
            "; ".join(
                f"{f.stem} / {files[-1].stem} = {t / totals[-1]:.2f}"
                for f, t in zip(files[:-1], totals[:-1], strict=True)
            )
        )
    return "\n".join(lines)


def run(side: str, rounds: int) -> None:
    """`rounds` rounds of one side of `vera bench --floor`, for py-spy to record."""
    import os

    sys.path.insert(0, str(ROOT))
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

    raise_open_files_limit()
    os.environ[KEY_ENV] = KEY
    opts = BenchOptions()
    calls = opts.conversations * opts.turns
    with fake_server(opts.latency_ms, None) as server:
        for i in range(1, rounds + 1):
            if side == "vera":
                with tempfile.TemporaryDirectory(prefix="vera-profile-") as tmp:
                    cpu_ms = _run_on_uvloop(measure(opts, server, Path(tmp)))["cpu_ms_per_call"]
            else:
                _, cpu = _run_on_uvloop(
                    one_run(server.base_url, opts.conversations, opts.turns, same_wire=True)
                )
                cpu_ms = cpu * 1000 / calls
            print(f"{side} round {i}: {cpu_ms:.3f} ms/call", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="one side's rounds, to run under py-spy record")
    r.add_argument("side", choices=["vera", "floor"])
    r.add_argument("--rounds", type=int, default=4)
    s = sub.add_parser("split", help="split py-spy raw files (vera's first, the floor's last)")
    s.add_argument("raw", nargs="+", type=Path)
    args = parser.parse_args()
    if args.command == "run":
        run(args.side, args.rounds)
        return
    for path in args.raw:
        if not path.is_file():
            sys.exit(f"error: {path}: no such file (write it with py-spy record -f raw -o {path})")
    print(render(args.raw))


if __name__ == "__main__":
    main()
