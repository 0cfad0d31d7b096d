"""Token buckets and the clock they run on: one bucket for requests and one for tokens
per account, shaped so that no window of a minute sees more than the limit.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Literal, Protocol

WINDOW_S = 60.0  # providers state rpm and tpm per minute


REQUEST_BURST_S = 1.0  # at most one second's worth of requests at once


TOKEN_BURST_S = 10.0  # tokens: room for a large request, still far below a minute's worth


EPSILON = 1e-9  # float dust left by a sleep that ended exactly on time


BucketKind = Literal["requests", "tokens"]


class Clock(Protocol):
    """Where the limits read the time and how they wait (tests inject a fake one)."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    """The real clock: `time.monotonic` and `asyncio.sleep`."""

    __slots__ = ()

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class Bucket(Protocol):
    """What an account needs of a bucket; `TokenBucket` here, or a shared one in Redis
    (`vera.clients.shared_limits`)."""

    capacity: float

    async def take(self, amount: float) -> None: ...

    async def adjust(self, delta: float) -> None: ...


class TokenBucket:
    """A leaky bucket: each take adds to `level`, which drains at `rate` per second; a
    take waits until its amount fits under `capacity`.

    Over any span of T seconds at most `capacity + rate * T` is taken, which is how
    `bucket_shape` keeps every window of a minute within the limit. Takers are served in
    arrival order (one waits at a time), so a large take is not starved by small ones.
    `adjust` corrects the level once a call's real cost is known; it never waits, and may
    push the level above capacity (later takers then wait longer)."""

    __slots__ = ("_at", "_clock", "_level", "_lock", "capacity", "rate")

    def __init__(self, capacity: float, rate: float, *, clock: Clock | None = None) -> None:
        if capacity <= 0 or rate <= 0:
            raise ValueError("a bucket needs a positive capacity and rate")
        self.capacity = float(capacity)
        self.rate = float(rate)
        self._clock: Clock = clock or MonotonicClock()
        self._level = 0.0
        self._at = self._clock.now()
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"TokenBucket(capacity={self.capacity:g}, rate={self.rate:g}/s, level={self.level:g})"

    def _drain(self) -> None:
        now = self._clock.now()
        self._level = max(0.0, self._level - (now - self._at) * self.rate)
        self._at = now

    @property
    def level(self) -> float:
        self._drain()
        return self._level

    def delay(self, amount: float) -> float:
        """Seconds until `amount` would fit (0 if it fits now)."""
        amount = min(amount, self.capacity)
        excess = self.level + amount - self.capacity
        return excess / self.rate if excess > EPSILON else 0.0

    async def take(self, amount: float) -> None:
        """Wait until `amount` (at most `capacity`) fits, then add it to the level."""
        amount = min(amount, self.capacity)
        async with self._lock:
            while (wait := self.delay(amount)) > 0:
                await self._clock.sleep(wait)
            self._level += amount

    async def adjust(self, delta: float) -> None:
        self._drain()
        self._level = max(0.0, self._level + delta)


def bucket_shape(limit: float, burst_s: float, window_s: float = WINDOW_S) -> tuple[float, float]:
    """(capacity, rate per second) of a bucket that lets through at most `limit` in any
    window of `window_s` seconds, with bursts of about `burst_s` seconds' worth.

    A bucket passes at most `capacity + rate * window` in a window, so the rate is what
    the limit leaves after one burst: `(limit - capacity) / window`. Tiny limits keep a
    burst of one and half the limit as their rate, rather than a rate of zero."""
    capacity = min(float(limit), max(1.0, limit * burst_s / window_s))
    sustained = limit - capacity if limit >= 2 * capacity else limit / 2
    return capacity, sustained / window_s


BucketFactory = Callable[[BucketKind, float, float], Bucket]


def local_buckets(clock: Clock | None = None) -> BucketFactory:
    """Buckets held in this process."""

    def make(kind: BucketKind, capacity: float, rate: float) -> Bucket:
        return TokenBucket(capacity, rate, clock=clock)

    return make
