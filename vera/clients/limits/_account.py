"""One provider account: its buckets, its cap on calls in flight, the pause a server can
name, and the counters of the progress display.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any, Protocol

from vera.clients.limits._buckets import (
    EPSILON,
    REQUEST_BURST_S,
    TOKEN_BURST_S,
    WINDOW_S,
    Bucket,
    BucketFactory,
    Clock,
    MonotonicClock,
    bucket_shape,
    local_buckets,
)


class SharedPause(Protocol):
    """A pause that other processes on the same account also see (Redis)."""

    async def pause(self, seconds: float) -> None: ...

    async def remaining(self) -> float: ...


class Slots:
    """The in-flight cap: at most `limit` holders at once, the others served in the
    order they came. What `asyncio.Semaphore` does, with a synchronous way in when a
    slot is free (`try_take`): the semaphore's `async with` ran two or three coroutines
    per call (about 0.65 µs), for a cap that rarely binds. A slot given back goes
    straight to the oldest waiter, so a newcomer never takes it first."""

    __slots__ = ("_free", "_waiters")

    def __init__(self, limit: int) -> None:
        self._free = limit
        self._waiters: deque[asyncio.Future[None]] = deque()

    def try_take(self) -> bool:
        """Take a slot if one is free and nobody waits for one; never waits."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return True
        return False

    async def take(self) -> None:
        """Take a slot, waiting in line for one."""
        if self.try_take():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.give()  # handed a slot as it was cancelled: it goes to the next
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    def give(self) -> None:
        """Give a slot back: to the oldest waiter still waiting, else to the free ones."""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1

    async def __aenter__(self) -> None:
        await self.take()

    async def __aexit__(self, *exc: object) -> None:
        self.give()


class _Unlimited:
    """Stands in for `Slots` when an account has no in-flight cap."""

    __slots__ = ()

    def try_take(self) -> bool:
        return True

    async def take(self) -> None:
        return None

    def give(self) -> None:
        return None

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


class Account:
    """The limits and counters of one provider account.

    `rpm` and `tpm` are held to the letter: no window of `window_s` (a minute) sees more
    than the limit (see `bucket_shape`). Requests come in bursts of at most a second's
    worth, so a server that enforces its limit over short spans does not see a
    minute's burst at once. A server-named wait (`pause`) holds every call on the
    account that has not been sent yet. `buckets` decides where the buckets live (this
    process, or Redis for shards that share an account); `shared_pause` likewise."""

    __slots__ = (
        "_clock",
        "_resume_at",
        "_shared_pause",
        "_slots",
        "cached_input_tokens",
        "calls",
        "connect_error",
        "cost_usd",
        "errors",
        "http_429",
        "in_flight",
        "input_tokens",
        "label",
        "max_in_flight",
        "output_tokens",
        "paused",
        "requests",
        "retries",
        "rpm",
        "tokens",
        "tpm",
    )

    def __init__(
        self,
        label: str,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        max_in_flight: int | None = None,
        clock: Clock | None = None,
        window_s: float = WINDOW_S,
        buckets: BucketFactory | None = None,
        shared_pause: SharedPause | None = None,
    ) -> None:
        self.label = label
        self.rpm = rpm
        self.tpm = tpm
        self.max_in_flight = max_in_flight
        self._clock: Clock = clock or MonotonicClock()
        make = buckets or local_buckets(self._clock)
        self.requests: Bucket | None = None
        if rpm:
            self.requests = make("requests", *bucket_shape(rpm, REQUEST_BURST_S, window_s))
        self.tokens: Bucket | None = None
        if tpm:
            self.tokens = make("tokens", *bucket_shape(tpm, TOKEN_BURST_S, window_s))
        self._slots: Slots | _Unlimited = Slots(max_in_flight) if max_in_flight else _Unlimited()
        self._shared_pause = shared_pause
        self._resume_at = 0.0
        self.calls = 0
        self.errors = 0
        self.in_flight = 0
        self.retries = 0
        self.http_429 = 0
        self.paused = 0  # server-named waits that paused the account
        self.input_tokens = 0
        self.output_tokens = 0
        self.cached_input_tokens = 0
        self.cost_usd = 0.0
        # The first connection never made (refused, no such host), for the terminal at
        # once: retries go on, and a run whose every call fails to connect would
        # otherwise say why only at its end.
        self.connect_error = ""

    def __repr__(self) -> str:
        return f"Account({self.label!r}, calls={self.calls}, in_flight={self.in_flight})"

    async def admit(self, tokens: int) -> int:
        """Wait for the pause and the buckets; returns the tokens reserved. Call it while
        holding `slot`, right before sending."""
        await self._wait_pause()
        if self.requests is not None:
            await self.requests.take(1)
        reserved = 0
        if self.tokens is not None and tokens > 0:
            reserved = min(tokens, int(self.tokens.capacity))
            await self.tokens.take(reserved)
        # A pause named while this call waited for the buckets still holds it.
        await self._wait_pause()
        return reserved

    def admitted_at_once(self) -> bool:
        """Whether `admit(0)` would not wait at all: no buckets, no pause named, none
        shared. Checked first, it spares a call two coroutines on an account without
        rate limits (the common case: an in-flight cap only)."""
        return (
            self.requests is None
            and self.tokens is None
            and self._shared_pause is None
            and self._resume_at - self._clock.now() <= EPSILON
        )

    async def _wait_pause(self) -> None:
        while True:
            wait = self._resume_at - self._clock.now()
            if self._shared_pause is not None:
                wait = max(wait, await self._shared_pause.remaining())
            if wait <= EPSILON:
                return
            await self._clock.sleep(wait)

    async def settle(self, reserved: int, used: int) -> None:
        """Correct the token bucket: `used` tokens were spent against `reserved`."""
        if self.tokens is not None and reserved != used:
            await self.tokens.adjust(used - reserved)

    async def pause(self, seconds: float) -> None:
        """Hold every call on this account that has not been sent yet for `seconds` (the
        server named that wait), so the other tasks do not run into the same wall."""
        self.paused += 1
        self._resume_at = max(self._resume_at, self._clock.now() + seconds)
        if self._shared_pause is not None:
            await self._shared_pause.pause(seconds)

    @property
    def slot(self) -> Slots | _Unlimited:
        """The in-flight cap: an async context manager, or `try_take` / `take` / `give`."""
        return self._slots

    def snapshot(self) -> dict[str, Any]:
        """Counters for a progress display."""
        return {
            "account": self.label,
            "calls": self.calls,
            "errors": self.errors,
            "in_flight": self.in_flight,
            "retries": self.retries,
            "http_429": self.http_429,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cost_usd": self.cost_usd,
        }
