"""What `vera view` sends for a conversation's page, with its call bodies served apart, by
conversation length: an offline sweep per length (both offline chatbots × personas, every
conversation exactly T messages, judged once), or runs you name, each served by
`vera view` on 127.0.0.1 and every page asked for.

    .venv/bin/python benchmarks/bench_served_pages.py [--personas 20] [--turns 10,20,40,80]
    .venv/bin/python benchmarks/bench_served_pages.py --run /tmp/eval      # a run of yours

A call's request holds the whole conversation so far, so with every body written into the
page a page grew with the square of its turns. The page now holds each call's summary
line; its bodies come from /runs/<k>/bodies/<id>.js (delta copies, vera/viewer/delta.py)
when one is opened. "Before" is the page with every body put back in its place from that
file, which is the page the server sent before byte for byte (tests/viewer/
test_served_bodies.py holds the two equal) less the one script tag it adds.
Not a test: it measures and prints (benchmarks/README.md quotes it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_bundle_size import _decoded, make_run

_WAIT = re.compile(r'<div class="call-wait" data-body="(\d+)"></div>')
_TAG = '<script src="../../../static/bodies.js" defer></script>\n'


def _get(url: str) -> tuple[bytes, float]:
    started = time.perf_counter()
    with urllib.request.urlopen(url) as r:
        body: bytes = r.read()
    return body, time.perf_counter() - started


def _before(page: str, script: bytes) -> int:
    """The page's bytes with every body in it, as the server sent it before."""
    data: dict[str, Any] = json.loads(
        script.decode().removeprefix("window.veraCallBodies = ").removesuffix(";\n")
    )
    texts = [t.decode("utf-16-le") for t in _decoded(data["texts"], [])]
    parts = _WAIT.split(page.replace(_TAG, "", 1))
    return len("".join(texts[int(p)] if n % 2 else p for n, p in enumerate(parts)).encode())


def measure(run: Path) -> dict[str, Any]:
    """Serve `run` and ask for every page and every page's bodies' file."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "vera", "view", str(run), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    try:
        url = ""
        for line in proc.stdout:
            m = re.search(r"serving at (http://\S+)", line)
            if m:
                url = m.group(1)
                break
        if not url:
            sys.exit(f"vera view did not start: {proc.communicate()}")
        ids = [json.loads(x)["id"] for x in (run / "conversations.jsonl").read_text().splitlines()]
        pages, before, files, page_s, file_s = [], [], [], [], []
        for cid in dict.fromkeys(ids):
            page, took = _get(f"{url}runs/0/conversations/{cid}.html")
            pages.append(len(page))
            page_s.append(took)
            if not _WAIT.search(page.decode()):
                before.append(len(page))
                continue
            script, took = _get(f"{url}runs/0/bodies/{cid}.js")
            files.append(len(script))
            file_s.append(took)
            before.append(_before(page.decode(), script))
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    return {
        "pages": len(pages),
        "page_median": statistics.median(pages),
        "page_max": max(pages),
        "before_median": statistics.median(before),
        "before_max": max(before),
        "file_median": statistics.median(files) if files else 0,
        "total": sum(pages),
        "total_before": sum(before),
        "page_ms": 1000 * statistics.median(page_s),
        "file_ms": 1000 * statistics.median(file_s) if file_s else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--personas", type=int, default=20)
    parser.add_argument("--turns", default="10,20,40,80", help="messages per conversation, comma-separated")
    parser.add_argument("--run", action="append", default=[], help="measure this run instead (repeatable)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.run:
            targets = [(Path(r).name, Path(r)) for r in args.run]
        else:
            targets = []
            for turns in (int(t) for t in args.turns.split(",")):
                base = Path(tmp) / str(turns)
                base.mkdir()
                targets.append((str(turns), make_run(base, turns, args.personas)))
        for label, run in targets:
            rows.append((label, measure(run)))
    kb = 1e3
    print("sizes in KB (10^3 bytes); a page's bodies' file is sent when one of its bodies is opened")
    print(
        "| run / messages | pages | page: median / max | before: median / max | ratio (median) | "
        "bodies' file: median | all pages / before (MB) | ms: page / bodies' file |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, r in rows:
        print(
            f"| {label} | {r['pages']} | {r['page_median'] / kb:.1f} / {r['page_max'] / kb:.1f} | "
            f"{r['before_median'] / kb:.0f} / {r['before_max'] / kb:.0f} | "
            f"{r['before_median'] / r['page_median']:.1f}× | {r['file_median'] / kb:.1f} | "
            f"{r['total'] / 1e6:.1f} / {r['total_before'] / 1e6:.1f} | {r['page_ms']:.0f} / {r['file_ms']:.0f} |"
        )


if __name__ == "__main__":
    main()
