"""When and how long to wait before trying a failed call again."""

from __future__ import annotations

import random

from vera.errors import (
    TransientError,
)


class RetryPolicy:
    """When and how long to wait before trying a failed call again.

    Only `TransientError`s are retried, at most `max_retries` times. The wait is full
    jitter over an exponential ceiling (`uniform(0, min(max_delay, base * 2**n))`), unless
    the server said how long (Retry-After, reset headers): then that, plus a little jitter
    so waiting tasks do not return together. A server asking for more than
    `max_retry_after` seconds (a daily quota) ends the call instead."""

    __slots__ = ("base_delay", "jitter", "max_delay", "max_retries", "max_retry_after")

    def __init__(
        self,
        max_retries: int = 6,
        *,
        base_delay: float = 1.0,
        max_delay: float = 60.0,
        jitter: bool = True,
        max_retry_after: float = 300.0,
    ) -> None:
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.jitter = jitter
        self.max_retry_after = max_retry_after

    def __repr__(self) -> str:
        return f"RetryPolicy({self.max_retries}, base_delay={self.base_delay})"

    def wait(self, attempt: int, error: BaseException) -> float | None:
        """Seconds to wait after failed attempt number `attempt` (1-based), or None to stop."""
        if not isinstance(error, TransientError) or attempt > self.max_retries:
            return None
        asked = error.retry_after
        if asked is not None:
            if asked > self.max_retry_after:
                return None
            return asked + (random.uniform(0, self.base_delay) if self.jitter else 0.0)
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return random.uniform(0, ceiling) if self.jitter else ceiling
