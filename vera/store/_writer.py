"""The run directory: append-only records, atomic summaries, and what is already done.

Layout of a run directory::

    manifest.json         versions and hashes of every input (atomic write)
    conversations.jsonl   one Conversation per line (complete or failed)
    judgements.jsonl      one Judgement per line: every answer, every rating
    calls.jsonl           one CallRecord per model call (tokens, latency, cost)
    call_bodies.vlog      each call's exact request and response, each text once
                          (vera.store._bodylog; absent with --no-call-bodies; runs of an
                          earlier vera: call_bodies.sqlite, vera.store._bodies)
    ratings.parquet       the ratings frame (rewritten atomically at the end)
    card.json, card.md    the score card (card.json is the source of truth)

Records are appended by one writer (the event loop) and flushed to the OS as they
are written; an fsync runs at intervals and on close. A half-written last line left by
a crash is detected on open (only the end of each file is read for it), cut off, and
never a reason to fail. When a job appears more than once (a failed attempt, then a
success on resume), the last complete record wins; a complete record is never written
twice.

Memory follows the work in flight, not the size of the sweep: the store keeps only a
`JobIndex` per file (job id -> where its line is and whether it is complete), built on
open by one streaming pass that decodes nothing but ids and statuses. Whole records are
read back by place (`vera.files._jsonl`) when needed: a resumed conversation to judge. Cards,
frames and merges stream the files through `vera.store._index.open_run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar

import msgspec

from vera.errors import StorageError, storage_error
from vera.files import RecordReader, RecordRef, decoded, records, repair_tail
from vera.records import CallBody, CallRecord, Conversation, Judgement, RunManifest
from vera.store._bodies import BODIES, LOG, CallBodies, open_bodies, repair_bodies
from vera.store._bodylog import VLOG, BodyLog
from vera.store._lock import lock_run, run_locked, unlock_run

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
    BODIES: "the call bodies",
    LOG: "the call bodies",
    VLOG: "the call bodies",
    MANIFEST: "the run manifest",
    "card.json": "the score card",
    "card.md": "the score card (Markdown)",
    "card.html": "the score card (HTML)",
    "ratings.parquet": "the ratings frame",
    "answers.parquet": "the answers frame",
}


def atomic_write(path: Path, data: bytes, *, what: str = "") -> None:
    """Write a whole file so that readers see the old or the new content, never half
    (see `atomic_file`)."""
    with atomic_file(path, what=what) as f:
        f.write(data)


@contextlib.contextmanager
def atomic_file(path: Path, *, what: str = "") -> Iterator[IO[bytes]]:
    """A binary file to write whole: readers of `path` see the old or the new content,
    never half. Every file vera writes whole (summaries, cards, pages, exports) goes
    through here, so all of them survive a crash the same way.

    What is written goes to a temporary file beside `path`, which is fsync'd and renamed
    over `path` when the block ends; on any failure (a full or read-only disk, or an
    exception in the block) the temporary file is removed and the old file is left as it
    was, and an OSError becomes one `StorageError` line naming the path and `what` it is."""
    what = what or WHAT.get(path.name, path.name)
    # Not mkstemp: its files are private (0600); this one gets the usual permissions.
    tmp = str(path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise storage_error(path, what, exc) from None
    done = False
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        done = True
    except OSError as exc:
        raise storage_error(path, what, exc) from None
    finally:
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def read_records(path: Path, type_: type[T]) -> list[T]:
    """Every complete record in a JSONL file, all at once (small files and tests; runs
    are read line by line with `vera.files._jsonl.records` or by place)."""
    return list(records(path, type_))


class _Keyed(Protocol):
    """What `keep_latest` reads of a record (read-only, so Literal statuses fit)."""

    @property
    def id(self) -> str: ...

    @property
    def status(self) -> str: ...


R = TypeVar("R", bound=_Keyed)


def keep_latest(index: dict[str, R], record: R) -> None:
    """Index a record by job id: the later record wins, except that a complete record is
    never replaced by a failed one."""
    old = index.get(record.id)
    if old is None or old.status != "complete" or record.status == "complete":
        index[record.id] = record


class _IdStatus(msgspec.Struct):
    """All the store's index needs of a record; the rest of the line is skipped unread."""

    id: str
    status: str = "complete"
    cost_usd: float = 0.0


