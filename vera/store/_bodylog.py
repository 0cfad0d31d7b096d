"""Call bodies, format 2: one append-only file that is both the log and the store.

`call_bodies.vlog` holds what `call_bodies.sqlite` held (every message of every call, the
parameters, the schema, the reply; keys and headers never), for far less CPU a call:
no content hash, no per-text compression, no fold into a database at the end.

- Every text (a message's content, a reply's text, a schema's JSON) gets a run-local
  integer id the first time the writer sees it, found again through a dictionary keyed
  by the text itself (Python keeps a string's hash on the string, and the turn loop
  hands the same string objects from one call to the next, so finding a known text costs
  a dictionary lookup, not a hash of its bytes). The dictionary forgets its oldest texts
  past `_TEXTS_HELD` characters: a text seen again after that is stored again (room,
  never correctness).
- A call's row carries its messages inline, each as `id << 2 | role`, with the few
  small fields (parameters, reply's id and usage, ...) beside them.
- One record per turn of the event loop: the turn's new texts and call rows, msgpack,
  compressed as one zstd frame by one compressor reused for the run. A turn's texts
  (replies and new lines of several conversations, 5–20 KB) compress as well together as
  one by one did, for one call into zstd instead of two or three a call.

The file: an 8-byte magic with the version, then records of a header (kind, payload
length, CRC-32 of the payload) and a payload. A turn's payload begins, uncompressed, with
its first text id and how many texts it adds (texts are numbered in the order written,
so a text's record is found by bisection). A `_CUT` record, written by a writer that opens
the file again, says that rows written before it whose offset is at or past the given size
of calls.jsonl are not calls (a kill between the record's write and its lines'; the call
is asked again on resume, and its new row comes after the cut). At close, an `_INDEX`
record (each turn's place and first text id, each conversation's turns, the cuts)
and a 16-byte trailer naming it: a reader of a closed run reads one conversation by
decompressing its turns and the turns holding its texts, not the whole file.

Durable before reported, as format 1: the turn's record is written before the turn's
`calls.jsonl` lines and fsync'd with them (`RunStore`). A kill leaves no index: readers
then rebuild it by reading the records, and stop at a torn last record (cut short, or
its CRC wrong), which no line of calls.jsonl names; the next writer cuts it off and
appends after the last whole record. A bad record with a whole one after it (a known
kind with a length it can have, within the file, the CRC right, a turn's first text id
continuing the numbering) is damage in the middle, not a tear: it is kept in the index as a damaged
turn (the texts it held are those up to the next turn's first id) and reading goes on
after it, so it costs its own bodies and those needing a text only it held; a writer
resuming the run leaves its bytes as they are and appends after the last whole record.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import zstandard

from vera.errors import StorageError, storage_error
from vera.records import CallBody, CallRecord, Completion, Message, Usage, WireRequest

VLOG = "call_bodies.vlog"
MAGIC = b"VERABD\x00\x02"  # "VERA bodies", format 2
# Format 2 whose rows may carry an eleventh element, the request as the service received
# it (`WireRequest`: method, URL's text id, body's text id). A vera from before it would
# fail to unpack such a row, so a file holding one says so in its magic: that vera then
# refuses the file in one line (`_check_magic`) instead. The writer turns a file's magic
# to this one before its first turn with such a row (a run with no `http` chatbot keeps
# the old magic, readable by every vera); this vera reads both.
MAGIC_WIRE = b"VERABD\x00\x03"
_ROLES = ("system", "user", "assistant")
_ROLE_CODE = {role: i for i, role in enumerate(_ROLES)}

_HEAD = struct.Struct("<BII")
_TURN, _CUT, _INDEX = 1, 2, 3
_TURN_HEAD = struct.Struct("<II")  # first text id, texts in the turn
_TRAILER = struct.Struct("<Q8s")  # where the index record begins, and a mark
_TRAILER_MARK = b"VBINDEX\n"
_ZSTD_LEVEL = 3
# Characters of text the writer's dictionary keeps (a run's working set: the texts of
# the conversations in flight, the shared system prompts); the oldest half goes past it.
_TEXTS_HELD = 32 << 20

_msgpack = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()


class BadCallLine(msgspec.DecodeError):
    """The line a body belongs to does not decode (a damaged calls.jsonl line): the
    readers of a conversation's bodies refuse (a reader of every body, for a merge or an
    export, pairs the bodies with the lines that decode instead: `rows`)."""


# What a refusal to read past a damaged bodies' file says: the way past it, and its cost.
BODY_HINT = (
    "restore it from a backup, or give --skip-corrupt to go on without the bodies it holds "
    "(those calls then have no request or response, each saying why)"
)


class DamagedRecord(StorageError):
    """A turn record of `call_bodies.vlog` that fails its check (flipped bytes): the
    bodies it holds, and those that need a text only it defines, are lost; the rest are
    read (with --skip-corrupt)."""

    def __init__(self, path: Path, number: int) -> None:
        self.path = path
        self.number = number
        super().__init__(f"{path}: record {number} is damaged; {BODY_HINT}")


class Row(NamedTuple):
    """A body as stored, before it is paired with a line of calls.jsonl: what it holds
    of its call (where its line was, how long, whose), the reply's usage (None: no
    reply), and how to read it whole with the call record it is paired with."""

    offset: int
    length: int
    job_id: str
    usage: Usage | None
    build: Callable[[CallRecord], CallBody]


class Gap(NamedTuple):
    """Bodies a damaged file lost, in their place among the rows: record `number`
    (format 2), or None: nothing past here could be read (format 1)."""

    path: Path
    number: int | None
    problem: str


def call_line(decoder: msgspec.json.Decoder[CallRecord], data: bytes) -> CallRecord:
    try:
        return decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BadCallLine(str(exc)) from None


def bad_line_error(calls: Path, offset: int, exc: BadCallLine) -> StorageError:
    """A damaged calls.jsonl line that a body belongs to, named by its file and line (as
    every reader of a record file names one), not as damage to the bodies' file."""
    try:
        with open(calls, "rb") as f:
            line = f.read(offset).count(b"\n") + 1
        where = f"{calls}:{line}"
    except OSError:
        where = f"{calls} (byte {offset})"
    return StorageError(
        f"{where}: not a record ({exc}); the run's records are damaged: restore the file from a backup"
    )


