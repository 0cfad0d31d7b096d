"""A `ChatClient` that answers through a provider's batch API, wave after wave.

The rubric walk asks one question at a time and waits for its answer, so the judging
code needs no change to run in batches: every walk in flight calls `chat` as it would
live, and this client gathers the calls that arrive together into a *wave*. When no new
call has come for `collect_s`, the wave is submitted as one batch (or several, to keep
the provider's limits per file), polled every `poll_s` until it ends, and each caller
gets its own reply by `custom_id`; the walks then ask their next questions, which make
the next wave. The requests are the live client's own bodies, so the answers (and the
ratings) are those of live mode; only the price and the waiting differ.

Durable: a batch's id and the custom_ids it holds are appended to the run's batch
journal (`batches.jsonl`, fsync'd) as soon as the provider has created it. A
`custom_id` is a hash of the request body, so a resumed run asks the same ids again:
each one found in the journal is answered by polling that batch (which may be long
done; its result files are still there), and is never submitted again.

A request the batch did not answer (expired, cancelled, or an error line) goes into the
next wave, up to `requeue` times, then live through the account's limited client; each
is counted (`BatchStats`). None of it is a judgement about the chatbot. A request the
provider refused as it is (a batch that failed validation, a 4xx inside the batch) is
not sent again: it raises a `RequestError` with the provider's reason, as the same
request refused live would. A failed batch's reason goes to the event log and the
console (`on_event("batch_failed", ...)`).

Every answer that arrived is accounted for, since the provider bills it: one no waiting
request can take (its key missing and not matchable by position, its caller gone, or a
reply the parser rejects) is recorded as a call of its own (`on_call`), at the batch
price, with the reason it was not used.

Accounting: each batched reply settles on the meter like a live call, at the batch
tier's prices (the profile's scaled as its provider bills batches: vera.clients.pool.
tier_prices), with `tier = "batch"` and what the call would have cost live beside it,
and on the account's counters (so `--max-cost` sees it).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import msgspec

from vera.clients.base import ChatRequest
from vera.clients.batch_openai import (
    ENDED,
    MAX_BYTES,
    MAX_REQUESTS,
    BatchResults,
    BatchState,
    ItemResult,
)
from vera.clients.limits import Account, LimitedClient, Prices
from vera.clients.meter import current_meter
from vera.errors import FatalProviderError, ProviderError, RequestError, TransientError, WaitLimitReached
from vera.files import records
from vera.records import CallRecord, Completion, Usage

JOURNAL_FILE = "batches.jsonl"
# The protocols whose batch API vera speaks (vera.clients.batch_openai, batch_anthropic,
# batch_gemini).
BATCH_PROTOCOLS = frozenset({"openai", "azure_openai", "anthropic", "gemini"})
# Polls that fail in a row (the provider unreachable) before a batch's requests are
# given up on and go to the next wave.
MAX_POLL_FAILURES = 20


class BatchAPI(Protocol):
    """What the wave runner needs of a provider's batch API (`OpenAIBatchAPI`)."""

    name: str

    def line(self, custom_id: str, request: ChatRequest) -> bytes: ...

    def body_key(self, request: ChatRequest) -> bytes: ...

    def parse(self, body: bytes, request: ChatRequest) -> Completion: ...

    def usage(self, body: bytes) -> Usage: ...

    async def submit(self, lines: list[bytes]) -> str: ...

    async def state(self, batch_id: str) -> BatchState: ...

    async def results(self, state: BatchState, order: list[str]) -> BatchResults: ...


class BatchSettings(msgspec.Struct, frozen=True, kw_only=True):
    poll_s: float = 30.0
    collect_s: float = 0.5
    requeue: int = 2
    max_requests: int = MAX_REQUESTS
    max_bytes: int = MAX_BYTES
    max_wait_s: float = 0.0  # --max-wait: how long the run may wait on batches (0: no bound)


class JournalEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One line of the batch journal: a batch created (with its custom_ids) or ended."""

    event: str  # "created" | "ended"
    provider: str
    batch_id: str
    custom_ids: list[str] = []
    status: str = ""
    at: float = 0.0


class BatchJournal:
    """The run's append-only record of batches (`batches.jsonl`): each line written and
    fsync'd before the request that created it is considered submitted. A torn last
    line (a kill mid-write) is ignored on reading."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._encoder = msgspec.json.Encoder()

    def entries(self) -> list[JournalEntry]:
        # One reader for every record file: a torn last line is skipped, any other line
        # that does not decode is named (a batch lost from the journal would be paid twice).
        return list(records(self.path, JournalEntry))

    def append(self, entry: JournalEntry) -> None:
        with self.path.open("ab") as f:
            f.write(self._encoder.encode(entry) + b"\n")
            f.flush()
            os.fsync(f.fileno())


