"""The records made in bulk stay out of the garbage collector's tracking (gc=False), and
the records that hold them still encode and decode as before."""

from __future__ import annotations

import gc

import msgspec

from vera.records import (
    CallRecord,
    Completion,
    Conversation,
    DimensionRating,
    JudgeAnswer,
    Judgement,
    Message,
    Turn,
    Usage,
)


def test_bulk_records_are_not_tracked_by_the_collector() -> None:
    turn = Turn(speaker="user", text="hello")
    conversation = Conversation(
        id="c1",
        chatbot="bot",
        user_agent="ua",
        persona="P",
        risk="Low",
        seed=1,
        turns=[turn],
        status="complete",
    )
    made = [
        Message(role="user", content="hi"),
        turn,
        Usage(input_tokens=1, output_tokens=2),
        Completion(text="x"),
        conversation,
    ]
    assert not any(gc.is_tracked(r) for r in made)
    # Containers inside are still tracked: nothing escapes collection that could cycle.
    assert gc.is_tracked(conversation.turns)


def test_untracked_records_round_trip_through_json() -> None:
    conv = Conversation(
        id="c1",
        chatbot="bot",
        user_agent="ua",
        persona="P",
        risk="Low",
        seed=1,
        turns=[Turn("user", "hi")],
        status="complete",
    )
    assert msgspec.json.decode(msgspec.json.encode(conv), type=Conversation) == conv
    for cls in (CallRecord, JudgeAnswer, DimensionRating, Judgement):
        assert cls.__struct_config__.gc is False
