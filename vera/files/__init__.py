"""Files as records: JSONL record files read line by line or by place, TSV data files with
their sidecars; and the one check every reader of a file people export from a
spreadsheet makes, a byte-order mark only at the very start (`refuse_stray_bom`).
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
from vera.text import STRAY_BOM, refuse_stray_bom

__all__ = [
    "CELL_LIMIT",
    "SKIP_HINT",
    "STRAY_BOM",
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
    "refuse_stray_bom",
    "repair_tail",
    "sidecar",
    "torn_tail",
    "tsv_rows",
    "watching",
]