@dataclass
class BatchStats:
    """What the batch runner did, for the card and the event log."""

    batches: int = 0  # batches created by this process
    submitted: int = 0  # requests in them
    resumed: int = 0  # requests answered from a batch an earlier process created
    requeued: int = 0  # requests a batch did not answer, asked again in a later wave
    live: int = 0  # requests that went live after `requeue` waves without an answer
    failed: int = 0  # batches that ended failed (their reason in a batch_failed event)
    refused: int = 0  # requests the provider refused as they are: not sent again
    unused: int = 0  # answers that arrived and were billed, but no request could take
    by_position: int = 0  # answers without their key, matched by their position


def duration(seconds: float) -> str:
    """A wait as people say it: "45s", "90m", "2h", "1h30m" (under a minute, to a tenth
    of a second: "0.3s")."""
    if seconds < 60 and seconds != round(seconds):
        return f"{seconds:.1f}s"
    total = round(seconds)
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    parts = [f"{h}h" if h else "", f"{m}m" if m else "", f"{s}s" if s or not total else ""]
    return "".join(parts)


class WaitClock:
    """The run's time spent waiting on batches (`--max-wait`), shared by every batching
    client of the run: it runs while at least one batch is pending, so the bound is on
    the waiting, not on the conversations simulated meanwhile."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self._pending = 0
        self._since = 0.0
        self._waited = 0.0

    def begin(self) -> None:
        if self._pending == 0:
            self._since = time.monotonic()
        self._pending += 1

    def end(self) -> None:
        self._pending -= 1
        if self._pending == 0:
            self._waited += time.monotonic() - self._since

    def waited_s(self) -> float:
        return self._waited + (time.monotonic() - self._since if self._pending else 0.0)

    def reached(self) -> WaitLimitReached | None:
        """The error to stop with once the run has waited its bound; else None."""
        if self.limit_s <= 0 or (waited := self.waited_s()) < self.limit_s:
            return None
        return WaitLimitReached(
            f"{WaitLimitReached.PREFIX}{duration(waited)} of --max-wait {duration(self.limit_s)}; "
            f"the pending batches stay in {JOURNAL_FILE}, a resume polls them"
        )


class BatchView(msgspec.Struct, kw_only=True):
    """A batch this process is following, for the live progress display: the status
    its last poll found ("submitted" until the first poll) and how many requests of
    this run it holds."""

    status: str
    requests: int


def batch_summary(pending: list[BatchView], ended: dict[str, int]) -> str:
    """One line of batch states for the progress display, e.g. "batches: 2 in progress
    (340 requests), 1 finalizing, 5 completed" (pending states first, in the order a
    batch goes through them); "" when there were no batches."""
    order = ("submitted", "pending", "validating", "in_progress", "running", "finalizing", "cancelling")
    counts: dict[str, list[int]] = {}
    for view in pending:
        counts.setdefault(view.status, [0, 0])
        counts[view.status][0] += 1
        counts[view.status][1] += view.requests
    parts = []
    for status in sorted(counts, key=lambda s: (order.index(s) if s in order else len(order), s)):
        n, requests = counts[status]
        parts.append(f"{n} {status.replace('_', ' ')} ({requests} requests)")
    parts.extend(f"{n} {status.replace('_', ' ')}" for status, n in sorted(ended.items()) if n)
    return "batches: " + ", ".join(parts) if parts else ""


class _Item:
    __slots__ = ("future", "line", "request")

    def __init__(self, line: bytes, request: ChatRequest) -> None:
        self.line = line
        self.request = request  # whose job an answer belongs to, if it cannot be delivered
        self.future: asyncio.Future[ItemResult] = asyncio.get_running_loop().create_future()


def split_files(
    lines: dict[str, _Item] | dict[str, bytes], max_requests: int, max_bytes: int
) -> list[list[str]]:
    """The custom_ids of a wave cut into files within a provider's per-file limits
    (requests, and bytes of JSONL); a line larger than a file on its own gets one."""
    files: list[list[str]] = [[]]
    size = 0
    for cid, value in lines.items():
        n = len(value.line if isinstance(value, _Item) else value) + 1
        if files[-1] and (len(files[-1]) >= max_requests or size + n > max_bytes):
            files.append([])
            size = 0
        files[-1].append(cid)
        size += n
    return [f for f in files if f]


class BatchingClient:
    """A `ChatClient` for one model and role that batches its calls (module docstring).
    `live` is the same model's limited client: the fallback, and the account whose
    counters the batched calls settle on."""

    def __init__(
        self,
        api: BatchAPI,
        live: LimitedClient,
        journal: BatchJournal,
        settings: BatchSettings,
        *,
        prices: Prices,
        standard_prices: Prices,
        on_event: Callable[..., object] | None = None,
        wait: WaitClock | None = None,
        on_call: Callable[[CallRecord], object] | None = None,
    ) -> None:
        self.api = api
        # Told of each billed answer no request took (the recorder's `on_call`).
        self.on_call = on_call
        self.wait = wait or WaitClock(settings.max_wait_s)
        self.live = live
        self.journal = journal
        self.settings = settings
        self.prices = prices  # the batch tier's
        self.standard_prices = standard_prices  # the same model's live prices
        self.name = live.name
        self.model = live.model
        self.stats = BatchStats()
        # Told of each batch created and each status a poll finds new (the event log).
        self.on_event = on_event
        self._waiting: dict[str, _Item] = {}  # the wave being gathered, by custom_id
        self._in_batch: dict[str, _Item] = {}  # submitted or resumed, not yet answered
        self._flusher: asyncio.Task[None] | None = None
        self._last_arrival = 0.0
        self._tasks: set[asyncio.Task[None]] = set()
        # custom_id -> batch id, for every request an earlier process submitted
        self._journaled: dict[str, str] = {}
        # batch id -> its custom_ids in the order submitted (results may be matched by it)
        self._order: dict[str, list[str]] = {}
        for entry in journal.entries():
            if entry.event == "created" and entry.provider == api.name:
                self._order[entry.batch_id] = entry.custom_ids
                for cid in entry.custom_ids:
                    self._journaled[cid] = entry.batch_id
        self._pollers: dict[str, asyncio.Task[None]] = {}
        self._members: dict[str, set[str]] = {}  # batch id -> custom_ids waiting on it
        # The progress display's view: batches being followed, and how those followed
        # to the end ended (by status), counted once per batch this process polled.
        self.pending: dict[str, BatchView] = {}
        self.ended: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"BatchingClient({self.api!r})"

    @property
    def account(self) -> Account:
        return self.live.account

    async def chat(self, request: ChatRequest) -> Completion:
        cid = "vera-" + hashlib.sha256(self.api.body_key(request)).hexdigest()[:40]
        started = time.perf_counter()
        # The run's budget holds the request's worst case at the batch price before it
        # joins a wave (vera.clients.budget): a batch never submits what the budget
        # cannot pay. BudgetReached goes up as from a live call.
        budget = self.live.budget
        worst = self.live.worst_case(request, self.prices) if budget is not None else 0.0
        hold = await budget.reserve(worst) if budget is not None and worst > 0 else None
        try:
            for wave in range(self.settings.requeue + 1):
                result = await self._ask(cid, request)
                if result.body is not None:
                    try:
                        completion = self.api.parse(result.body, request)
                    except TransientError as exc:  # a malformed reply: billed, and asked again like live
                        self._unused(result.body, request, f"the reply could not be read: {exc}")
                        result = ItemResult(error=str(exc))
                    else:
                        cost = self._settle(completion, started)
                        if hold is not None:
                            hold.settle(cost)
                        return completion
                if result.final:
                    self.stats.refused += 1
                    raise RequestError(self.live.provider, result.error, status=400)
                if wave < self.settings.requeue:
                    self.stats.requeued += 1
        except RequestError:
            if hold is not None:
                hold.release()  # refused as it is: nothing was generated, nothing billed
            raise
        except BaseException:
            if hold is not None:
                hold.unknown()  # in a batch that may still be billed: its worst case counts
            raise
        if hold is not None:
            hold.release()  # no batch answered it, so none bills it; live reserves its own
        self.stats.live += 1
        meter = current_meter()
        if meter is not None:
            meter.fall_back("batch")  # recorded as a live call standing in for a batched one
        return await self.live.chat(request)

    async def _ask(self, cid: str, request: ChatRequest) -> ItemResult:
        """This request's result from the batch that holds it: one an earlier process
        created (the journal), one in flight, or the next wave."""
        item = self._in_batch.get(cid) or self._waiting.get(cid)
        if item is None and (reached := self.wait.reached()) is not None:
            raise reached  # the run is stopping: nothing new joins a batch
        if item is None:
            item = _Item(self.api.line(cid, request), request)
            batch_id = self._journaled.pop(cid, None)
            if batch_id is not None:
                self.stats.resumed += 1
                self._in_batch[cid] = item
                self._poll(batch_id, [cid])
            else:
                self._waiting[cid] = item
                self._last_arrival = time.monotonic()
                if self._flusher is None or self._flusher.done():
                    self._flusher = self._spawn(self._flush())
        # Shielded: a cancelled caller (one walk stopping) leaves the others' item alone.
        return await asyncio.shield(item.future)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _flush(self) -> None:
        """Wait until the wave has stopped growing for `collect_s`, then submit it."""
        while (quiet := time.monotonic() - self._last_arrival) < self.settings.collect_s:
            await asyncio.sleep(self.settings.collect_s - quiet)
        wave, self._waiting = self._waiting, {}
        self._flusher = None  # what arrives from now on is the next wave
        if (reached := self.wait.reached()) is not None:
            for item in wave.values():  # not submitted: the run is stopping
                item.future.set_exception(reached)
            return
        for chunk in split_files(wave, self.settings.max_requests, self.settings.max_bytes):
            await self._submit({cid: wave[cid] for cid in chunk})

    async def _submit(self, chunk: dict[str, _Item]) -> None:
        try:
            batch_id = await self.api.submit([item.line for item in chunk.values()])
        except TransientError as exc:
            for item in chunk.values():  # not submitted: each goes to the next wave
                item.future.set_result(ItemResult(error=f"not submitted: {exc}"))
            return
        except Exception as exc:  # a refused key or request (or a bug): the callers raise it
            for item in chunk.values():
                item.future.set_exception(exc)
            return
        # Durable before anything else: a kill from here on resumes by polling it.
        self.journal.append(
            JournalEntry(
                event="created",
                provider=self.api.name,
                batch_id=batch_id,
                custom_ids=list(chunk),
                at=time.time(),
            )
        )
        self.stats.batches += 1
        self.stats.submitted += len(chunk)
        self._order[batch_id] = list(chunk)
        self._event("batch_created", batch_id=batch_id, requests=len(chunk))
        self._in_batch.update(chunk)
        self._poll(batch_id, list(chunk))

    def _poll(self, batch_id: str, cids: list[str]) -> None:
        """Poll `batch_id` (one poller per batch) until it ends, then answer `cids` and
        every other item that joined it meanwhile."""
        self._members.setdefault(batch_id, set()).update(cids)
        if batch_id not in self._pollers:
            self.pending[batch_id] = BatchView(status="submitted", requests=0)
            self.wait.begin()
            self._pollers[batch_id] = self._spawn(self._watch(batch_id))
        if (view := self.pending.get(batch_id)) is not None:
            view.requests = len(self._members[batch_id])

    async def _watch(self, batch_id: str) -> None:
        try:
            await self._follow(batch_id)
        except Exception as exc:  # --max-wait, or a bug: the walks must not wait forever
            # Not journaled as ended: a resume polls this batch again.
            self._pollers.pop(batch_id, None)
            self.pending.pop(batch_id, None)
            for cid in self._members.pop(batch_id, set()):
                item = self._in_batch.pop(cid, None)
                if item is not None and not item.future.done():
                    item.future.set_exception(exc)
        finally:
            self.wait.end()

    async def _follow(self, batch_id: str) -> None:
        failures = 0
        state: BatchState | None = None
        results = BatchResults()
        seen = ""
        while True:
            try:
                state = await self.api.state(batch_id)
                if state.status != seen:
                    seen = state.status
                    if (view := self.pending.get(batch_id)) is not None:
                        view.status = seen
                    self._event("batch_state", batch_id=batch_id, status=seen)
                if state.status in ENDED:
                    results = await self.api.results(state, self._order.get(batch_id, []))
                    break
                failures = 0
                if (reached := self.wait.reached()) is not None:
                    raise reached
            except FatalProviderError:
                raise
            except ProviderError:
                failures += 1
                if failures >= MAX_POLL_FAILURES:
                    break
            await asyncio.sleep(self.settings.poll_s)
        status = state.status if state is not None else "unreachable"
        self.pending.pop(batch_id, None)
        self.ended[status] = self.ended.get(status, 0) + 1
        self.journal.append(
            JournalEntry(event="ended", provider=self.api.name, batch_id=batch_id, status=status)
        )
        if status == "failed":
            self.stats.failed += 1
            reason = state.reason if state is not None and state.reason else "the provider gave no reason"
            self._event(
                "batch_failed",
                batch_id=batch_id,
                reason=reason,
                resent=not (state is not None and state.final),
                warning=f"batch {batch_id} failed: {reason}",
            )
        for warning in results.warnings:
            self._event("batch_warning", batch_id=batch_id, warning=warning)
        self._answer(batch_id, results, f"batch {batch_id} {status} without this request")

    def _answer(self, batch_id: str, results: BatchResults, missing: str) -> None:
        """Answer every item this batch holds (a resumed item joins its batch's members
        before the poller can end, so none is missed). An answer that reaches no waiting
        item was billed all the same: it is recorded (`_unused`)."""
        self._pollers.pop(batch_id, None)
        delivered: set[str] = set()
        for cid in self._members.pop(batch_id, set()):
            item = self._in_batch.pop(cid, None)
            if item is not None and not item.future.done():
                item.future.set_result(results.items.get(cid) or ItemResult(error=missing))
                delivered.add(cid)
            elif (result := results.items.get(cid)) is not None and result.body is not None:
                request = item.request if item is not None else None
                self._unused(result.body, request, "its request was no longer waiting for it")
                delivered.add(cid)
        for cid, result in results.items.items():
            if cid not in delivered and result.body is not None:
                self._unused(result.body, None, f"no request of this run has the key {cid}")
        for body in results.unmatched:
            self._unused(body, None, "it came back without its key and could not be matched by position")
        self.stats.by_position += results.by_position

    def _unused(self, body: bytes, request: ChatRequest | None, why: str) -> None:
        """Account for an answer the provider bills but no request takes: on the account,
        the budget and the call log (a call of the judge's, at the batch price)."""
        self.stats.unused += 1
        try:
            usage = self.api.usage(body)
        except ProviderError:
            usage = Usage()
        cost = self.prices.cost(usage)
        account = self.live.account
        account.calls += 1
        account.errors += 1
        account.input_tokens += usage.input_tokens
        account.output_tokens += usage.output_tokens
        account.cached_input_tokens += usage.cached_input_tokens
        account.cost_usd += cost
        if self.live.budget is not None:
            self.live.budget.charge(cost)
        if self.on_call is None:
            return
        context = request.context if request is not None else None
        self.on_call(
            CallRecord(
                job_id=context.job_id if context is not None else "",
                role=context.role if context is not None else "judge",
                provider=self.live.provider,
                model=self.model,
                account=account.label,
                latency_ms=0.0,
                status="error",
                usage=usage,
                cost_usd=cost,
                standard_cost_usd=self.standard_prices.cost(usage),
                reasoning_cost_usd=self.prices.reasoning_cost(usage),
                error=f"batch answer not used: {why}",
                at=time.time(),
                tier="batch",
            )
        )

    def _event(self, name: str, **fields: object) -> None:
        if self.on_event is not None:
            self.on_event(name, provider=self.api.name, **fields)

    def _settle(self, completion: Completion, started: float) -> float:
        """Count an answered request on the account and the recorder's meter; its cost."""
        usage = completion.usage
        cost = self.prices.cost(usage)
        account = self.live.account
        account.calls += 1
        account.input_tokens += usage.input_tokens
        account.output_tokens += usage.output_tokens
        account.cached_input_tokens += usage.cached_input_tokens
        account.cost_usd += cost
        meter = current_meter()
        if meter is None:
            return cost
        meter.settled = True
        meter.provider = self.live.provider
        meter.model = self.model
        meter.account = account.label
        meter.attempts = 1
        meter.usage = usage
        meter.cost_usd = cost
        meter.standard_cost_usd = self.standard_prices.cost(usage)  # the same call asked live
        meter.reasoning_cost_usd = self.prices.reasoning_cost(usage)
        meter.tier = "batch"
        return cost

    async def aclose(self) -> None:
        """Stop polling (the run is ending); the journal keeps what is pending."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
