"""What `vera compare --by-seed --html` writes at many seeds: the page's bytes, what of it
shows before any fold is opened, and how long the command takes.

    .venv/bin/python benchmarks/bench_compare_seeds.py                 # 20 seeds, 20 personas
    .venv/bin/python benchmarks/bench_compare_seeds.py --seeds 10 --json out.json
    .venv/bin/python benchmarks/bench_compare_seeds.py --run DIR       # an existing run

Makes an offline run (both stand-in chatbots, `--seeds N`, the first `--personas`
personas; the stand-ins need about 16 for their scores to be defined), then runs
`vera compare RUN --by-seed --html` as a user does (a subprocess, so the figures include
start-up) and measures the page: its bytes, the bytes outside closed <details> folds
(what the browser lays out before the reader opens one), its pairs, and the biggest
parts (the charts, the pair tables). The same script run with an older vera on
PYTHONPATH measures that version on the same run (--run).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

VERA = [sys.executable, "-m", "vera"]
FOLD = re.compile(r"<details[^>]*>(<summary>.*?</summary>).*?</details>", re.S)
IMAGE = re.compile(r'src="data:image/svg\+xml;base64,[^"]*"')


def measure(page: str) -> dict[str, Any]:
    first_view = FOLD.sub(r"\1", page)
    return {
        "page_bytes": len(page.encode()),
        "first_view_bytes": len(first_view.encode()),
        "chart_bytes": sum(len(m.group(0)) for m in IMAGE.finditer(page)),
        "tables": page.count("<table>"),
        "tables_in_first_view": first_view.count("<table>"),
        "folds": page.count("<details"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--personas", type=int, default=20)
    parser.add_argument("--run", type=Path, help="measure on this run instead of making one")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run
        if run is None:
            run = Path(tmp) / "run"
            subprocess.run(
                [*VERA, "run", "--out", str(run), "--seeds", str(args.seeds),
                 "--limit-personas", str(args.personas), "--quiet"],
                check=True, capture_output=True,
            )  # fmt: skip
        html = Path(tmp) / "compare.html"
        t = time.perf_counter()
        done = subprocess.run(
            [
                *VERA,
                "compare",
                str(run),
                "--by-seed",
                "--html",
                str(html),
                "--json",
                str(Path(tmp) / "c.json"),
            ],
            check=True,
            capture_output=True,
        )
        wall = time.perf_counter() - t
        assert done.returncode == 0
        data = json.loads((Path(tmp) / "c.json").read_text())
        figures = {
            "seeds": len({u["seed"] for u in data["units"]}),
            "units": len(data["units"]),
            "pairs": len(data["comparisons"]),
            "compare_wall_s": wall,
            **measure(html.read_text()),
        }
    for k, v in figures.items():
        print(f"{k:22} {v:,.2f}" if isinstance(v, float) else f"{k:22} {v:,}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
