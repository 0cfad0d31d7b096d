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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import msgspec

from vera import __version__
from vera.clients._structured import merge_params
from vera.clients.base import ChatClient
from vera.clients.families import fit_params
from vera.engine._judge import judge_conversation
from vera.engine._plan import JudgeSlot, Shard, conversation_jobs, derive_seed, judgement_id
from vera.engine._simulate import (
    ConversationJob,
    SimulationSettings,
    render_user_prompts,
    simulate_conversation,
)
from vera.engine._tasks import first_exception, run_together
from vera.errors import ConfigError, FatalProviderError
from vera.inputs import (
    JudgePrompts,
    PersonaSet,
    RunConfig,
    UserPrompts,
    check_templates,
    load_judge_prompts,
    load_personas,
    load_user_prompts,
    reads_reference,
    reference_data,
    verify_pins,
)
from vera.records import (
    ArtifactVersion,
    Conversation,
    Judgement,
    ModelSpec,
    Persona,
    ReferenceData,
    Role,
    RunManifest,
)
from vera.rubric import Rubric, load_rubric, validate_rubric
from vera.store import ConversationHead, JudgementHead, RunStore


class Clients(Protocol):
    """What the pipeline needs from a client pool."""

    def client(self, ref: str, role: Role = "chatbot") -> ChatClient: ...

    def spec(self, ref: str) -> ModelSpec: ...

    def rubric_refusal(self, ref: str, rubric_key: str) -> str | None: ...


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
class Inputs:
    """Everything loaded and validated before a single call is made."""

    config: RunConfig
    rubric: Rubric
    personas: PersonaSet
    user_prompts: UserPrompts
    judge_prompts: JudgePrompts
    reference: ReferenceData | None = None  # the reference tool's files used, if any

    @classmethod
    def load(cls, config: RunConfig) -> Inputs:
        if reads_reference(config):
            verify_pins(config)  # a wrong or other-release folder is named before anything is read
        rubric = load_rubric(config.path(config.rubric))
        problems = validate_rubric(rubric)
        if problems:
            more = f" (and {len(problems) - 1} more; run `vera validate rubric`)" if len(problems) > 1 else ""
            raise ConfigError(problems[0].render(rubric.path) + more)
        personas = load_personas(config.path(config.personas))
        user_prompts = load_user_prompts(config.path(config.user_prompts), config.reference_dir)
        issues = check_templates(user_prompts, personas.columns)
        if issues:
            raise ConfigError(issues[0].message)
        judge_prompts = load_judge_prompts(config.path(config.judge_prompts), config.reference_dir)
        templates = (user_prompts.system, user_prompts.reminder, judge_prompts.system, judge_prompts.question)
        read = [rubric.path, personas.version.path, *(t.path for t in templates), judge_prompts.retry.path]
        reference = reference_data(config, read)
        if reference is not None and config.reference.name:
            rubric, personas = name_reference_files(reference, rubric, personas)
        return cls(config, rubric, personas, user_prompts, judge_prompts, reference)

    def settings(self) -> SimulationSettings:
        c = self.config.conversation
        return SimulationSettings(
            max_turns=c.max_turns,
            min_turns=c.min_turns,
            first_speaker=c.first_speaker,
            opening_message=c.opening_message,
            chatbot_system_prompt=c.chatbot_system_prompt,
        )

    def selected_personas(self) -> tuple[Persona, ...]:
        n = self.config.persona_limit
        return self.personas.personas[:n] if n else self.personas.personas

    def rubric_version(self) -> ArtifactVersion:
        r = self.rubric
        return ArtifactVersion(name=r.name, version=r.version, path=r.path, sha256=r.sha256)


def name_reference_files(
    reference: ReferenceData, rubric: Rubric, personas: PersonaSet
) -> tuple[Rubric, PersonaSet]:
    """The reference tool's rubric and persona files carry no name or version of their
    own; inside the reference folder they are that release's ("VERA-MH rubric 1.1")."""
    folder = Path(reference.path)
    if rubric.version == "unversioned" and Path(rubric.path).resolve().is_relative_to(folder):
        rubric = msgspec.structs.replace(rubric, name=f"{reference.name} rubric", version=reference.version)
    v = personas.version
    if v.version == "unversioned" and Path(v.path).resolve().is_relative_to(folder):
        named = msgspec.structs.replace(v, name=f"{reference.name} personas", version=reference.version)
        personas = msgspec.structs.replace(personas, version=named)
    return rubric, personas


