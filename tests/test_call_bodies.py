"""Every model call's body (its exact request and response) kept in the run directory:
live, batch, flex and replayed calls against the loopback fakes, `--no-call-bodies`,
`vera export --calls`, and a kill between a body's write to the log and its call's line."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from vera.app import RunOptions, execute_run
from vera.cli._main import main
from vera.records import CallBody, CallRecord
from vera.store import BODIES, BodyReader, count_bodies, has_bodies
from vera.store._bodies import LOG
from vera.store._bodylog import VLOG

from .conftest import ROOT
from .fakes.batch import BatchSweepServer
from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config
from .sweep_runs import BATCH, FLEX, jsonl, sweep_run

# What a key or an auth header would leave behind if either were stored.
SECRETS = (KEY.encode(), b"uthorization", b"Bearer", b"x-api-key", b"api-key")


pytestmark = pytest.mark.usefixtures("sweep_key")


def bodies(run: Path) -> list[CallBody]:
    with BodyReader(run) as reader:
        return list(reader.all())


def assert_one_body_per_call(run: Path) -> list[CallBody]:
    """Each line of calls.jsonl has exactly its body, in order, and no secret is kept."""
    kept = bodies(run)
    lines = [
        msgspec.json.decode(line, type=CallRecord) for line in (run / "calls.jsonl").read_bytes().splitlines()
    ]
    assert [b.call for b in kept] == lines
    for path in run.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in SECRETS:
                assert secret not in data, (path.name, secret)
    return kept


async def test_a_live_run_keeps_each_calls_request_and_response_and_never_the_key(tmp_path):
    with SweepServer() as server:
        run = await sweep_run(tmp_path, server)
    kept = assert_one_body_per_call(run)
    assert len(kept) == sum(server.requests.values())
    conversations = {c["id"]: c for c in jsonl(run / "conversations.jsonl")}
    for body in kept:
        assert body.response is not None and body.call.status == "ok"
        assert body.params["seed"] == body.params.get("seed") and "api_key" not in body.params
    # The chatbot's last call was sent the whole conversation before its last reply,
    # the system prompt first, and answered that reply.
    for cid, conv in conversations.items():
        bot = [b for b in kept if b.conversation_id == cid and b.call.role == "chatbot"]
        last = bot[-1]
        sent = [m.content for m in last.messages if m.role != "system"]
        texts = [t["text"] for t in conv["turns"]]
        assert sent == texts[: len(sent)] and last.response is not None
        assert last.response.text.strip() == texts[len(sent)].strip()
    # Every judge call names the question it answers; the answer the judgement kept is
    # the reply of that question's last call, asked with the structured-output schema.
    for judgement in jsonl(run / "judgements.jsonl"):
        calls = [b for b in kept if b.call.job_id == judgement["id"]]
        assert calls and all(b.question_id and b.schema is not None for b in calls)
        assert all(b.conversation_id == judgement["conversation_id"] for b in calls)
        for answer in judgement["answers"]:
            if answer["auto"]:
                continue
            asked = [b for b in calls if b.question_id == answer["question_id"]]
            assert asked and asked[-1].response is not None
            assert asked[-1].response.text == answer["raw"]
    # Each text stored once: the judge's transcript once per conversation, however many
    # questions resend it, and a history that grows adds its new message's text alone.
    stored = (run / VLOG).stat().st_size
    chars = sum(len(m.content) for b in kept for m in b.messages) + sum(
        len(b.response.text) for b in kept if b.response
    )
    assert stored < chars / 5, (stored, chars)


async def test_batch_judge_calls_keep_their_bodies(tmp_path):
    with BatchSweepServer(polls_to_complete=2) as server:
        run = await sweep_run(tmp_path, server, BATCH)
    kept = assert_one_body_per_call(run)
    judge = [b for b in kept if b.call.role == "judge"]
    assert judge and {b.call.tier for b in judge} == {"batch"}
    assert all(b.response is not None and b.response.text for b in judge)
    assert all(b.question_id for b in judge)


async def test_flex_calls_and_their_fallbacks_keep_their_bodies(tmp_path):
    with SweepServer(faults=Faults(flex_unavailable=0.3)) as server:
        run = await sweep_run(tmp_path, server, FLEX)
    kept = assert_one_body_per_call(run)
    refused = [b for b in kept if b.call.tier == "flex" and b.call.status == "error"]
    fell_back = [b for b in kept if b.call.fallback == "flex"]
    assert refused and fell_back
    # the refused attempt has its request and no answer; its fallback the same request, answered
    assert all(b.response is None and b.messages for b in refused)
    assert {b.messages for b in refused} <= {b.messages for b in fell_back}
    assert all(b.response is not None for b in fell_back)


async def test_calls_replayed_from_the_cache_after_a_resume_keep_their_bodies(tmp_path):
    with SweepServer(faults=Faults(rate_5xx=0.08, seed=3)) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=3, seeds="[1]", max_retries=0)
        out = tmp_path / "run"
        await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))
        assert any(c["status"] == "failed" for c in jsonl(out / "conversations.jsonl")), "nothing failed"
        server.faults.rate_5xx = 0.0
        await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))
    kept = assert_one_body_per_call(out)
    replayed = [b for b in kept if b.call.cached]
    assert replayed, "no reply was replayed: the test proves nothing"
    assert all(b.response is not None and b.messages for b in replayed)
    errors = [b for b in kept if b.call.status == "error"]
    assert errors and all(b.response is None for b in errors)


def test_export_calls_writes_every_call_with_its_request_and_response(tmp_path):
    out = tmp_path / "run"
    runner = CliRunner()
    made = runner.invoke(main, ["run", "--limit-personas", "2", "--out", str(out), "--quiet"])
    assert made.exit_code == 0, made.output
    target = tmp_path / "calls.jsonl"
    done = runner.invoke(main, ["export", "--calls", str(out), "-o", str(target)])
    assert done.exit_code == 0, done.output
    rows = jsonl(target)
    assert len(rows) == len(jsonl(out / "calls.jsonl")) == count_bodies(out)
    first = rows[0]
    assert set(first) == {"call", "conversation_id", "question_id", "request", "response"}
    assert first["request"]["messages"][0]["role"] == "system"
    assert first["response"]["text"]
    judge = [r for r in rows if r["call"]["role"] == "judge"]
    assert judge and all(r["question_id"] and r["request"]["schema"] for r in judge)
    # never over the run's own files
    refused = runner.invoke(main, ["export", "--calls", str(out), "-o", str(out / "calls.jsonl")])
    assert refused.exit_code == 1 and "only the run itself writes its records" in refused.output
    assert len(jsonl(out / "calls.jsonl")) == len(rows)
    # without -o: the default file in the run directory (an export, not a record),
    # written again by a second export
    for _ in range(2):
        default = runner.invoke(main, ["export", "--calls", str(out)])
        assert default.exit_code == 0, default.output
        assert jsonl(out / "calls_full.jsonl") == rows


def test_no_call_bodies_keeps_none_and_the_manifest_and_card_say_so(tmp_path):
    out = tmp_path / "run"
    runner = CliRunner()
    made = runner.invoke(
        main, ["run", "--limit-personas", "2", "--out", str(out), "--quiet", "--no-call-bodies"]
    )
    assert made.exit_code == 0, made.output
    assert not has_bodies(out)
    assert json.loads((out / "manifest.json").read_text())["config"]["call_bodies"] is False
    assert "**Call bodies:** not kept" in (out / "card.md").read_text()
    assert "Call bodies" in (out / "card.html").read_text()
    assert json.loads((out / "card.json").read_text())["settings"]["call_bodies"] is False
    refused = runner.invoke(main, ["export", "--calls", str(out)])
    assert refused.exit_code == 1
    assert refused.output.count("\n") == 1 and "--no-call-bodies" in refused.output
    # a resume keeps it off: the manifest's config is restored
    again = runner.invoke(main, ["run", "--resume", str(out), "--quiet"])
    assert again.exit_code == 0, again.output
    assert not has_bodies(out)


def test_a_run_with_bodies_leaves_the_manifest_and_card_json_as_before(tmp_path):
    out = tmp_path / "run"
    made = CliRunner().invoke(main, ["run", "--limit-personas", "1", "--out", str(out), "--quiet"])
    assert made.exit_code == 0, made.output
    assert "call_bodies" not in (out / "manifest.json").read_text()
    assert "call_bodies" not in (out / "card.json").read_text()
    assert "Call bodies" not in (out / "card.md").read_text()


# A process that commits a body and is killed before its call's line is written.
_KILLED = """
import asyncio, os, signal, sys
from pathlib import Path
from vera.records import CallBody, CallRecord, Completion, Message
from vera.store import RunStore, _bodies

