"""`vera bench --judge --batch`: the judge's money per judged conversation, live and in
batch mode, on the same transcripts-to-be and the same deterministic loopback server.

Both runs go through `vera run`'s own code (`execute_run`) against
`tests.fakes.batch.BatchSweepServer`: the sweep server of the tests (deterministic
replies, so the two runs simulate the same conversations and the judge answers them
alike) plus the OpenAI Files and Batches endpoints with the documented rules (one model
per file, unique custom_id, request and size limits, results in shuffled order). One
run judges live, the other with `[judge] mode = "batch"`; each run's money is read from
its `calls.jsonl`, as the card reads it. Wall time is reported as it is: a batch waits
for its polls (`--batch-poll-s` here; minutes to hours on a real provider).

Side by side, the reference tool's judge on the same transcripts: the live run's
conversations are imported (`vera judge --transcripts`) into two more runs judged with the
reference's own v1.1 rubric and judge prompts (configs/vera-mh-v1.1's judge prompts, which
read the reference's files from `--reference-data`, its v1.1 data folder), live and in
batch mode. The reference
tool asks its judge live, one rubric question per call with the whole transcript, which
is what these runs send; its figures are those of its prompts and its rubric's walk, on
the same server at the same prices. Without reference data the two columns are left out.

This needs a source checkout (the fakes live in tests/), like the rest of `vera bench`.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

PERSONAS = 6
# What the reference tool's judge reads from its data folder.
REFERENCE_FILES = (
    "rubric.tsv",
    "rubric_prompt_beginning.txt",
    "question_prompt.txt",
)  # seeds are added until there are at least the asked conversations


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def _one(
    mode: str, folder: Path, conversations: int, concurrency: int, poll_s: float
) -> dict[str, Any]:
    from tests.fakes.batch import BatchSweepServer
    from tests.fakes.sweep import write_sweep_config
    from vera.app import RunOptions, execute_run

    seeds = list(range(1, math.ceil(conversations / PERSONAS) + 1))
    extra = (
        f'[judge]\nmode = "batch"\nbatch_poll_s = {poll_s}\nbatch_collect_s = 0.05\n'
        if mode == "batch"
        else ""
    )
    with BatchSweepServer(polls_to_complete=3) as server:
        cfg = write_sweep_config(
            folder,
            server.base_url,
            personas=PERSONAS,
            seeds=json.dumps(seeds),
            extra=extra,
            max_concurrency=concurrency,
        )
        out = folder / "run"
        started = time.perf_counter()
        outcome = await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))
        wall = time.perf_counter() - started
        violations = list(server.violations)
        batches = len(server.created)
    calls = _jsonl(out / "calls.jsonl")
    judged = sum(1 for j in _jsonl(out / "judgements.jsonl") if j["status"] == "complete")
    judge_usd = sum(c["cost_usd"] for c in calls if c["role"] == "judge")
    run_usd = sum(c["cost_usd"] for c in calls)
    return {
        "mode": mode,
        "exit_code": outcome.exit_code,
        "conversations": outcome.result.conversations,
        "judged_conversations": judged,
        "judge_calls": sum(1 for c in calls if c["role"] == "judge"),
        "judge_tiers": sorted({c.get("tier", "standard") for c in calls if c["role"] == "judge"}),
        "judge_usd": judge_usd,
        "run_usd": run_usd,
        "judge_usd_per_judged": judge_usd / judged if judged else None,
        "run_usd_per_judged": run_usd / judged if judged else None,
        "batches": batches,
        "violations": violations,
        "wall_s": wall,
    }


def _transcripts(run: Path, path: Path) -> Path:
    """The run's complete conversations as JSON-lines transcripts (docs/transcripts.md)."""
    lines = []
    for c in _jsonl(run / "conversations.jsonl"):
        if c["status"] != "complete":
            continue
        messages = [
            {"role": "user" if t["speaker"] == "user" else "assistant", "content": t["text"]}
            for t in c["turns"]
        ]
        lines.append(
            json.dumps(
                {
                    "id": c["id"],
                    "chatbot": c["chatbot"],
                    "persona": c["persona"],
                    "risk": c["risk"],
                    "messages": messages,
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


async def _reference(
    mode: str, folder: Path, transcripts: Path, data: Path, concurrency: int, poll_s: float
) -> dict[str, Any]:
    """The reference's v1.1 rubric and judge prompts judging `transcripts`, live or batched."""
    from tests.fakes.batch import BatchSweepServer
    from tests.fakes.sweep import write_sweep_config
    from vera.app import JudgeOptions, judge_run

    prompts = Path(__file__).resolve().parents[1] / "configs" / "vera-mh-v1.1" / "judge-prompts"
    extra = f'rubric = "reference:rubric.tsv"\njudge_prompts = {json.dumps(str(prompts))}\n'
    extra += f"[reference]\ndata = {json.dumps(str(data))}\n"
    if mode == "batch":
        extra += f'[judge]\nmode = "batch"\nbatch_poll_s = {poll_s}\nbatch_collect_s = 0.05\n'
    with BatchSweepServer(polls_to_complete=3) as server:
        cfg = write_sweep_config(
            folder, server.base_url, personas=PERSONAS, seeds="[1]", extra=extra, max_concurrency=concurrency
        )
        out = folder / "run"
        started = time.perf_counter()
        # `vera judge` reports its progress on stderr; the bench prints its own table.
        with contextlib.redirect_stderr(io.StringIO()):
            outcome = await judge_run(
                JudgeOptions(
                    transcripts=str(transcripts),
                    out=str(out),
                    config_path=str(cfg),
                    reference_data=str(data),
                )
            )
        wall = time.perf_counter() - started
        violations = list(server.violations)
        batches = len(server.created)
    calls = _jsonl(out / "calls.jsonl")
    judged = sum(1 for j in _jsonl(out / "judgements.jsonl") if j["status"] == "complete")
    judge_usd = sum(c["cost_usd"] for c in calls if c["role"] == "judge")
    return {
        "mode": f"reference {mode}",
        "exit_code": outcome.exit_code,
        "judged_conversations": judged,
        "judge_calls": sum(1 for c in calls if c["role"] == "judge"),
        "judge_tiers": sorted({c.get("tier", "standard") for c in calls if c["role"] == "judge"}),
        "judge_usd": judge_usd,
        "judge_usd_per_judged": judge_usd / judged if judged else None,
        "batches": batches,
        "violations": violations,
        "wall_s": wall,
    }


def default_reference_data() -> Path | None:
    """The reference tool's v1.1 data folder: $VERA_MH_DATA, or the one beside the
    checkout (../shared/reference); None when neither holds its rubric and judge prompts."""
    here = Path(__file__).resolve().parents[1]
    for candidate in (
        os.environ.get("VERA_MH_DATA"),
        here.parent / "shared" / "reference" / "vera-mh-v1.1" / "data",
    ):
        if candidate and all((Path(candidate) / f).is_file() for f in REFERENCE_FILES):
            return Path(candidate)
    return None


def run_batch_bench(
    conversations: int, concurrency: int, poll_s: float, reference_data: Path | None = None
) -> dict[str, Any]:
    """Both modes, one after the other; the figures and the ratios batch / live; with
    reference data, the reference's judge on the live run's transcripts, both modes."""
    from tests.fakes.sweep import KEY  # the fake's key, which its profiles name

    os.environ["SWEEP_TEST_KEY"] = KEY
    reference: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="vera-bench-batch-") as tmp:
        live = asyncio.run(_one("live", Path(tmp) / "live", conversations, concurrency, poll_s))
        batch = asyncio.run(_one("batch", Path(tmp) / "batch", conversations, concurrency, poll_s))
        if reference_data is not None:
            transcripts = _transcripts(Path(tmp) / "live" / "run", Path(tmp) / "transcripts.jsonl")
            for mode in ("live", "batch"):
                reference[mode] = asyncio.run(
                    _reference(
                        mode,
                        Path(tmp) / f"reference-{mode}",
                        transcripts,
                        reference_data,
                        concurrency,
                        poll_s,
                    )
                )

    def per_judged(fig: dict[str, Any]) -> float | None:
        value = fig["judge_usd_per_judged"]
        return float(value) if value is not None else None

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    figures: dict[str, Any] = {
        "live": live,
        "batch": batch,
        "judge_ratio": ratio(per_judged(batch), per_judged(live)),
        "run_ratio": ratio(batch["run_usd_per_judged"], live["run_usd_per_judged"]),
        "poll_s": poll_s,
    }
    if reference:
        ref_live = per_judged(reference["live"])
        figures["reference"] = reference
        figures["reference_data"] = str(reference_data)
        # vera's judge against the reference tool's, per judged conversation
        figures["vs_reference"] = {
            "vera_live": ratio(per_judged(live), ref_live),
            "vera_batch": ratio(per_judged(batch), ref_live),
            "reference_batch": ratio(per_judged(reference["batch"]), ref_live),
        }
    return figures


def render_batch_bench(fig: dict[str, Any]) -> str:
    live, batch = fig["live"], fig["batch"]
    rows = [
        ("", "live", "batch"),
        ("judged conversations", str(live["judged_conversations"]), str(batch["judged_conversations"])),
        ("judge calls", str(live["judge_calls"]), str(batch["judge_calls"])),
        ("judge tiers", ",".join(live["judge_tiers"]), ",".join(batch["judge_tiers"])),
        ("batches", str(live["batches"]), str(batch["batches"])),
        (
            "judge $ per judged conversation",
            f"{live['judge_usd_per_judged']:.6f}",
            f"{batch['judge_usd_per_judged']:.6f}",
        ),
        (
            "run $ per judged conversation",
            f"{live['run_usd_per_judged']:.6f}",
            f"{batch['run_usd_per_judged']:.6f}",
        ),
        ("wall time (s)", f"{live['wall_s']:.2f}", f"{batch['wall_s']:.2f}"),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [f"{a:<{width}}  {b:>12}  {c:>12}" for a, b, c in rows]
    lines.append(
        f"judge money, batch / live: {fig['judge_ratio']:.2f}x (target <= 0.5x); "
        f"whole run: {fig['run_ratio']:.2f}x (chatbot and simulated user stay live)"
    )
    if "reference" in fig:
        ref, vs = fig["reference"], fig["vs_reference"]
        lines.append("")
        lines.append(
            "the reference tool's judge (its v1.1 rubric and prompts) on the live run's transcripts:"
        )
        rrows = [
            ("", "live", "batch"),
            (
                "judged conversations",
                str(ref["live"]["judged_conversations"]),
                str(ref["batch"]["judged_conversations"]),
            ),
            ("judge calls", str(ref["live"]["judge_calls"]), str(ref["batch"]["judge_calls"])),
            (
                "judge $ per judged conversation",
                f"{ref['live']['judge_usd_per_judged']:.6f}",
                f"{ref['batch']['judge_usd_per_judged']:.6f}",
            ),
            ("wall time (s)", f"{ref['live']['wall_s']:.2f}", f"{ref['batch']['wall_s']:.2f}"),
        ]
        lines += [f"{a:<{width}}  {b:>12}  {c:>12}" for a, b, c in rrows]
        lines.append(
            f"judge money per judged conversation against the reference tool's live judge: vera live "
            f"{vs['vera_live']:.2f}x, vera batch {vs['vera_batch']:.2f}x (the reference's own prompts in "
            f"batch: {vs['reference_batch']:.2f}x)"
        )
    lines.append(
        f"wall time: a batch waits for its polls ({fig['poll_s']:g} s apart on the fake; "
        "minutes to 24 h on a real provider): batch mode is cheaper, not faster"
    )
    return "\n".join(lines)
