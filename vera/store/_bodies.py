"""Every model call's body (the exact request and response): format 1, and the choice.

New runs write format 2 (`call_bodies.vlog`, vera.store._bodylog: one append-only file,
no hashing, no fold; benchmarks/README.md, "Sixth pass: call bodies"). This module keeps
format 1, below, for the runs that hold it: `BodyReader` reads either, and a run started
in format 1 by an earlier vera is resumed in format 1 (`open_bodies`).

`calls.jsonl` says what each call cost; `call_bodies.sqlite` says what it was sent and
what it answered: every message (the system prompt first), the parameters as sent, the
schema, and the reply's text, structured answer, finish reason and usage. Keys and
headers never reach it: a `CallBody` holds only what a request and a completion hold.

Storage grows by what is new, not by what is resent. A conversation resends its whole
history at every turn, and a judge resends the transcript with every question, so:

- every text (a message's content, the reply, the schema) is a blob stored once under
  the hash of its bytes, compressed with zstd when that saves room (zlib in stores written
  before, still read);
- a list of messages is a chain of nodes, each (the list before it, a role, a text),
  stored once under the hash of the three: a history of N messages that grows by one
  costs one new node and one new text, and the chain's last node names the whole list.

A call row names its chain, its reply's text and its schema by blob id, with the few
small fields inline; its key is the byte offset of the call's line in `calls.jsonl`,
which the row belongs to (the line is read from there, so nothing is kept twice).

Durable before reported: during a run the new rows (blobs and call rows) are not
inserted into SQLite one by one but appended to a log beside it (`call_bodies.sqlite-log`):
the store (`RunStore.add_call`) adds the body to a buffer and buffers the call's line; at
the end of that turn of the event loop the buffer is written to the log in one write
before the lines are handed to the OS (and fsync'd with them). The log is folded into
the database in one transaction when the store closes, and when a writer opens a run
whose log was not folded (a kill). Blob ids are chosen by the writer (the largest stored
plus one), so the log's rows are the rows the database gets. A reader reads the database
and the log together and never folds (the folder may be read-only, or a run still
writing). A process killed between the log's write and the lines' leaves bodies whose
line never reached the file: opening the store again deletes every row at or past the
end of `calls.jsonl` (after its torn tail is mended), so a resumed run that asks again
records one body per call, never two. A torn last record of the log (a kill in the
middle of its write) is cut off, as calls.jsonl's torn last line is: no line of
calls.jsonl names it, since the lines are written after it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import heapq
import os
import sqlite3
import struct
import sys
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec
import zstandard

from vera.errors import StorageError, storage_error
from vera.records import CallBody, CallRecord, Completion, Message, Usage
from vera.store._bodylog import (
    BODY_HINT,
    VLOG,
    BadCallLine,
    BodyLog,
    Gap,
    LogReader,
    Row,
    bad_line_error,
    call_line,
    needs_repair,
)

BODIES = "call_bodies.sqlite"
# The rows written since the last fold (see the module's docstring).
LOG = "call_bodies.sqlite-log"
FORMAT = "1"

_ROLES: tuple[Literal["system", "user", "assistant"], ...] = ("system", "user", "assistant")
_ROLE_CODE = {role: i for i, role in enumerate(_ROLES)}

# A blob's first byte says how the rest is kept: raw, zlib (what stores written before
# issue 31 hold, still read) or zstd (written now: the same room as zlib's level 6 on
# these texts at a third to a quarter of the CPU, benchmarks/README.md "Third pass").
_RAW, _ZLIB, _ZSTD = b"r", b"z", b"s"
_COMPRESS_ABOVE = 96  # shorter texts rarely shrink
_ZSTD_LEVEL = 3
# One of each for the process: both keep their context between calls (a context made
# per blob would cost more than compressing a reply), and every call runs on one thread
# (the event loop writes, a reader reads on its own).
_compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
_decompressor = zstandard.ZstdDecompressor()
# Conversations whose chains are remembered at most (more than are ever in flight).
_CHAINS = 16384


class _Reply(msgspec.Struct, array_like=True, gc=False):
    text: int  # blob id of the reply's text
    parsed: Any
    finish_reason: str
    usage: tuple[int, int, int, int, int]
    raw_id: str | None
    model: str


class _Row(msgspec.Struct, array_like=True, gc=False):
    """A call row's body column: ids of blobs, and the small fields inline."""

    messages: int  # the chain's last node (0: no messages)
    params: dict[str, Any]
    schema: int  # blob id of the schema's JSON (0: none)
    reask: int
    reply: _Reply | None