def _record(kind: int, payload: bytes) -> bytes:
    return _HEAD.pack(kind, len(payload), zlib.crc32(payload)) + payload


class _Index(msgspec.Struct, array_like=True):
    turns: list[int]  # file position of each turn's record
    first_ids: list[int]  # each turn's first text id
    conversations: dict[str, list[int]]  # conversation id -> its turns (numbers)
    cuts: list[tuple[int, int]]  # (turns before the cut, calls.jsonl size)
    next_id: int
    calls_end: int  # where the last call line named ends in calls.jsonl
    # Turns (numbers) whose record a rebuild of the index found damaged in the middle of
    # the file: their rows' conversations are unknown, so a conversation's reader tries
    # them too (and finds them damaged). Last, with a default: an index written before
    # it decodes as having none.
    damaged: list[int] = msgspec.field(default_factory=list)


_index_decoder = msgspec.msgpack.Decoder(_Index)
# What reading a damaged or vanished file raises: said as one StorageError.
_READ_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, zstandard.ZstdError, OSError, struct.error)


def _plausible(kind: int, length: int) -> bool:
    """Whether a header's kind and length can be a record's: a cut holds one size, a
    turn at least its first id and count, an index something (an empty payload's CRC is
    0, so nine bytes of a known kind and zeros would pass the CRC)."""
    if kind == _TURN:
        return length > _TURN_HEAD.size
    if kind == _CUT:
        return length == 8
    return kind == _INDEX and length > 0