class JobIndex:
    """Job id -> where the record that counts for it is, and whether it is complete.

    This is all a run keeps of its finished work: one int per job (the line's offset,
    its length and a complete bit packed together), so memory grows by a few dozen
    bytes per finished job, not by the size of its transcript. The record itself is
    read again by place when someone needs it (a resumed conversation to judge)."""

    __slots__ = ("_packed",)

    _LENGTH_BITS = 40  # a line of up to 1 TB

    def __init__(self) -> None:
        self._packed: dict[str, int] = {}

    def add(self, job_id: str, ref: RecordRef, complete: bool) -> None:
        """Record where a job's latest line is (see `keep_latest`: a complete record is
        never replaced by a failed one)."""
        old = self._packed.get(job_id)
        if old is None or not old & 1 or complete:
            self._packed[job_id] = (ref.offset << self._LENGTH_BITS | ref.length) << 1 | complete

    def complete(self, job_id: str) -> bool:
        return bool(self._packed.get(job_id, 0) & 1)

    def ref(self, job_id: str) -> RecordRef | None:
        packed = self._packed.get(job_id)
        if packed is None:
            return None
        place = packed >> 1
        return RecordRef(place >> self._LENGTH_BITS, place & ((1 << self._LENGTH_BITS) - 1))

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._packed

    def __len__(self) -> int:
        return len(self._packed)

    def __iter__(self) -> Iterator[str]:
        """Job ids in the order they were first written."""
        return iter(self._packed)

    @classmethod
    def scan(cls, path: Path, failed_cost: dict[str, float] | None = None) -> JobIndex:
        """The index of a file, from one streaming pass. `failed_cost`, when given, gets
        the cost each job's records that are not complete carry (see `RunStore._open`)."""
        index = cls()
        decoder = msgspec.json.Decoder(_IdStatus)
        for ref, head in decoded(path, decoder):  # a corrupt line is named (vera.files.watching)
            complete = head.status == "complete"
            index.add(head.id, ref, complete)
            if failed_cost is not None and not complete and head.cost_usd:
                failed_cost[head.id] = failed_cost.get(head.id, 0.0) + head.cost_usd
        return index


_CALL = msgspec.json.Decoder(CallRecord)


def repair_run(root: Path) -> None:
    """Mend the last line of each record file if a crash tore it (only the files' ends
    are read): what a reader that must see whole records does before scanning. A write:
    refused while another process writes the run (its last line is not torn, only not
    written yet)."""
    with run_locked(root):
        repair_tail(root / CONVERSATIONS, Conversation)
        repair_tail(root / JUDGEMENTS, Judgement)
        repair_tail(root / CALLS, CallRecord)


def _fsync_all(fds: list[tuple[str, int]]) -> tuple[str, OSError] | None:
    """fsync each (name, fd); the first failure, or None. Runs in a worker thread."""
    for name, fd in fds:
        try:
            os.fsync(fd)
        except OSError as exc:
            return name, exc
    return None