class _Node(msgspec.Struct, array_like=True, gc=False):
    parent: int  # 0: the first message
    role: int
    text: int


def _failure(path: Path, exc: BaseException) -> StorageError:
    """One line for a failure to write the bodies; SQLite's "database or disk is full"
    is named as the OS names a full disk, as every other file of the run is."""
    if isinstance(exc, sqlite3.Error) and "full" in str(exc):
        exc = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return storage_error(path, "the call bodies", exc)


def _pack(data: bytes) -> bytes:
    if len(data) > _COMPRESS_ABOVE:
        packed = _compressor.compress(data)
        if len(packed) < len(data):
            return _ZSTD + packed
    return _RAW + data


def _unpack(data: bytes) -> bytes:
    kind = data[:1]
    if kind == _ZSTD:
        return _decompressor.decompress(data[1:])
    if kind == _ZLIB:
        return zlib.decompress(data[1:])
    return data[1:]


# A hasher per kind of blob, its parameters set once: copying one costs less than making
# one from keyword arguments, and hashes the same (a blob's hash is its address).
_HASHERS = {
    kind: hashlib.blake2b(digest_size=16, person=kind.ljust(16, b"-")) for kind in (b"text", b"node", b"json")
}


def _digest(kind: bytes, data: bytes) -> bytes:
    h = _HASHERS[kind].copy()
    h.update(data)
    return h.digest()


# The log: records of a header (kind, payload length, CRC-32 of the payload) and a
# msgpack payload. A record cut short, or whose CRC does not match, ends the log: it can
# only be the last one, torn by a kill or a full disk in the middle of a write. A record
# is one turn of the loop (`_TURN`: its new blob rows and its call rows, the ones `commit`
# writes together); logs written before held a record per row (`_BLOB`, `_CALL`), still
# read, so a run killed by an earlier vera is folded by this one. One record a turn
# instead of three a call: a header, a CRC and an encoding per turn, and a fold that
# decodes a few hundred records where it decoded thousands (benchmarks/README.md, "Fifth
# pass: call bodies").
_HEAD = struct.Struct("<BII")
_BLOB, _CALL, _TURN = 1, 2, 3
_KINDS = (_BLOB, _CALL, _TURN)
_msgpack = msgspec.msgpack.Encoder()
_FOLD_CHUNK = 4 << 20  # bytes of the log read at a time by a fold
_log_decoder = msgspec.msgpack.Decoder()


def _record(kind: int, payload: bytes) -> bytes:
    return _HEAD.pack(kind, len(payload), zlib.crc32(payload)) + payload


def _read_log(data: bytes, start: int = 0) -> tuple[list[list[Any]], list[list[Any]], int]:
    """The blob rows and call rows of the whole records of `data` from `start`, and
    where those records end (a torn one is left)."""
    blobs: list[list[Any]] = []
    calls: list[list[Any]] = []
    pos, size = start, len(data)
    view = memoryview(data)
    while pos + _HEAD.size <= size:
        kind, length, crc = _HEAD.unpack_from(data, pos)
        end = pos + _HEAD.size + length
        if kind not in _KINDS or end > size:
            break
        payload = view[pos + _HEAD.size : end]
        if zlib.crc32(payload) != crc:
            break
        try:
            rows = _log_decoder.decode(payload)
            if kind == _TURN:
                turn_blobs, turn_calls = rows
                blobs += turn_blobs
                calls += turn_calls
            elif kind == _BLOB:
                blobs.append(rows)
            else:
                calls.append(rows)
        except (msgspec.DecodeError, TypeError, ValueError):
            break
        pos = end
    return blobs, calls, pos


