"""The call-body store on its own (vera.store's `CallBodies` behind `RunStore.add_call`):
what the shortcuts taken on the loop (chain nodes remembered per conversation, texts
compressed with zstd) keep exactly as before: every history reads
back whole, each distinct prefix is one node, each distinct text one blob."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import zstandard

from vera.records import CallBody, CallRecord, Completion, Conversation, Message
from vera.store import BODIES, BodyReader, RunStore, _bodies

SYSTEM = Message("system", "You are someone talking to a chatbot about your week. " * 40)


@pytest.fixture(autouse=True)
def _format_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about format 1 (`call_bodies.sqlite`), which new runs no longer
    write (format 2: tests/test_call_bodies_vlog.py): written here by its own writer,
    as a run started by an earlier vera holds it."""
    monkeypatch.setattr(_bodies, "WRITE_FORMAT", 1)


def _call(job: str) -> CallRecord:
    return CallRecord(
        job_id=job, role="user_agent", provider="p", model="m", account="a", latency_ms=1.0, status="ok"
    )


def _conversation(job: str) -> Conversation:
    return Conversation(
        id=job, chatbot="c", user_agent="u", persona="p", risk="none", seed=1, turns=[], status="complete"
    )


def _reply(i: int) -> str:
    return f"reply {i}: " + "I hear that the week was long, and that sleep has been short. " * (3 + i % 4)


def test_growing_histories_read_back_whole_with_one_node_per_distinct_prefix(tmp_path: Path) -> None:
    store = RunStore(tmp_path, call_bodies=True)
    sent: list[tuple[Message, ...]] = []
    # Two conversations with the same system prompt and the same first lines, a third
    # whose record is written halfway (its chains forgotten), then continued by a judge
    # of it that sends the same history again: nothing is stored twice.
    for job in ("a", "b", "c"):
        history: list[Message] = [SYSTEM]
        for turn in range(6):
            history.append(Message("user", f"line {turn}" + (" of c" if job == "c" and turn > 2 else "")))
            messages = tuple(history)
            reply = _reply(turn)
            store.add_call(
                _call(job),
                CallBody(
                    call=_call(job),
                    conversation_id=job,
                    messages=messages,
                    params={"temperature": 0.7},
                    response=Completion(reply),
                ),
            )
            sent.append(messages)
            history.append(Message("assistant", reply))
            if job == "c" and turn == 2:
                store.add_conversation(_conversation("c"))
    store.add_call(_call("c"), CallBody(call=_call("c"), conversation_id="c", messages=sent[-1]))
    sent.append(sent[-1])
    store.close()

    with BodyReader(tmp_path) as reader:
        assert [b.messages for b in reader.all()] == sent
    prefixes = {m[:n] for m in sent for n in range(1, len(m) + 1)}
    texts = {x.content for m in sent for x in m} | {_reply(t) for t in range(6)}
    with sqlite3.connect(tmp_path / BODIES) as db:
        blobs = dict(db.execute("SELECT id, data FROM blobs").fetchall())
        chains = db.execute("SELECT count(*) FROM calls").fetchone()[0]
    assert chains == len(sent)
    # Every blob is a text or a node; each distinct one once.
    assert len(blobs) == len(prefixes) + len(texts)
    # Compressed ones are ordinary zstd frames, and smaller than what they hold.
    packed = [d for d in blobs.values() if d[:1] == b"s"]
    assert packed and all(len(zstandard.ZstdDecompressor().decompress(d[1:])) > len(d) for d in packed)


def test_histories_that_share_objects_as_the_turn_loop_sends_them_read_back_whole(tmp_path: Path) -> None:
    # Histories as the turn loop sends them, with the writer's memo of a conversation's
    # nodes and texts: the same objects call after call, the last user message
    # rewritten (a reminder added), two sides of one conversation with their own first
    # message, a history that is cut back or changed in the middle, one sent twice, equal
    # messages that are not the same objects, the same objects in another conversation.
    # Each reads back as sent, each distinct prefix is one node, each text one blob.
    store = RunStore(tmp_path, call_bodies=True)
    other = Message("system", "You are the chatbot. " * 30)
    sides: dict[Message, list[Message]] = {SYSTEM: [SYSTEM], other: [other]}
    sent: list[tuple[Message, ...]] = []

    def send(job: str, messages: tuple[Message, ...], reply: str | None = None) -> None:
        body = CallBody(
            call=_call(job),
            conversation_id=job,
            messages=messages,
            response=Completion(reply) if reply is not None else None,
        )
        store.add_call(body.call, body)
        sent.append(messages)

    for turn in range(5):
        for first, history in sides.items():
            line = Message("user", f"turn {turn} to {first.content[:10]}")
            send("a", (*history, Message("user", line.content + " (reminder)")), _reply(turn))
            history += [line, Message("assistant", _reply(turn))]
    mine = tuple(sides[SYSTEM])
    send("a", mine)  # sent twice
    send("a", mine[:3])  # cut back
    send("a", (*mine[:2], Message("user", "changed"), *mine[3:]))  # changed in the middle
    send("a", (Message("system", SYSTEM.content), *mine[1:]))  # equal, not the same objects
    send("b", mine)  # the same objects, another conversation
    send("a", ())
    store.close()

    with BodyReader(tmp_path) as reader:
        assert [b.messages for b in reader.all()] == sent
    prefixes = {m[:n] for m in sent for n in range(1, len(m) + 1)}
    texts = {x.content for m in sent for x in m} | {_reply(t) for t in range(5)}
    with sqlite3.connect(tmp_path / BODIES) as db:
        assert db.execute("SELECT count(*) FROM blobs").fetchone() == (len(prefixes) + len(texts),)


