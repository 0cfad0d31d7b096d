"""The run directory: the append-only writer (fsync'd JSONL, an index of places), the one
reader (`open_run`, which repairs a torn tail only when asked), and the event log.
"""

from vera.store._events import EventLog, Fanout
from vera.store._index import (
    ConversationHead,
    JudgementHead,
    RunRecords,
    StaleIndexError,
    open_run,
    read_manifest,
    recorded_spend,
)
from vera.store._writer import MANIFEST, RunStore, atomic_file, atomic_write

__all__ = [
    "MANIFEST",
    "ConversationHead",
    "EventLog",
    "Fanout",
    "JudgementHead",
    "RunRecords",
    "RunStore",
    "StaleIndexError",
    "atomic_file",
    "atomic_write",
    "open_run",
    "read_manifest",
    "recorded_spend",
]