def _fold(db: sqlite3.Connection, log: Path) -> None:
    """Move the log's rows into the database in one transaction, then remove the log. A
    kill in between folds them again at the next open: the same ids, the same rows. The
    log is read a chunk at a time, so a long run's log is never in memory whole."""
    try:
        f = open(log, "rb")  # noqa: SIM115 (closed below, in every case)
    except FileNotFoundError:
        return
    # The log goes only once its rows are durable in the database: FULL fsyncs the
    # WAL at this one commit (NORMAL, the rest of the time, does not).
    with f:
        db.execute("PRAGMA synchronous=FULL")
        db.execute("BEGIN")
        try:
            rest = b""
            while chunk := f.read(_FOLD_CHUNK):
                data = rest + chunk
                blobs, calls, used = _read_log(data)
                db.executemany("INSERT OR IGNORE INTO blobs (id, hash, data) VALUES (?, ?, ?)", blobs)
                db.executemany("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?)", calls)
                rest = data[used:]
                if len(rest) >= _HEAD.size:
                    kind, length, _ = _HEAD.unpack_from(rest)
                    if kind not in _KINDS or _HEAD.size + length <= len(rest):
                        break  # a bad record, not a cut one: the log ends there
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.execute("PRAGMA synchronous=NORMAL")
    log.unlink()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs (id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
    offset INTEGER PRIMARY KEY,
    length INTEGER NOT NULL,
    job TEXT NOT NULL,
    conversation TEXT NOT NULL,
    question TEXT NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_conversation ON calls (conversation);
"""


class CallBodies:
    """The writer of a run's call bodies (the run store owns it: `RunStore.add_call`).

    Every call runs on the caller's thread, the event loop: a new blob or call row is
    kept in a list, and the turn's rows are one record and one write to the log per turn
    of the loop (`commit`); SQLite is written only when the log is folded (on open and on
    `close`). Which blobs are stored is known for all of them (their hashes, seeded from
    the database when the store opens): the writer chooses each new blob's id, so a blob
    must never be written twice under two ids.

    Each conversation's chain nodes are also remembered by what they hold (the node
    before, the message), until the store writes the conversation's record (`forget`):
    a history of N messages that grows by one is then N dictionary lookups and one new
    node, not N texts and N nodes encoded and hashed again. So are its texts (a reply is
    sent again as a message of the next call's history, by both sides: found, not
    hashed again). The messages and texts it keeps are the ones the conversation in
    flight holds anyway."""

    def __init__(self, path: Path, *, calls_size: int) -> None:
        self.path = path
        self.log_path = path.with_name(LOG)
        # conversation id -> {(node before, message): node, text: blob}; oldest
        # conversation dropped past `_CHAINS` (one whose record is never written: a
        # cancelled run's).
        self._chains: dict[str, dict[tuple[int, Message] | str, int]] = {}
        self._encoder = msgspec.json.Encoder()
        # This turn's new rows, written to the log as one record by `commit`.
        self._blobs: list[tuple[int, bytes, bytes]] = []
        self._calls: list[tuple[int, int, str, str, str, bytes]] = []
        # A write to the log that failed (a full disk): nothing more is written after a
        # record that may be torn, or a later row could name a blob that never arrived.
        self._broken: StorageError | None = None
        try:
            # Opened as a file first: a read-only or full disk is then named as the OS
            # names it ("Read-only file system"), not as SQLite's "unable to open".
            with open(path, "ab"):
                pass
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            db.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?)", (FORMAT,))
            _fold(db, self.log_path)  # a run killed before its store closed
            # Bodies whose call line never reached calls.jsonl (a kill between the log's
            # write and the lines'): the call is asked again on resume and recorded then.
            db.execute("DELETE FROM calls WHERE offset >= ?", (calls_size,))
            self._known: dict[bytes, int] = dict(db.execute("SELECT hash, id FROM blobs"))
            self._next = int(db.execute("SELECT COALESCE(MAX(id), 0) FROM blobs").fetchone()[0]) + 1
            self._log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except (OSError, sqlite3.Error) as exc:
            raise _failure(path, exc) from None
        self._db: sqlite3.Connection | None = db

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise StorageError(f"{self.path}: the call bodies are closed")
        return self._db

    def log_fd(self) -> int | None:
        """The log's descriptor, for the store's fsyncs (None once closed)."""
        return self._log if self._db is not None else None

    def _blob(self, kind: bytes, data: bytes) -> int:
        key = _digest(kind, data)
        found = self._known.get(key)
        if found is not None:
            return found
        blob_id = self._known[key] = self._next
        self._next += 1
        self._blobs.append((blob_id, key, _pack(data)))
        return blob_id

    def _text(self, text: str) -> int:
        return self._blob(b"text", text.encode("utf-8", "surrogatepass"))

    def _memo(self, conversation: str) -> dict[tuple[int, Message] | str, int]:
        memo = self._chains.get(conversation)
        if memo is None:
            if len(self._chains) >= _CHAINS:
                del self._chains[next(iter(self._chains))]
            memo = self._chains[conversation] = {}
        return memo

    def _chain(self, memo: dict[tuple[int, Message] | str, int], messages: tuple[Message, ...]) -> int:
        node = 0
        for m in messages:
            found = memo.get((node, m))
            if found is None:
                # Most new messages of a history are a reply stored before (the model's
                # own, or the other side's): its text is then found in the memo, not
                # encoded and hashed again.
                text = memo.get(m.content)
                if text is None:
                    text = memo[m.content] = self._text(m.content)
                data = self._encoder.encode(_Node(node, _ROLE_CODE[m.role], text))
                found = memo[node, m] = self._blob(b"node", data)
            node = found
        return node

    def forget(self, conversation: str) -> None:
        """The conversation's record is written: its chains are not extended again (a
        judge of it that comes later hashes them afresh, as it would anyway)."""
        self._chains.pop(conversation, None)

    def add(self, offset: int, length: int, body: CallBody) -> None:
        """Keep `body`, whose call's line is at `offset` (`length` bytes) in calls.jsonl,
        in the buffer (written to the log by `commit`)."""
        self._conn()
        memo = self._memo(body.conversation_id)
        reply = None
        if (r := body.response) is not None:
            u = r.usage
            text = memo.get(r.text)
            if text is None:
                text = memo[r.text] = self._text(r.text)
            reply = _Reply(
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
            schema = self._blob(b"json", msgspec.json.encode(body.schema, order="sorted"))
        row = _Row(self._chain(memo, body.messages), body.params, schema, body.reask, reply)
        self._calls.append(
            (
                offset,
                length,
                body.call.job_id,
                body.conversation_id,
                body.question_id,
                self._encoder.encode(row),
            )
        )

    def commit(self) -> None:
        """Hand the buffered records to the OS in one write (before the turn's lines)."""
        self._conn()
        if self._broken is not None:
            raise self._broken
        if not self._calls and not self._blobs:
            return
        data = memoryview(_record(_TURN, _msgpack.encode((self._blobs, self._calls))))
        self._blobs = []
        self._calls = []
        try:
            while data:
                data = data[os.write(self._log, data) :]
        except OSError as exc:
            self._broken = _failure(self.log_path, exc)
            raise self._broken from None

    def close(self) -> None:
        """Write what is buffered, fold the log into the database, close both."""
        if self._db is None:
            return
        db = self._db
        try:
            self.commit()
            os.close(self._log)
            self._log = -1
            _fold(db, self.log_path)
        except (OSError, sqlite3.Error) as exc:
            raise _failure(self.path, exc) from None
        finally:
            if self._log >= 0:
                with contextlib.suppress(OSError):
                    os.close(self._log)
            db.close()
            self._db = None


class _SqliteReader:
    """Reads a run's call bodies in format 1 back whole (see `BodyReader`).

    Opened read-only, so a run still writing is read beside it (WAL), and never folds
    the log: its records are read beside the database's rows (new ones at each read, as
    a run still writing appends them), the log's winning where both have one (a kill
    after a fold's commit, before the log's removal: the same rows). A chain of
    messages is rebuilt from its last node up to the first already rebuilt: reading a
    conversation's calls in order rebuilds each turn's history from the one before."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / BODIES
        try:
            self._db = _read_only(self.path)
            self._db.execute("SELECT 1 FROM calls LIMIT 1")
        except sqlite3.Error as exc:
            raise StorageError(f"{self.path}: cannot read the call bodies: {exc}; {BODY_HINT}") from None
        self._chains: OrderedDict[int, tuple[Message, ...]] = OrderedDict()
        self._texts: OrderedDict[int, str] = OrderedDict()
        self._calls = open(run_dir / "calls.jsonl", "rb")  # noqa: SIM115 (closed in close())
        self._row = msgspec.json.Decoder(_Row)
        self._node = msgspec.json.Decoder(_Node)
        self._call = msgspec.json.Decoder(CallRecord)
        self._log = _LogView(run_dir / LOG)
        self.damaged = False  # a conversation read with `skip` met damage

    def close(self) -> None:
        self._db.close()
        self._calls.close()

    def _data(self, blob_id: int) -> bytes:
        logged = self._log.blobs.get(blob_id)
        if logged is not None:
            return _unpack(logged)
        row = self._db.execute("SELECT data FROM blobs WHERE id = ?", (blob_id,)).fetchone()
        if row is None:
            raise StorageError(f"{self.path}: blob {blob_id} is missing; {BODY_HINT}")
        return _unpack(row[0])

    def _text(self, blob_id: int) -> str:
        found = self._texts.get(blob_id)
        if found is None:
            found = self._data(blob_id).decode("utf-8", "surrogatepass")
            self._texts[blob_id] = found
            if len(self._texts) > 4096:
                self._texts.popitem(last=False)
        return found

    def _messages(self, node: int) -> tuple[Message, ...]:
        # Up the chain to the first node already rebuilt (or the start), then down again.
        path: list[tuple[int, _Node]] = []
        head: tuple[Message, ...] = ()
        while node:
            known = self._chains.get(node)
            if known is not None:
                head = known
                break
            n = self._node.decode(self._data(node))
            path.append((node, n))
            node = n.parent
        for node_id, n in reversed(path):
            head = (*head, Message(_ROLES[n.role], self._text(n.text)))
            self._chains[node_id] = head
            if len(self._chains) > 1024:
                self._chains.popitem(last=False)
        return head

    def _record(self, offset: int, length: int) -> CallRecord:
        self._calls.seek(offset)
        return call_line(self._call, self._calls.read(length))

    def _body(self, row: tuple[int, int, str, str, bytes, str], call: CallRecord | None = None) -> CallBody:
        offset, length, conversation, question, data, _job = row
        stored = self._row.decode(data)
        response = None
        if (r := stored.reply) is not None:
            response = Completion(
                text=self._text(r.text),
                parsed=r.parsed,
                usage=Usage(*r.usage),
                finish_reason=r.finish_reason,
                raw_id=r.raw_id,
                model=r.model,
            )
        return CallBody(
            call=self._record(offset, length) if call is None else call,
            conversation_id=conversation,
            question_id=question,
            messages=self._messages(stored.messages),
            params=stored.params,
            schema=msgspec.json.decode(self._data(stored.schema)) if stored.schema else None,
            reask=stored.reask,
            response=response,
        )

    def _rows(self, where: str, args: tuple[Any, ...], conversation: str | None = None) -> Iterator[CallBody]:
        return (body for _, body in self._placed(where, args, conversation))

    def _placed(
        self, where: str, args: tuple[Any, ...], conversation: str | None = None
    ) -> Iterator[tuple[int, CallBody]]:
        for row in self._stored(where, args, conversation):
            try:
                body = self._body(row)
            except BadCallLine as bad:
                raise bad_line_error(self.run_dir / "calls.jsonl", row[0], bad) from None
            except _READ_ERRORS as exc:
                raise self._damaged(exc) from None
            yield row[0], body

    def _damaged(self, exc: BaseException) -> StorageError:
        return StorageError(f"{self.path}: cannot read the call bodies: {exc}; {BODY_HINT}")

    def rows(self, conversation: str | None = None) -> Iterator[Row | Gap]:
        """Every body as stored (of `conversation`; None: all), in the order of
        calls.jsonl, for pairing with its lines (`placed_calls_with_bodies`). A file
        SQLite cannot read is refused whole (the reader past it, with --skip-corrupt,
        reads no further)."""
        stored = (
            self._stored("", ())
            if conversation is None
            else self._stored("conversation = ? AND", (conversation,), conversation)
        )
        for row in stored:
            try:
                reply = self._row.decode(row[4]).reply
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise self._damaged(exc) from None
            yield Row(
                row[0], row[1], row[5], None if reply is None else Usage(*reply.usage), self._builder_of(row)
            )

    def _builder_of(self, row: tuple[int, int, str, str, bytes, str]) -> Callable[[CallRecord], CallBody]:
        def build(call: CallRecord) -> CallBody:
            try:
                return self._body(row, call)
            except _READ_ERRORS as exc:
                raise self._damaged(exc) from None

        return build

    def _stored(
        self, where: str, args: tuple[Any, ...], conversation: str | None = None
    ) -> Iterator[tuple[int, int, str, str, bytes, str]]:
        # calls.jsonl's end first, then the log: a line in the file has its record in
        # the log by then (the log is written before the lines).
        end = self._end()
        try:
            self._log.refresh()
            cursor = self._db.execute(
                "SELECT offset, length, conversation, question, body, job FROM calls "
                f"WHERE {where} offset < ? ORDER BY offset",
                (*args, end),
            )
            stored = (row for batch in iter(lambda: cursor.fetchmany(256), []) for row in batch)
            logged = sorted(
                (row for row in self._log.calls.values() if row[0] < end and conversation in (None, row[2])),
                key=_offset,
            )
            last = -1
            for row in heapq.merge(logged, stored, key=_offset) if logged else stored:
                if row[0] != last:  # the log's row first where both have one
                    last = row[0]
                    yield row
        except _READ_ERRORS as exc:
            raise self._damaged(exc) from None

    def _end(self) -> int:
        """Where calls.jsonl ends: a body at or past it lost its line to a kill, and is
        not a call (the next writer deletes it)."""
        return os.fstat(self._calls.fileno()).st_size

    def all(self) -> Iterator[CallBody]:
        """Every call's body, in the order of calls.jsonl."""
        return self._rows("", ())

    def conversation(self, conversation_id: str, *, skip: bool = False) -> list[CallBody]:
        """The calls made for one conversation (simulating it and judging it), in order
        (`skip`: as many as can be read, when the file is damaged)."""
        bodies: list[CallBody] = []
        try:
            for _, body in self._placed("conversation = ? AND", (conversation_id,), conversation_id):
                bodies.append(body)
        except StorageError:
            if not skip:
                raise
            self.damaged = True
        return bodies


# What reading a damaged format-1 file raises (a blob's compression, a row's JSON, SQLite's
# "database disk image is malformed"): said as one StorageError.
_READ_ERRORS = (
    sqlite3.Error,
    msgspec.DecodeError,
    msgspec.ValidationError,
    OSError,
    zstandard.ZstdError,
    zlib.error,
)


def _offset(row: tuple[Any, ...]) -> int:
    return int(row[0])


class _LogView:
    """A reader's view of the log: its whole records so far, read on from where the last
    read ended (a torn or unfinished last record is read again next time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.blobs: dict[int, bytes] = {}
        self.calls: dict[int, tuple[int, int, str, str, bytes, str]] = {}  # offset -> row
        self._pos = 0
        self._inode: int | None = None

    def refresh(self) -> None:
        try:
            with open(self.path, "rb") as f:
                inode = os.fstat(f.fileno()).st_ino
                if inode != self._inode:  # folded, and a new log begun (a resume)
                    self._inode, self._pos = inode, 0
                f.seek(self._pos)
                data = f.read()
        except FileNotFoundError:
            return  # folded: its rows are in the database (the ones read stay valid)
        blobs, calls, used = _read_log(data)
        self._pos += used
        for r in blobs:
            self.blobs[r[0]] = r[2]
        for r in calls:
            self.calls[r[0]] = (r[0], r[1], r[3], r[4], r[5], r[2])


def _read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes to the run directory. With no writer (no WAL file
    beside the database), the file is opened as immutable: a reader in WAL mode would
    otherwise create the -wal and -shm files, and a reader must leave a run untouched.
    With a writer at work, those files exist and it reads beside it."""
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
    # A file URI must be absolute: a run named relative to the working folder is resolved.
    return sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True, check_same_thread=False)


