"""Reading the data files people edit (rubrics, persona sets): one clear error per
unreadable file, and the optional same-stem ``.toml`` sidecar with name and version."""

from __future__ import annotations

import csv
import tomllib
from pathlib import Path
from typing import Any

from vera.errors import DataError
from vera.text import read_text, refuse_stray_bom

# A cell may hold up to this much text. Python's csv module stops at 128 KiB, which a long
# rubric guidance or persona background written in a spreadsheet can pass; past this limit
# a cell is almost certainly a broken file (a quote never closed), and is named as such.
CELL_LIMIT = 16 * 1024 * 1024
csv.field_size_limit(max(csv.field_size_limit(), CELL_LIMIT))


def tsv_rows(text: str, path: Path) -> list[list[str]]:
    """The rows of a tab-separated text, one per line; a cell the csv module cannot read
    (over `CELL_LIMIT`) is a DataError naming the file and line."""
    reader = csv.reader(text.splitlines(), delimiter="\t")
    rows: list[list[str]] = []
    try:
        for row in reader:
            rows.append(row)
    except csv.Error as exc:
        line = reader.line_num + 1 if len(rows) == reader.line_num else reader.line_num
        raise DataError(
            f"{path}:{line}", f"a cell cannot be read: {exc} (over {CELL_LIMIT // 2**20} MiB?)"
        ) from None
    return rows


def read_tsv_text(path: Path, what: str) -> tuple[bytes, str]:
    """(raw bytes for hashing, text) of a UTF-8 file, a byte-order mark allowed
    (spreadsheets write one) at its start and refused anywhere else (two exports
    joined: `refuse_stray_bom`); another encoding is named (vera.text)."""
    raw, text = read_text(path, what)
    refuse_stray_bom(text, path)
    return raw, text


def sidecar(path: Path) -> dict[str, Any]:
    """The `<stem>.toml` next to a data file (name, version, ...), or {} if there is none."""
    side = path.with_suffix(".toml")
    if not side.is_file():
        return {}
    try:
        return tomllib.loads(read_text(side, "rubric or persona metadata")[1])
    except tomllib.TOMLDecodeError as exc:
        raise DataError(str(side), f"invalid TOML: {exc}") from None
