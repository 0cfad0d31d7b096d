"""Per-account limits, retries and accounting around any `ChatClient`.

Account      one per (base URL, key): request and token buckets, a cap on calls in
             flight, and counters for the progress display; shared by every profile
             and role that uses the same account
RetryPolicy  exponential backoff with full jitter; honours the server's requested
             wait; retries TransientError only
LimitedClient  a ChatClient: limiter → in-flight cap → timeout → inner.chat → retry,
             then one CallRecord per call, handed to `on_call`

account = Account("api.openai.com", rpm=500, tpm=200_000, max_in_flight=64)
client = LimitedClient(inner, account, RetryPolicy(6), provider="openai",
                       timeout_s=60, prices=Prices(2.5, 10.0), on_call=records.append)
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any

import msgspec
from aiolimiter import AsyncLimiter

from vera.clients.base import CallContext, ChatClient
from vera.errors import CallTimeoutError, ProviderError, RateLimitError, TransientError
from vera.profiles import redact
from vera.records import CallRecord, Completion, Message, Role, Usage

DEFAULT_OUTPUT_ESTIMATE = 1024


class TokenBucket(AsyncLimiter):
    """An `AsyncLimiter` whose level can be corrected once the real cost is known.

    Token use is only known after the call, so a call acquires an estimate and the
    difference is settled afterwards: an over-estimate is given back, an under-estimate
    is charged (pushing later acquisitions back), without blocking the caller."""

    __slots__ = ()

    def adjust(self, delta: float) -> None:
        # aiolimiter has no public way to return capacity; its level is a plain float.
        self._leak()
        self._level = max(0.0, self._level + delta)
        self._wake_next()

    @property
    def level(self) -> float:
        self._leak()
        return self._level


class _Unlimited:
    """Stands in for a semaphore when an account has no in-flight cap."""

    __slots__ = ()

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


class Account:
    """The limits and counters of one provider account.

    Requests per minute use a bucket that refills every second (a burst of at most one
    second's worth), so a server that enforces its limit over short windows never sees a
    minute's burst at once. Tokens per minute use a minute-sized bucket: one large
    request must fit."""

    __slots__ = (
        "_resume_at",
        "_slots",
        "cached_input_tokens",
        "calls",
        "cost_usd",
        "errors",
        "http_429",
        "in_flight",
        "input_tokens",
        "label",
        "output_tokens",
        "requests",
        "retries",
        "tokens",
    )

    def __init__(
        self,
        label: str,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        max_in_flight: int | None = None,
    ) -> None:
        self.label = label
        self.requests: AsyncLimiter | None = None
        if rpm:
            burst = max(1.0, rpm / 60)
            self.requests = AsyncLimiter(burst, burst * 60 / rpm)
        self.tokens = TokenBucket(tpm, 60) if tpm else None
        self._slots: asyncio.Semaphore | _Unlimited = (
            asyncio.Semaphore(max_in_flight) if max_in_flight else _Unlimited()
        )
        self._resume_at = 0.0
        self.calls = 0
        self.errors = 0
        self.in_flight = 0
        self.retries = 0
        self.http_429 = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cached_input_tokens = 0
        self.cost_usd = 0.0

    def __repr__(self) -> str:
        return f"Account({self.label!r}, calls={self.calls}, in_flight={self.in_flight})"

    async def admit(self, tokens: int) -> int:
        """Wait for a request slot in the rate buckets; returns the tokens reserved."""
        if self._resume_at:
            wait = self._resume_at - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
        if self.requests is not None:
            await self.requests.acquire()
        if self.tokens is None or tokens <= 0:
            return 0
        reserved = min(tokens, int(self.tokens.max_rate))
        await self.tokens.acquire(reserved)
        return reserved

    def settle(self, reserved: int, used: int) -> None:
        """Correct the token bucket: `used` tokens were spent against `reserved`."""
        if self.tokens is not None and reserved != used:
            self.tokens.adjust(used - reserved)

    def pause(self, seconds: float) -> None:
        """Hold every new call on this account for `seconds` (after a 429 said so), so
        the other tasks do not run into the same wall."""
        self._resume_at = max(self._resume_at, time.monotonic() + seconds)

    @property
    def slot(self) -> asyncio.Semaphore | _Unlimited:
        """The in-flight cap, as an async context manager."""
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
        asked: float | None = getattr(error, "retry_after", None)
        if asked is not None:
            if asked > self.max_retry_after:
                return None
            return asked + (random.uniform(0, self.base_delay) if self.jitter else 0.0)
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return random.uniform(0, ceiling) if self.jitter else ceiling


class Prices(msgspec.Struct, frozen=True):
    """US dollars per million tokens; cached input defaults to the input price."""

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    cached_input_per_mtok: float | None = None

    def cost(self, usage: Usage) -> float:
        cached_price = self.cached_input_per_mtok
        if cached_price is None:
            cached_price = self.input_per_mtok
        uncached = max(0, usage.input_tokens - usage.cached_input_tokens)
        return (
            uncached * self.input_per_mtok
            + usage.cached_input_tokens * cached_price
            + usage.output_tokens * self.output_per_mtok
        ) / 1_000_000


def estimate_tokens(
    messages: list[Message],
    params: dict[str, Any] | None,
    schema: dict[str, Any] | None = None,
    default_output: int = DEFAULT_OUTPUT_ESTIMATE,
) -> int:
    """A cheap upper-ish estimate of a call's tokens: ~4 characters per token of the
    request, plus the output it may produce (providers count `max_tokens` up front too)."""
    chars = sum(len(m.content) for m in messages)
    if schema:
        chars += len(repr(schema))
    output = default_output
    if params:
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            if isinstance(params.get(key), int):
                output = params[key]
                break
    return chars // 4 + 4 * len(messages) + output


class LimitedClient:
    """A `ChatClient` that calls `inner` within its account's limits, retries transient
    failures, and reports every call (success or final failure) as one `CallRecord`.

    The record goes to `on_call` before `chat` returns or raises; its `latency_ms` runs
    from the call to its outcome, waits for the limits and retries included. A cancelled
    call (the run is stopping) produces no record. Errors other than `ProviderError` (a
    bad profile, a bug) propagate at once, also without a record."""

    __slots__ = (
        "_output_estimate",
        "account",
        "inner",
        "model",
        "name",
        "on_call",
        "policy",
        "prices",
        "provider",
        "role",
        "timeout_s",
    )

    def __init__(
        self,
        inner: ChatClient,
        account: Account,
        policy: RetryPolicy,
        *,
        provider: str,
        timeout_s: float,
        prices: Prices | None = None,
        on_call: Callable[[CallRecord], object] | None = None,
        role: Role = "chatbot",
        output_estimate: int = DEFAULT_OUTPUT_ESTIMATE,
    ) -> None:
        self.inner = inner
        self.account = account
        self.policy = policy
        self.provider = provider
        self.timeout_s = timeout_s
        self.prices = prices or Prices()
        self.on_call = on_call
        self.role = role
        self.name = inner.name
        self.model = inner.model
        self._output_estimate = output_estimate

    def __repr__(self) -> str:
        return f"LimitedClient({self.inner!r}, account={self.account.label!r})"

    async def chat(
        self,
        messages: list[Message],
        *,
        params: dict[str, Any] | None = None,
        schema: dict[str, Any] | None = None,
        cache_prefix: int = 0,
        context: CallContext | None = None,
    ) -> Completion:
        """`inner.chat` within limits, with retries; see the class docstring."""
        account = self.account
        started = time.perf_counter()
        estimate = 0
        if account.tokens is not None:
            estimate = estimate_tokens(messages, params, schema, self._output_estimate)
        attempts = 0
        http_429 = 0
        while True:
            attempts += 1
            reserved = await account.admit(estimate)
            try:
                async with account.slot:
                    account.in_flight += 1
                    try:
                        async with asyncio.timeout(self.timeout_s):
                            completion = await self.inner.chat(
                                messages,
                                params=params,
                                schema=schema,
                                cache_prefix=cache_prefix,
                                context=context,
                            )
                    finally:
                        account.in_flight -= 1
            except TimeoutError:
                error: ProviderError = CallTimeoutError(
                    self.provider, f"no complete answer within {self.timeout_s:g} s"
                )
            except ProviderError as exc:
                error = exc
            else:
                usage = completion.usage
                account.settle(reserved, usage.input_tokens + usage.output_tokens or reserved)
                self._record(context, started, attempts, http_429, usage, None)
                return completion

            if error.status is not None:
                account.settle(reserved, 0)  # the server refused: nothing was generated
            if isinstance(error, RateLimitError):
                http_429 += 1
                account.http_429 += 1
                if error.retry_after and error.retry_after <= self.policy.max_retry_after:
                    account.pause(error.retry_after)
            wait = self.policy.wait(attempts, error)
            if wait is None:
                self._record(context, started, attempts, http_429, Usage(), error)
                raise error
            account.retries += 1
            await asyncio.sleep(wait)

    def _record(
        self,
        context: CallContext | None,
        started: float,
        attempts: int,
        http_429: int,
        usage: Usage,
        error: ProviderError | None,
    ) -> None:
        account = self.account
        cost = self.prices.cost(usage)
        account.calls += 1
        account.input_tokens += usage.input_tokens
        account.output_tokens += usage.output_tokens
        account.cached_input_tokens += usage.cached_input_tokens
        account.cost_usd += cost
        if error is not None:
            account.errors += 1
        if self.on_call is None:
            return
        self.on_call(
            CallRecord(
                job_id=context.job_id if context is not None else "",
                role=context.role if context is not None else self.role,
                provider=self.provider,
                model=self.model,
                account=account.label,
                latency_ms=(time.perf_counter() - started) * 1000,
                status="ok" if error is None else "error",
                attempts=attempts,
                usage=usage,
                cost_usd=cost,
                http_429=http_429,
                error=None if error is None else redact(f"{type(error).__name__}: {error}"),
                at=time.time(),
            )
        )