class BodyReader:
    """Reads a run's call bodies back whole (the viewer, `vera export --calls`, the
    bundle), in whichever format the run holds them: format 2 (`call_bodies.vlog`,
    vera.store._bodylog) or format 1 (`call_bodies.sqlite` and its log)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._reader: LogReader | _SqliteReader = (
            LogReader(run_dir) if (run_dir / VLOG).exists() else _SqliteReader(run_dir)
        )
        self.path = self._reader.path

    def close(self) -> None:
        self._reader.close()

    def __enter__(self) -> BodyReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def all(self) -> Iterator[CallBody]:
        """Every call's body, in the order of calls.jsonl."""
        return self._reader.all()

    def conversation(self, conversation_id: str, *, skip: bool = False) -> list[CallBody]:
        """The calls made for one conversation (simulating it and judging it), in order.
        `skip` (the viewer): the bodies a damaged file lost are left out (`damaged` then
        says so) instead of refusing the page."""
        return self._reader.conversation(conversation_id, skip=skip)

    @property
    def damaged(self) -> str | None:
        """What damage a read with `skip` went past (None: none)."""
        r = self._reader
        if isinstance(r, LogReader):
            if not r.damaged:
                return None
            numbers = sorted(r.damaged)
            return f"record{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"
        return "cannot be read" if r.damaged else None

    def rows(self, *, skip: bool = False, conversation: str | None = None) -> Iterator[Row | Gap]:
        """Every body as stored (of `conversation`; None: all), in the order of
        calls.jsonl (the offset its call's line had when written): what
        `placed_calls_with_bodies` pairs with the lines, checking each pair. `skip`: a
        damaged record of format 2 is a `Gap` in its place."""
        if isinstance(self._reader, LogReader):
            return self._reader.rows(skip=skip, conversation=conversation)
        return self._reader.rows(conversation)