@dataclass
class Sweep:
    """A planned sweep: inputs, resolved models and the job list."""

    inputs: Inputs
    chatbots: list[ModelSpec]
    user_agents: list[ModelSpec]
    judges: list[ModelSpec]
    jobs: list[ConversationJob]
    slots: list[JudgeSlot]
    shard: Shard | None = None
    warnings: list[str] = field(default_factory=list)  # parameters a model family refused

    @property
    def judge_specs(self) -> dict[str, ModelSpec]:
        return {j.ref: j for j in self.judges}

    @property
    def offline(self) -> bool:
        """Any role played by a built-in stand-in: the numbers then describe the
        stand-ins, not real models, and the card says so."""
        return any(s.protocol == "offline" for s in (*self.chatbots, *self.user_agents, *self.judges))

    def judgement_id(self, conv_id: str, slot: JudgeSlot) -> str:
        i = self.inputs
        return judgement_id(
            conv_id,
            self.judge_specs[slot.ref],
            slot.instance,
            i.rubric.sha256,
            i.judge_prompts.version.sha256,
            i.config.judge.max_attempts,
        )

    def manifest(self, run_id: str, created_at: str | None = None, **kept: Any) -> RunManifest:
        """The run's manifest, whole: `kept` names fields that come from elsewhere (the
        run being judged again, the accounts' limits, an import), so no caller patches
        the record afterwards."""
        i = self.inputs
        now = datetime.now(UTC).isoformat(timespec="seconds")
        cfg = {k: v for k, v in msgspec.to_builtins(i.config).items() if k != "base_dir"}
        fields: dict[str, Any] = {
            "vera_version": __version__,
            "run_id": run_id,
            "rubric": i.rubric_version(),
            "personas": i.personas.version,
            "user_prompts": i.user_prompts.version,
            "judge_prompts": i.judge_prompts.version,
            "config_sha256": i.config.fingerprint(),
            "config": cfg,
            "chatbots": self.chatbots,
            "user_agents": self.user_agents,
            "judges": self.judges,
            "judge_instances": i.config.judge.instances,
            "seeds": list(i.config.seeds),
            "offline": self.offline,
            "created_at": created_at or now,
            "updated_at": now,
            "shard": str(self.shard) if self.shard else None,
            "jobs_planned": len(self.jobs),
            "reference": i.reference,
            "base_dir": i.config.base_dir,
        }
        return RunManifest(**(fields | kept))


def seed_params(spec: ModelSpec, seed: int) -> dict[str, Any] | None:
    """A profile with `seed = "auto"` in its params gets a sampling seed derived from the
    job (the conversation's seed, or the judgement's id), so reruns with the same run
    seeds ask providers that honour seeds for the same samples."""
    return {"seed": seed} if spec.params.get("seed") == "auto" else None


def check_judges(inputs: Inputs, judges: list[ModelSpec], clients: Clients) -> None:
    """Every judge can answer the run's rubric (the lexical baseline judge knows only the
    rubric it was written for); the clients say which cannot."""
    for spec in judges:
        reason = clients.rubric_refusal(spec.ref, inputs.rubric.key)
        if reason is not None:
            raise ConfigError(f"{reason} ({inputs.rubric.path}); choose a model judge for this rubric")


def judge_slots(judges: list[ModelSpec], instances: int) -> list[JudgeSlot]:
    """Every (judge, instance) that judges each conversation."""
    return [JudgeSlot(j.ref, k) for j in judges for k in range(1, instances + 1)]


