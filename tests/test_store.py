"""The run store: append-only records, torn tails after a crash, nothing twice."""

from __future__ import annotations

import gc
import types
from typing import Literal

import msgspec
import pytest

from vera.records import Conversation, Judgement, Turn
from vera.store._writer import CONVERSATIONS, RunStore, atomic_file, read_records


def conv(cid: str, status: Literal["complete", "failed"] = "complete") -> Conversation:
    return Conversation(
        id=cid,
        chatbot="b",
        user_agent="u",
        persona="P",
        risk="Low",
        seed=1,
        turns=[Turn("user", "hi")],
        status=status,
        error=None if status == "complete" else "ServerError: 503",
    )


def test_records_survive_reopen_and_complete_work_is_never_written_twice(tmp_path):
    s = RunStore(tmp_path)
    s.add_conversation(conv("a", "failed"))
    s.add_conversation(conv("a"))
    s.add_conversation(conv("a"))  # already complete: ignored
    s.add_conversation(conv("b"))
    s.add_judgement(
        Judgement(
            id="j1", conversation_id="a", judge="J", instance=1, status="complete", answers=[], ratings=[]
        )
    )
    s.close()
    lines = (tmp_path / CONVERSATIONS).read_text().splitlines()
    assert len(lines) == 3  # failed a, complete a, complete b
    s2 = RunStore(tmp_path)
    assert s2.done_conversation("a") is not None and s2.done_conversation("b") is not None
    assert s2.done_judgement("j1") and not s2.done_judgement("j2")
    s2.close()


def test_a_torn_last_line_is_ignored_and_cut_so_appends_stay_clean(tmp_path):
    s = RunStore(tmp_path)
    s.add_conversation(conv("a"))
    s.close()
    path = tmp_path / CONVERSATIONS
    with open(path, "ab") as f:
        f.write(b'{"id": "b", "chatbot": "b", "tur')  # the crash
    s = RunStore(tmp_path)
    assert list(s.conversations) == ["a"]
    s.add_conversation(conv("c"))
    s.close()
    assert [c.id for c in read_records(path, Conversation)] == ["a", "c"]
    assert path.read_bytes().endswith(b"\n")


def test_a_whole_record_without_its_newline_is_kept(tmp_path):
    path = tmp_path / CONVERSATIONS
    import msgspec

    path.write_bytes(msgspec.json.encode(conv("a")))
    s = RunStore(tmp_path)
    assert list(s.conversations) == ["a"]
    s.add_conversation(conv("b"))
    s.close()
    assert [c.id for c in read_records(path, Conversation)] == ["a", "b"]


def test_a_damaged_middle_line_does_not_lose_the_others(tmp_path):
    path = tmp_path / CONVERSATIONS
    import msgspec

    good = msgspec.json.encode(conv("a")) + b"\n"
    path.write_bytes(good + b"garbage\n" + msgspec.json.encode(conv("b")) + b"\n")
    assert [c.id for c in read_records(path, Conversation)] == ["a", "b"]


def _reachable(root: object) -> list[object]:
    """Every object reachable from `root` through references (types and modules aside)."""
    seen: set[int] = set()
    out: list[object] = []
    todo = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, type | types.ModuleType):
            continue
        seen.add(id(obj))
        out.append(obj)
        todo.extend(gc.get_referents(obj))
    return out


def judgement(jid: str, cid: str) -> Judgement:
    return Judgement(
        id=jid, conversation_id=cid, judge="J", instance=1, status="complete", answers=[], ratings=[]
    )


