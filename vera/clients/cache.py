"""Content-addressed response cache: never pay twice for the same request.

The key is a hash of everything that determines a response: the role, the job it
belongs to (a conversation or a judgement; the job id already hashes the models, seed,
persona, prompts and, for judges, the instance — so two judge instances never share an
answer), the protocol, model and parameters, the schema, and every message. A rerun of
an interrupted sweep replays the calls it already paid for, so a conversation cut off
mid-way is rebuilt without a single repeated request.

Storage is one SQLite file (WAL mode), in the run directory by default or in a shared
directory (`--cache-dir`) for several runs, worked by one thread of its own so the event
loop never waits on the disk. Writes are committed in small batches (every
`commit_every` entries or `commit_interval_s` seconds, and on close): a commit per
response costs a WAL write each, about 0.1 ms. A process killed outright loses at
most the last interval's entries; those calls belong to conversations and judgements not
yet written (a record is written only after all its calls), so a resume asks for them
again and never repeats recorded work.

Most lookups miss (a first run asks nothing twice), and a lookup on the cache's thread
costs a hop there and back on every call. So the cache keeps a fixed-size Bloom filter
of its keys (`KeyFilter`, 4 MiB whatever the size of the cache): a key it has never
held is answered "absent" on the event loop at once. The keys already in the file are
read into the filter in the background when the run starts; until then every lookup
goes to the thread. Entries written meanwhile by another process sharing `--cache-dir`
are not in the filter: such a request is paid for again rather than waited for.
Writes are handed to the thread in batches too: a put waits on the loop up to
`hand_over_s` (0.1 s) with the others, and commits come that much sooner, so an
entry is durable as soon after its put as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec

from vera.clients.base import CallContext, ChatClient, ChatRequest
from vera.clients.meter import current_meter
from vera.errors import StorageError, storage_error
from vera.records import Completion, Message, ModelSpec

CACHE_FILE = "cache.sqlite"
PAGE_SIZE = 16384  # of a new cache file (see `ResponseCache._open`)

_encode = msgspec.json.encode


class KeyFilter:
    """A Bloom filter of keys: `may_hold(key)` is False only for a key never added.
    Four bit positions per key from the key's `hash` (double hashing), so it lives as
    long as the process: it is rebuilt from the file at every start, never saved.
    2**25 bits (4 MiB) hold millions of keys with few false positives (about 1 in 50
    at 4 million, 1 in 6,000 at 1 million), and a false positive costs only a lookup
    on the thread."""

    __slots__ = ("bits",)

    BITS = 1 << 25
    _MASK = BITS - 1

    def __init__(self) -> None:
        self.bits = bytearray(self.BITS >> 3)

    def add(self, key: str) -> None:
        # Unrolled as `may_hold` is: every put of a run adds one (2.3 -> 0.6 us).
        h = hash(key)
        m = self._MASK
        a, b = h & m, ((h >> 32) & m) | 1  # see `_positions`
        bits = self.bits
        bits[a >> 3] |= 1 << (a & 7)
        p = (a + b) & m
        bits[p >> 3] |= 1 << (p & 7)
        p = (a + 2 * b) & m
        bits[p >> 3] |= 1 << (p & 7)
        p = (a + 3 * b) & m
        bits[p >> 3] |= 1 << (p & 7)

    def may_hold(self, key: str) -> bool:
        # Unrolled (no generator): every call of a run asks it once.
        h = hash(key)
        m = self._MASK
        a, b = h & m, ((h >> 32) & m) | 1  # see `_positions`
        bits = self.bits
        if not bits[a >> 3] & (1 << (a & 7)):
            return False
        p = (a + b) & m
        if not bits[p >> 3] & (1 << (p & 7)):
            return False
        p = (a + 2 * b) & m
        if not bits[p >> 3] & (1 << (p & 7)):
            return False
        p = (a + 3 * b) & m
        return bool(bits[p >> 3] & (1 << (p & 7)))

    @classmethod
    def _positions(cls, key: str) -> list[int]:
        """The bits of `key`, as `add` and `may_hold` find them: `a + i*b` modulo 2**25
        for i in 0..3, from the low and high halves of the key's 64-bit `hash`. Only
        `b`'s low 25 bits count modulo 2**25, so they take `b` masked to them: the
        same bits as from the whole 32-bit half, with every operation on small ints
        (Python's fast path) instead of 64-bit ones."""
        h = hash(key)
        m = cls._MASK
        a, b = h & m, ((h >> 32) & m) | 1
        return [(a + i * b) & m for i in range(4)]


class ResponseCache:
    """A key → Completion store whose SQLite work runs on its own thread.

    Every statement (open, read, insert, commit, close) runs on one worker thread that
    owns the connection, so a slow disk or a WAL checkpoint never stalls the event loop
    that drives thousands of conversations. A read is awaited; a write is queued and not
    waited for (the thread keeps the order, and reads its own writes at once). A write
    that fails is raised by the next call, so a full disk is never silent.
    """

    __slots__ = (
        "_closed",
        "_committer",
        "_db",
        "_error",
        "_filter",
        "_in_thread",
        "_in_thread_entries",
        "_last_commit",
        "_loader",
        "_pending",
        "_put_while_loading",
        "_queued",
        "_room",
        "_room_loop",
        "_stop_loading",
        "_thread",
        "commit_every",
        "commit_interval_s",
        "commits",
        "filtered",
        "hand_over_every",
        "hand_over_s",
        "hits",
        "max_backlog",
        "misses",
        "path",
    )

    def __init__(
        self,
        path: str | Path,
        *,
        commit_every: int = 256,
        commit_interval_s: float = 0.5,
        max_backlog: int = 1024,
        hand_over_s: float = 0.1,
        hand_over_every: int = 256,
    ) -> None:
        self.path = Path(path)
        # Puts wait on the loop up to `hand_over_s` (or until `hand_over_every` wait) and
        # go to the thread together: one batch a turn of the loop woke the thread, ran
        # one `executemany` and passed the GIL back and forth several times for one or
        # two rows, and the thread spent 14 us a call where it now spends 9 (issue 31).
        # 0 hands them over at the next turn of the loop.
        self.hand_over_s = hand_over_s
        self.hand_over_every = hand_over_every
        self.max_backlog = max_backlog
        self.commit_every = commit_every
        self.commit_interval_s = commit_interval_s
        self.commits = 0
        self.hits = 0
        self.misses = 0  # looked up on the thread and not found
        self.filtered = 0  # answered "absent" by the filter, without a lookup
        self._pending = 0
        self._last_commit = time.monotonic()
        self._committer: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._closed = False
        self._db: sqlite3.Connection | None = None
        # None until the file's keys are read into it (see `start`); meanwhile every
        # lookup goes to the thread, and the keys put are noted to be added then.
        self._filter: KeyFilter | None = None
        # From the first put, not from `start`: a key put before the loader reads the
        # file may not be committed yet, and the loader reads only what is.
        self._put_while_loading: list[str] | None = []
        self._loader: asyncio.Task[None] | None = None
        self._stop_loading = threading.Event()
        self._queued: list[tuple[str, bytes]] = []  # puts not yet handed to the thread
        # Batches handed to the thread and not yet written, oldest first, with their sizes.
        self._in_thread: deque[tuple[Future[None], int]] = deque()
        self._in_thread_entries = 0
        # While more than `max_backlog` wait to be written, the one future every caller
        # of `room` waits on, and the loop to resolve it on.
        self._room: asyncio.Future[None] | None = None
        self._room_loop: asyncio.AbstractEventLoop | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vera-cache")
        try:
            self._thread.submit(self._open).result()
        except BaseException:
            self._thread.shutdown(wait=True)
            raise

    # -- on the cache's thread ---------------------------------------------------------

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None)
            # A new file gets 16 KiB pages (the first write fixes the size; a file written
            # before keeps its own, and every reader reads both): an entry is ~0.6 KB, and
            # with 4 KiB pages each commit and checkpoint wrote four times as many pages,
            # one write call each (insert and commit 4.8 against 6.6 us an entry, issue 31).
            db.execute(f"PRAGMA page_size={PAGE_SIZE}")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value BLOB NOT NULL, at REAL)"
            )
        except (OSError, sqlite3.Error) as exc:
            raise storage_error(self.path, "the response cache", exc) from None
        self._db = db

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise StorageError(f"{self.path}: the response cache is closed")
        return self._db

    def _get(self, key: str) -> Completion | None:
        try:
            row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            raise storage_error(self.path, "the response cache", exc) from None
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return msgspec.json.decode(row[0], type=Completion)

    def _put(self, entries: list[tuple[str, bytes]]) -> None:
        db = self._conn()
        at = time.time()
        try:
            if not db.in_transaction:
                db.execute("BEGIN")
            # The first answer stays: a cache must never change an answer already used.
            db.executemany(
                "INSERT OR IGNORE INTO responses (key, value, at) VALUES (?, ?, ?)",
                [(key, value, at) for key, value in entries],
            )
        except sqlite3.Error as exc:
            raise storage_error(self.path, "the response cache", exc) from None
        self._pending += len(entries)
        if self._pending >= self.commit_every or time.monotonic() - self._last_commit >= self._commit_age():
            self._commit()

    def _commit_age(self) -> float:
        """The age of the last commit at which to commit again: the interval less the
        time a put may wait on the loop, so that an entry is durable within about
        `commit_interval_s` of its put, as when puts were handed over at once."""
        return max(self.commit_interval_s - self.hand_over_s, 0.0)

    def _commit(self) -> None:
        self._last_commit = time.monotonic()
        db = self._conn()
        if not db.in_transaction:
            return
        try:
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise storage_error(self.path, "the response cache", exc) from None
        self._pending = 0
        self.commits += 1

    def _commit_if_quiet(self) -> None:
        if self._pending and time.monotonic() - self._last_commit >= self._commit_age():
            self._commit()

    def _close(self) -> None:
        if self._db is None:
            return
        try:
            self._commit()
        finally:
            self._db.close()
            self._db = None

    def _count(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def _read_keys(self) -> KeyFilter:
        """A filter of the keys already in the file; on a short-lived thread with its
        own connection (WAL lets it read beside the writer)."""
        keys = KeyFilter()
        with contextlib.closing(sqlite3.connect(self.path)) as db:
            rows = db.execute("SELECT key FROM responses")
            while batch := rows.fetchmany(10_000):
                if self._stop_loading.is_set():
                    break
                for (key,) in batch:
                    keys.add(key)
        return keys

    # -- from the event loop -----------------------------------------------------------

    def _raise_failed_write(self) -> None:
        if self._closed:  # its thread takes no more work
            raise StorageError(f"{self.path}: the response cache is closed")
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _remember_failure(self, done: Future[None]) -> None:
        exc = done.exception()
        if exc is not None and self._error is None:
            self._error = exc

    async def get(self, key: str) -> Completion | None:
        """The stored answer for `key`: None at once for a key the filter has never
        seen, otherwise read on the cache's thread (after every put queued so far)."""
        self._raise_failed_write()
        if self._filter is not None and not self._filter.may_hold(key):
            self.filtered += 1
            return None
        self._hand_over()
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._get, key)

    def surely_absent(self, key: str) -> bool:
        """True when `get(key)` would answer None without a lookup (the filter has never
        seen `key`), counted as `get` counts it; False whenever `get` has more to say
        (a failed write to raise, a filter not loaded yet, a key it may hold)."""
        keys = self._filter
        if keys is None or self._error is not None or self._closed or keys.may_hold(key):
            return False
        self.filtered += 1
        return True

    def put(self, key: str, completion: Completion) -> bool:
        """Queue `completion` under `key`; handed to the thread with the other puts of
        the next `hand_over_s` (or once `hand_over_every` wait, or before a lookup that
        may need it), committed in batches (every `commit_every` entries or about
        `commit_interval_s` seconds after the put, and on close). True when more than
        `max_backlog` entries wait to be written: the caller should await `room()`."""
        if self._error is not None or self._closed:
            self._raise_failed_write()
        if self._filter is not None:
            self._filter.add(key)
        elif self._put_while_loading is not None:
            self._put_while_loading.append(key)
        queued = self._queued
        queued.append((key, _encode(completion)))
        if len(queued) == 1:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop running: hand it over now
                self._hand_over()
                return self.backlog() > self.max_backlog
            if self.hand_over_s:
                loop.call_later(self.hand_over_s, self._hand_over)
            else:
                loop.call_soon(self._hand_over)
        elif len(queued) >= self.hand_over_every:
            self._hand_over()
        # The count handed over is an upper bound of what is still unwritten (written
        # batches are counted off in `backlog`, which asks each batch's future under its
        # lock): asked only when the bound is over, as it seldom is.
        return len(queued) + self._in_thread_entries > self.max_backlog and self.backlog() > self.max_backlog

    def _hand_over(self) -> None:
        if self._queued and not self._closed:
            entries, self._queued = self._queued, []
            done = self._thread.submit(self._put, entries)
            done.add_done_callback(self._remember_failure)
            done.add_done_callback(self._written)
            self._in_thread.append((done, len(entries)))
            self._in_thread_entries += len(entries)
            self.backlog()  # counts off the batches written since the last hand-over

    def backlog(self) -> int:
        """Entries put and not yet written by the thread."""
        while self._in_thread and self._in_thread[0][0].done():  # the thread works in order
            self._in_thread_entries -= self._in_thread.popleft()[1]
        return len(self._queued) + self._in_thread_entries

    async def room(self) -> None:
        """Wait while more than `max_backlog` entries are put and not yet written. The
        writes cost the thread more than the puts cost the loop: a loop faster than
        its cache's thread would otherwise pile up answers in memory without bound.
        Every waiter shares one future, resolved once the backlog is down to half the
        bound, so thousands of conversations waiting at once cost one wake-up each."""
        while self.backlog() > self.max_backlog:
            self._hand_over()
            if self._room is None or self._room.done():
                self._room_loop = asyncio.get_running_loop()
                self._room = self._room_loop.create_future()
                self._wake_if_room()  # a batch may have finished before the future existed
            # Shielded: one waiter cancelled (the run stopping) must not cancel the rest.
            await asyncio.shield(self._room)

    def _written(self, _: Future[None]) -> None:
        """On the cache's thread, after each batch: wake the waiters' loop if any wait."""
        loop, room = self._room_loop, self._room
        if loop is not None and room is not None and not room.done():
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(self._wake_if_room)

    def _wake_if_room(self) -> None:
        room = self._room
        if room is not None and not room.done() and self.backlog() <= self.max_backlog // 2:
            room.set_result(None)

    def commit(self) -> None:
        """Make every entry put so far durable (readers in other processes see it);
        waits for the thread."""
        self._hand_over()
        self._thread.submit(self._commit).result()
        self._raise_failed_write()

    async def _commit_forever(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self._commit_age() or self.commit_interval_s)
            await loop.run_in_executor(self._thread, self._commit_if_quiet)

    async def _load_filter(self) -> None:
        try:
            keys = await asyncio.to_thread(self._read_keys)
        except sqlite3.Error:
            self._put_while_loading = None
            return  # lookups keep going to the thread: slower, never wrong
        if self._stop_loading.is_set():
            return
        # On the loop, as every put is, so no key put meanwhile is missed.
        for key in self._put_while_loading or ():
            keys.add(key)
        self._put_while_loading = None
        self._filter = keys

    def start(self) -> None:
        """Commit at least every `commit_interval_s` while puts are quiet, and read the
        file's keys into the filter (call from inside the event loop)."""
        loop = asyncio.get_running_loop()
        if self._committer is None:
            self._committer = loop.create_task(self._commit_forever())
        if self._loader is None:
            self._loader = loop.create_task(self._load_filter())

    def __len__(self) -> int:
        self._raise_failed_write()
        self._hand_over()
        return self._thread.submit(self._count).result()

    def close(self) -> None:
        """Commit what is queued and close; blocks until the thread is done. A queued
        write that failed is raised here rather than lost with the thread."""
        self._stop_loading.set()
        if self._committer is not None:
            self._committer.cancel()
            self._committer = None
        if self._loader is not None:
            self._loader.cancel()
            self._loader = None
        if self._closed:
            return
        self._hand_over()
        self._closed = True
        try:
            self._thread.submit(self._close).result()
        finally:
            self._thread.shutdown(wait=True)
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    async def aclose(self) -> None:
        """`close` without blocking the event loop."""
        self._stop_loading.set()
        for task in (self._committer, self._loader):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._committer = self._loader = None
        await asyncio.to_thread(self.close)