def role_spec(spec: ModelSpec, role: Role, cfg: RunConfig) -> tuple[ModelSpec, list[str]]:
    """`spec` with the parameters `role` actually sends to this model: the profile's,
    with the run config's `[ROLE.params]` (or the role's defaults) over them, fitted to
    the model's family. Returns warnings for parameters the profile or the config asked
    for that the family does not accept (defaults it refuses are left out silently: the
    defaults apply "where the model allows it")."""
    role_params, explicit = cfg.role_params(role)
    if spec.protocol == "http":
        return msgspec.structs.replace(spec, params={}), []  # a product samples as it is built to
    merged = merge_params(spec.params, role_params)
    if spec.protocol == "offline":
        return msgspec.structs.replace(spec, params=merged), []
    fitted, dropped = fit_params(spec.protocol, spec.model, merged)
    warnings = [
        f"warning: {role.replace('_', '-')} {spec.ref} ({spec.model}): not sending {what}"
        for what in dropped
        if explicit or what.split(" ")[0].split("=")[0] not in role_params
    ]
    return msgspec.structs.replace(spec, params=fitted), warnings


def role_specs(
    refs: list[str], role: Role, clients: Clients, cfg: RunConfig, warnings: list[str]
) -> list[ModelSpec]:
    specs = []
    for ref in refs:
        spec, said = role_spec(clients.spec(ref), role, cfg)
        specs.append(spec)
        warnings += said
    return specs


def call_params(spec: ModelSpec, seed: int) -> dict[str, Any]:
    """What a call in a role sends: the role's fitted parameters, with a derived seed
    where the profile asks for one."""
    params = dict(spec.params)
    params.update(seed_params(spec, seed) or {})
    if params.get("seed") == "auto":
        del params["seed"]
    return params


def plan_sweep(
    inputs: Inputs,
    clients: Clients,
    *,
    shard: Shard | None = None,
    judge: bool = True,
    limit: int | None = None,
) -> Sweep:
    """The whole plan, fixed here: `judge=False` plans no judging (the judges are still
    recorded, for a later `vera judge`), `limit` keeps only the first jobs (a benchmark's
    exact count)."""
    cfg = inputs.config
    warnings: list[str] = []
    chatbots = role_specs(cfg.chatbots, "chatbot", clients, cfg, warnings)
    user_agents = role_specs(cfg.user_agents, "user_agent", clients, cfg, warnings)
    judges = role_specs(cfg.judges, "judge", clients, cfg, warnings)
    check_judges(inputs, judges, clients)
    jobs = conversation_jobs(
        chatbots=chatbots,
        user_agents=user_agents,
        personas=inputs.selected_personas(),
        seeds=list(cfg.seeds),
        user_prompts_sha=inputs.user_prompts.version.sha256,
        settings=inputs.settings(),
        shard=shard,
    )
    if limit is not None:
        jobs = jobs[:limit]
    slots = judge_slots(judges, cfg.judge.instances) if judge else []
    return Sweep(
        inputs=inputs,
        chatbots=chatbots,
        user_agents=user_agents,
        judges=judges,
        jobs=jobs,
        slots=slots,
        shard=shard,
        warnings=warnings,
    )