_bodies.WRITE_FORMAT = 1  # format 2's own test: tests/test_call_bodies_vlog.py
root, n = Path(sys.argv[1]), int(sys.argv[2])
def body(i):
    call = CallRecord(job_id=f"job{i}", role="chatbot", provider="p", model="m", account="a",
                      latency_ms=1.0, status="ok")
    return CallBody(call=call, conversation_id=f"job{i}",
                    messages=(Message("system", "be kind"), Message("user", f"hello {i}")),
                    response=Completion(text=f"hi {i}"))
async def run():
    store = RunStore(root, call_bodies=True)
    for i in range(n):
        b = body(i)
        store.add_call(b.call, b)
    store.sync()
    b = body(n)
    store.add_call(b.call, b)  # its line is held back to the end of this turn of the loop
    store.bodies.commit()  # the body is durable
    os.kill(os.getpid(), signal.SIGKILL)
asyncio.run(run())
"""


def test_a_kill_between_a_bodys_commit_and_its_line_leaves_no_orphan_and_no_duplicate(tmp_path):
    root = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", _KILLED, str(root), "3"], cwd=ROOT, timeout=60)
    assert done.returncode == -signal.SIGKILL
    # Killed before the store closed: the bodies are in the log, not yet in the database.
    assert (root / LOG).exists()
    with sqlite3.connect(root / BODIES) as db:
        assert db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 0
    assert count_bodies(root) == 4  # one body past the file
    assert len((root / "calls.jsonl").read_bytes().splitlines()) == 3
    # Reopened (a resume): the orphan is dropped; the call asked again is recorded once.
    from vera.records import Completion, Message
    from vera.store import RunStore

    assert len(bodies(root)) == 3  # a reader skips the orphan (and leaves the log as it is)
    assert (root / LOG).exists()
    store = RunStore(root, call_bodies=True)
    # Folded on open, the orphan dropped.
    assert not (root / LOG).exists()
    with sqlite3.connect(root / BODIES) as db:
        assert db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 3
    call = CallRecord(
        job_id="job3", role="chatbot", provider="p", model="m", account="a", latency_ms=1.0, status="ok"
    )
    store.add_call(
        call,
        CallBody(
            call=call,
            conversation_id="job3",
            messages=(Message("system", "be kind"), Message("user", "hello 3")),
            response=Completion(text="hi 3"),
        ),
    )
    store.close()
    assert not (root / LOG).exists()
    with sqlite3.connect(root / BODIES) as db:
        assert db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 4
    kept = assert_one_body_per_call(root)
    assert [b.call.job_id for b in kept] == ["job0", "job1", "job2", "job3"]
    assert [b.messages[-1].content for b in kept] == ["hello 0", "hello 1", "hello 2", "hello 3"]
    assert [b.response.text for b in kept if b.response] == ["hi 0", "hi 1", "hi 2", "hi 3"]
