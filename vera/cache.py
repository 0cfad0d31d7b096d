"""Content-addressed response cache: never pay twice for the same request.

The key is a hash of everything that determines a response: the role, the job it
belongs to (a conversation or a judgement; the job id already hashes the models, seed,
persona, prompts and, for judges, the instance — so two judge instances never share an
answer), the protocol, model and parameters, the schema, and every message. A rerun of
an interrupted sweep replays the calls it already paid for, so a conversation cut off
mid-way is rebuilt without a single repeated request.

Storage is one SQLite file (WAL mode), in the run directory by default or in a shared
directory (`--cache-dir`) for several runs. Writes are committed one by one: an entry is
durable before the response is used.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path
from typing import Any

import msgspec

from vera.clients.base import CallContext, ChatClient
from vera.errors import storage_error
from vera.records import CallRecord, Completion, Message, ModelSpec, Usage

CACHE_FILE = "cache.sqlite"


class ResponseCache:
    """A tiny key → Completion store."""

    __slots__ = ("_db", "hits", "misses", "path")

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
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
            self._db.execute(
                # The first answer stays: a cache must never change an answer already used.
                "INSERT OR IGNORE INTO responses (key, value, at) VALUES (?, ?, ?)",
                (key, msgspec.json.encode(completion), time.time()),
            )
        except sqlite3.Error as exc:
            raise storage_error(self.path, "the response cache", exc) from None

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        self._db.close()


def request_key(
    spec: ModelSpec,
    messages: list[Message],
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
    """A ChatClient that answers from the cache when it can and records what it paid
    for otherwise. A cache hit is accounted as a call with `cached=True` and no cost."""

    def __init__(
        self,
        inner: ChatClient,
        cache: ResponseCache,
        spec: ModelSpec,
        *,
        on_call: Any = None,
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.spec = spec
        self.on_call = on_call
        self.name = inner.name
        self.model = inner.model

    async def chat(
        self,
        messages: list[Message],
        *,
        params: dict[str, Any] | None = None,
        schema: dict[str, Any] | None = None,
        cache_prefix: int = 0,
        context: CallContext | None = None,
    ) -> Completion:
        key = request_key(self.spec, messages, params, schema, context)
        hit = self.cache.get(key)
        if hit is not None:
            if self.on_call is not None:
                self.on_call(
                    CallRecord(
                        job_id=context.job_id if context else "",
                        role=context.role if context else "chatbot",
                        provider=self.spec.provider,
                        model=self.spec.model,
                        account="cache",
                        latency_ms=0.0,
                        status="ok",
                        attempts=0,
                        usage=Usage(),
                        cached=True,
                        at=time.time(),
                    )
                )
            return hit
        completion = await self.inner.chat(
            messages, params=params, schema=schema, cache_prefix=cache_prefix, context=context
        )
        self.cache.put(key, completion)
        return completion