def request_key(
    spec: ModelSpec,
    messages: Sequence[Message],
    params: dict[str, Any] | None,
    schema: dict[str, Any] | None,
    context: CallContext | None,
    reask: int = 0,
) -> str:
    body: dict[str, Any] = {
        "role": context.role if context else None,
        "job": context.job_id if context else None,
        "protocol": spec.protocol,
        "provider": spec.provider,
        "model": spec.model,
        "profile_params": spec.params,
        "params": params or {},
        "schema": schema,
        "messages": [(m.role, m.content) for m in messages],
    }
    if reask:  # only then, so the keys of first asks stay what earlier versions wrote
        body["reask"] = reask
    return hashlib.sha256(msgspec.json.encode(body, order="sorted")).hexdigest()


class KeyChain:
    """`request_key` of the calls of one client, hashing along each job's history.

    The key's bytes open with the job and the messages (the body's keys are sorted:
    `job`, `messages`, then the rest), and a job's next request repeats its last one:
    the chatbot's history only grows, and the user-agent's repeats all but its newest
    message (which carries the reminder). So two SHA-256 states are kept per (job, role)
    with the messages hashed: after all but the last message, and after all of them.
    The next request of the job that starts with all of them (compared as a tuple: the
    same `Message` objects compare by identity at C speed) continues from the second,
    one that starts with all but the last from the first, and either hashes only what
    follows. The bytes hashed are exactly `request_key`'s (a test compares the two over
    histories that grow, branch and restart), so caches written before keep answering.
    Any other request is hashed whole, and starts the job's chain again.

    At most `limit` chains are kept (the oldest used dropped first): a chain is two hash
    states and a reference to its job's messages, which the engine holds while the
    job runs but a chain keeps after it ends, until dropped (1,024 finished
    conversations of 20 turns: ~8 MB a client). 1,024 is four times the default
    `max_concurrency`; with more jobs in flight some keys are hashed whole again."""

    __slots__ = ("_chains", "_roles", "_spec", "limit")

    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        # The last spec seen and the bytes its names and profile parameters make around
        # the call's parameters (a spec is a frozen value, built once from the config).
        self._spec: tuple[ModelSpec, bytes, bytes] | None = None
        # role -> the bytes from `,"role":` to `,"schema":` (a role is a str: immutable)
        self._roles: dict[str | None, bytes] = {}
        # (job, role) -> (the messages hashed, the state after all but the last, after all)
        self._chains: dict[
            tuple[str | None, str | None], tuple[tuple[Message, ...], hashlib._Hash, hashlib._Hash]
        ] = {}

    def key(
        self,
        spec: ModelSpec,
        messages: tuple[Message, ...],
        params: dict[str, Any] | None,
        schema: dict[str, Any] | None,
        context: CallContext | None,
        reask: int = 0,
    ) -> str:
        role = context.role if context else None
        job = context.job_id if context else None
        chains = self._chains
        at = (job, role)
        chain = chains.pop(at, None)  # popped: no other request continues from its states
        n = len(messages)
        h: hashlib._Hash | None = None
        if chain is not None:
            seen, before_last, after_all = chain
            k = len(seen)
            if k <= n and messages[:k] == seen:
                if k == n:  # the same messages again (a re-ask, another model's question)
                    chains[at] = chain
                    return self._finish(after_all.copy(), spec, params, schema, role, reask)
                h, j = after_all, k  # the history grew: hash what follows
            elif k <= n and messages[: k - 1] == seen[:-1]:
                h, j = before_last, k - 1  # the last message changed (the reminder)
        if h is None:
            h, j = hashlib.sha256(_encode({"job": job})[:-1] + b',"messages":['), 0
        if n:
            head = messages[j:-1]
            if head:
                encoded = _encode([(m.role, m.content) for m in head])
                h.update((b"," + encoded[1:-1]) if j else encoded[1:-1])
            before = h.copy()
            last = messages[-1]
            h.update((b"," if n > 1 else b"") + _encode((last.role, last.content)))
            chains[at] = (messages, before, h)
            if len(chains) > self.limit:
                del chains[next(iter(chains))]
            h = h.copy()
        return self._finish(h, spec, params, schema, role, reask)

    def _finish(
        self,
        h: hashlib._Hash,
        spec: ModelSpec,
        params: dict[str, Any] | None,
        schema: dict[str, Any] | None,
        role: str | None,
        reask: int,
    ) -> str:
        # The rest of the body, its keys in sorted order, as `_encode(..., order="sorted")`
        # writes it; what is the same at every call (the spec's, the role's) is encoded
        # once, the call's parameters and schema (mutable dicts) every time.
        named = self._spec
        if named is None or named[0] is not spec:
            named = self._spec = (
                spec,
                b'],"model":' + _encode(spec.model) + b',"params":',
                b',"profile_params":'
                + _encode(spec.params, order="sorted")
                + b',"protocol":'
                + _encode(spec.protocol)
                + b',"provider":'
                + _encode(spec.provider),
            )
        named_role = self._roles.get(role)
        if named_role is None:
            named_role = self._roles[role] = b',"role":' + _encode(role) + b',"schema":'
        h.update(
            b"".join(
                (
                    named[1],
                    _encode(params or {}, order="sorted"),
                    named[2],
                    b',"reask":' + _encode(reask) if reask else b"",
                    named_role,
                    _encode(schema, order="sorted"),
                    b"}",
                )
            )
        )
        return h.hexdigest()


