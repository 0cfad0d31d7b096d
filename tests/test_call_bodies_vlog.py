"""Call bodies in format 2 (`call_bodies.vlog`, vera.store._bodylog): one append-only file
that is the store, with an index at its end once closed. What it must keep: every body
reads back as sent, closed or killed (no index: the records are read instead), with a
torn tail, beside a run still writing; a body whose line never reached calls.jsonl is not
a call, and a resumed run records the call again once; runs whose bodies are in format 1
go on in format 1."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Literal

import msgspec
import pytest

from vera.records import CallBody, CallRecord, Completion, Message
from vera.report import export_calls
from vera.store import BODIES, BodyReader, RunStore, _bodies, _bodylog, count_bodies
from vera.store._bodylog import _TRAILER, VLOG

from .test_call_bodies_store import SYSTEM, _call, _conversation, _old_store_bodies, _reply, _strip

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _format_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bodies, "WRITE_FORMAT", 2)


def _write(run: Path, bodies: list[CallBody], *, close: bool = True) -> RunStore:
    store = RunStore(run, call_bodies=True)
    for body in bodies:
        store.add_call(body.call, body)
    store.sync()
    if close:
        store.close()
    return store


def _files(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}


def _calls(run: Path) -> list[CallRecord]:
    return [msgspec.json.decode(x, type=CallRecord) for x in (run / "calls.jsonl").read_bytes().splitlines()]


def _read(run: Path) -> list[tuple[object, ...]]:
    with BodyReader(run) as reader:
        every = [_strip(b) for b in reader.all()]
        for conversation in {str(x[0]) for x in every}:
            assert [_strip(b) for b in reader.conversation(conversation)] == [
                x for x in every if x[0] == conversation
            ]
        assert reader.conversation("nobody") == []
    return every


def test_bodies_read_back_whole_from_one_file_closed_or_killed(tmp_path: Path) -> None:
    written = _old_store_bodies()
    closed, killed = tmp_path / "closed", tmp_path / "killed"
    store = _write(closed, written, close=False)
    shutil.copytree(closed, killed)  # what a kill -9 leaves: every turn written, no index
    store.close()
    at, _ = _TRAILER.unpack((closed / VLOG).read_bytes()[-_TRAILER.size :])
    assert (closed / VLOG).read_bytes()[:at] == (killed / VLOG).read_bytes()
    assert not (closed / BODIES).exists() and sorted(_files(closed)) == ["call_bodies.vlog", "calls.jsonl"]
    expected = [_strip(b) for b in written]
    before = _files(killed)
    killed.chmod(0o555)  # a reader writes nothing (root writes anyway: the files are compared)
    try:
        assert _read(killed) == expected
        assert count_bodies(killed) == len(written)
        export_calls(killed, tmp_path / "killed.jsonl")
    finally:
        killed.chmod(0o755)
    assert _files(killed) == before
    assert _read(closed) == expected and count_bodies(closed) == len(written)
    export_calls(closed, tmp_path / "closed.jsonl")
    assert (tmp_path / "killed.jsonl").read_bytes() == (tmp_path / "closed.jsonl").read_bytes()

    # The next writer of the killed run goes on after its records; both read the same.
    RunStore(killed, call_bodies=True).close()
    assert _read(killed) == expected
    assert (killed / VLOG).read_bytes()[-_TRAILER.size :].endswith(b"VBINDEX\n")

    # A closed run resumed: its index read from its end and cut off, the new turn and a
    # new index written after the last turn; a text written before is stored again (the
    # writer's dictionary starts empty), and every body reads back.
    more = CallBody(
        call=_call("b"),
        conversation_id="b",
        messages=(*written[-1].messages, Message("user", "one more line")),
        response=Completion(_reply(1)),
    )
    size = (closed / VLOG).stat().st_size
    _write(closed, [more])
    assert (closed / VLOG).stat().st_size > size
    assert _read(closed) == [*expected, _strip(more)]
    assert (closed / VLOG).read_bytes().count(b"VBINDEX\n") == 1


def test_histories_texts_and_schemas_read_back_as_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two sides of one conversation, histories that grow, are cut back, changed in the
    # middle, sent twice, equal but not the same objects; a judge of the conversation
    # after its record; texts the writer forgot (its dictionary kept small) stored again.
    monkeypatch.setattr(_bodylog, "_TEXTS_HELD", 2000)
    store = RunStore(tmp_path, call_bodies=True)
    other = Message("system", "You are the chatbot. " * 30)
    sides: dict[Message, list[Message]] = {SYSTEM: [SYSTEM], other: [other]}
    sent: list[CallBody] = []

    def send(
        job: str,
        messages: tuple[Message, ...],
        reply: str | None = None,
        role: Literal["chatbot", "user_agent", "judge"] = "user_agent",
    ) -> None:
        call = CallRecord(
            job_id=job, role=role, provider="p", model="m", account="a", latency_ms=1.0, status="ok"
        )
        body = CallBody(
            call=call,
            conversation_id=job,
            question_id="q1" if role == "judge" else "",
            messages=messages,
            params={"temperature": 0.5, "stop": ["\n\n"]},
            schema={"type": "object", "b": 1, "a": [1.5, None]} if role == "judge" else None,
            response=Completion(reply, parsed={"x": [1, "y"]} if role == "judge" else None)
            if reply is not None
            else None,
        )
        store.add_call(body.call, body)
        sent.append(body)

    for turn in range(5):
        for first, history in sides.items():
            line = Message("user", f"turn {turn} to {first.content[:10]} \ud800")
            role: Literal["chatbot", "user_agent"] = "user_agent" if first is SYSTEM else "chatbot"
            send("a", (*history, Message("user", line.content + " (reminder)")), _reply(turn), role)
            history += [line, Message("assistant", _reply(turn))]
    mine = tuple(sides[SYSTEM])
    send("a", mine)
    send("a", (*mine[:-1], Message("assistant", "another last")))  # all but the last the same
    send("a", mine[:-1])  # one fewer, the same as far as it goes
    send("a", (*mine[:-1], Message("assistant", "another last"), Message("user", "and more")))
    send("a", mine[:3])
    send("a", (*mine[:2], Message("user", "changed"), *mine[3:]))
    send("a", (Message("system", SYSTEM.content), *mine[1:]))
    store.add_conversation(_conversation("a"))
    send("a", (Message("system", "judge"), Message("user", "the transcript")), "yes", "judge")
    send("b", mine)
    send("a", ())
    store.close()
    assert _read(tmp_path) == [_strip(b) for b in sent]
    with BodyReader(tmp_path) as reader:
        judged = [b for b in reader.all() if b.question_id]
    assert len(judged) == 1 and list(judged[0].schema or {}) == ["a", "b", "type"]  # sorted, as format 1


def test_a_torn_tail_is_left_by_readers_and_cut_by_the_next_writer(tmp_path: Path) -> None:
    written = _old_store_bodies()
    run = tmp_path / "run"
    store = _write(run, written[:5], close=False)
    whole = (run / VLOG).read_bytes()
    lines = (run / "calls.jsonl").read_bytes()
    # The next turn's record, half written when the process was killed (its line never
    # reached calls.jsonl: the record is written first).
    store.add_call(written[5].call, written[5])  # no loop running: written at once
    record = (run / VLOG).read_bytes()[len(whole) :]
    store.close()
    (run / "calls.jsonl").write_bytes(lines)
    assert record
    for torn in (record[: len(record) // 2], record[:-1] + bytes([record[-1] ^ 1]), record[:3]):
        (run / VLOG).write_bytes(whole + torn)
        assert _read(run) == [_strip(b) for b in written[:5]]
    (run / VLOG).write_bytes(whole + record[: len(record) // 2])
    # Resumed: the torn record cut off, the rest of the run written after it.
    store = RunStore(run, call_bodies=True)
    for body in written[5:]:
        store.add_call(body.call, body)
    store.close()
    assert _read(run) == [_strip(b) for b in written]
    with BodyReader(run) as reader:
        assert [b.call for b in reader.all()] == _calls(run)


def test_a_reader_beside_a_run_still_writing_sees_each_turns_bodies(tmp_path: Path) -> None:
    async def go() -> None:
        run = tmp_path / "run"
        written = _old_store_bodies()
        store = RunStore(run, call_bodies=True)
        store.add_call(written[0].call, written[0])
        await asyncio.sleep(0)
        with BodyReader(run) as reader:
            for n, body in enumerate(written[1:], 2):
                store.add_call(body.call, body)
                await asyncio.sleep(0)  # the turn ends: the record, then the line
                assert [_strip(b) for b in reader.all()] == [_strip(b) for b in written[:n]]
                assert len(reader.conversation(body.conversation_id)) == sum(
                    1 for b in written[:n] if b.conversation_id == body.conversation_id
                )
            store.close()  # the index written under the reader's feet: it reads the same
            assert [_strip(b) for b in reader.all()] == [_strip(b) for b in written]

    asyncio.run(go())


_KILLED = """
import asyncio, os, signal, sys
from pathlib import Path
from vera.records import CallBody, CallRecord, Completion, Message
from vera.store import RunStore, _bodies