def test_a_blob_stored_before_the_store_was_opened_again_is_found_not_stored_again(tmp_path: Path) -> None:
    from vera.store._bodies import CallBodies

    texts = [f"text {i} " * 30 for i in range(5)]
    bodies = CallBodies(tmp_path / BODIES, calls_size=0)
    first = [bodies._text(t) for t in texts]
    bodies.close()
    bodies = CallBodies(tmp_path / BODIES, calls_size=0)  # the writer chooses ids: it must know these
    again = [bodies._text(t) for t in texts]
    fresh = bodies._text("a new one " * 30)
    bodies.close()
    assert again == first and len(set(first)) == 5 and fresh == max(first) + 1
    with sqlite3.connect(tmp_path / BODIES) as db:
        assert db.execute("SELECT count(*) FROM blobs").fetchone() == (6,)


# A run's store as written before issue 31's third pass (texts zlib-compressed, tag
# "z"), kept as files: stores written by earlier versions must stay readable, and a
# resumed old run adds zstd blobs ("s") beside its zlib ones.
OLD_STORE = Path(__file__).parent / "fixtures" / "call_bodies_zlib"


def _old_store_bodies() -> list[CallBody]:
    """What the fixture holds (`write_old_store_fixture` wrote it with the zlib code)."""
    bodies: list[CallBody] = []
    for job in ("a", "b"):
        history: list[Message] = [SYSTEM]
        for turn in range(4):
            history.append(Message("user", f"{job} line {turn} " * (1 + 20 * (turn % 2))))
            reply = _reply(turn)
            bodies.append(
                CallBody(
                    call=_call(job),
                    conversation_id=job,
                    question_id="",
                    messages=tuple(history),
                    params={"temperature": 0.7, "max_tokens": 512},
                    schema={"type": "object", "properties": {"answer": {"type": "string"}}}
                    if turn == 3
                    else None,
                    reask=1 if turn == 3 else 0,
                    response=Completion(reply, parsed={"answer": "yes"} if turn == 3 else None),
                )
            )
            history.append(Message("assistant", reply))
    return bodies


def write_old_store_fixture(run_dir: Path) -> None:  # pragma: no cover (run once, by hand)
    store = RunStore(run_dir, call_bodies=True)
    for body in _old_store_bodies():
        store.add_call(body.call, body)
    store.close()


def _strip(body: CallBody) -> tuple[object, ...]:
    return (
        body.conversation_id,
        body.messages,
        body.params,
        body.schema,
        body.reask,
        body.response,
        body.call.job_id,
    )


def test_a_store_written_with_zlib_reads_back_whole(tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(OLD_STORE, run)
    with sqlite3.connect(run / BODIES) as db:
        kinds = {d[:1] for (d,) in db.execute("SELECT data FROM blobs")}
    assert b"z" in kinds and b"s" not in kinds  # what the fixture is for
    expected = [_strip(b) for b in _old_store_bodies()]
    with BodyReader(run) as reader:
        assert [_strip(b) for b in reader.all()] == expected

    # Resumed: the run goes on in the same store, new texts compressed with zstd; old
    # blobs are still deduplicated against (same hash), and both kinds read back.
    store = RunStore(run, call_bodies=True)
    more = _old_store_bodies()[-1]
    longer = CallBody(
        call=_call("b"),
        conversation_id="b",
        messages=(
            *more.messages,
            Message("assistant", more.response.text if more.response else ""),
            Message("user", "a new line, long enough to be compressed " * 5),
        ),
        params=more.params,
        response=Completion(_reply(2)),  # a text the old store already holds
    )
    store.add_call(longer.call, longer)
    store.close()
    with sqlite3.connect(run / BODIES) as db:
        kinds = {d[:1] for (d,) in db.execute("SELECT data FROM blobs")}
        replies = db.execute("SELECT count(*) FROM blobs WHERE data LIKE 'rreply 2:%'").fetchone()
    assert {b"z", b"s"} <= kinds and replies == (0,)
    with BodyReader(run) as reader:
        assert [_strip(b) for b in reader.all()] == [*expected, _strip(longer)]