@dataclass
class SweepResult:
    conversations: int = 0
    conversations_failed: int = 0
    conversations_reused: int = 0
    judgements: int = 0
    judgements_failed: int = 0
    judgements_reused: int = 0
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
    judgements already in the store, and persists each one as it finishes."""

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
        inputs = self.sweep.inputs
        jid = self.sweep.judgement_id(conv.id, slot)
        if self.store.done_judgement(jid):
            self._reused(jid, conv.id, slot)
            return
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
            )
        except FatalProviderError as exc:
            j = failed_judgement(jid, conv.id, slot, exc)
            self.result.stopped = str(exc)
        self.store.add_judgement(j)
        self.result.judgements += 1
        self.result.judgements_failed += j.status == "failed"
        self.progress.judgement(j, cached=False)


def failed_judgement(jid: str, conv_id: str, slot: JudgeSlot, exc: Exception) -> Judgement:
    return Judgement(
        id=jid,
        conversation_id=conv_id,
        judge=slot.ref,
        instance=slot.instance,
        status="failed",
        answers=[],
        ratings=[],
        error=f"{type(exc).__name__}: {exc}",
        finished_at=time.time(),
    )


class Budget:
    """Stops new work before the accounted cost would pass a limit: a job is started only
    if what is spent, plus the average cost of a finished job for every job in flight and
    for the new one, stays within the limit."""

    __slots__ = ("limit", "spent")

    def __init__(self, limit: float, spent: Callable[[], float]) -> None:
        self.limit = limit
        self.spent = spent

    def allows(self, started: int, finished: int) -> bool:
        spent = self.spent()
        average = spent / finished if finished else 0.0
        return spent + average * (started - finished + 1) <= self.limit


async def _workers(
    n: int,
    items: list[Any],
    work: Callable[[Any], Any],
    result: SweepResult,
    stop: Stop,
    budget: Budget | None = None,
) -> None:
    """`n` workers draining `items` in order. New work stops when `stop` is requested
    (work in flight then gets its grace period), when the budget would be exceeded, or
    after a fatal provider error (bad key, bad request) instead of failing every
    remaining job the same way. `result.stopped` is this sweep's own record of why."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    counts = {"started": 0, "finished": 0}

    async def worker() -> None:
        while result.stopped is None:
            if stop.reason is not None:
                result.stopped = stop.reason
                return
            if budget is not None and not budget.allows(counts["started"], counts["finished"]):
                result.stopped = f"budget: ${budget.spent():.2f} spent, limit ${budget.limit:.2f}"
                return
            try:
                item = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            counts["started"] += 1
            await work(item)
            counts["finished"] += 1

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
    budget: Budget | None = None,
) -> SweepResult:
    """Run every job not already complete in `store` and return what happened. Scoring
    is not done here: it reads the run's files once the sweep is over."""
    inputs = sweep.inputs
    settings = inputs.settings()
    progress = progress or NullProgress()
    result = SweepResult()
    judging = Judging(sweep, store, clients, result, progress)
    # By role: one model may be both the chatbot and the user-agent, with each role's parameters.
    bots = {s.ref: s for s in sweep.chatbots}
    agents = {s.ref: s for s in sweep.user_agents}
    # One rendering per persona, shared by all its conversations (thousands in flight
    # would otherwise each hold their own copy of the same prompt).
    rendered: dict[str, tuple[str, str]] = {}
    started = time.perf_counter()
    progress.start(len(sweep.jobs), len(sweep.jobs) * len(sweep.slots))

    async def conversation(job: ConversationJob) -> None:
        if store.conversation_done(job.id) and judging.all_done(job.id):
            # Done before, judged before: counted from the index, nothing read.
            result.conversations_reused += 1
            progress.conversation(_head(job), cached=True)
            judging.reused(job.id)
            return
        conv = store.done_conversation(job.id)  # read back only to judge it
        if conv is not None:
            result.conversations_reused += 1
            progress.conversation(conv, cached=True)
        else:
            try:
                conv = await simulate_conversation(
                    job,
                    chatbot=clients.client(job.chatbot, "chatbot"),
                    user_agent=clients.client(job.user_agent, "user_agent"),
                    prompts=inputs.user_prompts,
                    settings=settings,
                    chatbot_params=call_params(bots[job.chatbot], job.seed),
                    user_params=call_params(agents[job.user_agent], job.seed),
                    rendered=rendered.get(job.persona.name)
                    or rendered.setdefault(
                        job.persona.name, render_user_prompts(job.persona, inputs.user_prompts, settings)
                    ),
                )
            except FatalProviderError as exc:
                conv = failed_conversation(job, exc)
                result.stopped = str(exc)
            store.add_conversation(conv)
            result.conversations += 1
            result.conversations_failed += conv.status == "failed"
            progress.conversation(conv, cached=False)
        await judging.conversation(conv)

    try:
        await _workers(max_concurrency, sweep.jobs, conversation, result, stop or Stop(), budget)
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
    budget: Budget | None = None,
) -> SweepResult:
    """Judge existing conversations (a simulate-only run, or imported transcripts).
    A conversation given by its id is in `store` and is read back only when one of its
    judgements is still to be made, so judging a big run holds only what is in flight."""
    progress = progress or NullProgress()
    result = SweepResult()
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
        await _workers(max_concurrency, list(conversations), judge, result, stop or Stop(), budget)
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
    )


def failed_conversation(job: ConversationJob, exc: Exception) -> Conversation:
    now = time.time()
    return job.record(
        turns=[],
        status="failed",
        ended_by="error",
        error=f"{type(exc).__name__}: {exc}",
        started_at=now,
        finished_at=now,
    )


def new_run_dir(cfg: RunConfig, sweep_key: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return cfg.path(cfg.runs_dir) / f"{stamp}-{sweep_key[:8]}"
