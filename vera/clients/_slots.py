"""An account's cap on calls in flight, handed out by priority.

`asyncio.Semaphore` wakes waiters first come, first served. When calls queue for an
account's slots, the order matters for how long a sweep takes: a judge call with a
chain of seven calls waiting on its answer holds up its judgement for seven latencies,
a call with nothing behind it for one. So each waiter says how many calls wait on it
(`ChatRequest.priority`), and a freed slot goes to the waiter with the most, first come
among equals. This is list scheduling by the longest remaining chain, which keeps the
tail of a sweep short; nothing waits forever, since every chain ends.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools


class PrioritySlots:
    """At most `limit` holders at once; `hold(priority)` waits for a slot, highest
    priority first, then first come first served."""

    __slots__ = ("_free", "_order", "_waiters", "limit")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"an in-flight cap must be at least 1, not {limit}")
        self.limit = limit
        self._free = limit
        # (-priority, arrival, future). A free slot and a live waiter never coexist:
        # `release` hands a slot to a waiter rather than freeing it, so entries left here
        # while slots are free are all cancelled waiters.
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __repr__(self) -> str:
        return f"PrioritySlots(limit={self.limit}, free={self._free}, waiting={self.waiting})"

    @property
    def waiting(self) -> int:
        return sum(not fut.done() for _, _, fut in self._waiters)

    async def acquire(self, priority: int = 0) -> None:
        if self._free > 0:
            self._free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (-priority, next(self._order), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                # Handed a slot in the same step as it was cancelled: pass it on.
                self.release()
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)
                return
        if self._free >= self.limit:
            raise RuntimeError("PrioritySlots released more often than acquired")
        self._free += 1

    def hold(self, priority: int = 0) -> _Held:
        """The slot as an async context manager: `async with slots.hold(p): ...`."""
        return _Held(self, priority)


class _Held:
    __slots__ = ("_priority", "_slots")

    def __init__(self, slots: PrioritySlots, priority: int) -> None:
        self._slots = slots
        self._priority = priority

    async def __aenter__(self) -> None:
        await self._slots.acquire(self._priority)

    async def __aexit__(self, *exc: object) -> None:
        self._slots.release()
