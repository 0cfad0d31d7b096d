"""Content-addressed response cache: never pay twice for the same request.

The key is a hash of everything that determines a response: the role, the job it
belongs to (a conversation or a judgement; the job id already hashes the models, seed,
persona, prompts and, for judges, the instance — so two judge instances never share an
answer), the protocol, model and parameters, the schema, and every message. A rerun of
an interrupted sweep replays the calls it already paid for, so a conversation cut off
mid-way is rebuilt without a single repeated request.

Storage is one SQLite file (WAL mode), in the run directory by default or in a shared
directory (`--cache-dir`) for several runs. Writes are committed in small batches (every
`commit_every` entries or `commit_interval_s` seconds, and on close): a commit per
response blocked the event loop on a WAL write for every call, about 0.1 ms each, which
at a thousand calls a second is a tenth of the loop. A process killed outright loses at
most the last interval's entries; those calls belong to conversations and judgements not
yet written (a record is written only after all its calls), so a resume asks for them
again and never repeats recorded work.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from vera.clients.base import CallContext, ChatClient, ChatRequest
from vera.clients.meter import current_meter
from vera.errors import storage_error
from vera.records import Completion, Message, ModelSpec

CACHE_FILE = "cache.sqlite"


class ResponseCache:
    """A tiny key → Completion store."""

    __slots__ = (
        "_committer",
        "_db",
        "_last_commit",
        "_pending",
        "commit_every",
        "commit_interval_s",
        "commits",
        "hits",
        "misses",
        "path",
    )

    def __init__(self, path: str | Path, *, commit_every: int = 256, commit_interval_s: float = 0.5) -> None:
        self.path = Path(path)
        self.commit_every = commit_every
        self.commit_interval_s = commit_interval_s
        self.commits = 0
        self._pending = 0
        self._last_commit = time.monotonic()
        self._committer: asyncio.Task[None] | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value BLOB NOT NULL, at REAL)"
            )
        except (OSError, sqlite3.Error) as exc:
            raise storage_error(self.path, "the response cache", exc) from None
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Completion | None:
        row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return msgspec.json.decode(row[0], type=Completion)

    def put(self, key: str, completion: Completion) -> None:
        try:
            if not self._db.in_transaction:
                self._db.execute("BEGIN")
            self._db.execute(
                # The first answer stays: a cache must never change an answer already used.
                "INSERT OR IGNORE INTO responses (key, value, at) VALUES (?, ?, ?)",
                (key, msgspec.json.encode(completion), time.time()),
            )
        except sqlite3.Error as exc:
            raise storage_error(self.path, "the response cache", exc) from None
        self._pending += 1
        if (
            self._pending >= self.commit_every
            or time.monotonic() - self._last_commit >= self.commit_interval_s
        ):
            self.commit()

    def commit(self) -> None:
        """Make every entry put so far durable (readers in other processes see it)."""
        self._last_commit = time.monotonic()
        if not self._db.in_transaction:
            return
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise storage_error(self.path, "the response cache", exc) from None
        self._pending = 0
        self.commits += 1

    async def _commit_forever(self) -> None:
        while True:
            await asyncio.sleep(self.commit_interval_s)
            if self._pending and time.monotonic() - self._last_commit >= self.commit_interval_s:
                self.commit()

    def start(self) -> None:
        """Commit at least every `commit_interval_s` while puts are quiet (call from
        inside the event loop)."""
        if self._committer is None:
            self._committer = asyncio.get_running_loop().create_task(self._commit_forever())

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        if self._committer is not None:
            self._committer.cancel()
            self._committer = None
        try:
            self.commit()
        finally:
            self._db.close()


def request_key(
    spec: ModelSpec,
    messages: Sequence[Message],
    params: dict[str, Any] | None,
    schema: dict[str, Any] | None,
    context: CallContext | None,
) -> str:
    body = {
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
    return hashlib.sha256(msgspec.json.encode(body, order="sorted")).hexdigest()


class CachedClient:
    """A ChatClient that answers from the cache when it can and stores what it paid for
    otherwise. A hit tells the recorder above it (vera.clients.stack) that the call was
    cached and cost nothing."""

    __slots__ = ("cache", "inner", "model", "name", "spec")

    def __init__(self, inner: ChatClient, cache: ResponseCache, spec: ModelSpec) -> None:
        self.inner = inner
        self.cache = cache
        self.spec = spec
        self.name = inner.name
        self.model = inner.model

    def __repr__(self) -> str:
        return f"CachedClient({self.inner!r})"

    async def chat(self, request: ChatRequest) -> Completion:
        key = request_key(self.spec, request.messages, request.params, request.schema, request.context)
        hit = self.cache.get(key)
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
        self.cache.put(key, completion)
        return completion