class RunStore:
    """Appends records to a run directory and knows which jobs are finished."""

    def __init__(self, root: str | Path, *, fsync_interval: float = 1.0, call_bodies: bool = False) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise storage_error(self.root, "the run directory", exc) from None
        # One writer at a time: a second process appending here would ask the same jobs
        # and interleave its records and bodies with this one's (vera.store._lock).
        self._lock: tuple[int, int] | None = lock_run(self.root)
        try:
            self._open(fsync_interval, call_bodies)
        except BaseException:
            unlock_run(self._lock)
            raise

    def _open(self, fsync_interval: float, call_bodies: bool) -> None:
        self.fsync_interval = fsync_interval
        repair_run(self.root)  # before appending: a crash may have torn a last line
        # What is done, by place: never the records themselves (see `JobIndex`).
        recorded: dict[str, float] = {}  # what the records of unfinished jobs carry
        self.conversations = JobIndex.scan(self.root / CONVERSATIONS, recorded)
        self.judgements = JobIndex.scan(self.root / JUDGEMENTS, recorded)
        self._files: dict[str, IO[bytes]] = {}
        # The cost of the calls made for each job since its last record was written: a
        # record carries exactly its own calls' cost, so the records sum to calls.jsonl.
        # Earlier sessions count too: the calls a job paid for before a kill, a Ctrl-C
        # or a budget stop are replayed on this resume at no cost, and the job's record
        # must still carry what they cost (as the uninterrupted run's record does).
        self._job_cost: dict[str, float] = {}
        # The call log is read whole only for the card; a corrupt line in it is found
        # now, before a resumed run does any work it would then refuse to score.
        for _, call in decoded(self.root / CALLS, _CALL):
            if call.cost_usd and not (
                self.conversations.complete(call.job_id) or self.judgements.complete(call.job_id)
            ):
                self._job_cost[call.job_id] = self._job_cost.get(call.job_id, 0.0) + call.cost_usd
        for job_id, cost in recorded.items():
            left = self._job_cost.get(job_id, 0.0) - cost
            if left > 1e-12:
                self._job_cost[job_id] = left
            else:
                self._job_cost.pop(job_id, None)
        self._sizes: dict[str, int] = {}
        self._readers: dict[str, RecordReader] = {}
        self._encoder = msgspec.json.Encoder()
        self._dirty = False
        self._calls_waiting = False  # call records held back, a flush scheduled
        # The call lines held back (see `add_call`), encoded one after the other into
        # one buffer: no bytes object, newline concatenation and join per call.
        self._held = bytearray()
        self._failed: StorageError | None = None  # a flush that failed in a callback
        self._syncer: asyncio.Task[None] | None = None
        self._stop_syncing = asyncio.Event()
        # Each call's request and response, when the run keeps them, opened at the first
        # body (so a run's first write is what it was: the manifest); bodies whose line
        # was lost are dropped then, against the size calls.jsonl had after the repair.
        self.bodies: CallBodies | BodyLog | None = None
        self._keep_bodies = call_bodies
        calls = self.root / CALLS
        self._calls_size = calls.stat().st_size if calls.exists() else 0
        # A run killed before its bodies were closed: made whole now, whether or not this
        # run keeps bodies, so that no body names a line this run writes anew.
        repair_bodies(self.root, calls_size=self._calls_size)

    # -- what is done ----------------------------------------------------------------

    def conversation_done(self, job_id: str) -> bool:
        return self.conversations.complete(job_id)

    def done_conversation(self, job_id: str) -> Conversation | None:
        """A complete conversation, read back from its file (a resumed run judges it)."""
        if not self.conversations.complete(job_id):
            return None
        return self.read_conversation(job_id)

    def done_judgement(self, job_id: str) -> bool:
        return self.judgements.complete(job_id)

    def read_conversation(self, job_id: str) -> Conversation:
        return self._read(CONVERSATIONS, self.conversations, job_id, Conversation)

    def read_judgement(self, job_id: str) -> Judgement:
        return self._read(JUDGEMENTS, self.judgements, job_id, Judgement)

    def _read(self, name: str, index: JobIndex, job_id: str, type_: type[T]) -> T:
        ref = index.ref(job_id)
        if ref is None:
            raise KeyError(job_id)
        f = self._files.get(name)
        if f is not None:
            f.flush()  # what this store wrote is readable by place at once
        reader = self._readers.get(name)
        if reader is None:
            reader = self._readers[name] = RecordReader(self.root / name)
        return reader.read(ref, type_, job_id)

    # -- appending ---------------------------------------------------------------------

    def _append(self, name: str, record: Any, *, flush: bool = True) -> RecordRef:
        """Append one record; return where its line is. `flush=False` holds the line
        back, for `_flush_calls` to write (`add_call`): not even the file's buffer has
        it, which could spill to the OS before the call's body is committed."""
        if flush and self._calls_waiting:
            self._flush_calls()  # a job's calls reach the OS before the job's record
        self._raise_failed()
        try:
            f = self._files.get(name)
            if f is None:
                # Kept open for the life of the store (closed in `close`), so no `with`.
                f = self._files[name] = open(self.root / name, "ab")  # noqa: SIM115
                self._sizes[name] = f.seek(0, os.SEEK_END)
            line = self._encoder.encode(record)
            if flush:
                f.write(line + b"\n")
                f.flush()  # in the OS before anyone is told the work is done
            else:
                self._held += line
                self._held.append(10)  # b"\n"
        except OSError as exc:
            # A full disk may leave part of the line written: the next open cuts it off.
            # The handle still holds the unwritten bytes; drop it so closing cannot retry.
            self._discard(name)
            raise storage_error(self.root / name, WHAT[name], exc) from None
        self._dirty = True
        ref = RecordRef(self._sizes[name], len(line))
        self._sizes[name] += len(line) + 1
        return ref

    def _discard(self, name: str) -> None:
        f = self._files.pop(name, None)
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()

    def add_conversation(self, conv: Conversation) -> None:
        if self.conversations.complete(conv.id):
            return
        conv.cost_usd += self._job_cost.pop(conv.id, 0.0)
        ref = self._append(CONVERSATIONS, conv)
        self.conversations.add(conv.id, ref, conv.status == "complete")
        if self.bodies is not None:
            self.bodies.forget(conv.id)

    def add_judgement(self, judgement: Judgement) -> None:
        if self.judgements.complete(judgement.id):
            return
        judgement.cost_usd += self._job_cost.pop(judgement.id, 0.0)
        ref = self._append(JUDGEMENTS, judgement)
        self.judgements.add(judgement.id, ref, judgement.status == "complete")
        if self.bodies is not None:
            self.bodies.forget(judgement.conversation_id)

    def calls_size(self) -> int:
        """Where the next call's line will start in calls.jsonl (its size once written)."""
        return self._sizes.get(CALLS, self._calls_size)

    def add_call(self, record: CallRecord, body: CallBody | None = None) -> None:
        """Append a call's record (and keep its body, if given and the store keeps
        them). The calls that end in one turn of the event loop (a wave of answers
        arrives together) are written to the OS together, at the end of that turn, not
        one write each: before any conversation or judgement record, and before every
        fsync, so a job's calls are never behind its record. Their bodies are committed
        just before, so a call's line is never in the file without its body."""
        held = self._held
        if self._failed is not None or CALLS not in self._files:
            # A failure to raise, or the file to open first: the general way.
            ref = self._append(CALLS, record, flush=False)
            offset, length = ref.offset, ref.length
        else:
            # What `_append(CALLS, record, flush=False)` does, without its `RecordRef`
            # and line copies: a call's line is encoded straight into the held buffer.
            start = len(held)
            self._encoder.encode_into(record, held, -1)
            length = len(held) - start
            held.append(10)  # b"\n"
            offset = self._sizes[CALLS]
            self._sizes[CALLS] = offset + length + 1
            self._dirty = True
        if body is not None and self._keep_bodies:
            if self.bodies is None:
                self.bodies = open_bodies(self.root, calls_size=self._calls_size)
            self.bodies.add(offset, length, body)
        if record.cost_usd:
            self._job_cost[record.job_id] = self._job_cost.get(record.job_id, 0.0) + record.cost_usd
        if not self._calls_waiting:
            self._calls_waiting = True
            try:
                asyncio.get_running_loop().call_soon(self._flush_calls)
            except RuntimeError:  # no loop running: now
                self._flush_calls()

    def _flush_calls(self) -> None:
        """Hand the buffered call records to the OS; a failure is raised by the next
        append or sync (a callback has no caller to raise it to)."""
        if not self._calls_waiting:
            return
        self._calls_waiting = False
        f = self._files.get(CALLS)
        if f is None:
            return
        held, self._held = self._held, bytearray()
        try:
            if self.bodies is not None:
                self.bodies.commit()  # the bodies first: a line in the file has its body
        except StorageError as exc:
            self._discard(CALLS)
            if self._failed is None:
                self._failed = exc
            return
        try:
            f.write(held)
            f.flush()
        except OSError as exc:
            self._discard(CALLS)
            if self._failed is None:
                self._failed = storage_error(self.root / CALLS, WHAT[CALLS], exc)

    def _raise_failed(self) -> None:
        if self._failed is not None:
            failed, self._failed = self._failed, None
            raise failed

    def sync(self) -> None:
        self._flush_calls()
        self._raise_failed()
        if not self._dirty:
            return
        for name, fd in self._fds():
            try:
                os.fsync(fd)
            except OSError as exc:
                self._discard(name)
                raise storage_error(self.root / name, WHAT[name], exc) from None
        self._dirty = False

    def _fds(self) -> list[tuple[str, int]]:
        """The files an fsync covers: the records, and the call bodies' log (written
        with the call lines, so made durable with them)."""
        fds = [(name, f.fileno()) for name, f in self._files.items()]
        if self.bodies is not None and (fd := self.bodies.log_fd()) is not None:
            fds.append((VLOG if isinstance(self.bodies, BodyLog) else LOG, fd))
        return fds

    async def _sync_forever(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.fsync_interval)
            if not stop.is_set():
                await self._sync_off_loop()

    async def _sync_off_loop(self) -> None:
        """`sync`, with the fsyncs in a worker thread: an fsync can take tens of
        milliseconds on a busy disk, and the event loop has thousands of calls to serve
        meanwhile. Appends continue on the loop; what they add after the flag is cleared
        is covered by the next round."""
        self._flush_calls()
        if not self._dirty:
            return
        self._dirty = False
        fds = self._fds()
        failure = await asyncio.to_thread(_fsync_all, fds)
        if failure is not None:
            name, exc = failure
            self._discard(name)
            raise storage_error(self.root / name, WHAT[name], exc) from None

    def start(self) -> None:
        """Start periodic fsync (call from inside the event loop)."""
        if self._syncer is None:
            self._stop_syncing = asyncio.Event()
            self._syncer = asyncio.get_running_loop().create_task(self._sync_forever(self._stop_syncing))

    async def aclose(self) -> None:
        if self._syncer is not None:
            # Let a round in progress finish rather than cancel it: its thread would go
            # on fsyncing files that close() is about to close.
            self._stop_syncing.set()
            try:
                await self._syncer
            finally:
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
            if self.bodies is not None:
                with contextlib.suppress(StorageError):
                    self.bodies.close()
                self.bodies = None
            for reader in self._readers.values():
                reader.close()
            self._readers.clear()
            unlock_run(self._lock)
            self._lock = None

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
