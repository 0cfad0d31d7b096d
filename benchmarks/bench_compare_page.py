"""Benchmark of the viewer's /compare page on a synthetic run (bench_viewer's run: 2
chatbots, 100 personas, 2 seeds).

    .venv/bin/python benchmarks/bench_compare_page.py                    # 2,000 conversations
    .venv/bin/python benchmarks/bench_compare_page.py --conversations 10000 --json out.json

Measures, over real HTTP on 127.0.0.1 (the viewer's app on a real socket, as `vera view`
serves it, with its comparisons started when the server starts):

- the first answer to /compare and /compare?by_seed=1 (the frame, while the bootstrap
  runs off the request path);
- how long after the server started each comparison is served whole (polling every
  50 ms, as the frame's reload would);
- a comparison asked for once it is there (the cache);
- without the start-up warm-up, from the first request until the page is whole;
- the comparison itself, in this process after the above (libraries loaded): wall and
  CPU seconds, by chatbot then by seed (which reuses the runs as read), so figures taken
  on a loaded machine can be told apart from the work done.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).parent))
from bench_viewer import write_run

from vera.viewer.access import host_names
from vera.viewer.app import bind, build_app
from vera.viewer.catalogue import Catalogue
from vera.viewer.compare import compare_page


async def until_whole(http: aiohttp.ClientSession, url: str, started: float) -> tuple[float, float]:
    """(seconds to the first answer, seconds from `started` until the page is whole)."""
    first = None
    while True:
        t = time.perf_counter()
        async with http.get(url) as r:
            await r.read()
            if first is None:
                first = time.perf_counter() - t
            if r.status != 202:
                assert r.status == 200, r.status
                return first, time.perf_counter() - started
        await asyncio.sleep(0.05)


async def measure(catalogue: Catalogue, *, warm: bool) -> dict[str, Any]:
    sock = bind("127.0.0.1", 0)
    url, allowed = host_names(sock)
    runner = web.AppRunner(build_app(catalogue, allowed_hosts=allowed, warm=warm), access_log=None)
    started = time.perf_counter()
    await runner.setup()
    await web.SockSite(runner, sock).start()
    out: dict[str, Any] = {}
    try:
        async with aiohttp.ClientSession() as http:
            for name, path in (("by_chatbot", "compare"), ("by_seed", "compare?by_seed=1")):
                since = time.perf_counter() if not warm else started
                first, whole = await until_whole(http, url + path, since)
                t = time.perf_counter()
                async with http.get(url + path) as r:
                    await r.read()
                cached = time.perf_counter() - t
                out[name] = {"first_answer_s": first, "whole_after_s": whole, "cached_s": cached}
    finally:
        await runner.cleanup()
    return out


def compute(catalogue: Catalogue) -> dict[str, Any]:
    reads: dict[Any, Any] = {}
    out = {}
    for name, by_seed in (("by_chatbot", False), ("by_seed", True)):
        wall, cpu = time.perf_counter(), time.process_time()
        status, _ = compare_page(catalogue, by_seed=by_seed, reads=reads)
        assert status == 200, status
        out[name] = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "run"
        write_run(root, args.conversations)
        catalogue = Catalogue.open([root])
        # The statistics libraries load once per process: the first comparison pays it.
        t = time.perf_counter()
        import scipy.stats  # noqa: F401

        imports = time.perf_counter() - t
        figures = {
            "conversations": args.conversations,
            "first_import_s": imports,
            "warm_at_start": asyncio.run(measure(catalogue, warm=True)),
            "no_warm_up": asyncio.run(measure(Catalogue.open([root]), warm=False)),
            "compute": compute(Catalogue.open([root])),
        }
    for mode in ("warm_at_start", "no_warm_up"):
        for name, f in figures[mode].items():
            print(
                f"{mode:14} {name:10} first answer {f['first_answer_s'] * 1000:7.1f} ms · whole after "
                f"{f['whole_after_s']:5.2f} s · cached {f['cached_s'] * 1000:6.1f} ms"
            )
    for name, f in figures["compute"].items():
        print(f"compute        {name:10} wall {f['wall_s']:5.2f} s · cpu {f['cpu_s']:5.2f} s")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
