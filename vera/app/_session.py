"""RunSession: what a run has open, opened in order and closed in reverse.

Every kind of run (`run`, `simulate`, `judge`, a transcript import, `bench`) goes
through one session. It owns the run store, the client pool, the response cache, the
event log, the progress display and the stop signal; the code that runs the work only
asks it for them. They are pushed onto an `AsyncExitStack` as they are opened, so
whatever was opened is closed, last first, whether the work finished, raised or was
cancelled. Closing is shielded: a cancellation (a second Ctrl-C, a caller's timeout)
that arrives while the store is being made durable waits for it, then goes on.

When the work failed, a failure while closing (often the same full disk) is not allowed
to hide the first one.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable, Coroutine
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from vera.app._killed import KilledSpend
from vera.app._progress import RunProgress
from vera.app._signals import StopSignal
from vera.clients import JOURNAL_FILE, BatchJournal, BatchSettings
from vera.clients.budget import Budget, usd
from vera.clients.cache import CACHE_FILE, ResponseCache
from vera.clients.pool import ClientPool
from vera.clients.replay import ReplayTable
from vera.clients.stack import CachingClients
from vera.engine import Shard, Stop, SweepResult
from vera.errors import BudgetReached, ConfigError, UserError
from vera.inputs import ENGLISH, RunConfig, Strings
from vera.records import CallBody, CallRecord, ModelSpec, OpenSession, Role, RunManifest
from vera.standins import StandInFacts, StandIns
from vera.store import EventLog, RunStore, mark_closed, mark_open, recorded_spend, replayable_bodies

T = TypeVar("T")


class RunSession:
    """`async with RunSession(run_dir, ...) as session:` opens the run store (and
    installs the stop signal); `open_pool`, `open_events`, `open_cache` and
    `open_progress` open the rest in the order the caller needs them."""

    def __init__(
        self,
        run_dir: Path,
        *,
        resume: str,
        grace_s: float,
        signals: bool = True,
        call_bodies: bool = False,
    ) -> None:
        self.run_dir = run_dir
        self.call_bodies = call_bodies  # keep each call's request and response (vera.store)
        self.signal = StopSignal(grace_s, resume)
        self._signals = signals
        self._stack = AsyncExitStack()
        self._failing = False
        self.closed: list[str] = []  # what was closed, in order (for the event log of a bug, and tests)
        self.pool: ClientPool | None = None
        self.events: EventLog | None = None
        self.cache: ResponseCache | None = None
        self.replay: ReplayTable | None = None  # a resume's replies from its call bodies
        self.progress: RunProgress | None = None
        self.budget: Budget | None = None
        self._marked = False  # this session said it runs (session.json): removed at its close
        self._kills: KilledSpend | None = None  # killed sessions' calls, as the budget counts them

    @property
    def stop(self) -> Stop:
        return self.signal.stop

    # -- opening -------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        try:
            if self._signals:
                # First in, last out: a signal during cleanup finds the handler, not
                # Python's KeyboardInterrupt, and cleanup runs to its end.
                self._stack.enter_context(self.signal.installed())
            # Pushed before the store: the mark goes only once the store is durable.
            self._stack.callback(self._unmark)
            self.store = RunStore(self.run_dir, call_bodies=self.call_bodies)
            self._stack.push_async_callback(self._closing, "store", self.store.aclose)
            self.store.start()
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def open_pool(
        self,
        profiles: dict[str, Any],
        cfg: RunConfig,
        shard: Shard | None = None,
        stand_ins: StandInFacts | None = None,
        session_tag: str = "",
    ) -> ClientPool:
        if cfg.max_cost_usd:
            # The budget is the run's: what its earlier sessions spent counts.
            spent, uncertain = recorded_spend(self.run_dir)
            self.budget = Budget(cfg.max_cost_usd, spent=spent, uncertain=uncertain)
        pool = ClientPool(
            profiles,
            budget=self.budget,
            on_call=self.record_call,
            retry_base_delay=cfg.retry_base_delay_s,
            retry_max_delay=cfg.retry_max_delay_s,
            shards=shard.count if shard is not None else 1,
            shard_limits=cfg.shard_limits,
            limits_url=cfg.limits_url,
            stand_ins=StandIns(stand_ins),
            session_tag=session_tag,
        )
        self.pool = await self._stack.enter_async_context(pool)
        self._stack.callback(self.closed.append, "pool")  # runs just before the pool closes
        return self.pool

    def open_events(self) -> EventLog:
        self.events = EventLog(self.run_dir)
        self._stack.push_async_callback(self._closing, "events", self._close_events)
        return self.events

    def open_cache(self, cfg: RunConfig) -> ResponseCache | None:
        """What answers the calls already paid for (none with `--no-cache`): a cache shared
        between runs (`--cache-dir`) as it is; in the run directory, the run's own call
        bodies when it keeps them (a resume replays from them, vera.clients.replay), else
        `cache.sqlite`. A run made before the bodies answered its resume keeps its
        `cache.sqlite` too, asked after the bodies (they hold the same replies)."""
        if not cfg.cache:
            return None
        if cfg.cache_dir:
            path = Path(cfg.cache_dir) / CACHE_FILE
        else:
            path = self.run_dir / CACHE_FILE
            # What earlier sessions kept answers what they paid for, whether or not this
            # one keeps bodies (empty for a new run: then no replay layer at all).
            self.replay = ReplayTable.of(replayable_bodies(self.run_dir, self._finished))
            if self.call_bodies and not path.exists():
                return None
        cache = ResponseCache(path)
        self._stack.push_async_callback(self._closing, "cache", cache.aclose)
        cache.start()
        self.cache = cache
        return cache

    def _finished(self, job_id: str) -> bool:
        """Whether a job's record is done: its calls are never asked again."""
        store = self.store
        return store.conversation_done(job_id) or store.done_judgement(job_id)

    def open_progress(self, enabled: bool = True, strings: Strings = ENGLISH) -> RunProgress | None:
        self.signal.strings = strings  # what a stop signal prints, in the same words
        if not enabled:
            return None
        pool = self._need_pool()
        self.progress = RunProgress(
            strings=strings,
            accounts=lambda: [a.snapshot() for a in pool.accounts],
            batches=pool.batch_states,
            connect_errors=lambda: [(a.label, a.connect_error) for a in pool.accounts if a.connect_error],
        )
        self._stack.push_async_callback(self._closing, "progress", self.progress.stop)
        return self.progress

    def on_close(self, name: str, close: Callable[[], Any]) -> None:
        """Close something else the run opened (a function or a coroutine function)
        with the rest, in the same order and under the same shield."""
        self._stack.push_async_callback(self._closing, name, close)

    def mark_open(self, mark: OpenSession) -> None:
        """Say, before the first call, that this session runs (vera.app._killed): a
        session that never removes it was killed outright, and the next one bounds
        the calls it had in flight."""
        mark_open(self.run_dir, mark)
        self._marked = True

    def _unmark(self) -> None:
        if self._marked:
            self._marked = False
            with contextlib.suppress(OSError):  # a failing disk: the first error stands
                mark_closed(self.run_dir)

    # -- what the work uses --------------------------------------------------------------

    def record_call(self, record: CallRecord) -> None:
        """Every call the pool makes: into the store, and into the event log once open."""
        self.store.add_call(record)
        self._count_kills(record)
        if self.events is not None:
            self.events.call(record)

    def record_body(self, body: CallBody) -> None:
        """A call with its body (the run keeps them): the body is kept with the record."""
        self.store.add_call(body.call, body)
        self._count_kills(body.call)
        if self.events is not None:
            self.events.call(body.call)

    def count_kills(self, manifest: RunManifest, uses: list[tuple[ModelSpec, Role]]) -> None:
        """Count the worst case of the calls the run's killed sessions had in flight
        against the budget (vera.app._killed.KilledSpend), before this session's first
        call; nothing without a budget or a killed session."""
        kills = manifest.killed_sessions
        if self.budget is None or not kills:
            return
        self._kills = KilledSpend(kills, self._need_pool(), uses, self.store)
        self.budget.unknown(self._kills.counted)

    def _count_kills(self, record: CallRecord) -> None:
        if self._kills is not None and self.budget is not None and (more := self._kills.seen(record)):
            self.budget.unknown(more)

    def clients(self, cfg: RunConfig | None = None, max_wait_s: float = 0.0) -> CachingClients:
        """The pool's clients for the work; with `[judge] mode = "batch"` in `cfg`, the
        judges' through their batch APIs, journaled in the run directory."""
        batch = None
        if cfg is not None and cfg.judge.mode == "batch":
            settings = BatchSettings(
                poll_s=cfg.judge.batch_poll_s,
                collect_s=cfg.judge.batch_collect_s,
                requeue=cfg.judge.batch_requeue,
                max_wait_s=max_wait_s,
            )
            batch = (BatchJournal(self.run_dir / JOURNAL_FILE), settings, self._batch_event)
        flex: dict[Role, str] = {}
        if cfg is not None:
            if cfg.user_agent.service_tier == "flex":
                flex["user_agent"] = cfg.user_agent.flex_fallback
            if cfg.chatbot.service_tier == "flex":
                flex["chatbot"] = cfg.chatbot.flex_fallback
        return CachingClients(
            self._need_pool(),
            self.cache,
            self.record_call,
            batch,
            flex,
            on_body=self.record_body if self.call_bodies else None,
            replay=self.replay,
        )

    def _batch_event(self, name: str, **fields: object) -> None:
        """A batch created or in a new state: into the event log, once it is open. One
        that carries a `warning` (a failed batch and the provider's reason, answers that
        lacked their keys) is a warning there, and a line on the console."""
        warning = fields.pop("warning", None)
        if warning is not None:
            print(
                f"warning: judge batches ({fields.get('provider', '')}): {warning}",
                file=sys.stderr,
                flush=True,
            )
        if self.events is not None:
            if warning is not None:
                self.events.log.warning(name, message=warning, **fields)
            else:
                self.events.log.info(name, **fields)

    def check_budget(self, uses: list[tuple[ModelSpec, Role]]) -> None:
        """Refuse, before any call, a budget that cannot hold every (model, role) the
        run calls: each priced call needs a worst case (vera.clients.budget)."""
        pool = self._need_pool()
        problems = [p for spec, role in uses if (p := pool.budget_problem(spec.ref, role, spec.params))]
        if problems:
            raise ConfigError("; ".join(dict.fromkeys(problems)))

    def budget_stop(self, result: SweepResult) -> None:
        """Once the budget was reached, the sweep's reason to stop says what was spent and
        how to continue: the same run, with a larger budget (the spend so far counts)."""
        budget = self.budget
        if budget is None or budget.reached is None:
            return
        if result.stopped is not None and not result.stopped.startswith(BudgetReached.PREFIX):
            return  # a signal or a fatal error stopped the run as well: that reason stands
        more = f"{budget.limit * 2:g}"
        result.stopped = (
            f"{budget.summary()}; continue with a larger budget (above {usd(budget.limit)}; "
            f"the spend so far counts): {self.signal.resume} --max-cost {more}"
        )

    async def work(self, coro: Coroutine[Any, Any, T]) -> T | None:
        """Run the work under the stop signal; None when a second signal cancelled it."""
        return await self.signal.run(coro)

    def _need_pool(self) -> ClientPool:
        if self.pool is None:
            raise RuntimeError("open the client pool first")
        return self.pool

    # -- closing -------------------------------------------------------------------------

    def _close_events(self) -> None:
        events, self.events = self.events, None
        if events is not None:
            events.close()

    async def _closing(self, name: str, close: Callable[[], Any]) -> None:
        self.closed.append(name)
        if not self._failing:
            if asyncio.iscoroutine(result := close()):
                await result
            return
        with contextlib.suppress(UserError, OSError):
            if asyncio.iscoroutine(result := close()):
                await result

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        self._failing = exc is not None
        closing = asyncio.ensure_future(self._stack.__aexit__(exc_type, exc, tb))
        interrupted = False
        while not closing.done():
            try:
                await asyncio.shield(closing)
            except asyncio.CancelledError:
                interrupted = True  # finish closing first; the cancellation goes on after
        if interrupted:
            raise asyncio.CancelledError
        return bool(closing.result())
