"""Every model call's body (the exact request and response), content-addressed.

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

Durable before reported: the store (`RunStore.add_call`) adds the body to an open
transaction and buffers the call's line; at the end of that turn of the event loop the
transaction is committed (SQLite WAL) before the lines are handed to the OS. A process
killed between the two leaves bodies whose line never reached the file: opening the
store again deletes every row at or past the end of `calls.jsonl` (after its torn tail
is mended), so a resumed run that asks again records one body per call, never two.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import sqlite3
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec
import zstandard

from vera.errors import StorageError, storage_error
from vera.records import CallBody, CallRecord, Completion, Message, Usage

BODIES = "call_bodies.sqlite"
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

    Every statement runs on the caller's thread, the event loop: an insert into an open
    transaction costs microseconds, and a commit (one WAL write, no fsync) is made once
    per turn of the loop. Which blobs are already stored is remembered for the most
    recent `remember` of them (the histories in flight, the judge's question prompts);
    an older one is looked up in the file's index, so memory stays bounded.

    Each conversation's chain nodes are also remembered by what they hold (the node
    before, the message), until the store writes the conversation's record (`forget`):
    a history of N messages that grows by one is then N dictionary lookups and one new
    node, not N texts and N nodes encoded and hashed again. The messages it keeps are
    the ones the conversation in flight holds anyway."""

    def __init__(self, path: Path, *, calls_size: int, remember: int = 65536) -> None:
        self.path = path
        self._known: OrderedDict[bytes, int] = OrderedDict()
        self._remember = remember
        # conversation id -> {(node before, message): node}; oldest conversation dropped
        # past `_CHAINS` (one whose record is never written: a cancelled run's).
        self._chains: dict[str, dict[tuple[int, Message], int]] = {}
        self._encoder = msgspec.json.Encoder()
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
            # Bodies whose call line never reached calls.jsonl (a kill between the commit
            # and the write): the call is asked again on resume and recorded then.
            db.execute("DELETE FROM calls WHERE offset >= ?", (calls_size,))
        except (OSError, sqlite3.Error) as exc:
            raise _failure(path, exc) from None
        self._db: sqlite3.Connection | None = db

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise StorageError(f"{self.path}: the call bodies are closed")
        return self._db

    def _blob(self, kind: bytes, data: bytes) -> int:
        key = _digest(kind, data)
        found = self._known.get(key)
        if found is not None:
            self._known.move_to_end(key)
            return found
        db = self._conn()
        # Insert first: a blob not remembered is almost always new (an old one is
        # looked up only when the insert finds it), one statement where two were.
        cursor = db.execute("INSERT OR IGNORE INTO blobs (hash, data) VALUES (?, ?)", (key, _pack(data)))
        if cursor.rowcount == 1:
            blob_id = int(cursor.lastrowid or 0)
        else:
            blob_id = int(db.execute("SELECT id FROM blobs WHERE hash = ?", (key,)).fetchone()[0])
        self._known[key] = blob_id
        if len(self._known) > self._remember:
            self._known.popitem(last=False)
        return blob_id

    def _text(self, text: str) -> int:
        return self._blob(b"text", text.encode("utf-8", "surrogatepass"))

    def _chain(self, conversation: str, messages: tuple[Message, ...]) -> int:
        memo = self._chains.get(conversation)
        if memo is None:
            if len(self._chains) >= _CHAINS:
                del self._chains[next(iter(self._chains))]
            memo = self._chains[conversation] = {}
        node = 0
        for m in messages:
            found = memo.get((node, m))
            if found is None:
                data = self._encoder.encode(_Node(node, _ROLE_CODE[m.role], self._text(m.content)))
                found = memo[node, m] = self._blob(b"node", data)
            node = found
        return node

    def forget(self, conversation: str) -> None:
        """The conversation's record is written: its chains are not extended again (a
        judge of it that comes later hashes them afresh, as it would anyway)."""
        self._chains.pop(conversation, None)

    def add(self, offset: int, length: int, body: CallBody) -> None:
        """Keep `body`, whose call's line is at `offset` (`length` bytes) in calls.jsonl,
        in the open transaction (committed by `commit`)."""
        db = self._conn()
        try:
            if not db.in_transaction:
                db.execute("BEGIN")
            reply = None
            if (r := body.response) is not None:
                u = r.usage
                reply = _Reply(
                    self._text(r.text),
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
            row = _Row(
                self._chain(body.conversation_id, body.messages), body.params, schema, body.reask, reply
            )
            db.execute(
                "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?)",
                (
                    offset,
                    length,
                    body.call.job_id,
                    body.conversation_id,
                    body.question_id,
                    self._encoder.encode(row),
                ),
            )
        except sqlite3.Error as exc:
            raise _failure(self.path, exc) from None

    def commit(self) -> None:
        db = self._conn()
        if db.in_transaction:
            try:
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise _failure(self.path, exc) from None

    def close(self) -> None:
        if self._db is None:
            return
        try:
            self.commit()
        finally:
            self._db.close()
            self._db = None


class BodyReader:
    """Reads a run's call bodies back whole (the viewer, `vera export --calls`).

    Opened read-only, so a run still writing is read beside it (WAL). A chain of
    messages is rebuilt from its last node up to the first already rebuilt: reading a
    conversation's calls in order rebuilds each turn's history from the one before."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / BODIES
        try:
            self._db = _read_only(self.path)
            self._db.execute("SELECT 1 FROM calls LIMIT 1")
        except sqlite3.Error as exc:
            raise StorageError(f"{self.path}: cannot read the call bodies: {exc}") from None
        self._chains: OrderedDict[int, tuple[Message, ...]] = OrderedDict()
        self._texts: OrderedDict[int, str] = OrderedDict()
        self._calls = open(run_dir / "calls.jsonl", "rb")  # noqa: SIM115 (closed in close())
        self._row = msgspec.json.Decoder(_Row)
        self._node = msgspec.json.Decoder(_Node)
        self._call = msgspec.json.Decoder(CallRecord)

    def close(self) -> None:
        self._db.close()
        self._calls.close()

    def __enter__(self) -> BodyReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _data(self, blob_id: int) -> bytes:
        row = self._db.execute("SELECT data FROM blobs WHERE id = ?", (blob_id,)).fetchone()
        if row is None:
            raise StorageError(f"{self.path}: blob {blob_id} is missing")
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
        return self._call.decode(self._calls.read(length))

    def _body(self, row: tuple[int, int, str, str, bytes]) -> CallBody:
        offset, length, conversation, question, data = row
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
            call=self._record(offset, length),
            conversation_id=conversation,
            question_id=question,
            messages=self._messages(stored.messages),
            params=stored.params,
            schema=msgspec.json.decode(self._data(stored.schema)) if stored.schema else None,
            reask=stored.reask,
            response=response,
        )

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> Iterator[CallBody]:
        try:
            cursor = self._db.execute(sql, args)
            while batch := cursor.fetchmany(256):
                for row in batch:
                    yield self._body(row)
        except (sqlite3.Error, msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise StorageError(f"{self.path}: cannot read the call bodies: {exc}") from None

    def _end(self) -> int:
        """Where calls.jsonl ends: a body at or past it lost its line to a kill, and is
        not a call (the next writer deletes it)."""
        return os.fstat(self._calls.fileno()).st_size

    def all(self) -> Iterator[CallBody]:
        """Every call's body, in the order of calls.jsonl."""
        return self._rows(
            "SELECT offset, length, conversation, question, body FROM calls WHERE offset < ? ORDER BY offset",
            (self._end(),),
        )

    def conversation(self, conversation_id: str) -> list[CallBody]:
        """The calls made for one conversation (simulating it and judging it), in order."""
        return list(
            self._rows(
                "SELECT offset, length, conversation, question, body FROM calls "
                "WHERE conversation = ? AND offset < ? ORDER BY offset",
                (conversation_id, self._end()),
            )
        )


def _read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes to the run directory. With no writer (no WAL file
    beside the database), the file is opened as immutable: a reader in WAL mode would
    otherwise create the -wal and -shm files, and a reader must leave a run untouched.
    With a writer at work, those files exist and it reads beside it."""
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
    # A file URI must be absolute: a run named relative to the working folder is resolved.
    return sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True, check_same_thread=False)


def has_bodies(run_dir: Path) -> bool:
    return (run_dir / BODIES).exists()


def count_bodies(run_dir: Path) -> int:
    """How many calls have a body (0 when none are kept)."""
    if not has_bodies(run_dir):
        return 0
    with contextlib.closing(_read_only(run_dir / BODIES)) as db:
        return int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
