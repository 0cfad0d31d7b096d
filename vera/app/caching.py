"""The client pool seen through the response cache."""

from __future__ import annotations

from typing import Any

from vera.cache import CachedClient, ResponseCache
from vera.clients.base import ChatClient
from vera.clients.pool import ClientPool
from vera.records import ModelSpec, Role


class CachingClients:
    """The client pool seen through the response cache (offline stand-ins are free and
    deterministic, so they are never cached)."""

    def __init__(self, pool: ClientPool, cache: ResponseCache | None, on_call: Any) -> None:
        self.pool, self.cache, self.on_call = pool, cache, on_call
        self._clients: dict[tuple[str, str], ChatClient] = {}

    def spec(self, ref: str) -> ModelSpec:
        return self.pool.spec(ref)

    def client(self, ref: str, role: Role = "chatbot") -> ChatClient:
        key = (ref, role)
        if key not in self._clients:
            inner = self.pool.client(ref, role)
            spec = self.pool.spec(ref)
            if self.cache is not None and spec.protocol != "offline":
                inner = CachedClient(inner, self.cache, spec, on_call=self.on_call)
            self._clients[key] = inner
        return self._clients[key]
