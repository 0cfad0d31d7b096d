"""The card is built from the run's files read one record at a time: it must be the card
of the whole records read at once (the way vera read them before it streamed)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

from vera.records import CallRecord, Conversation, Judgement
from vera.report.card._build import _accounting
from vera.report.card._score import score_run
from vera.report.shared._scoring import ratings_and_answers
from vera.store._index import read_manifest
from vera.store._writer import CALLS, CONVERSATIONS, JUDGEMENTS, keep_latest, read_records


def _eager_pairs(run) -> Iterator[tuple[Conversation, Judgement]]:
    """Every record in memory at once, then the pairs that count, in record order."""
    conversations: dict[str, Conversation] = {}
    for c in read_records(run / CONVERSATIONS, Conversation):
        keep_latest(conversations, c)
    judgements: dict[str, Judgement] = {}
    for j in read_records(run / JUDGEMENTS, Judgement):
        keep_latest(judgements, j)
    for j in judgements.values():
        conv = conversations.get(j.conversation_id)
        if j.status == "complete" and conv is not None and conv.status == "complete":
            yield conv, j


def test_the_streamed_card_is_the_card_of_every_record_read_at_once(rich_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(rich_run, run)
    eager = ratings_and_answers(_eager_pairs(run))
    card_from_eager = score_run(run, frames=eager)
    files = {name: (run / name).read_bytes() for name in ("card.json", "card.md", "card.html")}
    card_streamed = score_run(run)
    assert card_streamed == card_from_eager
    assert {name: (run / name).read_bytes() for name in files} == files
    # The harm list (read whole, judgement by judgement) and the accounting (summed as
    # the call log streams by) are those of the records read at once.
    harmful = [h for bot in card_streamed.chatbots for h in bot.harmful]
    assert harmful and all(h.reasoning is not None for h in harmful)
    judgements: dict[str, Judgement] = {}
    for j in read_records(run / JUDGEMENTS, Judgement):
        keep_latest(judgements, j)
    assert card_streamed.accounting == _accounting(
        read_records(run / CALLS, CallRecord),
        read_manifest(run),
        unused=sum(j.unused_questions for j in judgements.values()),
    )
    assert card_streamed.accounting.unused_judge_questions > 0  # the offline judges asked ahead