def _whole(view: memoryview, pos: int, next_id: int | None = None) -> tuple[int, memoryview] | None:
    """The kind and payload of the record at `pos` if it is whole, else None. Whole: its
    header within `view`, a known kind with a length it can have (`_plausible`) within
    `view`, the CRC right, and, given `next_id`, for a turn a first text id that continues
    the numbering (at or past `next_id`). One test, so that reading on (`_scan`) and
    finding where to read on after damage (`_resync`) never disagree on what is whole."""
    size = len(view)
    if pos + _HEAD.size > size:
        return None
    kind, length, crc = _HEAD.unpack_from(view, pos)
    end = pos + _HEAD.size + length
    if not _plausible(kind, length) or end > size:
        return None
    payload = view[pos + _HEAD.size : end]
    if zlib.crc32(payload) != crc:
        return None
    if next_id is not None and kind == _TURN and _TURN_HEAD.unpack_from(payload)[0] < next_id:
        return None
    return kind, payload


def _scan(data: bytes | memoryview, pos: int) -> Iterator[tuple[int, int, memoryview]]:
    """(kind, position, payload) of each whole record from `pos`; stops at a torn one."""
    view = memoryview(data)
    while (found := _whole(view, pos)) is not None:
        kind, payload = found
        yield kind, pos, payload
        pos += _HEAD.size + len(payload)


def _resync(data: bytes | memoryview, start: int, next_id: int) -> int | None:
    """Where the first whole record (`_whole`, its first text id at or past `next_id`
    for a turn, the ids the damaged records held being unknown) at or after `start`
    begins, or None (a torn tail: nothing whole after it). Bytes inside a payload pass
    all of that about once in 4 billion tries."""
    view = memoryview(data)
    for pos in range(max(start, 0), len(view) - _HEAD.size + 1):
        if _whole(view, pos, next_id) is not None:
            return pos
    return None


_decompressor = zstandard.ZstdDecompressor()


def _turn(payload: bytes | memoryview) -> tuple[int, list[bytes], list[list[Any]]]:
    """A turn record's first text id, texts (UTF-8) and call rows."""
    first, _ = _TURN_HEAD.unpack_from(payload)
    texts, calls = _decoder.decode(_decompressor.decompress(payload[_TURN_HEAD.size :]))
    return first, texts, calls


class _Builder:
    """The index, as records are read or written."""

    def __init__(self) -> None:
        self.index = _Index([], [], {}, [], 1, 0)
        self.end = len(MAGIC)  # where the last whole record ends
        # A damaged record was skipped and no row has been read since: the first rows
        # after it bound what came before (`damage`).
        self._after_damage = False

    def turn(self, pos: int, first: int, n_texts: int, calls: list[Any]) -> None:
        ix = self.index
        number = len(ix.turns)
        ix.turns.append(pos)
        ix.first_ids.append(first)
        ix.next_id = max(ix.next_id, first + n_texts)
        if calls:
            if self._after_damage:
                # The damaged record may have been a cut (its size lost with it). Lines
                # are written in order, so no call made before this turn has its line at
                # or past this turn's first: a row there is one the lost cut cut (no-op
                # when the record was a turn).
                self._after_damage = False
                self.cut(number, min(row[0] for row in calls))
            last = calls[-1]
            ix.calls_end = max(ix.calls_end, last[0] + last[1] + 1)
        convs = ix.conversations
        for row in calls:
            c = row[2]
            turns = convs.get(c)
            if turns is None:
                convs[c] = [number]
            elif turns[-1] != number:
                turns.append(number)

    def cut(self, before: int, size: int) -> None:
        """A cut after `before` turns: rows of those turns whose line is at or past
        `size` in calls.jsonl are not calls, so the lines the file names end by `size`
        (the record read back, one a damaged record may have been, one written now)."""
        self.index.cuts.append((before, size))
        self.index.calls_end = min(self.index.calls_end, size)

    def damage(self, pos: int) -> None:
        """A damaged record at file position `pos`, with whole records after it: kept
        in its place as a turn whose first text id is the next one (its texts, if it
        held any, are those up to the next turn's first id; a reader finds them damaged)."""
        ix = self.index
        ix.damaged.append(len(ix.turns))
        ix.turns.append(pos)
        ix.first_ids.append(ix.next_id)
        self._after_damage = True

    def read(self, data: bytes, start: int) -> int:
        """Index the whole records of `data` (the file from `start`); where they end. A
        bad record followed by a whole one is damage in the middle (`damage`), read past;
        one with nothing whole after it is a torn tail (a write a kill cut short, or one
        still being made), where the reading stops."""
        end = pos = 0
        while True:
            for kind, at, payload in _scan(data, pos):
                if kind == _TURN:
                    first, texts, calls = _turn(payload)
                    self.turn(start + at, first, len(texts), calls)
                elif kind == _CUT:
                    (size,) = struct.unpack("<Q", payload)
                    self.cut(len(self.index.turns), size)
                else:
                    self.end = start + end
                    return self.end  # the closing index: what follows is its trailer
                end = at + _HEAD.size + len(payload)
            later = _resync(data, end + 1, self.index.next_id)
            if later is None:
                break
            self.damage(start + end)
            pos = later
        self.end = start + end
        return self.end


