"""Reading the run's append-only JSONL files one line at a time, and one record by place.

The run store, the report builders, the merge and the viewer all read the same files;
this is the one way they read them. Nothing here holds more than one line at a time:
a place (`RecordRef`: byte offset and length) is enough to read a record again later.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NamedTuple, TypeVar

import msgspec

from vera.errors import UserError

T = TypeVar("T")

# How far back from the end of a file a torn last line is looked for at a time.
_TAIL_BLOCK = 1 << 16


class RecordRef(NamedTuple):
    """A record's line in its file: byte offset and length (without the newline)."""

    offset: int
    length: int


class StaleIndexError(UserError):
    """A record is no longer where the scan found it."""


def lines(path: Path) -> Iterator[tuple[RecordRef, bytes]]:
    """Every non-empty line of a file with its place, read in one pass."""
    if not path.exists():
        return
    offset = 0
    with open(path, "rb") as f:
        for raw in f:
            line = raw.rstrip(b"\r\n")
            if line.strip():
                yield RecordRef(offset, len(line)), line
            offset += len(raw)


def records(path: Path, type_: type[T]) -> Iterator[T]:
    """Every record of a file that decodes as `type_`, in file order. A damaged or torn
    line is skipped: one bad record must not lose the others."""
    decoder = msgspec.json.Decoder(type_)
    for _, line in lines(path):
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            yield decoder.decode(line)


class RecordReader:
    """Reads records by place from one file kept open (many reads, one open)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] | None = None

    def read(self, ref: RecordRef, type_: type[T], expected_id: str) -> T:
        """One record by its place. The files are append-only, so a place found by a scan
        stays valid; if the record there is not the one expected, the file was rewritten
        since (e.g. replaced by a merge) and the scan must be redone."""
        if self._file is None:
            self._file = open(self.path, "rb")  # noqa: SIM115 (closed in close())
        self._file.seek(ref.offset)
        data = self._file.read(ref.length)
        try:
            record = msgspec.json.decode(data, type=type_)
        except (msgspec.DecodeError, msgspec.ValidationError):
            record = None
        if record is None or getattr(record, "id", None) != expected_id:
            raise StaleIndexError(
                f"{self.path}: the file changed since it was scanned; restart to read it again"
            )
        return record

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> RecordReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def read_record(path: Path, ref: RecordRef, type_: type[T], expected_id: str) -> T:
    """One record by its place (see `RecordReader.read`)."""
    with RecordReader(path) as reader:
        return reader.read(ref, type_, expected_id)


def torn_tail(path: Path, type_: type[T]) -> tuple[int, bool] | None:
    """Whether the file's last line lacks its newline: None if the file ends cleanly,
    else (where that line starts, whether it is a whole record of `type_`). Only the end
    of the file is read, so opening a big run does not decode it twice."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return None
    with open(path, "rb") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return None
        # Walk back block by block to the last newline: the tail starts after it.
        end, chunks = size, []
        start = 0
        while end > 0:
            begin = max(0, end - _TAIL_BLOCK)
            f.seek(begin)
            block = f.read(end - begin)
            cut = block.rfind(b"\n")
            if cut >= 0:
                start = begin + cut + 1
                chunks.append(block[cut + 1 :])
                break
            chunks.append(block)
            end = begin
        tail = b"".join(reversed(chunks))
    if not tail.strip():
        return None  # only blanks: every reader skips them, and appends stay clean
    try:
        msgspec.json.decode(tail, type=type_)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return start, False
    return start, True


def repair_tail(path: Path, type_: type[T]) -> None:
    """Mend a torn last line (a crash mid-write): a whole record that only lacks its
    newline gets it; a partial one is cut off, so later appends start clean. Best effort:
    in a read-only folder the torn line is skipped by every reader anyway."""
    torn = torn_tail(path, type_)
    if torn is None:
        return
    start, whole = torn
    with contextlib.suppress(OSError):
        if whole:
            with open(path, "ab") as f:
                f.write(b"\n")
        else:
            with open(path, "r+b") as f:
                f.truncate(start)
                f.flush()
                os.fsync(f.fileno())
