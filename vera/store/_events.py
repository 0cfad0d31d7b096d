"""The run's event log: one JSON object per line in ``RUN_DIR/events.jsonl``.

What happened and when, for a person reading a run after the fact: the plan, every
failed conversation or judgement with its reason, every call that needed retries or
met a 429, why a run stopped early, and the totals at the end. Messages pass through
the profiles' redaction, so a key can never reach the log.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import IO, Any

import orjson
import structlog

from vera.errors import storage_error
from vera.inputs import redact
from vera.records import CallRecord, Conversation, Judgement
from vera.store._index import ConversationHead, JudgementHead

EVENTS_FILE = "events.jsonl"


def _redact(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    return {k: redact(v) if isinstance(v, str) else v for k, v in event.items()}


class _LogFile:
    """The log file as structlog's logger: every level writes one rendered line and
    flushes it (what `structlog.BytesLogger` does, but over our file, so that a failing
    disk is reported as one line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._file: IO[bytes] = open(path, "ab")  # noqa: SIM115 (closed in close())
        except OSError as exc:
            raise storage_error(path, "the event log", exc) from None

    def msg(self, message: bytes) -> None:
        try:
            self._file.write(message + b"\n")
            self._file.flush()
        except OSError as exc:
            raise storage_error(self.path, "the event log", exc) from None

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg

    def close(self) -> None:
        try:
            self._file.close()
        except OSError as exc:
            raise storage_error(self.path, "the event log", exc) from None


class EventLog:
    """A structlog logger bound to one run directory."""

    def __init__(self, run_dir: Path) -> None:
        self._file = _LogFile(run_dir / EVENTS_FILE)
        self.log = structlog.wrap_logger(
            self._file,
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                _redact,
                structlog.processors.JSONRenderer(serializer=orjson.dumps),
            ],
        )

    def call(self, record: CallRecord) -> None:
        """Only calls worth a look: errors, retries, rate limits."""
        if record.status == "error":
            self.log.warning(
                "call_failed",
                role=record.role,
                provider=record.provider,
                job=record.job_id,
                attempts=record.attempts,
                http_429=record.http_429,
                error=record.error,
            )
        elif record.attempts > 1 or record.http_429:
            self.log.info(
                "call_retried",
                role=record.role,
                provider=record.provider,
                job=record.job_id,
                attempts=record.attempts,
                http_429=record.http_429,
            )

    def conversation(self, conv: Conversation | ConversationHead, *, cached: bool) -> None:
        if conv.status == "failed":
            self.log.warning(
                "conversation_failed",
                id=conv.id,
                chatbot=conv.chatbot,
                persona=conv.persona,
                error=conv.error,
            )

    def judgement(self, judgement: Judgement | JudgementHead, *, cached: bool) -> None:
        if judgement.status == "failed":
            self.log.warning(
                "judgement_failed",
                id=judgement.id,
                conversation=judgement.conversation_id,
                judge=judgement.judge,
                error=judgement.error,
            )

    def start(self, total_conversations: int, total_judgements: int) -> None:
        self.log.info("sweep_started", conversations=total_conversations, judgements=total_judgements)

    def stop(self) -> None:
        self.log.info("sweep_finished")

    def close(self) -> None:
        self._file.close()


class Fanout:
    """Several Progress listeners as one (the live display and the event log)."""

    def __init__(self, *listeners: Any) -> None:
        self.listeners = [x for x in listeners if x is not None]

    def start(self, total_conversations: int, total_judgements: int) -> None:
        for x in self.listeners:
            x.start(total_conversations, total_judgements)

    def conversation(self, conv: Conversation | ConversationHead, *, cached: bool) -> None:
        for x in self.listeners:
            x.conversation(conv, cached=cached)

    def judgement(self, judgement: Judgement | JudgementHead, *, cached: bool) -> None:
        for x in self.listeners:
            x.judgement(judgement, cached=cached)

    def stop(self) -> None:
        for x in self.listeners:
            x.stop()