def test_the_store_keeps_an_index_of_places_not_the_records(tmp_path):
    s = RunStore(tmp_path)
    for i in range(50):
        s.add_conversation(conv(f"c{i}", "failed" if i % 10 == 0 else "complete"))
        s.add_judgement(judgement(f"j{i}", f"c{i}"))
    held = _reachable(s)
    assert not [o for o in held if isinstance(o, Conversation | Judgement | Turn)]
    # ... yet every finished record can be read back, by its place, while the run goes.
    assert s.read_conversation("c3") == conv("c3")
    assert s.done_conversation("c10") is None and s.done_conversation("c11") == conv("c11")
    s.close()
    reopened = RunStore(tmp_path)
    assert not [o for o in _reachable(reopened) if isinstance(o, Conversation | Judgement | Turn)]
    assert reopened.read_judgement("j7") == judgement("j7", "c7")
    reopened.close()


def test_resume_finds_done_jobs_in_the_index_and_their_lines_by_place(tmp_path):
    s = RunStore(tmp_path)
    s.add_conversation(conv("a", "failed"))
    s.add_conversation(conv("b"))
    s.add_conversation(conv("a"))  # the retry on resume: this line counts now
    s.add_conversation(conv("c", "failed"))
    s.close()
    data = (tmp_path / CONVERSATIONS).read_bytes()
    s = RunStore(tmp_path)
    assert [(j, s.conversation_done(j)) for j in s.conversations] == [("a", True), ("b", True), ("c", False)]
    for job in ("a", "b", "c"):
        ref = s.conversations.ref(job)
        assert ref is not None
        line = data[ref.offset : ref.offset + ref.length]
        assert msgspec.json.decode(line, type=Conversation) == conv(
            job, "failed" if job == "c" else "complete"
        )
    # A failed job is run again; a new complete record is indexed where it was written.
    s.add_conversation(conv("c"))
    assert s.conversation_done("c") and s.read_conversation("c") == conv("c")
    s.close()


def test_a_torn_call_log_is_mended_without_reading_it_whole(tmp_path):
    from vera.records import CallRecord, Usage
    from vera.store._writer import CALLS

    s = RunStore(tmp_path)
    call = CallRecord(job_id="a", role="chatbot", provider="p", model="m", account="x", latency_ms=1.0,
                      status="ok", attempts=1, usage=Usage(), at=0.0)  # fmt: skip
    s.add_call(call)
    s.close()
    with open(tmp_path / CALLS, "ab") as f:
        f.write(b'{"job_id": "b", "ro')
    RunStore(tmp_path).close()
    assert (tmp_path / CALLS).read_bytes() == msgspec.json.encode(call) + b"\n"


async def test_periodic_fsync_runs_off_the_event_loop_and_close_waits_for_it(tmp_path, monkeypatch):
    import asyncio
    import os
    import threading

    threads: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        threads.append(threading.current_thread().name)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)  # the module vera.store._writer calls
    loop_thread = threading.current_thread().name
    s = RunStore(tmp_path, fsync_interval=0.01)
    s.start()
    s.add_conversation(conv("a"))
    for _ in range(500):  # until the periodic round has run (counted, not timed)
        if threads:
            break
        await asyncio.sleep(0.01)
    assert threads and all(name != loop_thread for name in threads)
    s.add_conversation(conv("b"))
    await s.aclose()
    # The final sync at close runs where close runs; every record is on disk.
    assert [c.id for c in read_records(tmp_path / CONVERSATIONS, Conversation)] == ["a", "b"]


def test_a_file_written_whole_keeps_its_old_content_when_the_writer_fails(tmp_path):
    # The one atomic writer (cards, pages, exports): an exception in the block leaves the
    # old file as it was and no temporary file behind.
    target = tmp_path / "table.csv"
    target.write_bytes(b"old\n")
    with pytest.raises(RuntimeError), atomic_file(target) as f:
        f.write(b"half of the ne")
        raise RuntimeError("the writer failed")
    assert target.read_bytes() == b"old\n"
    assert not list(tmp_path.glob(".*.tmp"))
    with atomic_file(target) as f:
        f.write(b"new\n")
    assert target.read_bytes() == b"new\n"
    assert not list(tmp_path.glob(".*.tmp"))
