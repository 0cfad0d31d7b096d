"""Reading the run's append-only JSONL files one line at a time, and one record by place.

The run store, the report builders, the merge and the viewer all read the same files;
this is the one way they read them (`decoded`). Nothing here holds more than one line at
a time: a place (`RecordRef`: byte offset and length) is enough to read a record again
later.

Two kinds of line do not decode, and they are told apart:

* a **torn last line**: the file's last line, without its newline, that is not a whole
  record. A crash (or kill -9) mid-write leaves one, and a run being written shows one
  for a moment. Every reader skips it without a word; whoever appends to the file first
  mends it (`repair_tail`: a whole record gets its newline, a partial one is cut off).
* a **corrupt line**: any other line that does not decode (a line ended by its newline
  cannot be a write in progress). It is never skipped in silence: it is handed to the
  `Damage` watching the reads (`watching`), which either refuses to go on
  (`CorruptRecordError`, naming file and line) or counts it and tells whoever asked to
  be told; a reader with no watcher (library use) skips it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import IO, NamedTuple, TypeVar

import msgspec

from vera.errors import DataError, UserError

T = TypeVar("T")

# How far back from the end of a file a torn last line is looked for at a time.
_TAIL_BLOCK = 1 << 16


class RecordRef(NamedTuple):
    """A record's line in its file: byte offset and length (without the newline)."""

    offset: int
    length: int


class StaleIndexError(UserError):
    """A record is no longer where the scan found it."""


class CorruptLine(NamedTuple):
    """A line of a record file that is not a record (and not a torn last line)."""

    path: Path
    number: int  # 1-based, counting every line of the file
    problem: str

    def where(self) -> str:
        return f"{self.path}:{self.number}"

    def render(self) -> str:
        return f"{self.where()}: {self.problem}"


class CorruptRecordError(UserError):
    """A record file holds a line that does not decode, and the reader may not skip it."""


SKIP_HINT = (
    "the run's records are damaged: restore the file from a backup, or give --skip-corrupt "
    "to go on without the line (the card then counts the lines skipped)"
)


class LostBodies(NamedTuple):
    """Calls of one read of a run whose bodies a damaged bodies' file lost."""

    path: Path  # the bodies' file
    calls: int
    where: str  # "record 265", "records 3, 9", or what could not be read

    def render(self) -> str:
        return (
            f"{self.path} is damaged ({self.where}): {self.calls} call(s) left without their "
            "request and response (restore the file from a backup to get them back)"
        )


class Damage:
    """The corrupt lines met by the reads made while it watches (`watching`): each once,
    by file and line. `refuse`: the first one is a `CorruptRecordError` instead (a run
    resumed or scored over damaged records would count work that is not there).
    `on_found` is told of each line skipped; a watcher inside another passes the lines
    it skips on to it."""

    def __init__(
        self,
        *,
        refuse: bool = False,
        on_found: Callable[[CorruptLine], None] | None = None,
        parent: Damage | None = None,
        bodies: bool = False,
        on_lost: Callable[[LostBodies], None] | None = None,
    ) -> None:
        self.refuse = refuse
        self.on_found = on_found
        self.parent = parent
        self.lines: dict[tuple[str, int], CorruptLine] = {}
        # Whether a damaged record of a run's call bodies may be gone past (its calls
        # then have no body, each saying why), and the bodies so lost.
        self.bodies = bodies
        self.on_lost = on_lost
        self.lost: list[LostBodies] = []

    def lost_bodies(self, lost: LostBodies) -> None:
        """Calls read without their bodies because the bodies' file is damaged (told
        once per file read, with the count)."""
        self.lost.append(lost)
        if self.on_lost is not None:
            self.on_lost(lost)
        if self.parent is not None:
            self.parent.lost_bodies(lost)

    def found(self, line: CorruptLine) -> None:
        if self.refuse:
            raise CorruptRecordError(f"{line.render()}; {SKIP_HINT}")
        self._skipped(line)

    def _skipped(self, line: CorruptLine) -> None:
        key = (str(line.path), line.number)
        if key in self.lines:
            return
        self.lines[key] = line
        if self.on_found is not None:
            self.on_found(line)
        if self.parent is not None:
            self.parent._skipped(line)


_watcher: ContextVar[Damage | None] = ContextVar("vera_record_damage", default=None)


@contextlib.contextmanager
def watching(
    *,
    refuse: bool | None = None,
    on_found: Callable[[CorruptLine], None] | None = None,
    bodies: bool | None = None,
    on_lost: Callable[[LostBodies], None] | None = None,
) -> Iterator[Damage]:
    """Watch the record files read inside the block for corrupt lines (see `Damage`).
    `refuse=None` keeps the policy of the watcher around this one (none: skip).
    `bodies`: whether a damaged record of the call bodies may be gone past (None: the
    policy around, else no: without --skip-corrupt, a reader of every body refuses)."""
    parent = _watcher.get()
    if refuse is None:
        refuse = parent.refuse if parent is not None else False
    if bodies is None:
        bodies = parent.bodies if parent is not None else False
    damage = Damage(refuse=refuse, on_found=on_found, parent=parent, bodies=bodies, on_lost=on_lost)
    token = _watcher.set(damage)
    try:
        yield damage
    finally:
        _watcher.reset(token)


def current_damage() -> Damage | None:
    """The watcher of the reads in progress (None: library use)."""
    return _watcher.get()


def _open_to_read(path: Path) -> IO[bytes]:
    """A record file opened for reading. One the user may not read (another user's run,
    chmod 000) is one `DataError` line naming it, never a traceback: every command that
    reads a run reads its files through here, `torn_tail` and `RecordReader`."""
    try:
        return open(path, "rb")  # the caller closes it
    except OSError as exc:
        raise DataError(str(path), f"cannot read: {exc.strerror or exc}") from None


def _numbered(path: Path) -> Iterator[tuple[RecordRef, bytes, int, bool]]:
    """Every non-empty line of a file: its place, its bytes, its number, and whether it
    ends with a newline (only the last line of a file can lack one)."""
    if not path.exists():
        return
    offset = 0
    with _open_to_read(path) as f:
        for number, raw in enumerate(f, start=1):
            line = raw.rstrip(b"\r\n")
            if line.strip():
                yield RecordRef(offset, len(line)), line, number, raw.endswith(b"\n")
            offset += len(raw)


def lines(path: Path) -> Iterator[tuple[RecordRef, bytes]]:
    """Every non-empty line of a file with its place, read in one pass."""
    for ref, line, _, _ in _numbered(path):
        yield ref, line


def decoded(path: Path, decoder: msgspec.json.Decoder[T]) -> Iterator[tuple[RecordRef, T]]:
    """Every line of a record file that decodes, with its place, in file order. A torn
    last line is skipped; any other line that does not decode is handed to the watcher
    (see the module docstring), which refuses or counts it."""
    for ref, line, number, ended in _numbered(path):
        try:
            record = decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            damage = _watcher.get()
            # Not ended: a torn last line (a crash, or a write in progress), mended on append.
            if ended and damage is not None:
                damage.found(CorruptLine(path, number, f"not a record ({exc})"))
            continue
        yield ref, record


def records(path: Path, type_: type[T]) -> Iterator[T]:
    """Every record of a file that decodes as `type_`, in file order (see `decoded`: one
    bad line must not lose the others, and is never skipped unseen)."""
    decoder = msgspec.json.Decoder(type_)
    for _, record in decoded(path, decoder):
        yield record


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
            self._file = _open_to_read(self.path)  # closed in close()
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
    with _open_to_read(path) as f:
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
