"""The middleware around a model client, composed in one place.

    recording(replay(cache(limits(provider))))

limits     `LimitedClient`: the account's in-flight cap, buckets and pause, the timeout
           and retries (vera.clients.limits)
cache      `CachedClient`: a reply already paid for is answered from the response cache
           (vera.clients.cache); offline stand-ins are never cached (they are free and
           deterministic)
replay     `ReplayClient`: on a resume, a reply the run already paid for is answered from
           the run's own call bodies (vera.clients.replay); only when there is one to
           replay, and never for the offline stand-ins either
recording  `RecordingClient`: one `CallRecord` per call, handed to `on_call`, or, when
           the run keeps call bodies, one `CallBody` (the record with the exact request
           and response) handed to `on_body`

Every layer is a `ChatClient` taking the same `ChatRequest`, so the order is the order of
the calls in `stack()`. The order matters: a cached reply never reaches the limits (it
costs no request and no tokens of the account's budget) and is still recorded, as
cached; a call the limits retried is recorded once, with its attempts.

How the facts reach the recorder: the layer that answers (the cache on a hit, the limits
otherwise) fills in the `CallMeter` the recorder opened for this call. The meter travels
in a context variable, which asyncio keeps per task, so concurrent calls never share one
and the request stays a plain value with nothing mutable in it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from vera.clients.base import ChatClient, ChatRequest
from vera.clients.batching import BatchingClient, BatchJournal, BatchSettings
from vera.clients.cache import CachedClient, ResponseCache
from vera.clients.flex import FlexClient
from vera.clients.limits import LimitedClient
from vera.clients.meter import METER, QUESTION, TALLY, CallMeter
from vera.clients.replay import ReplayClient, ReplayTable
from vera.clients.structured import merge_params
from vera.records import CallBody, CallRecord, Completion, ModelSpec, Role

OnCall = Callable[[CallRecord], object]
OnBody = Callable[[CallBody], object]


class LimitedClients(Protocol):
    """What `CachingClients` needs of a pool (`ClientPool` is one)."""

    def limited(self, ref: str, role: Role) -> LimitedClient: ...

    def spec(self, ref: str) -> ModelSpec: ...

    def batching(
        self,
        ref: str,
        role: Role,
        journal: BatchJournal,
        settings: BatchSettings,
        on_event: Callable[..., object] | None = None,
    ) -> BatchingClient: ...

    def flex(self, ref: str, role: Role, fallback: str) -> FlexClient: ...

    def rubric_refusal(self, ref: str, rubric_key: str) -> str | None: ...

    def tier_refusal(self, ref: str, tier: str) -> str | None: ...


class RecordingClient:
    """A ChatClient that hands one `CallRecord` per settled call to `on_call`; with
    `on_body`, the call's whole body (its record inside) to `on_body` instead."""

    __slots__ = ("inner", "model", "name", "on_body", "on_call", "role", "spec")

    def __init__(
        self,
        inner: ChatClient,
        on_call: OnCall,
        *,
        role: Role,
        on_body: OnBody | None = None,
        spec: ModelSpec | None = None,
    ) -> None:
        self.inner = inner
        self.on_call = on_call
        self.on_body = on_body
        self.spec = spec  # its profile's parameters are part of what was sent
        self.role = role  # for a request without a context
        self.name = inner.name
        self.model = inner.model

    def __repr__(self) -> str:
        return f"RecordingClient({self.inner!r})"

    async def chat(self, request: ChatRequest) -> Completion:
        started = time.perf_counter()
        meter = CallMeter()
        token = METER.set(meter)  # (not `open_meter`: a generator context manager per call)
        completion: Completion | None = None
        try:
            completion = await self.inner.chat(request)
            return completion
        finally:
            METER.reset(token)
            for attempt in meter.earlier:  # tried at another tier first (vera.clients.flex)
                self._record(request, attempt, started, None)
            if meter.settled:
                self._record(request, meter, started, completion)

    def _record(
        self, request: ChatRequest, meter: CallMeter, started: float, completion: Completion | None
    ) -> None:
        context = request.context
        record = CallRecord(
            job_id=context.job_id if context is not None else "",
            role=context.role if context is not None else self.role,
            provider=meter.provider,
            model=meter.model,
            account=meter.account,
            latency_ms=0.0 if meter.cached else (time.perf_counter() - started) * 1000,
            status="ok" if meter.error is None else "error",
            usage=meter.usage,
            cost_usd=meter.cost_usd,
            at=time.time(),
            standard_cost_usd=meter.standard_cost_usd,
        )
        # The fields most calls leave at their defaults are set only when they are not:
        # msgspec matches a constructor's keywords to the fields one by one, so each
        # keyword costs more than the one before (19 of them ~1 µs, the 11 above ~0.2).
        # The record is the same either way, and encodes to the same line.
        if meter.attempts != 1:
            record.attempts = meter.attempts
        if meter.reasoning_cost_usd:
            record.reasoning_cost_usd = meter.reasoning_cost_usd
        if meter.http_429:
            record.http_429 = meter.http_429
        if meter.error is not None:
            record.error = meter.error
        if meter.cached:
            record.cached = meter.cached
        if meter.uncertain_usd:
            record.uncertain_usd = meter.uncertain_usd
        if meter.unbounded_attempts:
            record.unbounded_attempts = meter.unbounded_attempts
        if meter.tier != "standard":
            record.tier = meter.tier
        if meter.fallback:
            record.fallback = meter.fallback
        tally = TALLY.get()
        if tally is not None:
            if meter.cached:
                tally.replayed += 1
            else:
                tally.sent += 1
        if self.on_body is not None:
            self.on_body(
                CallBody(
                    call=record,
                    conversation_id=context.conversation_id if context is not None else "",
                    question_id=QUESTION.get() if record.role == "judge" else "",
                    messages=request.messages,
                    params=merge_params(self.spec.params if self.spec else {}, request.params),
                    schema=request.schema,
                    reask=request.reask,
                    response=completion,
                    wire=meter.wire,
                )
            )
        else:
            self.on_call(record)