_bodies.WRITE_FORMAT = 2
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
        await asyncio.sleep(0)
    store.sync()
    b = body(n)
    store.add_call(b.call, b)  # its line is held back to the end of this turn of the loop
    store.bodies.commit()  # the body is durable
    os.kill(os.getpid(), signal.SIGKILL)
asyncio.run(run())
"""


@pytest.mark.parametrize("keep_bodies", [True, False])
def test_a_kill_between_a_bodys_record_and_its_line_leaves_no_orphan_and_no_duplicate(
    tmp_path: Path, keep_bodies: bool
) -> None:
    root = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", _KILLED, str(root), "3"], cwd=ROOT, timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert len((root / "calls.jsonl").read_bytes().splitlines()) == 3
    assert count_bodies(root) == 3  # the body past the file is not a call
    assert len(_read(root)) == 3
    # Resumed (with or without bodies): the orphan is cut before calls.jsonl grows, so
    # the call asked again (its line where the orphan's would have been) is one call.
    store = RunStore(root, call_bodies=keep_bodies)
    call = CallRecord(
        job_id="job3", role="chatbot", provider="p", model="m", account="a", latency_ms=1.0, status="ok"
    )
    store.add_call(
        call,
        CallBody(
            call=call,
            conversation_id="job3",
            messages=(Message("system", "be kind"), Message("user", "hello 3 again")),
            response=Completion(text="hi 3 again"),
        ),
    )
    store.close()
    with BodyReader(root) as reader:
        kept = list(reader.all())
    expected = ["hello 0", "hello 1", "hello 2", *(["hello 3 again"] if keep_bodies else [])]
    assert [b.messages[-1].content for b in kept] == expected
    assert [b.call for b in kept] == _calls(root)[: len(kept)]
    assert count_bodies(root) == len(expected)


def test_a_run_with_bodies_in_format_1_goes_on_in_format_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = _old_store_bodies()
    run = tmp_path / "run"
    monkeypatch.setattr(_bodies, "WRITE_FORMAT", 1)
    _write(run, written[:4])
    monkeypatch.setattr(_bodies, "WRITE_FORMAT", 2)
    _write(run, written[4:])
    assert (run / BODIES).exists() and not (run / VLOG).exists()
    assert _read(run) == [_strip(b) for b in written]


def test_a_file_of_another_kind_is_one_clear_error(tmp_path: Path) -> None:
    from vera.errors import StorageError

    _write(tmp_path, _old_store_bodies()[:1])
    (tmp_path / VLOG).write_bytes(b"SQLite format 3\x00" + os.urandom(64))
    with pytest.raises(StorageError, match="not a call bodies file"):
        BodyReader(tmp_path)
    with pytest.raises(StorageError, match="not a call bodies file"):
        RunStore(tmp_path, call_bodies=True).add_call(_call("a"), _old_store_bodies()[0])


@pytest.mark.parametrize("write_format", [1, 2])
def test_each_call_is_read_with_its_own_body_or_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write_format: int
) -> None:
    from typing import Any, cast

    from vera.store import RunRecords
    from vera.store._bodylog import Row

    monkeypatch.setattr(_bodies, "WRITE_FORMAT", write_format)
    written = _old_store_bodies()
    store = RunStore(tmp_path, call_bodies=True)
    for i, body in enumerate(written):
        store.add_call(body.call, body if i % 2 else None)  # every other call without one
    store.close()
    with BodyReader(tmp_path) as reader:
        placed = [row for row in reader.rows() if isinstance(row, Row)]
    lines = (tmp_path / "calls.jsonl").read_bytes().splitlines(keepends=True)
    starts = [sum(len(x) for x in lines[:i]) for i in range(len(lines))]
    assert [row.offset for row in placed] == starts[1::2]
    assert [row.length + 1 for row in placed] == [len(x) for x in lines[1::2]]
    # Only the calls a run reads: the manifest is not needed for them.
    run = RunRecords(tmp_path, cast(Any, None), {}, {})
    paired = list(run.calls_with_bodies())
    assert [call for call, _ in paired] == _calls(tmp_path)
    assert [body is None for _, body in paired] == [i % 2 == 0 for i in range(len(written))]
    assert [_strip(b) for _, b in paired if b is not None] == [_strip(b) for b in written[1::2]]


def _messages_before_the_shortcut(
    self: _bodylog.BodyLog, conversation: str, side: str, messages: tuple[Message, ...]
) -> list[int]:
    """The writer's encoding of a history before it took all but the last message of the
    previous call as they were: the whole prefix, or every message looked up again."""
    lasts = self._last.setdefault(conversation, {})
    last = lasts.get(side)
    if last is not None and len(last[0]) <= len(messages) and messages[: len(last[0])] == last[0]:
        start, encoded = len(last[0]), last[1][:]
    else:
        start, encoded = 0, []
    for m in messages[start:]:
        i = self._ids.get(m.content)
        encoded.append((self._new(m.content) if i is None else i) << 2 | _bodylog._ROLE_CODE[m.role])
    lasts[side] = (messages, encoded, self._shrinks)
    return encoded


@pytest.mark.parametrize("held", [32 << 20, 6000, 1500])
def test_the_user_agents_reminder_leaves_the_files_bytes_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: int
) -> None:
    # The user agent's view ends with the reminder joined to its last message, which its
    # next view sends without it. The writer reuses the ids of the rest, except after its
    # text table was halved, where a lookup stores a forgotten text again: the file is
    # byte for byte what the encoding before this shortcut wrote, halvings or not.
    monkeypatch.setattr(_bodylog, "_TEXTS_HELD", held)
    user = [SYSTEM]
    chatbot = [Message("system", "You are the chatbot. " * 20)]
    bodies: list[CallBody] = []
    for turn in range(12):
        for job in ("a", "b"):
            said = Message("user", f"{job} {turn}: " + _reply(turn))
            bodies.append(
                CallBody(
                    call=_call(job),
                    conversation_id=job,
                    messages=(*user, Message("user", said.content + "\n\nRemember who you are.")),
                    params={"temperature": 0.7},
                    response=Completion(f"{job} says {turn}: " + _reply(turn + 1)),
                )
            )
            chatbot_call = _call(job)
            chatbot_call.role = "chatbot"
            bodies.append(
                CallBody(
                    call=chatbot_call,
                    conversation_id=job,
                    messages=(*chatbot, Message("user", f"{job} says {turn}: " + _reply(turn + 1))),
                    response=Completion(_reply(turn + 2) + job),
                )
            )
        user += [said, Message("assistant", f"{job} says {turn}: " + _reply(turn + 1))]
        chatbot += [
            Message("user", f"b says {turn}: " + _reply(turn + 1)),
            Message("assistant", _reply(turn + 2)),
        ]
    _write(tmp_path / "now", bodies)
    monkeypatch.setattr(_bodylog.BodyLog, "_messages", _messages_before_the_shortcut)
    _write(tmp_path / "before", bodies)
    assert (tmp_path / "now" / VLOG).read_bytes() == (tmp_path / "before" / VLOG).read_bytes()
    assert _read(tmp_path / "now") == [_strip(b) for b in bodies]
