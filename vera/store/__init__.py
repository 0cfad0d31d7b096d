"""The run directory: the append-only writer (fsync'd JSONL, an index of places), the one
reader (`open_run`, which repairs a torn tail only when asked), the event log, the
human ratings people add to a run after its sweep, and the guard that keeps every
output a user names off a run's records and a command's own inputs (`check_output`).
"""

from vera.store._bodies import BODIES, BodyReader, bodies_path, count_bodies, has_bodies
from vera.store._bodylog import Gap
from vera.store._events import EventLog, Fanout
from vera.store._guard import CALLS_EXPORT, OverwriteRefused, check_output, record_kind
from vera.store._humans import (
    HUMAN_RATINGS,
    OTHER_TRANSCRIPTS_OPTION,
    append_human_ratings,
    check_appendable,
    check_human_dimensions,
    check_transcripts,
    latest_human_ratings,
    other_transcript_problem,
    read_human_ratings,
    read_human_ratings_file,
    read_human_ratings_numbered,
    run_fingerprints,
    transcript_mismatch,
    unchecked_note,
)
from vera.store._index import (
    ConversationHead,
    JudgementHead,
    RunRecords,
    StaleIndexError,
    calls_with_bodies,
    conversation_calls_with_bodies,
    manifest_notes,
    open_run,
    placed_calls_with_bodies,
    read_manifest,
    recorded_spend,
    replayable_bodies,
)
from vera.store._marks import SESSION_FILE, left_open, mark_closed, mark_open, unfinished
from vera.store._writer import MANIFEST, RunStore, atomic_file, atomic_write

__all__ = [
    "BODIES",
    "CALLS_EXPORT",
    "HUMAN_RATINGS",
    "MANIFEST",
    "OTHER_TRANSCRIPTS_OPTION",
    "SESSION_FILE",
    "BodyReader",
    "ConversationHead",
    "EventLog",
    "Fanout",
    "Gap",
    "JudgementHead",
    "OverwriteRefused",
    "RunRecords",
    "RunStore",
    "StaleIndexError",
    "append_human_ratings",
    "atomic_file",
    "atomic_write",
    "bodies_path",
    "calls_with_bodies",
    "check_appendable",
    "check_human_dimensions",
    "check_output",
    "check_transcripts",
    "conversation_calls_with_bodies",
    "count_bodies",
    "has_bodies",
    "latest_human_ratings",
    "left_open",
    "manifest_notes",
    "mark_closed",
    "mark_open",
    "open_run",
    "other_transcript_problem",
    "placed_calls_with_bodies",
    "read_human_ratings",
    "read_human_ratings_file",
    "read_human_ratings_numbered",
    "read_manifest",
    "record_kind",
    "recorded_spend",
    "replayable_bodies",
    "run_fingerprints",
    "transcript_mismatch",
    "unchecked_note",
    "unfinished",
]
