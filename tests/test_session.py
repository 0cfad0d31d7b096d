"""RunSession: everything a run opens is closed, last first, and made durable, whether
the work finished, raised or was cancelled; a second Ctrl-C cancels the work at once
and still leaves a run that `--resume` finishes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from vera.app import RunSession
from vera.clients.cache import CACHE_FILE
from vera.errors import StorageError, UserError
from vera.inputs._config import RunConfig
from vera.records import CallRecord, Completion, OpenSession
from vera.store import SESSION_FILE
from vera.store._events import EVENTS_FILE
from vera.store._writer import CALLS

from .conftest import ROOT, interrupt_twice
from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config


def _call(n: int) -> CallRecord:
    return CallRecord(
        job_id=f"job{n}", role="chatbot", provider="p", model="m", account="a", latency_ms=1.0, status="error"
    )


async def _open_everything(session: RunSession) -> None:
    """Open what a run opens, and use the store, event log and cache."""
    cfg = RunConfig(cache=True)
    pool = await session.open_pool({}, cfg)
    # The session says it runs (vera.app._killed) until it closes, however it closes.
    session.mark_open(OpenSession(started_at="t", command="run", max_concurrency=1, max_in_flight=None))
    assert (session.run_dir / SESSION_FILE).is_file()
    session.open_events()
    cache = session.open_cache(cfg)
    progress = session.open_progress(True)
    assert pool is not None and cache is not None and progress is not None
    for n in range(3):
        session.record_call(_call(n))  # into calls.jsonl, and (errors) into the event log
    cache.put("key", Completion(text="an answer"))


def _assert_closed_and_durable(run_dir: Path, session: RunSession, skip: int = 0) -> None:
    # Opened store, pool, events, cache, progress: closed in the reverse order.
    assert session.closed[skip:] == ["progress", "cache", "events", "pool", "store"]
    assert session.pool is not None and session.pool._session is None  # its HTTP session is closed
    assert not (run_dir / SESSION_FILE).exists()  # not killed: nothing for a resume to bound
    assert session.events is None
    assert [json.loads(line)["job_id"] for line in (run_dir / CALLS).read_text().splitlines()] == [
        "job0",
        "job1",
        "job2",
    ]
    logged = [json.loads(line)["event"] for line in (run_dir / EVENTS_FILE).read_text().splitlines()]
    assert logged.count("call_failed") == 3
    # Committed: another connection sees the entry.
    with sqlite3.connect(run_dir / CACHE_FILE) as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 1
    assert session.cache is not None
    with pytest.raises(StorageError, match="closed"):  # its connection is closed
        len(session.cache)


async def test_a_session_closes_everything_in_order_when_the_work_raises(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with pytest.raises(UserError, match="the work failed"):
        async with RunSession(run_dir, resume="resume", grace_s=1, signals=False) as session:
            await _open_everything(session)
            raise UserError("the work failed")
    _assert_closed_and_durable(run_dir, session)


async def test_a_session_closes_everything_in_order_when_the_work_is_cancelled(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    opened = asyncio.Event()
    holder: list[RunSession] = []

    async def run() -> None:
        async with RunSession(run_dir, resume="resume", grace_s=1, signals=False) as session:
            holder.append(session)
            await _open_everything(session)
            opened.set()
            await asyncio.Event().wait()  # until cancelled

    task = asyncio.create_task(run())
    await opened.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    _assert_closed_and_durable(run_dir, holder[0])


async def test_a_session_that_finishes_closes_the_same_way(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    async with RunSession(run_dir, resume="resume", grace_s=1, signals=False) as session:
        await _open_everything(session)
        assert await session.work(asyncio.sleep(0, result="done")) == "done"
    _assert_closed_and_durable(run_dir, session)


async def test_a_cancellation_while_closing_waits_for_the_close_to_finish(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    closing, release = asyncio.Event(), asyncio.Event()
    holder: list[RunSession] = []

    async def slow_close() -> None:
        closing.set()
        await release.wait()

    async def run() -> None:
        async with RunSession(run_dir, resume="resume", grace_s=1, signals=False) as session:
            holder.append(session)
            await _open_everything(session)
            session.on_close("slow", slow_close)  # closed first: the last thing opened

    task = asyncio.create_task(run())
    await closing.wait()
    task.cancel()  # arrives while the session is closing
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task  # the cancellation still goes through, after the close
    session = holder[0]
    assert session.closed[0] == "slow"
    assert session.closed[1:] == ["progress", "cache", "events", "pool", "store"]
    _assert_closed_and_durable(run_dir, session, skip=1)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_a_second_sigint_cancels_at_once_and_resume_finishes_the_run(tmp_path: Path) -> None:
    env = {**os.environ, "SWEEP_TEST_KEY": KEY}
    with SweepServer(faults=Faults(latency=0.2)) as server:
        # A long grace period: only the second signal can end the run soon.
        cfg = write_sweep_config(
            tmp_path, server.base_url, personas=4, max_concurrency=2, extra="grace_s = 600"
        )
        out = tmp_path / "run"
        proc = subprocess.Popen(
            [sys.executable, "-m", "vera", "run", "--config", str(cfg), "--out", str(out), "--quiet"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        # Once the run has finished a conversation, the first signal; once vera says it
        # stops launching work, the second.
        while not (out / "conversations.jsonl").exists() or not (out / "conversations.jsonl").read_text():
            assert proc.poll() is None, proc.communicate()
            os.sched_yield()
        stderr = interrupt_twice(proc)
        assert proc.returncode == 130, stderr
        assert "exiting now: work in flight is cancelled, what finished is saved" in stderr
        # The command to continue is said once, as the last line: it used to be said when
        # the second signal came and again when the run ended.
        resume = f"{sys.executable} -m vera run --resume {out}"
        assert stderr.count(resume) == 1 and stderr.rstrip().endswith(f"to continue this run: {resume}"), (
            stderr
        )
        assert "Traceback" not in stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["stopped"].startswith("interrupted (SIGINT)")
        assert "second signal" in manifest["stopped"]
        # Cleanup ran: the event log has its last line, the cache its commits.
        assert _jsonl(out / EVENTS_FILE)[-1]["event"] == "run_finished"
        partial = {c["id"] for c in _jsonl(out / "conversations.jsonl") if c["status"] == "complete"}
        assert 0 < len(partial) < 8
        # The work done before the second signal is counted, not reported as none.
        assert _jsonl(out / EVENTS_FILE)[-1]["conversations"] == len(partial)
        # The calls the signal cut off were sent, and may be billed: each is a call on
        # record (failed, saying why), so the records count what the service received.
        calls = _jsonl(out / "calls.jsonl")
        sent = sum(server.requests.values())
        assert sent <= len(calls) <= sent + 2, (sent, len(calls))  # at most the 2 in flight unsent
        cut = [c for c in calls if "the run stopped while the call was in flight" in (c["error"] or "")]
        assert cut and all(c["status"] == "error" and c["cost_usd"] == 0 for c in cut)
        # Priced, with no max_tokens: no worst case to give, so each is counted as a cost
        # with no bound rather than as nothing.
        assert all(c["uncertain_usd"] == 0 and c["unbounded_attempts"] == 1 for c in cut), cut
        assert _jsonl(out / EVENTS_FILE)[-1]["judgements"] == len(_jsonl(out / "judgements.jsonl"))
        # Stopped by signals, not killed: the session's mark is gone, and its resume
        # finds no killed session to bound (every call it sent is on record).
        assert not (out / SESSION_FILE).exists()

        done = subprocess.run(
            [sys.executable, "-m", "vera", "run", "--resume", str(out), "--quiet"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    final = [c for c in _jsonl(out / "conversations.jsonl") if c["status"] == "complete"]
    assert partial <= {c["id"] for c in final} and len({c["id"] for c in final}) == 8
    card = json.loads((out / "card.json").read_text())
    assert card["status"]["state"] == "complete"
    assert "killed_sessions" not in card["accounting"] and "killed" not in done.stderr


def test_a_stop_signal_speaks_the_run_s_pack_s_words(capsys):
    # A zh-CN run's progress line is Chinese; what Ctrl-C prints under it was English.
    from vera.app._signals import StopSignal
    from vera.inputs import ui_strings

    async def go() -> None:
        sig = StopSignal(30, "vera run --resume runs/x")
        sig.strings = ui_strings("zh-CN", str(ROOT / "locales" / "zh-CN"))
        sig._work = asyncio.ensure_future(asyncio.sleep(10))
        sig._signal("SIGINT")
        sig._signal("SIGINT")
        with contextlib.suppress(asyncio.CancelledError):
            await sig._work

    asyncio.run(go())
    err = capsys.readouterr().err
    assert "SIGINT：不再开始新的工作，正在等进行中的调用结束（最多 30 秒）。再按一次 Ctrl-C 立即退出。" in err
    assert "立即退出：进行中的工作已取消，已完成的部分已保存" in err
    assert "no new work" not in err and "exiting now" not in err

    async def english() -> None:
        sig = StopSignal(30, "vera run --resume runs/x")
        sig._signal("SIGTERM")

    asyncio.run(english())
    assert capsys.readouterr().err == (
        "\nSIGTERM: no new work will start; letting calls in flight finish for up to 30 s. "
        "Press Ctrl-C again to exit now.\n"
    )
