"""The records of work that could not be done: a conversation or judgement that failed
is stored as failed, with the reason, and kept out of every score."""

from __future__ import annotations

import time

from vera.engine._plan import JudgeSlot
from vera.engine._simulate import (
    ConversationJob,
)
from vera.records import (
    Conversation,
    Judgement,
)


def failed_judgement(jid: str, conv_id: str, slot: JudgeSlot, exc: Exception) -> Judgement:
    return Judgement(
        id=jid,
        conversation_id=conv_id,
        judge=slot.ref,
        instance=slot.instance,
        status="failed",
        answers=[],
        ratings=[],
        error=f"{type(exc).__name__}: {exc}",
        finished_at=time.time(),
    )


def failed_conversation(job: ConversationJob, exc: Exception) -> Conversation:
    now = time.time()
    return job.record(
        turns=[],
        status="failed",
        ended_by="error",
        error=f"{type(exc).__name__}: {exc}",
        started_at=now,
        finished_at=now,
    )