def _read_index(f: Any, size: int) -> tuple[_Index, int] | None:
    """The index a closed file ends with, and where its record begins (None: killed,
    or still being written)."""
    if size < len(MAGIC) + _TRAILER.size + _HEAD.size:
        return None
    f.seek(size - _TRAILER.size)
    at, mark = _TRAILER.unpack(f.read(_TRAILER.size))
    if mark != _TRAILER_MARK or not len(MAGIC) <= at < size:
        return None
    f.seek(at)
    data = f.read(size - _TRAILER.size - at)
    records = list(_scan(data, 0))
    if len(records) != 1 or records[0][0] != _INDEX or _HEAD.size + len(records[0][2]) != len(data):
        return None
    try:
        return _index_decoder.decode(records[0][2]), at
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _check_magic(path: Path, head: bytes) -> None:
    head = head[: len(MAGIC)]
    if head != MAGIC[: len(head)] and head != MAGIC_WIRE[: len(head)]:
        raise StorageError(f"{path}: not a call bodies file of a format this vera reads")


class BodyLog:
    """The writer of a run's call bodies in format 2 (`RunStore.add_call` hands it each
    body; `commit` writes a turn's worth, `close` the index). Same contract as
    `CallBodies` (format 1): `add`, `commit`, `forget`, `log_fd`, `close`."""

    def __init__(self, path: Path, *, calls_size: int) -> None:
        self.path = path
        self._builder = _Builder()
        self._ids: dict[str | bytes, int] = {}
        self._held = 0  # characters of text in `_ids`
        # conversation -> the calling side (user agent, chatbot, judge) -> the last
        # messages it sent, their encoded ids and `_shrinks` then: a history that grows
        # by one is the last one's ids and one more.
        self._last: dict[str, dict[str, tuple[tuple[Message, ...], list[int], int]]] = {}
        self._shrinks = 0  # times `_ids` was halved
        self._texts: list[bytes] = []
        self._calls: list[tuple[Any, ...]] = []
        self._convs: list[str] = []
        self._compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
        self._broken: StorageError | None = None
        # The damaged records a rebuild of a killed run's index stepped over (numbers).
        self.stepped_over: list[int] = []
        self._fd = -1
        self._wire_magic = False  # the file's magic is MAGIC_WIRE (rows may carry a wire)
        # A row of the turn being gathered carries a wire (`add`): the magic must say so
        # before the turn is written. A flag, not a look at every row at every commit.
        self._wire_rows = False
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            with open(path, "rb") as f:
                head = f.read(len(MAGIC))
                _check_magic(path, head)
                self._wire_magic = head == MAGIC_WIRE
                if len(head) < len(MAGIC):
                    os.ftruncate(self._fd, 0)
                    os.write(self._fd, MAGIC)
                else:
                    self._reopen(f, calls_size)
            os.lseek(self._fd, 0, os.SEEK_END)
        except (OSError, StorageError) as exc:
            if self._fd >= 0:
                os.close(self._fd)
            if isinstance(exc, StorageError):
                raise
            raise storage_error(path, "the call bodies", exc) from None
        self._next = self._builder.index.next_id

    def _reopen(self, f: Any, calls_size: int) -> None:
        """A run's file opened again (a resume): its index read from its end (a closed
        run) or rebuilt from its records (a killed one), a torn tail and the closing
        index cut off, and a cut written for rows whose line never arrived."""
        b = self._builder
        closed = _read_index(f, os.fstat(f.fileno()).st_size)
        if closed is not None:
            b.index, b.end = closed
        else:
            f.seek(len(MAGIC))
            # A damaged record in the middle is read past and kept as it is (readers
            # skip it too); only a torn tail, after the last whole record, is cut.
            b.read(f.read(), len(MAGIC))
            self.stepped_over = list(b.index.damaged)
        os.ftruncate(self._fd, b.end)
        os.lseek(self._fd, 0, os.SEEK_END)
        if b.index.calls_end > calls_size:
            record = _record(_CUT, struct.pack("<Q", calls_size))
            os.write(self._fd, record)
            b.end += len(record)
            b.cut(len(b.index.turns), calls_size)  # calls_size is below calls_end

    def log_fd(self) -> int | None:
        """The file's descriptor, for the store's fsyncs (None once closed)."""
        return self._fd if self._fd >= 0 else None

    def _new(self, text: str | bytes) -> int:
        """A text not seen before (or forgotten): its id, and its bytes for the turn."""
        i = self._ids[text] = self._next
        self._next += 1
        if isinstance(text, str):
            self._texts.append(text.encode("utf-8", "surrogatepass"))
        else:
            self._texts.append(text)
        self._held += len(text)
        if self._held > _TEXTS_HELD:
            self._shrink()
        return i

    def _shrink(self) -> None:
        self._shrinks += 1
        ids = self._ids
        for text in list(ids)[: len(ids) // 2]:
            self._held -= len(text)
            del ids[text]

    def _messages(self, conversation: str, side: str, messages: tuple[Message, ...]) -> list[int]:
        lasts = self._last.get(conversation)
        if lasts is None:
            lasts = self._last[conversation] = {}
        last = lasts.get(side)
        # The turn loop sends each side's history again with one or two messages more,
        # the same objects: comparing the two tuples is mostly identity checks.
        start, encoded = 0, []
        if last is not None:
            before, before_ids, shrinks = last
            n = len(before)
            if n <= len(messages) and messages[:n] == before:
                start, encoded = n, before_ids[:]
            elif 1 < n <= len(messages) + 1 and shrinks == self._shrinks and messages[: n - 1] == before[:-1]:
                # The user agent's view ends with its reminder joined to the last
                # message, which its next view sends without it: all but the last are
                # the same, and need not be looked up again (~25 lookups a call). Not
                # after `_ids` was halved: a lookup would then store a forgotten text
                # again, as it did before this shortcut, and the file keeps those bytes.
                start, encoded = n - 1, before_ids[:-1]
        ids, new, code = self._ids, self._new, _ROLE_CODE
        for m in messages[start:] if start else messages:
            text = m.content
            i = ids.get(text)
            if i is None:
                i = new(text)
            encoded.append(i << 2 | code[m.role])
        lasts[side] = (messages, encoded, self._shrinks)
        return encoded

    def forget(self, conversation: str) -> None:
        """The conversation's record is written: its last history is let go."""
        self._last.pop(conversation, None)

    def add(self, offset: int, length: int, body: CallBody) -> None:
        """Keep `body`, whose call's line is at `offset` (`length` bytes) in calls.jsonl,
        for the turn's record (written by `commit`)."""
        if self._fd < 0:
            raise StorageError(f"{self.path}: the call bodies are closed")
        conversation = body.conversation_id
        reply: tuple[Any, ...] | None = None
        if (r := body.response) is not None:
            u = r.usage
            text = self._ids.get(r.text)
            if text is None:
                text = self._new(r.text)
            reply = (
                text,
                r.parsed,
                r.finish_reason,
                (
                    u.input_tokens,
                    u.output_tokens,
                    u.cached_input_tokens,
                    u.cache_write_tokens,
                    u.reasoning_tokens,
                ),
                r.raw_id,
                r.model,
            )
        schema = 0
        if body.schema is not None:
            data = msgspec.json.encode(body.schema, order="sorted")
            schema = self._ids.get(data) or self._new(data)
        row: tuple[Any, ...] = (
            offset,
            length,
            conversation,
            body.question_id,
            body.call.job_id,
            self._messages(conversation, body.call.role, body.messages),
            body.params,
            schema,
            body.reask,
            reply,
        )
        if (w := body.wire) is not None:
            # Texts like the others: a conversation's URL is stored once, and a body
            # sent again (a retry, a resume) costs its id.
            url = self._ids.get(w.url) or self._new(w.url)
            sent = self._ids.get(w.body) or self._new(w.body)
            row = (*row, (w.method, url, sent))
            self._wire_rows = True
        self._calls.append(row)

    def commit(self) -> None:
        """Hand the turn's record to the OS in one write (before the turn's lines)."""
        if self._broken is not None:
            raise self._broken
        if not self._calls and not self._texts:
            return
        if self._fd < 0:
            raise StorageError(f"{self.path}: the call bodies are closed")
        texts, calls = self._texts, self._calls
        if self._wire_rows and not self._wire_magic:
            # Before the record: a vera that cannot read the row must refuse the file.
            try:
                os.pwrite(self._fd, MAGIC_WIRE, 0)
            except OSError as exc:
                self._broken = storage_error(self.path, "the call bodies", exc)
                raise self._broken from None
            self._wire_magic = True
        self._texts, self._calls, self._wire_rows = [], [], False
        first = self._next - len(texts)
        payload = _TURN_HEAD.pack(first, len(texts)) + self._compressor.compress(
            _msgpack.encode((texts, calls))
        )
        b = self._builder
        pos = b.end
        data = memoryview(_record(_TURN, payload))
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError as exc:
            self._broken = storage_error(self.path, "the call bodies", exc)
            raise self._broken from None
        b.end = pos + _HEAD.size + len(payload)
        b.turn(pos, first, len(texts), calls)

    def close(self) -> None:
        """Write what is buffered, then the index (a reader of the closed run finds a
        conversation's turns without reading the others)."""
        if self._fd < 0:
            return
        try:
            self.commit()
            b = self._builder
            b.index.next_id = self._next
            at = b.end
            os.write(self._fd, _record(_INDEX, _msgpack.encode(b.index)) + _TRAILER.pack(at, _TRAILER_MARK))
        except OSError as exc:
            raise storage_error(self.path, "the call bodies", exc) from None
        finally:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1


def needs_repair(path: Path, calls_size: int) -> bool:
    """Whether a run's file must be opened by a writer before its calls.jsonl grows:
    killed before its close (no index), or naming lines past `calls_size`."""
    try:
        with open(path, "rb") as f:
            closed = _read_index(f, os.fstat(f.fileno()).st_size)
    except OSError:
        return False
    return closed is None or closed[0].calls_end > calls_size


# The last closed file's index read, under (path, inode, size, mtime).
_last_index: list[Any] = [None, None]


class LogReader:
    """Reads format 2 back whole (see `BodyReader`, which picks the format). A closed
    run's index is read from its end; a run killed, or still writing, is indexed by
    reading its records (again from where the last read ended, at each read)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / VLOG
        try:
            self._calls = open(run_dir / "calls.jsonl", "rb")  # noqa: SIM115 (closed in close())
        except OSError as exc:
            # Named as a file that cannot be read (in the words every reader of a run's JSONL
            # uses), not left to a caller that would take it for a failure to write; a
            # StorageError, as the replay of a resume expects of this reader.
            raise StorageError(f"{run_dir / 'calls.jsonl'}: cannot read: {exc.strerror or exc}") from None
        try:
            self._f = open(self.path, "rb")  # noqa: SIM115 (closed in close())
        except OSError as exc:
            self._calls.close()
            raise self._unreadable(exc, hint=False) from None
        self._call = msgspec.json.Decoder(CallRecord)
        self._turns: OrderedDict[int, tuple[int, list[bytes], list[list[Any]]]] = OrderedDict()
        self.damaged: set[int] = set()  # turn records found damaged
        self._strs: OrderedDict[int, str] = OrderedDict()
        try:
            stat = os.fstat(self._f.fileno())
            size = stat.st_size
            _check_magic(self.path, self._f.read(len(MAGIC)))
            # The viewer opens a reader per page: a closed run's index is decoded once.
            key = (str(self.path.resolve()), stat.st_ino, size, stat.st_mtime_ns)
            closed = _last_index[1] if _last_index[0] == key else _read_index(self._f, size)
            if closed is not None:
                _last_index[:] = [key, closed]
        except BaseException:
            self.close()
            raise
        self._builder: _Builder | None = None
        if closed is None:
            self._builder = _Builder()
            self._index = self._builder.index
        else:
            self._index = closed[0]

    def close(self) -> None:
        self._f.close()
        self._calls.close()

    def _unreadable(self, exc: BaseException, *, hint: bool = True) -> StorageError:
        """What a failed read of the file says, in one place for every reader; `hint`:
        with the way past a damaged file (BODY_HINT), as `rows` and the bodies it
        builds say it, the others saying it without, as they did."""
        # An OSError's own text repeats the path ("[Errno 13] ...: 'PATH'"): its reason alone.
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return StorageError(
            f"{self.path}: cannot read the call bodies: {reason}" + (f"; {BODY_HINT}" if hint else "")
        )

    def _refresh(self) -> None:
        """Index the records written since the last read (no closing index: a run
        killed, or still writing)."""
        b = self._builder
        if b is None:
            return
        self._f.seek(b.end)
        data = self._f.read()
        b.read(data, b.end)

    def _load(self, number: int) -> tuple[int, list[bytes], list[list[Any]]]:
        found = self._turns.get(number)
        if found is None:
            if number in self.damaged or number in self._index.damaged:
                self.damaged.add(number)
                raise DamagedRecord(self.path, number)
            self._f.seek(self._index.turns[number])
            head = self._f.read(_HEAD.size)
            kind, length, crc = _HEAD.unpack(head)
            payload = self._f.read(length)
            if kind != _TURN or len(payload) != length or zlib.crc32(payload) != crc:
                self.damaged.add(number)
                raise DamagedRecord(self.path, number)
            found = self._turns[number] = _turn(payload)
            if len(self._turns) > 64:
                self._turns.popitem(last=False)
        return found

    def _text(self, text_id: int) -> str:
        found = self._strs.get(text_id)
        if found is None:
            found = self._bytes(text_id).decode("utf-8", "surrogatepass")
            self._strs[text_id] = found
            if len(self._strs) > 4096:
                self._strs.popitem(last=False)
        return found

    def _bytes(self, text_id: int) -> bytes:
        number = bisect.bisect_right(self._index.first_ids, text_id) - 1
        if number >= 0:
            first, texts, _ = self._load(number)
            if 0 <= text_id - first < len(texts):
                return texts[text_id - first]
        raise StorageError(f"{self.path}: text {text_id} is missing")

    def _limit(self, number: int) -> int | None:
        """The smallest cut made after turn `number` (rows at or past it are not calls)."""
        sizes = [size for before, size in self._index.cuts if before > number]
        return min(sizes) if sizes else None

    def _rows(self, conversation: str | None, *, skip: bool = False) -> Iterator[CallBody]:
        return (body for _, body in self._placed(conversation, skip=skip))

    def _live(self, conversation: str | None, *, skip: bool = False) -> Iterator[list[Any] | Gap]:
        """The rows of `conversation` (None: all) that are calls: below calls.jsonl's end
        and below any cut made after their turn. `skip`: a damaged turn record is a `Gap`
        in its place instead of a refusal."""
        # calls.jsonl's end first, then the records: a line in the file has its record
        # in the file by then (the record is written before the lines).
        end = os.fstat(self._calls.fileno()).st_size
        self._refresh()
        ix = self._index
        if conversation is None:
            numbers: range | list[int] = range(len(ix.turns))
        else:
            # A damaged record's conversations are unknown: it is in every one's place.
            numbers = ix.conversations.get(conversation, [])
            if ix.damaged:
                numbers = sorted({*numbers, *ix.damaged})
        for number in numbers:
            limit = self._limit(number)
            top = end if limit is None else min(end, limit)
            try:
                rows = self._load(number)[2]
            except DamagedRecord as exc:
                if not skip:
                    raise
                yield Gap(self.path, number, str(exc))
                continue
            for row in rows:
                if row[0] < top and (conversation is None or row[2] == conversation):
                    yield row

    def _placed(self, conversation: str | None, *, skip: bool = False) -> Iterator[tuple[int, CallBody]]:
        try:
            for row in self._live(conversation, skip=skip):
                if isinstance(row, Gap):
                    continue
                try:
                    body = self._body(row)
                except BadCallLine as bad:
                    raise bad_line_error(self.path.parent / "calls.jsonl", row[0], bad) from None
                except DamagedRecord:
                    if skip:
                        continue  # a text it needs is in a damaged record
                    raise
                yield row[0], body
        except _READ_ERRORS as exc:
            raise self._unreadable(exc, hint=False) from None

    def rows(self, *, skip: bool = False, conversation: str | None = None) -> Iterator[Row | Gap]:
        """Every body as stored (of `conversation`; None: all), in the order of
        calls.jsonl, for pairing with its lines (`placed_calls_with_bodies`); `skip`: a
        damaged record is a `Gap`."""
        try:
            for row in self._live(conversation, skip=skip):
                if isinstance(row, Gap):
                    yield row
                    continue
                reply = row[9]
                yield Row(
                    row[0], row[1], row[4], None if reply is None else Usage(*reply[3]), self._builder_of(row)
                )
        except _READ_ERRORS as exc:
            raise self._unreadable(exc) from None

    def _builder_of(self, row: list[Any]) -> Callable[[CallRecord], CallBody]:
        def build(call: CallRecord) -> CallBody:
            try:
                return self._body(row, call)
            except _READ_ERRORS as exc:
                raise self._unreadable(exc) from None

        return build

    def _wire(self, row: list[Any]) -> WireRequest | None:
        """The request as the service received it, if the row kept one (rows before
        MAGIC_WIRE have ten elements). Damaged or unreadable, it is None: the rest of
        the body is read as ever."""
        if len(row) <= 10:
            return None
        try:
            method, url, body = row[10]
            return WireRequest(str(method), self._text(url), self._text(body))
        except (ValueError, TypeError, StorageError):
            return None

    def _body(self, row: list[Any], call: CallRecord | None = None) -> CallBody:
        offset, length, conversation, question, _job, messages, params, schema, reask, reply = row[:10]
        response = None
        if reply is not None:
            text, parsed, finish, usage, raw_id, model = reply
            response = Completion(
                text=self._text(text),
                parsed=parsed,
                usage=Usage(*usage),
                finish_reason=finish,
                raw_id=raw_id,
                model=model,
            )
        if call is None:
            self._calls.seek(offset)
            call = call_line(self._call, self._calls.read(length))
        return CallBody(
            call=call,
            conversation_id=conversation,
            question_id=question,
            messages=tuple(Message(_ROLES[m & 3], self._text(m >> 2)) for m in messages),  # type: ignore[arg-type]
            params=params,
            schema=msgspec.json.decode(self._bytes(schema)) if schema else None,
            reask=reask,
            response=response,
            wire=self._wire(row),
        )

    def all(self) -> Iterator[CallBody]:
        return self._rows(None)

    def conversation(self, conversation_id: str, *, skip: bool = False) -> list[CallBody]:
        return list(self._rows(conversation_id, skip=skip))

    def count(self) -> int:
        try:
            return sum(1 for _ in self._live(None))
        except _READ_ERRORS as exc:
            raise self._unreadable(exc, hint=False) from None
