"""Reading the data files people edit (rubrics, persona sets): one clear error per
unreadable file, and the optional same-stem ``.toml`` sidecar with name and version."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from vera.errors import DataError


def read_tsv_text(path: Path, what: str) -> tuple[bytes, str]:
    """(raw bytes for hashing, text) of a UTF-8 file, a byte-order mark allowed
    (spreadsheets write one)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(str(path), f"cannot read {what}: {exc.strerror or exc}") from None
    try:
        return raw, raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(str(path), f"not UTF-8 text (byte {exc.start})") from None


def sidecar(path: Path) -> dict[str, Any]:
    """The `<stem>.toml` next to a data file (name, version, ...), or {} if there is none."""
    side = path.with_suffix(".toml")
    if not side.is_file():
        return {}
    try:
        return tomllib.loads(side.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise DataError(str(side), f"invalid TOML: {exc}") from None