def stack(
    limited: ChatClient,
    spec: ModelSpec,
    *,
    role: Role,
    cache: ResponseCache | None = None,
    on_call: OnCall | None = None,
    on_body: OnBody | None = None,
    replay: ReplayTable | None = None,
) -> ChatClient:
    """The one composition of the middleware: recording(replay(cache(limits(provider))))."""
    client: ChatClient = limited
    if cache is not None and spec.protocol != "offline":
        client = CachedClient(client, cache, spec)
    # Above the cache: a run made before the bodies answered its resume has both, and
    # they hold the same replies; the bodies are asked first (no lookup on a thread).
    if replay is not None and replay.by_job and spec.protocol != "offline":
        client = ReplayClient(client, replay, spec)
    if on_call is not None:
        client = RecordingClient(client, on_call, role=role, on_body=on_body, spec=spec)
    return client


class CachingClients:
    """The pool's clients seen through a response cache, each stack built once per
    (reference, role). `on_call` receives every call's record, cached or not. With
    `batch` (the run's journal and settings), the judge's calls go through the
    provider's batch API: recording(cache(batching)), the batching client falling back
    on the limited one (vera.clients.batching). With `on_body`, every call's body too.
    With `replay` (a resume's table of replies from the run's bodies), what it holds is
    answered from it."""

    def __init__(
        self,
        pool: LimitedClients,
        cache: ResponseCache | None,
        on_call: OnCall | None,
        batch: tuple[BatchJournal, BatchSettings, Callable[..., object] | None] | None = None,
        flex: dict[Role, str] | None = None,
        on_body: OnBody | None = None,
        replay: ReplayTable | None = None,
    ) -> None:
        self.pool, self.cache, self.on_call, self.on_body = pool, cache, on_call, on_body
        self.replay = replay
        self.batch = batch
        self.flex = flex or {}  # role -> its flex fallback, for the roles at the flex tier
        self._clients: dict[tuple[str, Role], ChatClient] = {}

    def spec(self, ref: str) -> ModelSpec:
        return self.pool.spec(ref)

    def rubric_refusal(self, ref: str, rubric_key: str) -> str | None:
        return self.pool.rubric_refusal(ref, rubric_key)

    def tier_refusal(self, ref: str, tier: str) -> str | None:
        return self.pool.tier_refusal(ref, tier)

    def client(self, ref: str, role: Role = "chatbot") -> ChatClient:
        key = (ref, role)
        if key not in self._clients:
            bottom: ChatClient = self.pool.limited(ref, role)
            if self.batch is not None and role == "judge":
                bottom = self.pool.batching(ref, role, *self.batch)
            elif role in self.flex:
                bottom = self.pool.flex(ref, role, self.flex[role])
            self._clients[key] = stack(
                bottom,
                self.pool.spec(ref),
                role=role,
                cache=self.cache,
                on_call=self.on_call,
                on_body=self.on_body,
                replay=self.replay,
            )
        return self._clients[key]
