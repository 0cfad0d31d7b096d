"""The run's spending limit (`--max-cost`), held call by call.

Before a priced call is sent, its *worst case* is reserved: an upper bound of its input
tokens plus the most output it may produce, at the role's prices. When the answer
comes, the reservation is settled to the call's real cost. A call the server refused
(an HTTP error, or a connection never made) cost nothing and is released; a call whose
cost is unknown (a timeout after sending, a torn or usage-less answer, a call cancelled
in flight) is settled at its worst case and counted as *uncertain*.

A reservation that would take spent + reserved past the limit waits for calls in
flight to settle; one that would pass the limit on what is already spent can never fit,
and is refused with `BudgetReached`. From then on the budget is *reached*: every later
priced call is refused too, so the run stops at the budget instead of finishing the
calls that still happen to fit. Unpriced calls (offline stand-ins, a free endpoint) are
never held.

A session killed outright leaves the calls it had in flight sent and in no record;
their bound's worst case (vera.app._killed) counts as spent and uncertain too, from the
resume that finds the kill on (`Budget.unknown`).

So what the run spends never passes the limit, as long as the bounds hold:

* input: a token covers at least one byte of text (byte-level BPE, SentencePiece with
  byte fallback), so the UTF-8 size of every message, plus `MESSAGE_OVERHEAD_TOKENS`
  per message and `REQUEST_OVERHEAD_TOKENS` per request (role markers, framing), plus
  the JSON schema and `SCHEMA_OVERHEAD_TOKENS` when structured output is asked for (the
  instructions a tool-use mode adds), at the highest of the input, cached-input and
  cache-write prices;
* output: the role's output cap (`max_tokens`, `max_completion_tokens` or
  `max_output_tokens`, or the protocol's own default where it always sends one), plus
  any reasoning or thinking budget the parameters name (counted on top of the cap even
  where the protocol counts it inside: the bound stays an upper one).

A priced role with no output cap has no worst case: a budget refuses to start with it
(`output_cap` is None; see `vera.clients.pool.ClientPool.budget_problem`). The one way
to spend more than the limit is a provider billing more than these bounds (an answer
longer than its cap, hidden input past the overheads); the excess is then at most that
difference, and is what the call records show.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from typing import Any

import msgspec

from vera.errors import BudgetReached

REQUEST_OVERHEAD_TOKENS = 64
MESSAGE_OVERHEAD_TOKENS = 16
SCHEMA_OVERHEAD_TOKENS = 512
OUTPUT_CAP_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens", "maxOutputTokens")
# Reasoning and thinking budgets, at any depth of the parameters (Anthropic
# `thinking.budget_tokens`, Gemini `thinkingConfig.thinkingBudget`, OpenRouter
# `reasoning.max_tokens`): output billed on top of (or within) the cap.
THINKING_KEYS = ("budget_tokens", "thinkingBudget", "thinking_budget")
REASONING_TABLES = ("reasoning",)


def usd(amount: float) -> str:
    """Dollars as the budget messages write them: cents from $1 up, else 4 decimals."""
    return f"${amount:,.2f}" if amount >= 1 or amount == 0 else f"${amount:.4f}"


def check_limit(value: float, what: str = "--max-cost") -> float:
    """A budget must be a finite amount of dollars, not negative (0 = no budget)."""
    if math.isnan(value) or math.isinf(value) or value < 0:
        raise ValueError(f"{what}: {value!r} is not a budget; give a finite amount of US dollars, 0 or more")
    return value


def input_bound(messages: Any, schema: Mapping[str, Any] | None) -> int:
    """An upper bound of the input tokens of a request (see the module docstring)."""
    tokens = REQUEST_OVERHEAD_TOKENS
    for m in messages:
        tokens += len(m.content.encode()) + MESSAGE_OVERHEAD_TOKENS
    if schema is not None:
        tokens += len(msgspec.json.encode(schema)) + SCHEMA_OVERHEAD_TOKENS
    return tokens


def output_cap(params: Mapping[str, Any] | None) -> int | None:
    """The output cap `params` set, under any of the protocols' names for it."""
    for key in OUTPUT_CAP_KEYS:
        value = (params or {}).get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def thinking_budget(params: Any) -> int:
    """Every reasoning or thinking budget named in `params`, at any depth, summed."""
    total = 0
    if isinstance(params, Mapping):
        for key, value in params.items():
            if key in THINKING_KEYS and isinstance(value, int) and not isinstance(value, bool):
                total += max(0, value)
            elif key in REASONING_TABLES and isinstance(value, Mapping):
                total += output_cap(value) or 0
                total += thinking_budget(value)
            else:
                total += thinking_budget(value)
    elif isinstance(params, list | tuple):
        total += sum(thinking_budget(v) for v in params)
    return total


