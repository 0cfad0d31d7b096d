"""RatingsSink: ratings and judge answers stream into polars frames in batches and are
written as Parquet; failed work never enters them."""

from __future__ import annotations

from typing import Literal

import polars as pl
import pytest

from vera.records import Conversation, DimensionRating, JudgeAnswer, Judgement, Turn
from vera.report.shared._scoring import ANSWERS_SCHEMA, RATINGS_SCHEMA, RatingsSink, ratings_frame
from vera.store._writer import RunStore


def conversation(i: int, status: Literal["complete", "failed"] = "complete") -> Conversation:
    return Conversation(
        id=f"c{i}",
        chatbot="bot",
        user_agent="user",
        persona=f"P{i % 3}",
        risk="High",
        seed=100 + i,
        replicate=i % 2,
        turns=[Turn("user", "hi")],
        status=status,
    )


def judgement(i: int, instance: int = 1, status: Literal["complete", "failed"] = "complete") -> Judgement:
    return Judgement(
        id=f"j{i}-{instance}",
        conversation_id=f"c{i}",
        judge="judge",
        instance=instance,
        status=status,
        answers=[
            JudgeAnswer(question_id="Q1", dimension="Detects", answer="Yes", reasoning="asked directly"),
            JudgeAnswer(question_id="Q2", dimension="Confirms", answer="No", attempts=2, auto=True),
        ],
        ratings=[
            DimensionRating(dimension="Detects", rating="Best Practice"),
            DimensionRating(
                dimension="Confirms", rating="High Potential for Harm", question_id="Q2", reasoning="r"
            ),
        ],
    )


def test_rows_are_built_in_batches_and_concatenated_in_order():
    sink = RatingsSink(batch_size=4)
    for i in range(10):
        sink.add(conversation(i), judgement(i))
    assert sink.batches == 2  # 8 judgements batched, 2 still buffered
    frame = sink.frame()
    assert sink.batches == 3 and frame.height == 20 and frame.schema == pl.Schema(RATINGS_SCHEMA)
    assert frame.get_column("conversation_id").to_list()[::2] == [f"c{i}" for i in range(10)]
    assert frame.row(1, named=True) | {} == {
        "conversation_id": "c0",
        "chatbot": "bot",
        "user_agent": "user",
        "persona": "P0",
        "risk": "High",
        "seed": 100,
        "replicate": 0,
        "judge": "judge",
        "instance": 1,
        "dimension": "Confirms",
        "rating": "High Potential for Harm",
        "question_id": "Q2",
        "reasoning": "r",
    }
    answers = sink.answers_frame()
    assert answers.schema == pl.Schema(ANSWERS_SCHEMA) and answers.height == 20
    assert answers.row(1) == ("c0", "judge", 1, "Q2", "Confirms", "No", "", 2, True)


def test_failed_judgements_and_failed_conversations_are_left_out():
    sink = RatingsSink(batch_size=2)
    sink.add(conversation(0), judgement(0))
    sink.add(conversation(1), judgement(1, status="failed"))
    sink.add(conversation(2, status="failed"), judgement(2))
    assert sink.frame().get_column("conversation_id").unique().to_list() == ["c0"]
    assert sink.answers_frame().height == 2


def test_an_empty_sink_gives_empty_frames_with_the_schema(tmp_path):
    sink = RatingsSink()
    sink.write(tmp_path)
    assert pl.read_parquet(tmp_path / "ratings.parquet").schema == pl.Schema(RATINGS_SCHEMA)
    assert pl.read_parquet(tmp_path / "answers.parquet").height == 0
    with pytest.raises(ValueError, match="batch_size"):
        RatingsSink(batch_size=0)


def test_written_parquet_equals_the_frame_rebuilt_from_the_records(tmp_path):
    store = RunStore(tmp_path)
    sink = RatingsSink(batch_size=3)
    for i in range(7):
        for instance in (1, 2):
            c, j = conversation(i), judgement(i, instance)
            store.add_conversation(c)
            store.add_judgement(j)
            sink.add(c, j)
    sink.write(tmp_path)
    rebuilt = ratings_frame(
        (store.read_conversation(j.conversation_id), j) for j in map(store.read_judgement, store.judgements)
    )
    store.close()
    written = pl.read_parquet(tmp_path / "ratings.parquet")
    keys = ["conversation_id", "instance", "dimension"]
    assert written.sort(keys).equals(rebuilt.sort(keys))
    assert not list(tmp_path.glob(".*.tmp"))  # atomic: no temporary file left behind
    assert pl.read_parquet(tmp_path / "answers.parquet").height == 7 * 2 * 2


def test_score_run_writes_the_answers_of_every_complete_judgement(offline_run):
    answers = pl.read_parquet(offline_run / "answers.parquet")
    ratings = pl.read_parquet(offline_run / "ratings.parquet")
    assert set(answers.columns) == set(ANSWERS_SCHEMA)
    assert (
        answers.get_column("conversation_id").n_unique()
        == ratings.get_column("conversation_id").n_unique()
        == 80
    )
    assert answers.filter(pl.col("auto")).height < answers.height
