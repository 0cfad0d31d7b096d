"""The record index: one scan finds the records that count and where they are, and a
record read back by its place is the record the run store holds."""

from __future__ import annotations

import shutil

import msgspec
import pytest

from vera.errors import UserError
from vera.records import Conversation, Judgement, Turn
from vera.store._index import StaleIndexError, open_run
from vera.store._writer import CONVERSATIONS, JUDGEMENTS, RunStore, keep_latest, read_records


def test_every_record_read_by_its_place_is_the_stores_record(viewer_run):
    records = open_run(viewer_run)
    conversations: dict[str, Conversation] = {}
    for c in read_records(viewer_run / CONVERSATIONS, Conversation):
        keep_latest(conversations, c)
    judgements: dict[str, Judgement] = {}
    for j in read_records(viewer_run / JUDGEMENTS, Judgement):
        keep_latest(judgements, j)
    store = RunStore(viewer_run)
    try:
        assert list(records.conversations) == list(store.conversations) == list(conversations)
        assert list(records.judgements) == list(store.judgements) == list(judgements)
        for cid, conv in conversations.items():
            assert records.read_conversation(cid) == conv == store.read_conversation(cid)
            head, _ = records.conversations[cid]
            assert (head.persona, head.status, head.n_turns) == (conv.persona, conv.status, len(conv.turns))
        for jid, j in judgements.items():
            assert records.read_judgement(jid) == j == store.read_judgement(jid)
        assert list(records.iter_conversations()) == list(conversations.values())
        assert list(records.iter_judgements()) == list(judgements.values())
    finally:
        store.close()


def test_judgements_of_a_conversation_are_its_own_by_judge_and_instance(viewer_run):
    records = open_run(viewer_run)
    heads = records.judgements_of("0000markup000000")
    assert [(h.judge, h.instance) for h in heads] == [
        ("offline/lexical-judge", 1),
        ("offline/second-judge", 1),
    ]
    assert records.judgements_of("no-such-conversation") == []


def test_the_latest_record_counts_and_a_complete_one_is_never_replaced(tmp_path, offline_run):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    store = RunStore(run)
    conv = store.read_conversation(next(iter(store.conversations)))
    store.close()
    failed = msgspec.structs.replace(conv, id="resumed", status="failed", error="timeout", turns=[])
    done = msgspec.structs.replace(conv, id="resumed", turns=[Turn("user", "second try")])
    encoder = msgspec.json.Encoder()
    with open(run / CONVERSATIONS, "ab") as f:
        # failed, then complete on resume, then a late failed copy: the complete one counts
        for c in (failed, done, failed):
            f.write(encoder.encode(c) + b"\n")
    records = open_run(run)
    assert records.read_conversation("resumed") == done
    assert records.conversations["resumed"][0].status == "complete"


def test_a_torn_last_line_is_skipped_and_the_file_left_as_it_is(tmp_path, offline_run):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    before = (run / JUDGEMENTS).read_bytes()
    with open(run / JUDGEMENTS, "ab") as f:
        f.write(b'{"id": "torn", "conversation_id": "x", "judge"')
    records = open_run(run)
    assert "torn" not in records.judgements
    assert len(records.judgements) == before.count(b"\n")
    assert (run / JUDGEMENTS).read_bytes().startswith(before)  # read only: nothing cut
    # A reader that writes from what it reads (the card, merge) asks for the repair:
    # the torn line is cut, the records are the same.
    repaired = open_run(run, repair=True)
    assert (run / JUDGEMENTS).read_bytes() == before
    assert repaired.judgement_heads() == records.judgement_heads()


def test_a_file_rewritten_after_the_scan_is_reported_not_misread(tmp_path, offline_run):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    records = open_run(run)
    lines = (run / CONVERSATIONS).read_bytes().splitlines(keepends=True)
    (run / CONVERSATIONS).write_bytes(b"".join(reversed(lines)))
    first = next(iter(records.conversations))
    with pytest.raises(StaleIndexError, match="changed since it was scanned"):
        records.read_conversation(first)


def test_a_folder_without_manifest_is_one_clear_error(tmp_path):
    with pytest.raises(UserError, match="not a vera run directory"):
        open_run(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(UserError, match="not a readable run manifest"):
        open_run(tmp_path)


def test_a_head_counts_the_turns_without_keeping_them(tmp_path, offline_run):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    conv = Conversation(
        id="long",
        chatbot="b",
        user_agent="u",
        persona="p",
        risk="Low",
        seed=1,
        turns=[Turn("user", "x" * 1000)] * 3,
    )
    with open(run / CONVERSATIONS, "ab") as f:
        f.write(msgspec.json.encode(conv) + b"\n")
    head, ref = open_run(run).conversations["long"]
    assert head.n_turns == 3 and head.turns == [] and ref.length == len(msgspec.json.encode(conv))
