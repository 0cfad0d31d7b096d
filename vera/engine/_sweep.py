"""Run a sweep on one event loop: simulate, judge as soon as each conversation ends,
and stream every result into the run directory.

`max_concurrency` workers pull conversation jobs from one deterministic queue; each
worker simulates its conversation, persists it, then judges it with every (judge,
instance) concurrently and persists each judgement. Provider limits (requests, tokens,
calls in flight per account) are enforced underneath by the client pool, so the worker
count only bounds memory and fairness, not the request rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from vera.engine._failures import failed_conversation, failed_judgement
from vera.engine._judge import judge_conversation
from vera.engine._plan import Clients, JudgeSlot, Sweep, arcs, call_params, derive_seed
from vera.engine._simulate import (
    ConversationJob,
    Memory,
    SimulationSettings,
    render_user_prompts,
    simulate_conversation,
)
from vera.engine._tasks import first_exception, run_together
from vera.engine._user_check import check_user
from vera.errors import BudgetReached, DataError, FatalProviderError, LimitsLost, WaitLimitReached
from vera.records import (
    Conversation,
    Judgement,
    Usage,
    UserCheck,
)
from vera.rubric import AskAhead, TerminalSemantics
from vera.store import ConversationHead, JudgementHead, RunStore


class Progress(Protocol):
    """Told of every finished job. Work reused from an earlier run is reported by its
    head (what the run's index knows of it), so a resume reads no record to report it."""

    def start(self, total_conversations: int, total_judgements: int) -> None: ...

    def conversation(self, conv: Conversation | ConversationHead, *, cached: bool) -> None: ...

    def judgement(self, judgement: Judgement | JudgementHead, *, cached: bool) -> None: ...

    def stop(self) -> None: ...


class NullProgress:
    def start(self, total_conversations: int, total_judgements: int) -> None:
        pass

    def conversation(self, conv: Conversation | ConversationHead, *, cached: bool) -> None:
        pass

    def judgement(self, judgement: Judgement | JudgementHead, *, cached: bool) -> None:
        pass

    def stop(self) -> None:
        pass


@dataclass
class SweepResult:
    conversations: int = 0
    conversations_failed: int = 0
    conversations_reused: int = 0
    judgements: int = 0
    judgements_failed: int = 0
    judgements_reused: int = 0
    unused_questions: int = 0  # judge questions asked ahead and not reached (paid)
    wall_s: float = 0.0
    stopped: str | None = None  # why the sweep stopped early, if it did


@dataclass
class Stop:
    """A request to stop launching work (a signal, a deadline), owned by whoever runs
    the sweep. Work already in flight then has `grace_s` to finish before it is
    cancelled; the sweep still returns what it did."""

    grace_s: float = 0.0
    reason: str | None = None
    event: asyncio.Event = field(default_factory=asyncio.Event)

    def request(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            self.event.set()


class Judging:
    """Judges complete conversations with every (judge, instance) slot, skipping
    judgements already in the store, and persists each one as it finishes.

    `tail` is set once the sweep has no job left to start: from then on the slots that
    finished jobs leave stay empty, and what the sweep waits for is the longest rubric
    chains still being walked, so (with `[judge] ask_ahead = "tail"`) they ask their
    likely next question early (vera.rubric._concurrent)."""

    def __init__(
        self,
        sweep: Sweep,
        store: RunStore,
        clients: Clients,
        result: SweepResult,
        progress: Progress,
    ) -> None:
        self.sweep, self.store, self.clients = sweep, store, clients
        self.result, self.progress = result, progress
        self.tail = False
        self.gates = walk_gates(sweep)

    def reached_tail(self) -> None:
        self.tail = True

    def _in_tail(self) -> bool:
        return self.tail

    def all_done(self, conv_id: str) -> bool:
        """Whether every judgement of a conversation is already in the store."""
        return all(self.store.done_judgement(self.sweep.judgement_id(conv_id, s)) for s in self.sweep.slots)

    async def conversation(self, conv: Conversation) -> None:
        if conv.status == "complete":
            # One failing slot cancels and awaits its siblings (see vera.engine._tasks).
            await run_together(self._one(conv, s) for s in self.sweep.slots)

    def reused(self, conv_id: str) -> None:
        """Count the judgements of a conversation that were all done before (see `all_done`)."""
        for slot in self.sweep.slots:
            self._reused(self.sweep.judgement_id(conv_id, slot), conv_id, slot)

    def _reused(self, jid: str, conv_id: str, slot: JudgeSlot) -> None:
        self.result.judgements_reused += 1
        head = JudgementHead(
            id=jid, conversation_id=conv_id, judge=slot.ref, instance=slot.instance, status="complete"
        )
        self.progress.judgement(head, cached=True)

    async def _one(self, conv: Conversation, slot: JudgeSlot) -> None:
        jid = self.sweep.judgement_id(conv.id, slot)
        if self.store.done_judgement(jid):
            self._reused(jid, conv.id, slot)
            return
        async with self.gates.get(slot.ref) or contextlib.nullcontext():
            await self._walk(conv, slot, jid)

    async def _walk(self, conv: Conversation, slot: JudgeSlot, jid: str) -> None:
        inputs = self.sweep.inputs
        ahead = AskAhead(self._in_tail) if inputs.config.judge.asks_ahead() else None
        try:
            j = await judge_conversation(
                conv,
                inputs.rubric,
                inputs.judge_prompts,
                self.clients.client(slot.ref, "judge"),
                judge_ref=slot.ref,
                instance=slot.instance,
                job_id=jid,
                params=call_params(self.sweep.judge_specs[slot.ref], derive_seed(jid)),
                max_attempts=inputs.config.judge.max_attempts,
                ahead=ahead,
                # RunConfig.check admits only the two values
                terminal=cast(TerminalSemantics, inputs.config.judge.terminal_semantics),
            )
        except (BudgetReached, WaitLimitReached, LimitsLost) as exc:
            # Not failed, not the chatbot's: left undone, for a resume (with a larger
            # budget, polling the batches it waited on, or once Redis is back).
            self.result.stopped = str(exc)
            return
        except FatalProviderError as exc:
            j = failed_judgement(jid, conv.id, slot, exc)
            self.result.stopped = str(exc)
        else:
            if inputs.config.judge.check_users and slot == self.sweep.slots[0]:
                try:
                    j.user_check = await self._check_user(conv, slot, jid, j.usage)
                except (BudgetReached, WaitLimitReached, LimitsLost) as exc:
                    self.result.stopped = str(exc)
                    return
        self.store.add_judgement(j)
        self.result.judgements += 1
        self.result.unused_questions += j.unused_questions
        self.result.judgements_failed += j.status == "failed"
        self.progress.judgement(j, cached=False)

    async def _check_user(self, conv: Conversation, slot: JudgeSlot, jid: str, usage: Usage) -> UserCheck:
        """The simulated-user check of `conv` by the slot's judge (docs/realism.md)."""
        try:
            fields = self.sweep.inputs.personas.by_name(conv.persona).fields
        except DataError:  # an imported transcript's persona the run does not have
            fields = {}
        return await check_user(
            conv,
            fields,
            self.clients.client(slot.ref, "judge"),
            checker=slot.ref,
            job_id=jid,
            params=call_params(self.sweep.judge_specs[slot.ref], derive_seed(f"{jid}/user-check")),
            max_attempts=self.sweep.inputs.config.judge.max_attempts,
            usage=usage,
        )


def walk_gates(sweep: Sweep) -> dict[str, asyncio.Semaphore]:
    """The reference's judge `--max-concurrent N [--per-judge]` (`[judge] max_concurrent`,
    `per_judge`): a semaphore of N rubric walks per judge model, shared by every judge
    unless `per_judge`; none when the config sets no cap."""
    judge = sweep.inputs.config.judge
    cap = judge.max_concurrent
    if not isinstance(cap, int):
        return {}
    refs = sorted({slot.ref for slot in sweep.slots})
    if judge.per_judge is True:
        return {ref: asyncio.Semaphore(cap) for ref in refs}
    shared = asyncio.Semaphore(cap)
    return dict.fromkeys(refs, shared)


async def _workers(
    n: int,
    items: list[Any],
    work: Callable[[Any], Any],
    result: SweepResult,
    stop: Stop,
    on_last: Callable[[], None] | None = None,
) -> None:
    """`n` workers draining `items` in order. New work stops when `stop` is requested
    (work in flight then gets its grace period), once the run's budget is reached, or
    after a fatal provider error (bad key, bad request) instead of failing every
    remaining job the same way. `result.stopped` is this sweep's own record of why.
    `on_last` is called when the last item has been taken."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)

    async def worker() -> None:
        while result.stopped is None:
            if stop.reason is not None:
                result.stopped = stop.reason
                return
            try:
                item = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            if on_last is not None and queue.empty():
                on_last()
            await work(item)

    async def grace(running: asyncio.Task[None]) -> None:
        await stop.event.wait()
        await asyncio.wait({running}, timeout=stop.grace_s)
        if not running.done():
            result.stopped = f"{stop.reason}; calls still in flight after {stop.grace_s:.0f} s were cancelled"
            running.cancel()  # a cancelled child is not a failure of the group

    try:
        async with asyncio.TaskGroup() as group:
            running = group.create_task(run_together(worker() for _ in range(min(n, max(1, len(items))))))
            watcher = group.create_task(grace(running))
            running.add_done_callback(lambda _: watcher.cancel())
    except BaseExceptionGroup as failed:
        raise first_exception(failed) from None


async def run_sweep(
    sweep: Sweep,
    store: RunStore,
    clients: Clients,
    *,
    max_concurrency: int,
    progress: Progress | None = None,
    stop: Stop | None = None,
    result: SweepResult | None = None,
) -> SweepResult:
    """Run every job not already complete in `store` and return what happened (counted
    into `result` as it happens, when given: the caller still has the counts if the
    sweep is cancelled). Scoring is not done here: it reads the run's files once the
    sweep is over."""
    inputs = sweep.inputs
    settings = inputs.settings()
    progress = progress or NullProgress()
    result = result if result is not None else SweepResult()
    judging = Judging(sweep, store, clients, result, progress)
    # Whether conversations are judged as they end (a sweep of `vera simulate` or `vera
    # bench` has no judge): without, an ended conversation starts no judging task.
    judges = bool(sweep.slots)
    # By role: one model may be both the chatbot and the user-agent, with each role's parameters.
    bots = {s.ref: s for s in sweep.chatbots}
    agents = {s.ref: s for s in sweep.user_agents}
    # One rendering per persona, shared by all its conversations (thousands in flight
    # would otherwise each hold their own copy of the same prompt).
    rendered: dict[str, tuple[str, str]] = {}
    started = time.perf_counter()
    progress.start(len(sweep.jobs), len(sweep.jobs) * len(sweep.slots))

    halt = stop or Stop()
    plan = sweep.session_plan
    memory_user = plan is not None and plan.user_memory
    memory_bot = plan is not None and plan.chatbot_memory == "history"

    def settings_of(job: ConversationJob) -> SimulationSettings:
        return inputs.settings(job.session.type) if job.session is not None else settings

    def rendered_for(job: ConversationJob) -> tuple[str, str]:
        key = f"{job.persona.name}\x1f{job.session.type if job.session else ''}"
        return rendered.get(key) or rendered.setdefault(
            key, render_user_prompts(job.persona, inputs.user_prompts, settings_of(job))
        )

    async def simulate(job: ConversationJob, earlier: list[Conversation]) -> Conversation | None:
        memory = None
        if earlier:
            # A custom HTTP chatbot keeps its own memory of the arc (its template's
            # {{conversation_id}}); a model chatbot is sent the earlier sessions.
            bot_history = memory_bot and bots[job.chatbot].protocol != "http"
            memory = Memory(earlier=tuple(earlier), user=memory_user, chatbot=bot_history)
        try:
            conv = await simulate_conversation(
                job,
                chatbot=clients.client(job.chatbot, "chatbot"),
                user_agent=clients.client(job.user_agent, "user_agent"),
                prompts=inputs.user_prompts,
                settings=settings_of(job),
                chatbot_params=call_params(bots[job.chatbot], job.seed),
                user_params=call_params(agents[job.user_agent], job.seed),
                rendered=rendered_for(job),
                memory=memory,
            )
        except (BudgetReached, LimitsLost) as exc:
            # The calls made so far are paid (and cached); the session is left undone,
            # never failed: a resume (with a larger budget, or once the shared limits'
            # Redis is back) runs it and the rest of its arc.
            result.stopped = str(exc)
            return None
        except FatalProviderError as exc:
            conv = failed_conversation(job, exc)
            result.stopped = str(exc)
        store.add_conversation(conv)
        result.conversations += 1
        result.conversations_failed += conv.status == "failed"
        progress.conversation(conv, cached=False)
        return conv

    async def arc(jobs: list[ConversationJob]) -> None:
        """An arc's sessions one after another (a single conversation is an arc of
        one), each judged as soon as it ends while the next one runs. Sessions already
        in the store are reused, read back only when a later session needs them; a
        session that fails ends the arc (a resume runs it and the rest again)."""
        earlier: list[Conversation] = []
        try:
            async with asyncio.TaskGroup() as judged:
                for k, job in enumerate(jobs):
                    if k and (result.stopped is not None or halt.reason is not None):
                        break  # the sweep is stopping: the rest of the arc waits for a resume
                    later_missing = any(not store.conversation_done(j.id) for j in jobs[k + 1 :])
                    if store.conversation_done(job.id) and judging.all_done(job.id) and not later_missing:
                        # Done before, judged before: counted from the index, nothing read.
                        result.conversations_reused += 1
                        progress.conversation(_head(job), cached=True)
                        judging.reused(job.id)
                        continue
                    conv = store.done_conversation(job.id)  # read back to judge or remember it
                    if conv is not None:
                        result.conversations_reused += 1
                        progress.conversation(conv, cached=True)
                    else:
                        conv = await simulate(job, earlier)
                        if conv is None:
                            break
                    if judges:  # (a sweep without judges: no task that would judge nothing)
                        judged.create_task(judging.conversation(conv))
                    if conv.status != "complete":
                        break
                    earlier.append(conv)
        except BaseExceptionGroup as failed:
            raise first_exception(failed) from None

    try:
        await _workers(max_concurrency, arcs(sweep.jobs), arc, result, halt, judging.reached_tail)
    finally:
        progress.stop()
        result.wall_s = time.perf_counter() - started
    return result


async def judge_conversations(
    sweep: Sweep,
    store: RunStore,
    clients: Clients,
    conversations: Sequence[Conversation | str],
    *,
    max_concurrency: int,
    progress: Progress | None = None,
    stop: Stop | None = None,
    result: SweepResult | None = None,
) -> SweepResult:
    """Judge existing conversations (a simulate-only run, or imported transcripts).
    A conversation given by its id is in `store` and is read back only when one of its
    judgements is still to be made, so judging a big run holds only what is in flight.
    `result`, when given, is counted into as the work happens (see `run_sweep`)."""
    progress = progress or NullProgress()
    result = result if result is not None else SweepResult()
    judging = Judging(sweep, store, clients, result, progress)
    started = time.perf_counter()
    progress.start(0, len(conversations) * len(sweep.slots))

    async def judge(item: Conversation | str) -> None:
        if not isinstance(item, str):
            await judging.conversation(item)
        elif judging.all_done(item):
            judging.reused(item)
        else:
            await judging.conversation(store.read_conversation(item))

    try:
        await _workers(
            max_concurrency, list(conversations), judge, result, stop or Stop(), judging.reached_tail
        )
    finally:
        progress.stop()
        result.wall_s = time.perf_counter() - started
    return result


def _head(job: ConversationJob) -> ConversationHead:
    """A reused conversation as the index knows it: complete, with the job's fields."""
    p = job.persona
    return ConversationHead(
        id=job.id,
        chatbot=job.chatbot,
        user_agent=job.user_agent,
        persona=p.name,
        risk=p.risk,
        seed=job.seed,
        replicate=job.replicate,
        session=job.session,
    )