class CachedClient:
    """A ChatClient that answers from the cache when it can and stores what it paid for
    otherwise. A hit tells the recorder above it (vera.clients.stack) that the call was
    cached and cost nothing."""

    __slots__ = ("cache", "inner", "keys", "model", "name", "spec")

    def __init__(self, inner: ChatClient, cache: ResponseCache, spec: ModelSpec) -> None:
        self.inner = inner
        self.cache = cache
        self.spec = spec
        self.keys = KeyChain()
        self.name = inner.name
        self.model = inner.model

    def __repr__(self) -> str:
        return f"CachedClient({self.inner!r})"

    async def chat(self, request: ChatRequest) -> Completion:
        key = self.keys.key(
            self.spec, request.messages, request.params, request.schema, request.context, request.reask
        )
        cache = self.cache
        # Most lookups are answered by the filter: asked here, they cost no coroutine.
        hit = None if cache.surely_absent(key) else await cache.get(key)
        if hit is not None:
            meter = current_meter()
            if meter is not None:
                meter.settled = True
                meter.cached = True
                meter.provider = self.spec.provider
                meter.model = self.spec.model
                meter.account = "cache"
            return hit
        completion = await self.inner.chat(request)
        if cache.put(key, completion):  # more wait to be written than it may hold
            await cache.room()
        return completion
