"""The call-body store on its own (vera.store's `CallBodies` behind `RunStore.add_call`):
what the shortcuts taken on the loop (chain nodes remembered per conversation, texts
compressed with a window sized to them) keep exactly as before: every history reads
back whole, each distinct prefix is one node, each distinct text one blob."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

from vera.records import CallBody, CallRecord, Completion, Conversation, Message
from vera.store import BODIES, BodyReader, RunStore

SYSTEM = Message("system", "You are someone talking to a chatbot about your week. " * 40)


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
    # Compressed ones are ordinary zlib streams, and smaller than what they hold.
    packed = [d for d in blobs.values() if d[:1] == b"z"]
    assert packed and all(len(zlib.decompress(d[1:])) > len(d) for d in packed)


def test_a_blob_no_longer_remembered_is_found_not_stored_again(tmp_path: Path) -> None:
    from vera.store._bodies import CallBodies

    bodies = CallBodies(tmp_path / BODIES, calls_size=0, remember=2)
    texts = [f"text {i} " * 30 for i in range(5)]
    first = [bodies._text(t) for t in texts]  # the first ones fall out of memory
    again = [bodies._text(t) for t in texts]
    bodies.close()
    assert again == first and len(set(first)) == 5
    with sqlite3.connect(tmp_path / BODIES) as db:
        assert db.execute("SELECT count(*) FROM blobs").fetchone() == (5,)
