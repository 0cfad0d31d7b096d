"""Per-account limits, retries and accounting around any `ChatClient`.

TokenBucket  our own bucket (level drains at a steady rate, capped at a capacity), with
             an injectable clock; one for requests and one for tokens per account
Account      one per (base URL, key): the buckets, a cap on calls in flight, a pause the
             server can name, and counters for the progress display; shared by every
             profile and role that uses the same account
RetryPolicy  exponential backoff with full jitter; honours the server's requested
             wait; retries TransientError only
LimitedClient  a ChatClient: in-flight slot → pause and buckets → the budget's
             reservation (vera.clients.budget) → timeout → inner.chat → retry, then the
             call's cost on the account, the budget and the recorder's meter

account = Account("api.openai.com", rpm=500, tpm=200_000, max_in_flight=64)
client = LimitedClient(inner, account, RetryPolicy(6), provider="openai",
                       timeout_s=60, prices=Prices(2.5, 10.0))

The order matters. A call first takes its in-flight slot, and only then waits for the
account's pause and buckets, so what the buckets let through is sent at once: calls
never queue for a slot after being admitted and then leave together in a burst, and a
pause named meanwhile holds every call that has not been sent yet.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

import msgspec

from vera.clients.base import ChatClient, ChatRequest
from vera.clients.budget import Budget, Reservation, input_bound, output_bound, output_cap
from vera.clients.meter import current_meter
from vera.errors import (
    CallTimeoutError,
    ConfigError,
    ConnectError,
    ProviderError,
    RateLimitError,
    TransientError,
)
from vera.inputs import redact
from vera.records import Completion, Message, Usage

DEFAULT_OUTPUT_ESTIMATE = 1024
WINDOW_S = 60.0  # providers state rpm and tpm per minute
REQUEST_BURST_S = 1.0  # at most one second's worth of requests at once
TOKEN_BURST_S = 10.0  # tokens: room for a large request, still far below a minute's worth
_EPSILON = 1e-9  # float dust left by a sleep that ended exactly on time

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
        return excess / self.rate if excess > _EPSILON else 0.0

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


class SharedPause(Protocol):
    """A pause that other processes on the same account also see (Redis)."""

    async def pause(self, seconds: float) -> None: ...

    async def remaining(self) -> float: ...


class _Unlimited:
    """Stands in for a semaphore when an account has no in-flight cap."""

    __slots__ = ()

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
        self._slots: asyncio.Semaphore | _Unlimited = (
            asyncio.Semaphore(max_in_flight) if max_in_flight else _Unlimited()
        )
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

    async def _wait_pause(self) -> None:
        while True:
            wait = self._resume_at - self._clock.now()
            if self._shared_pause is not None:
                wait = max(wait, await self._shared_pause.remaining())
            if wait <= _EPSILON:
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
        asked = error.retry_after
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

    def reasoning_cost(self, usage: Usage) -> float:
        """The part of `cost(usage)` that paid for reasoning: those tokens are output."""
        return usage.reasoning_tokens * self.output_per_mtok / 1_000_000

    def max_input_per_mtok(self) -> float:
        """The highest price an input token may be billed at (a budget's worst case)."""
        return max(self.input_per_mtok, self.cached_input_per_mtok or 0.0)

    def worst_cost(self, input_tokens: int, output_tokens: int) -> float:
        """What a call of at most these tokens may cost, every input token at the
        highest input price."""
        return (input_tokens * self.max_input_per_mtok() + output_tokens * self.output_per_mtok) / 1_000_000


def estimate_tokens(
    messages: Sequence[Message],
    params: dict[str, Any] | None,
    schema: dict[str, Any] | None = None,
    default_output: int = DEFAULT_OUTPUT_ESTIMATE,
) -> int:
    """A cheap upper-ish estimate of a call's tokens: ~4 characters per token of the
    request, plus the output it may produce (providers count `max_tokens` up front too)."""
    chars = sum(len(m.content) for m in messages)
    if schema:
        chars += len(repr(schema))
    return chars // 4 + 4 * len(messages) + max_output(params, default_output)


def max_output(params: dict[str, Any] | None, default: int = DEFAULT_OUTPUT_ESTIMATE) -> int:
    """The output cap `params` set, under any of the protocols' names for it."""
    cap = output_cap(params)
    return default if cap is None else cap


class LimitedClient:
    """A `ChatClient` that calls `inner` within its account's limits (and the run's
    budget, if it has one), retries transient failures, and settles every call (success
    or final failure) on the account and on the recorder's meter (vera.clients.stack),
    which turns it into one `CallRecord`.

    A cancelled call (the run is stopping) settles nothing on the account and so is not
    recorded; the budget counts it at its worst case. Errors other than `ProviderError`
    (a bad profile, a bug, `BudgetReached`) propagate at once, also without a record.

    `output_cap` is the output cap the protocol sends when the parameters give none
    (Anthropic's `max_tokens` is required), for the budget's worst case."""

    __slots__ = (
        "_output_estimate",
        "account",
        "budget",
        "inner",
        "model",
        "name",
        "output_cap",
        "policy",
        "prices",
        "provider",
        "standard_prices",
        "tier",
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
        output_estimate: int = DEFAULT_OUTPUT_ESTIMATE,
        budget: Budget | None = None,
        output_cap: int | None = None,
        tier: str = "standard",
        standard_prices: Prices | None = None,
    ) -> None:
        self.inner = inner
        self.tier = tier  # the price tier its calls are recorded at (prices are that tier's)
        # The standard tier's prices, for "what live mode would have cost" (flex: its
        # prices before the tier's discount; standard: `prices` themselves).
        self.account = account
        self.policy = policy
        self.provider = provider
        self.timeout_s = timeout_s
        self.prices = prices or Prices()
        self.standard_prices = standard_prices or self.prices
        self.name = inner.name
        self.model = inner.model
        self._output_estimate = output_estimate
        self.budget = budget
        self.output_cap = output_cap

    def __repr__(self) -> str:
        return f"LimitedClient({self.inner!r}, account={self.account.label!r})"

    def unbounded(self, params: dict[str, Any] | None) -> bool:
        """Whether a call with `params` has no worst case: it is priced per output token
        and nothing caps its output."""
        return self.prices.output_per_mtok > 0 and output_bound(params, self.output_cap) is None

    def worst_case(self, request: ChatRequest, prices: Prices | None = None) -> float:
        """The most this request may cost (vera.clients.budget) at `prices` (the client's
        own by default; a batch asks at its tier's); a ConfigError when nothing caps its
        output (a budget refuses such a role before the run starts)."""
        prices = prices or self.prices
        out = output_bound(request.params, self.output_cap)
        if out is None:
            if prices.output_per_mtok <= 0:
                out = 0
            else:
                raise ConfigError(
                    f"profile {self.provider!r}: --max-cost needs a worst case for every priced call, "
                    "and this model's output has no cap: set max_tokens in its [params]"
                )
        return prices.worst_cost(input_bound(request.messages, request.schema), out)

    async def chat(self, request: ChatRequest) -> Completion:
        """`inner.chat` within limits, with retries; see the class docstring."""
        account = self.account
        estimate = 0
        if account.tokens is not None:
            estimate = estimate_tokens(
                request.messages, request.params, request.schema, self._output_estimate
            )
        budget = self.budget
        worst = self.worst_case(request) if budget is not None else 0.0
        attempts = 0
        http_429 = 0
        uncertain = 0.0  # the worst cases charged for attempts whose cost is unknown
        while True:
            attempts += 1
            reserved = 0
            hold: Reservation | None = None
            try:
                # The slot first, then the pause and buckets: see the module docstring.
                async with account.slot:
                    reserved = await account.admit(estimate)
                    if budget is not None and worst > 0:
                        try:
                            hold = await budget.reserve(worst)
                        except BaseException:
                            await account.settle(reserved, 0)  # not sent: the tokens go back
                            raise
                    account.in_flight += 1
                    try:
                        async with asyncio.timeout(self.timeout_s):
                            completion = await self.inner.chat(request)
                    finally:
                        account.in_flight -= 1
            except TimeoutError:
                error: ProviderError = CallTimeoutError(
                    self.provider, f"no complete answer within {self.timeout_s:g} s"
                )
            except ProviderError as exc:
                error = exc
            except BaseException:
                # Cancelled in flight (or a bug): what it cost is unknown.
                if hold is not None:
                    hold.unknown()
                raise
            else:
                usage = completion.usage
                await account.settle(reserved, usage.input_tokens + usage.output_tokens or reserved)
                if hold is not None:
                    if usage.input_tokens or usage.output_tokens:
                        hold.settle(self.prices.cost(usage))
                    else:
                        uncertain += hold.unknown()  # a priced answer that says nothing of its usage
                self._record(attempts, http_429, usage, None, uncertain)
                return completion

            if hold is not None:
                if _free(error):
                    hold.release()
                else:
                    uncertain += hold.unknown()
            if error.status is not None:
                await account.settle(reserved, 0)  # the server refused: nothing was generated
            if isinstance(error, RateLimitError):
                http_429 += 1
                account.http_429 += 1
            if (
                isinstance(error, TransientError)
                and error.retry_after
                and error.retry_after <= self.policy.max_retry_after
            ):
                # A wait the server named (Retry-After on a 429 or 503, or an exhausted
                # bucket's reset header) is about the account, not this call.
                await account.pause(error.retry_after)
            wait = self.policy.wait(attempts, error)
            if wait is None:
                self._record(attempts, http_429, Usage(), error, uncertain)
                raise error
            account.retries += 1
            await asyncio.sleep(wait)

    def _record(
        self, attempts: int, http_429: int, usage: Usage, error: ProviderError | None, uncertain: float
    ) -> None:
        """Count the call on the account, and tell the recorder above (if any) what it
        cost: see vera.clients.stack."""
        account = self.account
        cost = self.prices.cost(usage)
        account.calls += 1
        account.input_tokens += usage.input_tokens
        account.output_tokens += usage.output_tokens
        account.cached_input_tokens += usage.cached_input_tokens
        account.cost_usd += cost
        if error is not None:
            account.errors += 1
        meter = current_meter()
        if meter is None:
            return
        meter.settled = True
        meter.provider = self.provider
        meter.model = self.model
        meter.account = account.label
        meter.attempts = attempts
        meter.http_429 = http_429
        meter.usage = usage
        meter.cost_usd = cost
        meter.standard_cost_usd = (
            cost if self.standard_prices is self.prices else self.standard_prices.cost(usage)
        )
        meter.reasoning_cost_usd = self.prices.reasoning_cost(usage)
        meter.uncertain_usd = uncertain
        meter.error = None if error is None else redact(f"{type(error).__name__}: {error}")
        meter.tier = self.tier


def _free(error: ProviderError) -> bool:
    """Whether a failed call certainly cost nothing: the server answered with an error
    status, or the connection was never made."""
    return error.status is not None or (isinstance(error, ConnectError) and not error.sent)
