"""The run store: append-only records, torn tails after a crash, nothing twice."""

from __future__ import annotations

from vera.records import Conversation, Judgement, Turn
from vera.store import CONVERSATIONS, RunStore, read_records


def conv(cid: str, status: str = "complete") -> Conversation:
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
    assert set(s.conversations) == {"a"}
    s.add_conversation(conv("c"))
    s.close()
    assert [c.id for c in read_records(path, Conversation)] == ["a", "c"]
    assert path.read_bytes().endswith(b"\n")


def test_a_whole_record_without_its_newline_is_kept(tmp_path):
    path = tmp_path / CONVERSATIONS
    import msgspec

    path.write_bytes(msgspec.json.encode(conv("a")))
    s = RunStore(tmp_path)
    assert set(s.conversations) == {"a"}
    s.add_conversation(conv("b"))
    s.close()
    assert [c.id for c in read_records(path, Conversation)] == ["a", "b"]


def test_a_damaged_middle_line_does_not_lose_the_others(tmp_path):
    path = tmp_path / CONVERSATIONS
    import msgspec

    good = msgspec.json.encode(conv("a")) + b"\n"
    path.write_bytes(good + b"garbage\n" + msgspec.json.encode(conv("b")) + b"\n")
    assert [c.id for c in read_records(path, Conversation)] == ["a", "b"]