# The format a new run's bodies are written in (a run resumed keeps the one it has).
WRITE_FORMAT = 2


def open_bodies(root: Path, *, calls_size: int) -> CallBodies | BodyLog:
    """The writer of a run's call bodies: format 1 where the run already holds them so
    (a run started by an earlier vera, resumed), else `WRITE_FORMAT`."""
    if (root / VLOG).exists() or ((WRITE_FORMAT == 2) and not (root / BODIES).exists()):
        return BodyLog(root / VLOG, calls_size=calls_size)
    return CallBodies(root / BODIES, calls_size=calls_size)


def repair_bodies(root: Path, *, calls_size: int) -> None:
    """What a writer opening a run does first, whether or not it keeps bodies: a run
    killed before its bodies were closed is made whole (format 1: the log folded;
    format 2: a torn tail cut off, rows whose line never arrived cut), so that no body
    names a line that a resumed run writes anew."""
    if (root / LOG).exists():
        CallBodies(root / BODIES, calls_size=calls_size).close()
    if (root / VLOG).exists() and needs_repair(root / VLOG, calls_size):
        log = BodyLog(root / VLOG, calls_size=calls_size)
        log.close()
        if log.stepped_over:
            # Said once, by the writer that finds it (its index then names the damage):
            # the run goes on, and the user learns which calls lost their bodies where.
            numbers = ", ".join(map(str, log.stepped_over))
            many = len(log.stepped_over) > 1
            print(
                f"warning: {log.path}: record{'s' if many else ''} {numbers} "
                f"{'are' if many else 'is'} damaged; the run goes on after "
                f"{'them' if many else 'it'} (the calls whose request and response "
                f"{'they' if many else 'it'} cost keep their lines without them: "
                f"`vera export --calls {root} --skip-corrupt` names them)",
                file=sys.stderr,
                flush=True,
            )


def bodies_path(run_dir: Path) -> Path:
    """The file a run's call bodies are in (whichever format it holds)."""
    return run_dir / VLOG if (run_dir / VLOG).exists() else run_dir / BODIES


def has_bodies(run_dir: Path) -> bool:
    return (run_dir / VLOG).exists() or (run_dir / BODIES).exists()


def count_bodies(run_dir: Path) -> int:
    """How many calls have a body (0 when none are kept)."""
    if (run_dir / VLOG).exists():
        reader = LogReader(run_dir)
        try:
            return reader.count()
        finally:
            reader.close()
    if not (run_dir / BODIES).exists():
        return 0
    log = _LogView(run_dir / LOG)
    log.refresh()
    with contextlib.closing(_read_only(run_dir / BODIES)) as db:
        stored = int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
        twice = sum(
            1
            for offset in log.calls
            if db.execute("SELECT 1 FROM calls WHERE offset = ?", (offset,)).fetchone()
        )
    return stored + len(log.calls) - twice
