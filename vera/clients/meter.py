"""What one call cost, passed from the layer that answered it up to the recorder.

The recorder (vera.clients.stack.RecordingClient) opens a `CallMeter` for each call; the
layer that answers it (the response cache on a hit, the limits otherwise) fills it in.
The meter travels in a context variable, which asyncio keeps per task, so concurrent
calls never share one and `ChatRequest` stays a plain value with nothing mutable in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from vera.records import Usage, WireRequest


class CallMeter:
    """What one call cost, filled in by the layer that answered it."""

    __slots__ = (
        "account",
        "attempts",
        "cached",
        "cost_usd",
        "earlier",
        "error",
        "fallback",
        "http_429",
        "model",
        "provider",
        "reasoning_cost_usd",
        "settled",
        "standard_cost_usd",
        "tier",
        "unbounded_attempts",
        "uncertain_usd",
        "usage",
        "wire",
    )

    def __init__(self) -> None:
        self._start()
        # Attempts made before a fallback to another tier, each recorded as a call of
        # its own (`fall_back`).
        self.earlier: list[CallMeter] = []

    def _start(self) -> None:
        self.settled = False  # no layer answered or gave up: nothing to record
        self.provider = ""
        self.model = ""
        self.account = ""
        self.attempts = 0
        self.http_429 = 0
        self.usage = Usage()
        self.cost_usd = 0.0
        self.standard_cost_usd = 0.0  # what the call would have cost at the standard tier
        self.reasoning_cost_usd = 0.0
        self.uncertain_usd = 0.0  # worst cases charged for attempts whose cost is unknown
        self.unbounded_attempts = 0  # attempts of unknown cost with no worst case (no output cap)
        self.cached = False
        self.error: str | None = None
        self.tier = "standard"
        self.fallback = ""  # the tier this call fell back from ("flex", "batch"), or ""
        # The request as the service received it, set by a client that renders its own
        # (vera.clients.http); the last attempt's, when the limits retried.
        self.wire: WireRequest | None = None

    def fall_back(self, tier: str) -> None:
        """The call goes on at another tier: what was settled so far (the refused
        attempt, if one was sent) becomes a call of its own, and the meter starts over
        for the next one, marked as a fallback from `tier`."""
        if self.settled:
            done = CallMeter()
            for name in CallMeter.__slots__:
                if name != "earlier":
                    setattr(done, name, getattr(self, name))
            self.earlier.append(done)
        self._start()
        self.fallback = tier


# The meter of the call in progress in a task (the recorder sets it: vera.clients.stack).
METER: ContextVar[CallMeter | None] = ContextVar("vera_call_meter", default=None)


# What the calls made in a task are for, as their recorder keeps it with their bodies:
# the rubric question a judge is asked (set by the engine around the call, read by the
# recorder; never sent, never part of a request, so no client or cache key sees it).
QUESTION: ContextVar[str] = ContextVar("vera_call_question", default="")


@contextmanager
def asking(question_id: str) -> Iterator[None]:
    """Calls made in this block answer rubric question `question_id`."""
    token = QUESTION.set(question_id)
    try:
        yield
    finally:
        QUESTION.reset(token)


class CallTally:
    """How many calls made in a block were sent (paid, or failed trying) and how many
    were replayed on a resume (free): see `tallying`."""

    __slots__ = ("replayed", "sent")

    def __init__(self) -> None:
        self.sent = 0
        self.replayed = 0


# The tally of the block in progress in a task, if one is open (the recorder adds to it).
TALLY: ContextVar[CallTally | None] = ContextVar("vera_call_tally", default=None)


@contextmanager
def tallying() -> Iterator[CallTally]:
    """Count the calls recorded in this block, sent and replayed (vera.clients.stack):
    what a caller above the clients needs to tell a paid call from a cached answer,
    as `Completion` does not say."""
    tally = CallTally()
    token = TALLY.set(tally)
    try:
        yield tally
    finally:
        TALLY.reset(token)


def current_meter() -> CallMeter | None:
    """The meter of the call in progress in this task, if a recorder opened one."""
    return METER.get()


@contextmanager
def open_meter() -> Iterator[CallMeter]:
    """A fresh meter for one call, current until the block ends."""
    meter = CallMeter()
    token = METER.set(meter)
    try:
        yield meter
    finally:
        METER.reset(token)
