"""Files as records: JSONL record files read line by line or by place, TSV data files with
their sidecars.
"""

from vera.files._datafile import CELL_LIMIT, read_tsv_text, sidecar, tsv_rows
from vera.files._jsonl import (
    SKIP_HINT,
    CorruptLine,
    CorruptRecordError,
    Damage,
    LostBodies,
    RecordReader,
    RecordRef,
    StaleIndexError,
    current_damage,
    decoded,
    lines,
    read_record,
    records,
    repair_tail,
    torn_tail,
    watching,
)

__all__ = [
    "CELL_LIMIT",
    "SKIP_HINT",
    "CorruptLine",
    "CorruptRecordError",
    "Damage",
    "LostBodies",
    "RecordReader",
    "RecordRef",
    "StaleIndexError",
    "current_damage",
    "decoded",
    "lines",
    "read_record",
    "read_tsv_text",
    "records",
    "repair_tail",
    "sidecar",
    "torn_tail",
    "tsv_rows",
    "watching",
]