def output_bound(params: Mapping[str, Any] | None, default_cap: int | None = None) -> int | None:
    """The most output tokens a call may be billed for: its cap plus any thinking
    budget; None when nothing caps it."""
    cap = output_cap(params) or default_cap
    return None if cap is None else cap + thinking_budget(params)


class Budget:
    """The run's limit in US dollars, what is spent (`spent`, including `uncertain`: the
    worst cases of calls whose cost is unknown) and what calls in flight have reserved.

    `spent` starts at what earlier sessions of the run recorded, so the limit holds for
    the run, not for one session. `reached` says why the budget was reached (None while
    it has not been)."""

    __slots__ = ("_changed", "limit", "reached", "reserved", "spent", "uncertain", "uncertain_calls")

    def __init__(self, limit: float, *, spent: float = 0.0, uncertain: float = 0.0) -> None:
        self.limit = check_limit(limit)
        self.spent = spent
        self.uncertain = uncertain
        self.uncertain_calls = 0
        self.reserved = 0.0
        self.reached: str | None = None
        self._changed: asyncio.Event | None = None

    def __repr__(self) -> str:
        return f"Budget(limit={self.limit}, spent={self.spent:.6f}, reserved={self.reserved:.6f})"

    async def reserve(self, amount: float) -> Reservation:
        """Hold `amount` for one call; waits while calls in flight hold what it needs,
        raises `BudgetReached` when it can never fit (see the module docstring)."""
        while True:
            if self.reached is not None:
                raise BudgetReached(self.reached)
            if self.spent + amount > self.limit:
                self.reached = self.summary(next_call=amount)
                self._notify()  # calls waiting to reserve are refused too
                raise BudgetReached(self.reached)
            if self.spent + self.reserved + amount <= self.limit:
                self.reserved += amount
                return Reservation(self, amount)
            if self._changed is None:
                self._changed = asyncio.Event()
            await self._changed.wait()

    def summary(self, next_call: float | None = None) -> str:
        """What was spent, as the stop reason and the status line say it."""
        text = f"{BudgetReached.PREFIX}{usd(self.spent)} of {usd(self.limit)} spent"
        if self.uncertain_calls or self.uncertain:
            text += f" ({usd(self.uncertain)} of it at the worst case of calls whose cost is unknown)"
        if next_call is not None:
            text += f", the next call could cost up to {usd(next_call)}"
        return text

    def charge(self, cost: float) -> None:
        """Count `cost` as spent though no reservation held it: a batch answer the
        provider bills that no request took (vera.clients.batching)."""
        self._settled(0.0, cost)

    def unknown(self, amount: float) -> None:
        """Count `amount` as spent, at the worst case of calls whose cost is unknown that
        no reservation held: the calls a session killed outright had in flight (sent,
        perhaps billed, in no record; vera.app._killed), as a cut-off call's worst case
        is counted (`Reservation.unknown`)."""
        if amount > 0:
            self.uncertain += amount
            self._settled(0.0, amount)

    def _settled(self, amount: float, cost: float) -> None:
        self.reserved = max(0.0, self.reserved - amount)
        self.spent += cost
        self._notify()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None


class Reservation:
    """One call's worst case, held until the call is settled (exactly once)."""

    __slots__ = ("amount", "budget", "done")

    def __init__(self, budget: Budget, amount: float) -> None:
        self.budget = budget
        self.amount = amount
        self.done = False

    def settle(self, cost: float) -> None:
        """The call cost `cost` (known from its usage)."""
        if not self.done:
            self.done = True
            self.budget._settled(self.amount, cost)

    def release(self) -> None:
        """The call cost nothing (the server refused it, or it was never sent)."""
        self.settle(0.0)

    def unknown(self) -> float:
        """The call's cost is unknown: charged at its worst case, counted as uncertain;
        returns the charge."""
        if self.done:
            return 0.0
        self.budget.uncertain += self.amount
        self.budget.uncertain_calls += 1
        self.settle(self.amount)
        return self.amount
