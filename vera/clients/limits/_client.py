"""`LimitedClient`: a `ChatClient` that calls another within its account's limits and
the run's budget, retries, and settles every call on the account and the meter.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from vera.clients.base import ChatClient, ChatRequest
from vera.clients.budget import Budget, Reservation, input_bound, output_bound
from vera.clients.limits._account import Account
from vera.clients.limits._prices import DEFAULT_OUTPUT_ESTIMATE, Prices, estimate_tokens
from vera.clients.limits._retry import RetryPolicy
from vera.clients.meter import METER
from vera.errors import (
    CallCancelledError,
    CallTimeoutError,
    ConfigError,
    ConnectError,
    ProviderError,
    RateLimitError,
    TransientError,
)
from vera.inputs import redact
from vera.records import Completion, Usage


class _Watch:
    """One call in flight under its client's timeout."""

    __slots__ = ("deadline", "done", "expired", "task")

    def __init__(self, task: asyncio.Task[Any], deadline: float) -> None:
        self.task = task
        self.deadline = deadline
        self.done = False
        self.expired = False


class _Deadlines:
    """The timeout of one client's calls, kept by one timer instead of one per call.

    `asyncio.timeout` arms and disarms a timer per call (about 12 µs on the benchmark
    machine, a twentieth of a call's CPU). A client's calls all have the same timeout,
    so their deadlines come in the order the calls started: they queue, and a single
    timer waits for the oldest. When it fires, finished calls are dropped from the
    front, any call past its deadline is cancelled (and marked, so the call can tell
    its own timeout from the run being cancelled), and the timer is set for the next."""

    __slots__ = ("_loop", "_queue", "_timer", "timeout_s")

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._queue: deque[_Watch] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the calls run on

    def watch_current(self) -> _Watch | None:
        """Watch the task this call runs in (None outside a task).

        The loop is remembered, not looked up per call: on Python 3.11
        `asyncio.get_running_loop()` makes a getpid system call each time (0.2 µs
        quiet, more under load). A remembered loop that has a current task is the one
        running this call (a loop runs in one thread, and a client is used by one);
        one without (a loop closed, as between two tests) is looked up again, and its
        watches and timer are left behind with it."""
        loop = self._loop
        task = asyncio.current_task(loop) if loop is not None else None
        if loop is None or task is None:
            loop = asyncio.get_running_loop()
            task = asyncio.current_task(loop)
            if task is None:
                return None
            if loop is not self._loop:
                if self._timer is not None:
                    self._timer.cancel()
                self._loop = loop
                self._queue = deque()
                self._timer = None
        watch = _Watch(task, loop.time() + self.timeout_s)
        self._queue.append(watch)
        if self._timer is None:
            self._timer = loop.call_at(watch.deadline, self._fire, loop)
        return watch

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        now = loop.time()
        queue = self._queue
        while queue and (queue[0].done or queue[0].deadline <= now):
            watch = queue.popleft()
            if not watch.done:
                watch.expired = True
                watch.task.cancel()
        if queue:
            self._timer = loop.call_at(queue[0].deadline, self._fire, loop)


