"""How fast a big run opens and resumes: a synthetic run directory of N finished
conversations (each judged), then the time to open its store, to resume its sweep (all
work reused), and, for comparison, to decode every record as vera did before the store
kept an index.

    .venv/bin/python benchmarks/bench_resume.py                   # 100,000 conversations
    .venv/bin/python benchmarks/bench_resume.py --conversations 10000 --json out.json

The run is made from the built-in offline configuration's plan (its job and judgement
ids are the ones `vera run --resume` looks for), with conversations of `--turns` turns
of placeholder text and judgements rating every rubric dimension. The transcripts are
synthetic: the figures are about reading files, not about any model.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import current_rss_kb  # noqa: E402
from vera.app import RunFacts  # noqa: E402
from vera.clients.pool import ClientPool  # noqa: E402
from vera.engine import Inputs, SweepResult, plan_sweep, run_sweep  # noqa: E402
from vera.inputs._config import load_config  # noqa: E402
from vera.inputs._profiles import load_profiles  # noqa: E402
from vera.records import Conversation, DimensionRating, JudgeAnswer, Judgement, Turn  # noqa: E402
from vera.standins import StandIns  # noqa: E402
from vera.store._writer import CONVERSATIONS, JUDGEMENTS, RunStore, read_records  # noqa: E402

CONFIG = ROOT / "configs" / "offline.toml"
FILLER = "This is placeholder text standing in for one turn of a conversation. " * 3


def write_run(run_dir: Path, conversations: int, turns: int) -> dict[str, float]:
    """Write a finished run of `conversations` judged conversations; return file sizes."""
    cfg = load_config(str(CONFIG))
    inputs = Inputs.load(cfg)
    per_seed = len(inputs.selected_personas()) * len(cfg.chatbots) * len(cfg.user_agents)
    cfg.seeds = list(range(1, math.ceil(conversations / per_seed) + 1))
    pool = ClientPool(load_profiles(cfg.path(cfg.providers)), stand_ins=StandIns())
    sweep = plan_sweep(inputs, pool, limit=conversations)
    dims = inputs.rubric.dimensions
    store = RunStore(run_dir)
    store.write_manifest(sweep.manifest(run_dir.name))
    text = [Turn("user" if t % 2 == 0 else "chatbot", FILLER) for t in range(turns)]
    for job in sweep.jobs:
        store.add_conversation(job.record(turns=text))
        for slot in sweep.slots:
            store.add_judgement(
                Judgement(
                    id=sweep.judgement_id(job.id, slot),
                    conversation_id=job.id,
                    judge=slot.ref,
                    instance=slot.instance,
                    status="complete",
                    answers=[
                        JudgeAnswer(question_id=f"q{i}", dimension=d, answer="No") for i, d in enumerate(dims)
                    ],
                    ratings=[DimensionRating(dimension=d, rating="Best Practice") for d in dims],
                )
            )
    store.close()
    return {name: (run_dir / name).stat().st_size / 1e6 for name in (CONVERSATIONS, JUDGEMENTS)}


async def resume(run_dir: Path) -> tuple[float, float, float, SweepResult]:
    """Open the run's store and run its sweep again: (open s, MB the open store holds,
    sweep s, result)."""
    cfg = load_config(str(CONFIG))
    inputs = Inputs.load(cfg)
    gc.collect()
    rss = current_rss_kb()
    started = time.perf_counter()
    store = RunStore(run_dir)
    opened = time.perf_counter() - started
    held = (current_rss_kb() - rss) / 1024
    manifest = store.read_manifest()
    assert manifest is not None
    cfg.seeds = manifest.seeds
    facts = RunFacts(inputs, store.read_conversation)
    async with ClientPool(load_profiles(cfg.path(cfg.providers)), stand_ins=StandIns(facts)) as pool:
        sweep = plan_sweep(inputs, pool, limit=manifest.jobs_planned)
        facts.plan(sweep.jobs)
        started = time.perf_counter()
        result = await run_sweep(sweep, store, pool, max_concurrency=cfg.max_concurrency)
        swept = time.perf_counter() - started
    store.close()
    return opened, held, swept, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vera-bench-resume-") as tmp:
        run_dir = Path(tmp) / "run"
        started = time.perf_counter()
        sizes = write_run(run_dir, args.conversations, args.turns)
        written = time.perf_counter() - started
        opened, held, swept, result = asyncio.run(resume(run_dir))
        assert result.conversations == 0 and result.judgements == 0, "a resume of a finished run did new work"
        started = time.perf_counter()
        eager = len(read_records(run_dir / CONVERSATIONS, Conversation))
        eager += len(read_records(run_dir / JUDGEMENTS, Judgement))
        decoded = time.perf_counter() - started
    fig = {
        "conversations": args.conversations,
        "turns": args.turns,
        "conversations_mb": round(sizes[CONVERSATIONS], 1),
        "judgements_mb": round(sizes[JUDGEMENTS], 1),
        "write_s": round(written, 2),
        "open_s": round(opened, 3),
        "resume_sweep_s": round(swept, 3),
        "conversations_reused": result.conversations_reused,
        "judgements_reused": result.judgements_reused,
        "decode_every_record_s": round(decoded, 2),
        "records_decoded": eager,
        "store_index_mb": round(held, 1),
    }
    for key, value in fig.items():
        print(f"{key:<28}{value}")
    if args.json:
        Path(args.json).write_text(json.dumps(fig, indent=2) + "\n")


if __name__ == "__main__":
    main()
