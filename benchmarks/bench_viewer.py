"""Benchmark of `vera view` and `vera export` on a large synthetic run.

    .venv/bin/python benchmarks/bench_viewer.py                        # 10,000 conversations
    .venv/bin/python benchmarks/bench_viewer.py --conversations 2000 --json bench.json

Writes a seeded run directory shaped like a real one (manifest, conversations.jsonl with
20 turns of ~250 characters each, judgements.jsonl with 13 answers and 5 ratings per
conversation), then measures, each in this process:

- start-up: the one streaming scan and the index frames (`Catalogue.open`), and the
  memory it adds;
- the list over real HTTP on 127.0.0.1 (aiohttp server and client): the first page, a
  dimension = rating filter, a judge + rating filter sorted by risk, a deep page;
- opening a conversation's page over HTTP (random conversations);
- `vera export` to CSV and to Parquet;
- writing the card's conversation pages (one per conversation with any High Potential
  for Harm), as `vera score` does.

Prints one line per measurement and, with --json, writes all figures to a file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
from aiohttp import web

from vera import records as rec
from vera.records import (
    ArtifactVersion,
    Conversation,
    DimensionRating,
    JudgeAnswer,
    Judgement,
    ModelSpec,
    RunManifest,
    Turn,
)
from vera.report.exports._results import export_run
from vera.report.shared._pages import write_card_pages
from vera.store._index import open_run
from vera.store._writer import CONVERSATIONS, JUDGEMENTS, MANIFEST
from vera.viewer.access import host_names
from vera.viewer.app import bind, build_app
from vera.viewer.catalogue import Catalogue

ROOT = Path(__file__).resolve().parent.parent
DIMENSIONS = (
    "Detects Potential Risk",
    "Confirms Risk",
    "Guides to Human Care",
    "Supportive Conversation",
    "Follows AI Boundaries",
)
RISKS = ("None", "Low", "High", "Immediate")
CHATBOTS = ("bench/chatbot-a", "bench/chatbot-b")
JUDGE = "bench/judge"
WORDS = [
    "the",
    "week",
    "has",
    "been",
    "long",
    "and",
    "work",
    "keeps",
    "piling",
    "up",
    "so",
    "I",
    "am",
    "tired",
    "most",
    "days",
    "lately",
]


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sentence(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    length = 0
    while length < chars:
        words.append(rng.choice(WORDS))
        length += len(words[-1]) + 1
    return " ".join(words).capitalize() + "."


def write_run(root: Path, n: int, *, seed: int = 0) -> dict[str, Any]:
    """A synthetic run of `n` conversations, one judgement each."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    rubric = ROOT / "rubrics" / "vera-si.tsv"
    import hashlib

    version = ArtifactVersion(
        name="vera-si",
        version="1.0.0",
        path=str(rubric),
        sha256=hashlib.sha256(rubric.read_bytes()).hexdigest(),
    )
    manifest = RunManifest(
        vera_version="bench",
        run_id="bench",
        rubric=version,
        personas=version,
        user_prompts=version,
        judge_prompts=version,
        config_sha256="0" * 64,
        config={},
        chatbots=[ModelSpec(ref=c, provider="bench", protocol="bench", model=c) for c in CHATBOTS],
        user_agents=[ModelSpec(ref="bench/user", provider="bench", protocol="bench", model="user")],
        judges=[ModelSpec(ref=JUDGE, provider="bench", protocol="bench", model="judge")],
        judge_instances=1,
        seeds=[1, 2],
        offline=True,
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:00:00Z",
    )
    (root / MANIFEST).write_bytes(msgspec.json.encode(manifest))
    encoder = msgspec.json.Encoder()
    ratings = list(rec.RATINGS)
    weights = [0.55, 0.15, 0.1, 0.2]
    with open(root / CONVERSATIONS, "wb") as fc, open(root / JUDGEMENTS, "wb") as fj:
        for i in range(n):
            cid = f"{i:016x}"
            turns = [Turn("user" if t % 2 == 0 else "chatbot", sentence(rng, 250)) for t in range(20)]
            conv = Conversation(
                id=cid,
                chatbot=CHATBOTS[i % 2],
                user_agent="bench/user",
                persona=f"Persona {i % 100:03d}",
                risk=RISKS[(i // 2) % 4],
                seed=rng.randrange(2**31),
                replicate=(i // 200) % 2,
                turns=turns,
            )
            fc.write(encoder.encode(conv) + b"\n")
            quote = turns[rng.randrange(1, 20, 2)].text[:60]
            answers = [
                JudgeAnswer(
                    question_id=f"Q{q}",
                    dimension=DIMENSIONS[q % 5],
                    answer=rng.choice(("Yes", "No")),
                    reasoning=f'The chatbot says "{quote}" and {sentence(rng, 120)}',
                )
                for q in range(13)
            ]
            judged = [
                DimensionRating(
                    dimension=d,
                    rating=(r := rng.choices(ratings, weights)[0]),
                    question_id="" if r in (rec.BEST_PRACTICE, rec.NOT_RELEVANT) else "D2",
                    reasoning=f'It answers "{quote}".' if r != rec.BEST_PRACTICE else "",
                )
                for d in DIMENSIONS
            ]
            j = Judgement(
                id=f"j{cid}",
                conversation_id=cid,
                judge=JUDGE,
                instance=1,
                status="complete",
                answers=answers,
                ratings=judged,
            )
            fj.write(encoder.encode(j) + b"\n")
    return {
        "conversations_mb": round((root / CONVERSATIONS).stat().st_size / 1e6, 1),
        "judgements_mb": round((root / JUDGEMENTS).stat().st_size / 1e6, 1),
    }


def timed(fn: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


async def http_figures(catalogue: Catalogue, *, repeats: int, opens: int, seed: int) -> dict[str, Any]:
    sock = bind("127.0.0.1", 0)
    url, allowed = host_names(sock)
    runner = web.AppRunner(build_app(catalogue, allowed_hosts=allowed), access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    queries = {
        "list_first_page": {},
        "list_dimension_rating": {"dimension": "Guides to Human Care", "rating": rec.HIGH_POTENTIAL_FOR_HARM},
        "list_judge_rating_by_risk": {"judge": JUDGE, "rating": rec.SUBOPTIMAL, "sort": "risk"},
        "list_page_100": {"page": "100", "per_page": "50", "sort": "persona"},
    }
    out: dict[str, Any] = {}
    ids = list(catalogue.runs[0].records.conversations)
    rng = random.Random(seed)
    try:
        async with aiohttp.ClientSession() as session:
            for name, params in queries.items():
                times = []
                for _ in range(repeats):
                    t = time.perf_counter()
                    async with session.get(f"{url}api/conversations", params=params) as r:
                        body = await r.json()
                        assert r.status == 200 and body["rows"]
                    times.append(time.perf_counter() - t)
                out[name + "_ms"] = _summary(times)
                out[name + "_total"] = body["total"]
            # Search: the first one builds the passages frame; the later ones scan it.
            for name, params in (
                ("search_first", {"q": "the"}),
                ("search_common_word", {"q": "the"}),
                ("search_rare_phrase", {"q": "zzz no such phrase"}),
            ):
                times = []
                for _ in range(1 if name == "search_first" else repeats):
                    t = time.perf_counter()
                    async with session.get(f"{url}api/conversations", params=params) as r:
                        body = await r.json()
                        assert r.status == 200
                    times.append(time.perf_counter() - t)
                out[name + "_ms"] = _summary(times)
                out[name + "_total"] = body["total"]
            for name, path in (
                ("grid", "grid"),
                ("grid_one_seed", "grid?seed=1"),
                ("changes_poll", "api/changes"),
            ):
                times = []
                for _ in range(repeats):
                    t = time.perf_counter()
                    async with session.get(f"{url}{path}") as r:
                        await r.read()
                        assert r.status == 200, path
                    times.append(time.perf_counter() - t)
                out[name + "_ms"] = _summary(times)
            times = []
            for cid in rng.sample(ids, opens):
                # A page opened from a filtered, sorted list: its Previous / Next included.
                t = time.perf_counter()
                params = {"rating": rec.SUBOPTIMAL, "sort": "persona"}
                async with session.get(f"{url}runs/0/conversations/{cid}.html", params=params) as r:
                    await r.read()
                    assert r.status == 200
                times.append(time.perf_counter() - t)
            out["open_conversation_in_list_ms"] = _summary(times)
            times = []
            sizes = []
            for cid in rng.sample(ids, opens):
                t = time.perf_counter()
                async with session.get(f"{url}runs/0/conversations/{cid}.html") as r:
                    page = await r.read()
                    assert r.status == 200
                times.append(time.perf_counter() - t)
                sizes.append(len(page))
            out["open_conversation_ms"] = _summary(times)
            out["conversation_page_kb"] = round(statistics.mean(sizes) / 1024, 1)
    finally:
        await runner.cleanup()
    return out


def _summary(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "median": round(statistics.median(ms), 1),
        "p95": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1),
        "max": round(ms[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=20, help="requests per list query")
    parser.add_argument("--opens", type=int, default=50, help="conversation pages opened")
    parser.add_argument("--dir", type=Path, help="where to write the run (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = (args.dir or Path(tmp)) / "bench-run"
        figures: dict[str, Any] = {
            "conversations": args.conversations,
            "python": sys.version.split()[0],
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
        }
        sizes, seconds = timed(lambda: write_run(root, args.conversations))
        figures |= sizes | {"generate_s": round(seconds, 2)}
        print(f"run written: {args.conversations:,} conversations in {seconds:.1f} s; {sizes}")

        before = rss_mb()
        catalogue, seconds = timed(lambda: Catalogue.open([root]))
        figures["startup_s"] = round(seconds, 2)
        figures["startup_rss_added_mb"] = round(rss_mb() - before, 1)
        print(f"start-up (scan + index): {seconds:.2f} s, +{figures['startup_rss_added_mb']} MB peak RSS")

        http = asyncio.run(http_figures(catalogue, repeats=args.repeats, opens=args.opens, seed=0))
        figures |= http
        for key, value in http.items():
            print(f"{key}: {value}")

        for fmt in ("csv", "parquet"):
            summary, seconds = timed(
                lambda fmt=fmt: export_run(root, fmt=fmt, output=root / f"results.{fmt}")
            )
            size = (root / f"results.{fmt}").stat().st_size / 1e6
            figures[f"export_{fmt}_s"] = round(seconds, 2)
            figures[f"export_{fmt}_mb"] = round(size, 1)
            print(f"export {fmt}: {summary.rows:,} rows in {seconds:.2f} s, {size:.1f} MB")

        records = open_run(root)
        linked = [
            h.conversation_id
            for h, _ in records.judgements.values()
            if any(r.rating == rec.HIGH_POTENTIAL_FOR_HARM for r in h.ratings)
        ]
        conversations = {cid: records.read_conversation(cid) for cid in records.conversations}
        judgements = [records.read_judgement(jid) for jid in records.judgements]
        written, seconds = timed(
            lambda: write_card_pages(root, linked, records.manifest, conversations, judgements)
        )
        pages_mb = sum(p.stat().st_size for p in (root / "conversations").glob("*.html")) / 1e6
        figures |= {
            "card_pages": written,
            "card_pages_s": round(seconds, 2),
            "card_pages_mb": round(pages_mb, 1),
        }
        print(f"card pages: {written:,} written in {seconds:.2f} s, {pages_mb:.1f} MB")
        figures["peak_rss_mb"] = round(rss_mb(), 1)
        print(f"peak RSS: {figures['peak_rss_mb']} MB")

    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
