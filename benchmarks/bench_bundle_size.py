"""What a bundle (`vera view RUN --bundle OUT`) weighs with call bodies against without
them, by conversation length: an offline sweep per length (both offline chatbots ×
personas, every conversation exactly T messages, judged once), each bundled twice.

    .venv/bin/python benchmarks/bench_bundle_size.py [--personas 20] [--turns 10,20,40]

A call's request holds the whole conversation so far, so written out in full a
conversation's bodies grow with the square of its turns; the bundle writes each body as
copies of the ones before it (or of one page's bodies that every page may copy from) and
its new text (vera/viewer/delta.py). The "in full" column is what the pages would weigh
with every body's markup in them, as bundles held them before (the bodies' files read
back, as the page does, and added to the pages).
Not a test: it measures and prints (benchmarks/README.md quotes it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _config(path: Path, turns: int) -> Path:
    """configs/offline.toml with every conversation `turns` messages long."""
    text = (ROOT / "configs" / "offline.toml").read_text()
    text = text.replace('"../', f'"{ROOT.as_posix()}/')
    text = text.replace("max_turns = 30", f"max_turns = {turns}").replace(
        "min_turns = 10", f"min_turns = {turns}"
    )
    path.write_text(text)
    return path


def _vera(*args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "vera", *args], capture_output=True, text=True, env={**os.environ}
    )
    if done.returncode not in (0,):
        sys.exit(f"vera {args[0]} failed: {done.stderr.strip()}")
    return time.perf_counter() - started


def make_run(base: Path, turns: int, personas: int) -> Path:
    """An offline run of `personas` conversations of `turns` messages each, in `base`/run."""
    run = base / "run"
    config = _config(base / "run.toml", turns)
    _vera("run", "--config", str(config), "--limit-personas", str(personas), "--out", str(run), "--quiet")
    return run


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _read(path: Path, name: str) -> Any:
    return json.loads(path.read_text().removeprefix(f"window.{name} = ").removesuffix(";\n"))


def _decoded(encoded: list[list[Any]], before: list[bytes]) -> list[bytes]:
    """Texts `encoded` as UTF-16 units, after texts `before`: as the page slices them."""
    texts = list(before)
    for ops in encoded:
        done = b""
        i = 0
        while i < len(ops):
            if isinstance(ops[i], str):
                done += ops[i].encode("utf-16-le")
                i += 1
            else:
                source = done if ops[i] == len(texts) else texts[ops[i]]
                done += source[2 * ops[i + 1] : 2 * (ops[i + 1] + ops[i + 2])]
                i += 3
        texts.append(done)
    return texts[len(before) :]


def _in_full(bundle: Path) -> int:
    """The bodies' markup as UTF-8, every body whole (as the page puts them back)."""
    shared = _decoded(_read(bundle / "runs" / "0" / "bodies.js", "veraSharedBodies"), [])
    total = sum(len(t.decode("utf-16-le").encode()) for t in shared)
    for data in (bundle / "runs" / "0" / "bodies").glob("*.js"):
        own = _read(data, "veraCallBodies")
        texts = _decoded(own["texts"], shared if own["shared"] else [])
        total += sum(len(t.decode("utf-16-le").encode()) for t in texts)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--personas", type=int, default=20)
    parser.add_argument("--turns", default="10,20,40", help="messages per conversation, comma-separated")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for turns in (int(t) for t in args.turns.split(",")):
            base = Path(tmp) / str(turns)
            base.mkdir()
            run = make_run(base, turns, args.personas)
            t_with = _vera("view", str(run), "--bundle", str(base / "with"))
            t_without = _vera("view", str(run), "--bundle", str(base / "without"), "--no-call-bodies")
            pages = _size(base / "with" / "runs" / "0" / "conversations")
            bodies = _size(base / "with" / "runs" / "0" / "bodies")
            bodies += (base / "with" / "runs" / "0" / "bodies.js").stat().st_size
            with_, without = _size(base / "with"), _size(base / "without")
            full = with_ - bodies + _in_full(base / "with")
            rows.append((turns, _size(run), without, with_, full, t_with, t_without, pages, bodies))
    conversations = 2 * args.personas
    print(f"{conversations} offline conversations per length, each judged once; sizes in MB (10^6 bytes)")
    print(
        "| messages | run | bundle without bodies | with bodies | ratio | bodies in full (before) | ratio | "
        "pages / bodies' files | s with / without |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    mb = 1e6
    for turns, run_size, without, with_, full, t_with, t_without, pages, bodies in rows:
        print(
            f"| {turns} | {run_size / mb:.1f} | {without / mb:.2f} | {with_ / mb:.2f} | {with_ / without:.2f}× | "
            f"{full / mb:.1f} | {full / without:.1f}× | {pages / mb:.2f} / {bodies / mb:.2f} | "
            f"{t_with:.1f} / {t_without:.1f} |"
        )


if __name__ == "__main__":
    main()