class LimitedClient:
    """A `ChatClient` that calls `inner` within its account's limits (and the run's
    budget, if it has one), retries transient failures, and settles every call (success
    or final failure) on the account and on the recorder's meter (vera.clients.stack),
    which turns it into one `CallRecord`.

    A call cancelled after it was sent (the run is stopping) may be billed: it is
    recorded as failed (`CallCancelledError`, at its worst case: see `_cut_off`), and the
    budget counts it at that worst case; one cancelled before it was sent is no call.
    Errors other than `ProviderError`
    (a bad profile, a bug, `BudgetReached`) propagate at once, also without a record.

    `output_cap` is the output cap the protocol sends when the parameters give none
    (Anthropic's `max_tokens` is required), for the budget's worst case."""

    __slots__ = (
        "_deadlines",
        "_output_estimate",
        "_priced",
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
        self._deadlines = _Deadlines(timeout_s)
        self.prices = prices or Prices()
        self.standard_prices = standard_prices or self.prices
        self.name = inner.name
        self.model = inner.model
        self._output_estimate = output_estimate
        self.budget = budget
        self.output_cap = output_cap
        self._priced = bool(self.prices.input_per_mtok or self.prices.output_per_mtok)

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
        slots = account.slot
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
        unbounded = 0  # attempts of unknown cost with no worst case (nothing caps the output)
        # For a call the run cuts off (a second Ctrl-C, the grace period's end): whether
        # an attempt was sent, whether one was in flight, what the budget held for it,
        # and the usage of an answer that came as it was cut off.
        sent = cut_in_flight = False
        held: float | None = None
        answered: Usage | None = None
        try:
            while True:
                attempts += 1
                reserved = 0
                hold: Reservation | None = None
                try:
                    # The slot first, then the pause and buckets: see the module docstring.
                    # (Taken at once when free: no coroutine for a cap that does not bind.)
                    if not slots.try_take():
                        await slots.take()
                    try:
                        reserved = 0 if account.admitted_at_once() else await account.admit(estimate)
                        if budget is not None and worst > 0:
                            try:
                                hold = await budget.reserve(worst)
                            except BaseException:
                                await account.settle(reserved, 0)  # not sent: the tokens go back
                                raise
                        account.in_flight += 1
                        watch = self._deadlines.watch_current()
                        task = watch.task if watch is not None else None
                        sent = True
                        try:
                            completion = await self.inner.chat(request)
                        except asyncio.CancelledError:
                            if watch is None or not watch.expired or task is None:
                                cut_in_flight = True  # sent and unanswered when the run stopped
                                raise
                            task.uncancel()  # our own deadline, not the run being cancelled
                            raise TimeoutError from None
                        finally:
                            account.in_flight -= 1
                            if watch is not None:
                                watch.done = True
                                if watch.expired and task is not None and task.cancelling():
                                    task.uncancel()  # expired as it finished: no cancel pending
                    finally:
                        slots.give()
                except TimeoutError:
                    error: ProviderError = CallTimeoutError(
                        self.provider, f"no complete answer within {self.timeout_s:g} s"
                    )
                except ProviderError as exc:
                    error = exc
                except BaseException:
                    # Cancelled in flight (or a bug): what it cost is unknown.
                    if hold is not None:
                        held = hold.unknown()
                    raise
                else:
                    usage = answered = completion.usage
                    if hold is not None:
                        if usage.input_tokens or usage.output_tokens:
                            hold.settle(self.prices.cost(usage))
                        else:
                            uncertain += hold.unknown()  # a priced answer that says nothing of its usage
                    elif not (usage.input_tokens or usage.output_tokens) and self._priced:
                        # The same, without a budget.
                        if (w := self._worst_or_none(request)) is None:
                            unbounded += 1
                        else:
                            uncertain += w
                    if account.tokens is not None:  # (no coroutine per call without a token bucket)
                        await account.settle(reserved, usage.input_tokens + usage.output_tokens or reserved)
                    self._record(attempts, http_429, usage, None, uncertain, unbounded)
                    return completion

                if hold is not None:
                    if _free(error):
                        hold.release()
                    else:
                        uncertain += hold.unknown()
                elif not _free(error):
                    # Sent and unanswered (or answered unreadably): its cost is unknown, with
                    # or without a budget; the card says what it may be billed (or that
                    # nothing bounds it).
                    if (w := self._worst_or_none(request)) is None:
                        unbounded += 1
                    else:
                        uncertain += w
                if error.status is not None and account.tokens is not None:
                    await account.settle(reserved, 0)  # the server refused: nothing was generated
                if isinstance(error, RateLimitError):
                    http_429 += 1
                    account.http_429 += 1
                # Only a connection never made is "cannot connect": one the server accepted and
                # then closed is retried like a 500 and named on the card.
                if isinstance(error, ConnectError) and not error.sent and not account.connect_error:
                    account.connect_error = redact(str(error))
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
                    self._record(attempts, http_429, Usage(), error, uncertain, unbounded)
                    raise error
                account.retries += 1
                await asyncio.sleep(wait)
        except asyncio.CancelledError:
            if sent:  # possibly billed: a call on record (see `_cut_off`)
                if answered is not None:
                    self._record(attempts, http_429, answered, None, uncertain, unbounded)
                else:
                    self._cut_off(request, attempts, http_429, uncertain, unbounded, cut_in_flight, held)
            raise

    def _cut_off(
        self,
        request: ChatRequest,
        attempts: int,
        http_429: int,
        uncertain: float,
        unbounded: int,
        in_flight: bool,
        held: float | None,
    ) -> None:
        """Record a call the run stopped after it was sent: the provider may bill it all
        the same, so it is a call on record (the card counts the calls the provider saw)
        and what it may have cost counts against a resumed run's budget: the attempt in
        flight at its worst case (what the budget held, or worked out here; counted as
        unbounded when nothing caps its output), with what earlier attempts may have
        cost."""
        if in_flight:
            worst = held if held is not None else self._worst_or_none(request)
            if worst is None:
                unbounded += 1
            else:
                uncertain += worst
        why = "while the call was in flight" if in_flight else "between its attempts"
        error = CallCancelledError(self.provider, f"the run stopped {why}; it may be billed")
        self._record(attempts, http_429, Usage(), error, uncertain, unbounded)

    def _worst_or_none(self, request: ChatRequest) -> float | None:
        """The most this request may cost, or None when a priced output has no cap."""
        try:
            return self.worst_case(request)
        except ConfigError:
            return None

    def _record(
        self,
        attempts: int,
        http_429: int,
        usage: Usage,
        error: ProviderError | None,
        uncertain: float,
        unbounded: int = 0,
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
        meter = METER.get()
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
        meter.reasoning_cost_usd = self.prices.reasoning_cost(usage) if usage.reasoning_tokens else 0.0
        meter.uncertain_usd = uncertain
        meter.unbounded_attempts = unbounded
        meter.error = None if error is None else redact(f"{type(error).__name__}: {error}")
        meter.tier = self.tier


def _free(error: ProviderError) -> bool:
    """Whether a failed call certainly cost nothing: the server answered with an error
    status, or the connection was never made."""
    return error.status is not None or (isinstance(error, ConnectError) and not error.sent)
