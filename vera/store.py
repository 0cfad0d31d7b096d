"""The run directory: append-only records, atomic summaries, and what is already done.

Layout of a run directory::

    manifest.json         versions and hashes of every input (atomic write)
    conversations.jsonl   one Conversation per line (complete or failed)
    judgements.jsonl      one Judgement per line: every answer, every rating
    calls.jsonl           one CallRecord per model call (tokens, latency, cost)
    ratings.parquet       the ratings frame (rewritten atomically at the end)
    card.json, card.md    the score card (card.json is the source of truth)

Records are appended by one writer (the event loop) and flushed to the OS as they
are written; an fsync runs at intervals and on close. A half-written last line left by
a crash is detected on open, cut off, and never a reason to fail. When a job appears
more than once (a failed attempt, then a success on resume), the last complete record
wins; a complete record is never written twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

import msgspec

from vera.errors import storage_error
from vera.records import CallRecord, Conversation, Judgement, RunManifest

T = TypeVar("T")

CONVERSATIONS = "conversations.jsonl"
JUDGEMENTS = "judgements.jsonl"
CALLS = "calls.jsonl"
MANIFEST = "manifest.json"


# What each file of a run directory is, for error messages ("cannot write the score card").
WHAT = {
    CONVERSATIONS: "conversation records",
    JUDGEMENTS: "judgement records",
    CALLS: "the call log",
    MANIFEST: "the run manifest",
    "card.json": "the score card",
    "card.md": "the score card (Markdown)",
    "card.html": "the score card (HTML)",
    "ratings.parquet": "the ratings frame",
    "answers.parquet": "the answers frame",
}


def atomic_write(path: Path, data: bytes, *, what: str = "") -> None:
    """Write a whole file so that readers see the old or the new content, never half.

    The content goes to a temporary file beside `path`, is fsync'd and renamed
    over `path`; on any failure (a full or read-only disk) the temporary file is removed
    and the old file is left as it was, and an OSError becomes one `StorageError` line
    naming the path and `what` it is."""
    what = what or WHAT.get(path.name, path.name)
    tmp: str | None = None
    try:
        # Not mkstemp: its files are private (0600); this one gets the usual permissions.
        tmp = str(path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise storage_error(path, what, exc) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def read_records(path: Path, type_: type[T], *, repair: bool = False) -> list[T]:
    """Every complete record in a JSONL file. A torn final line (a crash mid-write) is
    skipped, and with `repair` cut from the file so later appends start clean. A
    damaged line elsewhere is skipped too: one bad record must not lose the others."""
    if not path.exists():
        return []
    data = path.read_bytes()
    decoder = msgspec.json.Decoder(type_)
    *lines, tail = data.split(b"\n")
    out: list[T] = []
    for line in lines:
        if line.strip():
            with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                out.append(decoder.decode(line))
    if tail.strip():
        try:
            out.append(decoder.decode(tail))
            if repair:  # a whole record that only lacks its newline
                _repair(path, lambda f: f.write(b"\n"), "ab")
        except (msgspec.DecodeError, msgspec.ValidationError):
            if repair:
                _repair(path, lambda f: f.truncate(len(data) - len(tail)), "r+b")
    return out


def _repair(path: Path, fix: Callable[[IO[bytes]], Any], mode: str) -> None:
    """Mend a torn last line. Best effort: in a read-only folder the records read above
    are still right (the torn line is skipped), and nothing can be appended anyway."""
    with contextlib.suppress(OSError), open(path, mode) as f:
        fix(f)


R = TypeVar("R", Conversation, Judgement)


def keep_latest(index: dict[str, R], record: R) -> None:
    """Index a record by job id: the later record wins, except that a complete record is
    never replaced by a failed one."""
    old = index.get(record.id)
    if old is None or old.status != "complete" or record.status == "complete":
        index[record.id] = record


def latest(records: list[R]) -> dict[str, R]:
    """The record that counts for every job id (see `keep_latest`)."""
    index: dict[str, R] = {}
    for r in records:
        keep_latest(index, r)
    return index


class RunStore:
    """Appends records to a run directory and knows which jobs are finished."""

    def __init__(self, root: str | Path, *, fsync_interval: float = 1.0) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise storage_error(self.root, "the run directory", exc) from None
        self.fsync_interval = fsync_interval
        self.conversations: dict[str, Conversation] = {}
        self.judgements: dict[str, Judgement] = {}
        for c in read_records(self.root / CONVERSATIONS, Conversation, repair=True):
            keep_latest(self.conversations, c)
        for j in read_records(self.root / JUDGEMENTS, Judgement, repair=True):
            keep_latest(self.judgements, j)
        read_records(self.root / CALLS, CallRecord, repair=True)
        self._files: dict[str, IO[bytes]] = {}
        # The cost of the calls made for each job since its last record was written: a
        # record carries exactly its own calls' cost, so the records sum to calls.jsonl.
        self._job_cost: dict[str, float] = {}
        self._encoder = msgspec.json.Encoder()
        self._dirty = False
        self._syncer: asyncio.Task[None] | None = None

    # -- what is done ----------------------------------------------------------------

    def done_conversation(self, job_id: str) -> Conversation | None:
        c = self.conversations.get(job_id)
        return c if c is not None and c.status == "complete" else None

    def done_judgement(self, job_id: str) -> bool:
        j = self.judgements.get(job_id)
        return j is not None and j.status == "complete"

    # -- appending ---------------------------------------------------------------------

    def _append(self, name: str, record: Any) -> None:
        try:
            f = self._files.get(name)
            if f is None:
                # Kept open for the life of the store (closed in `close`), so no `with`.
                f = self._files[name] = open(self.root / name, "ab")  # noqa: SIM115
            f.write(self._encoder.encode(record) + b"\n")
            f.flush()  # in the OS before anyone is told the work is done
        except OSError as exc:
            # A full disk may leave part of the line written: the next open cuts it off.
            # The handle still holds the unwritten bytes; drop it so closing cannot retry.
            self._discard(name)
            raise storage_error(self.root / name, WHAT[name], exc) from None
        self._dirty = True

    def _discard(self, name: str) -> None:
        f = self._files.pop(name, None)
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()

    def add_conversation(self, conv: Conversation) -> None:
        if self.done_conversation(conv.id):
            return
        conv.cost_usd += self._job_cost.pop(conv.id, 0.0)
        self._append(CONVERSATIONS, conv)
        keep_latest(self.conversations, conv)

    def add_judgement(self, judgement: Judgement) -> None:
        if self.done_judgement(judgement.id):
            return
        judgement.cost_usd += self._job_cost.pop(judgement.id, 0.0)
        self._append(JUDGEMENTS, judgement)
        keep_latest(self.judgements, judgement)

    def add_call(self, record: CallRecord) -> None:
        self._append(CALLS, record)
        if record.cost_usd:
            self._job_cost[record.job_id] = self._job_cost.get(record.job_id, 0.0) + record.cost_usd

    def calls(self) -> list[CallRecord]:
        return read_records(self.root / CALLS, CallRecord)

    def sync(self) -> None:
        if not self._dirty:
            return
        for name, f in list(self._files.items()):
            try:
                os.fsync(f.fileno())
            except OSError as exc:
                self._discard(name)
                raise storage_error(self.root / name, WHAT[name], exc) from None
        self._dirty = False

    async def _sync_forever(self) -> None:
        while True:
            await asyncio.sleep(self.fsync_interval)
            self.sync()

    def start(self) -> None:
        """Start periodic fsync (call from inside the event loop)."""
        if self._syncer is None:
            self._syncer = asyncio.get_running_loop().create_task(self._sync_forever())

    async def aclose(self) -> None:
        if self._syncer is not None:
            self._syncer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._syncer
            self._syncer = None
        self.close()

    def close(self) -> None:
        """Make every record durable and close the files. Every file is closed even
        when the disk fails; the first failure is then raised as a `StorageError`."""
        try:
            self.sync()
        finally:
            for name in list(self._files):
                self._discard(name)

    # -- summaries -----------------------------------------------------------------------

    def write_manifest(self, manifest: RunManifest) -> None:
        self.write_json(MANIFEST, manifest)

    def read_manifest(self) -> RunManifest | None:
        p = self.root / MANIFEST
        if not p.exists():
            return None
        return msgspec.json.decode(p.read_bytes(), type=RunManifest)

    def write_json(self, name: str, obj: Any) -> Path:
        p = self.root / name
        atomic_write(p, msgspec.json.format(msgspec.json.encode(obj)) + b"\n")
        return p

    def complete_pairs(self) -> Iterator[tuple[Conversation, Judgement]]:
        """(conversation, judgement) for every complete judgement of a complete conversation."""
        for j in self.judgements.values():
            c = self.conversations.get(j.conversation_id)
            if j.status == "complete" and c is not None and c.status == "complete":
                yield c, j
