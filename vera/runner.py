"""Orchestrate a run: load and check inputs, open (or resume) the run directory, plan,
run the sweep on one event loop, score, and write the card.

Input problems surface before any call is made. A resumed run must match the manifest
already in its directory (same rubric, personas, prompts, models, settings): a
difference is named and refused, because mixing them would pool incomparable scores.

Stopping: the first Ctrl-C (or SIGTERM) stops launching new work and lets calls in
flight finish for `grace_s` seconds before cancelling them; everything finished is
already on disk and the message says how to resume. A second Ctrl-C exits at once
(records are flushed as they are written, so resume still works).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from vera.cache import CACHE_FILE, CachedClient, ResponseCache
from vera.clients.base import ChatClient
from vera.clients.pool import ClientPool
from vera.config import RunConfig, load_config
from vera.errors import ConfigError, UserError
from vera.events import EventLog, Fanout
from vera.personas import PersonaSet
from vera.pipeline import (
    Budget,
    Inputs,
    Sweep,
    SweepResult,
    check_judges,
    judge_conversations,
    judge_slots,
    new_run_dir,
    plan_sweep,
    run_sweep,
)
from vera.plan import Shard
from vera.profiles import load_profiles, skip_reason
from vera.progress import RunProgress
from vera.records import CallRecord, Conversation, ImportInfo, ModelSpec, Role, RunManifest
from vera.report import score_run
from vera.scoring import RatingsSink
from vera.store import RunStore


@dataclass
class RunOptions:
    config_path: str | None = None
    providers: str | None = None
    seeds: list[int] | None = None
    out: str | None = None
    resume: bool = False
    max_concurrency: int | None = None
    personas: str | None = None
    limit_personas: int | None = None
    judges: list[str] = field(default_factory=list)
    user_agents: list[str] = field(default_factory=list)
    shard: str | None = None
    judge: bool = True
    progress: bool = True
    cache: bool | None = None
    cache_dir: str | None = None
    max_cost: float | None = None
    reference_data: str | None = None


@dataclass
class RunOutcome:
    run_dir: Path
    result: SweepResult
    card: dict[str, Any] | None
    notes: list[str]


def apply_options(cfg: RunConfig, opts: RunOptions, profiles: dict[str, Any], notes: list[str]) -> RunConfig:
    if opts.providers:
        cfg.chatbots = select_providers(opts.providers, profiles, notes)
    if opts.seeds:
        cfg.seeds = opts.seeds
    if opts.max_concurrency:
        cfg.max_concurrency = opts.max_concurrency
    if opts.personas:
        cfg.personas = str(Path(opts.personas).resolve())
    if opts.limit_personas is not None:
        cfg.persona_limit = opts.limit_personas
    if opts.judges:
        cfg.judges = opts.judges
    if opts.user_agents:
        cfg.user_agents = opts.user_agents
    if opts.cache is not None:
        cfg.cache = opts.cache
    if opts.cache_dir:
        cfg.cache_dir = str(Path(opts.cache_dir).resolve())
    if opts.max_cost is not None:
        cfg.max_cost_usd = opts.max_cost
    if opts.reference_data:
        cfg.reference.data = str(Path(opts.reference_data).resolve())
    cfg.check()
    return cfg


def select_providers(value: str, profiles: dict[str, Any], notes: list[str]) -> list[str]:
    """`all` = every profile whose key is present (saying which were skipped and why);
    otherwise a comma-separated list of profile names or provider/model refs."""
    if value.strip() != "all":
        return [v.strip() for v in value.split(",") if v.strip()]
    chosen: list[str] = []
    for name, profile in sorted(profiles.items()):
        reason = skip_reason(profile)
        if reason is None:
            chosen.append(name)
        elif profile.protocol != "offline":
            notes.append(f"skipped provider {name}: {reason}")
    if not chosen:
        detail = "; ".join(notes) or "no provider profiles found"
        raise ConfigError(f"PROVIDERS=all: no provider profile has its key set ({detail})")
    return chosen


def check_resume(existing: RunManifest, planned: RunManifest) -> None:
    """Refuse to resume a run with different inputs, naming every difference."""
    diffs: list[str] = []
    for key in ("rubric", "personas", "user_prompts", "judge_prompts"):
        a, b = getattr(existing, key), getattr(planned, key)
        if a.sha256 != b.sha256:
            diffs.append(f"{key} ({a.name} {a.version} {a.sha256[:8]} → {b.name} {b.version} {b.sha256[:8]})")
    for key in ("chatbots", "user_agents", "judges"):
        a = msgspec.to_builtins(getattr(existing, key))
        b = msgspec.to_builtins(getattr(planned, key))
        if a != b:
            diffs.append(f"{key} ({[x['ref'] for x in a]} → {[x['ref'] for x in b]})")
    if existing.config_sha256 != planned.config_sha256 and not diffs:
        diffs.append("run settings (seeds, turns, judge instances or stats; compare manifest.json)")
    if existing.shard != planned.shard:
        diffs.append(f"shard ({existing.shard} → {planned.shard})")
    if diffs:
        raise UserError("cannot resume: this run was made with different " + "; ".join(diffs))


class CachingClients:
    """The client pool seen through the response cache (offline stand-ins are free and
    deterministic, so they are never cached)."""

    def __init__(self, pool: ClientPool, cache: ResponseCache | None, on_call: Any) -> None:
        self.pool, self.cache, self.on_call = pool, cache, on_call
        self._clients: dict[tuple[str, str], ChatClient] = {}

    def spec(self, ref: str) -> ModelSpec:
        return self.pool.spec(ref)

    def client(self, ref: str, role: Role = "chatbot") -> ChatClient:
        key = (ref, role)
        if key not in self._clients:
            inner = self.pool.client(ref, role)
            spec = self.pool.spec(ref)
            use = self.cache is not None and spec.protocol != "offline"
            self._clients[key] = CachedClient(inner, self.cache, spec, on_call=self.on_call) if use else inner  # type: ignore[arg-type]
        return self._clients[key]


class Stopper:
    """Turns SIGINT/SIGTERM into a graceful stop, then a hard one."""

    def __init__(self, grace_s: float, store: RunStore, run_dir: Path) -> None:
        self.grace_s, self.store, self.run_dir = grace_s, store, run_dir
        self.reason: str | None = None
        self.task: asyncio.Task[Any] | None = None

    def should_stop(self) -> str | None:
        return self.reason

    def _signal(self, name: str) -> None:
        if self.reason is None:
            self.reason = f"interrupted ({name})"
            print(
                f"\n{name}: no new work will start; letting calls in flight finish for up to "
                f"{self.grace_s:.0f} s. Press Ctrl-C again to exit now.",
                file=sys.stderr,
                flush=True,
            )
            if self.task is not None:
                asyncio.get_running_loop().call_later(self.grace_s, self.task.cancel)
            return
        self.store.close()  # every record is already flushed; make it durable
        print(f"\nexiting now; resume with: vera run --resume {self.run_dir}", file=sys.stderr, flush=True)
        os._exit(130)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        sigs = [(signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")]
        added = []
        for sig, name in sigs:
            try:
                loop.add_signal_handler(sig, self._signal, name)
                added.append(sig)
            except (NotImplementedError, RuntimeError):  # not the main thread, or Windows
                pass
        try:
            yield
        finally:
            for sig in added:
                loop.remove_signal_handler(sig)


async def _supervised(stopper: Stopper, coro: Any, result: SweepResult) -> SweepResult:
    """Run the sweep; a cancellation after the grace period still returns the counts."""
    stopper.task = asyncio.ensure_future(coro)
    with stopper.installed():
        try:
            return await stopper.task
        except asyncio.CancelledError:
            if stopper.reason is None:
                raise
            result.stopped = (
                f"{stopper.reason}; calls still in flight after {stopper.grace_s:.0f} s were cancelled"
            )
            return result


def _cache(cfg: RunConfig, run_dir: Path) -> ResponseCache | None:
    if not cfg.cache:
        return None
    folder = Path(cfg.cache_dir) if cfg.cache_dir else run_dir
    return ResponseCache(folder / CACHE_FILE)


async def execute_run(opts: RunOptions) -> RunOutcome:
    cfg = load_config(opts.config_path)
    profiles = load_profiles(cfg.path(cfg.providers))
    notes: list[str] = []
    cfg = apply_options(cfg, opts, profiles, notes)
    inputs = Inputs.load(cfg)
    shard = Shard.parse(opts.shard) if opts.shard else None
    run_dir = Path(opts.out) if opts.out else new_run_dir(cfg, cfg.fingerprint())
    if opts.resume and not (run_dir / "manifest.json").exists():
        raise UserError(f"{run_dir}: nothing to resume (no manifest.json)")
    fresh = not run_dir.exists()
    store = RunStore(run_dir)
    cache: ResponseCache | None = None
    events: EventLog | None = None
    result = SweepResult()
    try:
        async with _pool(profiles, cfg, lambda r: _record_call(store, events, r)) as pool:
            sweep = plan_sweep(inputs, pool, shard=shard)
            roles: list[tuple[str, Role]] = [(s.ref, "chatbot") for s in sweep.chatbots]
            roles += [(s.ref, "user_agent") for s in sweep.user_agents]
            if opts.judge:
                roles += [(s.ref, "judge") for s in sweep.judges]
            else:
                sweep.slots = []
            for ref, role in roles:
                pool.client(ref, role)  # a missing key or unknown model fails here, before any work
            manifest = _open_manifest(store, sweep, run_dir)
            events = EventLog(run_dir)
            events.log.info(
                "run_started",
                run_id=manifest.run_id,
                jobs=len(sweep.jobs),
                chatbots=[s.ref for s in sweep.chatbots],
                judges=[s.ref for s in sweep.judges] if opts.judge else [],
                shard=manifest.shard,
                reused=sum(1 for j in sweep.jobs if store.done_conversation(j.id)),
            )
            cache = _cache(cfg, run_dir)
            clients = CachingClients(pool, cache, lambda r: _record_call(store, events, r))
            progress = _progress(opts, pool)
            if progress is not None:
                progress.plan(_per_chatbot(sweep))
            budget = _budget(cfg, pool)
            stopper = Stopper(cfg.grace_s, store, run_dir)
            sink = _sink(store)
            store.start()
            await _supervised(
                stopper,
                run_sweep(
                    sweep,
                    store,
                    clients,
                    max_concurrency=cfg.max_concurrency,
                    progress=Fanout(progress, events),
                    should_stop=stopper.should_stop,
                    budget=budget,
                    result=result,
                    sink=sink,
                ),
                result,
            )
            manifest.updated_at = sweep.manifest(manifest.run_id).updated_at
            store.write_manifest(manifest)
            events.log.info("run_finished", **_counts(result))
    except UserError:
        store.close()
        if fresh and not any(run_dir.iterdir()):
            run_dir.rmdir()  # nothing was done: leave no empty run directory behind
        raise
    finally:
        await store.aclose()
        if cache is not None:
            cache.close()
        if events is not None:
            events.close()
    if result.stopped:
        notes.append(f"stopped early: {result.stopped}. Resume with: vera run --resume {run_dir}")
    card = score_run(run_dir, frames=(sink.frame(), sink.answers_frame())) if opts.judge else None
    return RunOutcome(run_dir=run_dir, result=result, card=card, notes=notes)


def _sink(store: RunStore) -> RatingsSink:
    """The run's ratings frame: what a resumed run already holds, then every judgement
    streamed in as it is persisted."""
    sink = RatingsSink()
    for conv, judgement in sorted(store.complete_pairs(), key=lambda p: p[1].id):
        sink.add(conv, judgement)
    return sink


def _pool(profiles: dict[str, Any], cfg: RunConfig, on_call: Any) -> ClientPool:
    return ClientPool(
        profiles,
        on_call=on_call,
        retry_base_delay=cfg.retry_base_delay_s,
        retry_max_delay=cfg.retry_max_delay_s,
    )


def _record_call(store: RunStore, events: EventLog | None, record: CallRecord) -> None:
    store.add_call(record)
    if events is not None:
        events.call(record)


def _counts(result: SweepResult) -> dict[str, Any]:
    return {k: v for k, v in vars(result).items() if v is not None}


def _budget(cfg: RunConfig, pool: ClientPool) -> Budget | None:
    if not cfg.max_cost_usd:
        return None
    return Budget(cfg.max_cost_usd, lambda: sum(a.snapshot()["cost_usd"] for a in pool.accounts))


def _progress(opts: RunOptions, pool: ClientPool) -> RunProgress | None:
    if not opts.progress:
        return None
    return RunProgress(accounts=lambda: [a.snapshot() for a in pool.accounts])


def _per_chatbot(sweep: Sweep) -> dict[str, int]:
    out: dict[str, int] = {}
    for j in sweep.jobs:
        out[j.chatbot] = out.get(j.chatbot, 0) + 1
    return out


def _open_manifest(store: RunStore, sweep: Sweep, run_dir: Path) -> RunManifest:
    existing = store.read_manifest()
    planned = sweep.manifest(run_id=run_dir.name)
    if existing is not None:
        check_resume(existing, planned)
        planned.created_at = existing.created_at
        planned.run_id = existing.run_id
    store.write_manifest(planned)
    return planned


@dataclass
class JudgeOptions:
    run_dir: str | None = None  # judge the conversations of this run
    transcripts: str | None = None  # or import these transcripts into a new run
    out: str | None = None
    config_path: str | None = None
    judges: list[str] = field(default_factory=list)
    instances: int | None = None
    personas: str | None = None
    max_concurrency: int | None = None
    cache: bool | None = None
    max_cost: float | None = None
    reference_data: str | None = None


async def judge_run(opts: JudgeOptions) -> RunOutcome:
    """Judge the complete conversations of an existing run (e.g. after `vera simulate`)
    with its judges or others, or import transcripts into a new run and judge them."""
    if opts.transcripts:
        return await _judge_imported(opts)
    assert opts.run_dir is not None
    run_dir = Path(opts.run_dir)
    store = RunStore(run_dir)
    manifest = store.read_manifest()
    if manifest is None:
        store.close()
        raise UserError(f"{run_dir}: not a vera run directory (no manifest.json)")
    cfg = msgspec.convert(manifest.config, RunConfig)
    cfg.base_dir = str(Path(manifest.rubric.path).resolve().parent)
    cfg.rubric, cfg.personas = manifest.rubric.path, manifest.personas.path
    cfg.user_prompts, cfg.judge_prompts = manifest.user_prompts.path, manifest.judge_prompts.path
    cfg.judges = opts.judges or [j.ref for j in manifest.judges]
    if manifest.reference is not None:  # its prompt templates are read from there again
        cfg.reference.data = manifest.reference.path
    _judge_settings(cfg, opts)
    try:
        inputs = Inputs.load(cfg)
        for key, now in (
            ("rubric", inputs.rubric_version()),
            ("judge_prompts", inputs.judge_prompts.version),
        ):
            was = getattr(manifest, key)
            if was.sha256 != now.sha256:
                raise UserError(
                    f"{now.path} changed since this run was made ({key} {was.sha256[:8]} → {now.sha256[:8]}); "
                    "judge in a new run"
                )
    except UserError:
        store.close()
        raise
    conversations = [c for c in store.conversations.values() if c.status == "complete"]
    return await _judge(cfg, inputs, store, run_dir, manifest, conversations, opts)


def _judge_settings(cfg: RunConfig, opts: JudgeOptions) -> None:
    if opts.instances:
        cfg.judge.instances = opts.instances
    if opts.max_concurrency:
        cfg.max_concurrency = opts.max_concurrency
    if opts.cache is not None:
        cfg.cache = opts.cache
    if opts.max_cost is not None:
        cfg.max_cost_usd = opts.max_cost
    if opts.reference_data:
        cfg.reference.data = str(Path(opts.reference_data).resolve())
    cfg.check()


async def _judge_imported(opts: JudgeOptions) -> RunOutcome:
    from vera.plan import digest
    from vera.transcripts import read_transcripts

    cfg = load_config(opts.config_path)
    if opts.judges:
        cfg.judges = opts.judges
    if opts.personas:
        cfg.personas = str(Path(opts.personas).resolve())
    _judge_settings(cfg, opts)
    inputs = Inputs.load(cfg)
    personas = inputs.personas if opts.personas else None
    conversations = read_transcripts(opts.transcripts or "", personas)
    run_dir = (
        Path(opts.out) if opts.out else new_run_dir(cfg, digest("import", [c.id for c in conversations]))
    )
    store = RunStore(run_dir)
    added = 0
    for c in conversations:
        if c.id not in store.conversations:  # a rerun on the same --out records nothing twice
            store.add_conversation(c)
            added += 1
    info, notes = _import_info(opts, conversations, personas, store)
    chatbots = sorted({c.chatbot for c in conversations})
    agents = sorted({c.user_agent for c in conversations})
    cfg.chatbots, cfg.user_agents, cfg.seeds = chatbots, agents, [0]
    manifest = store.read_manifest()
    outcome = await _judge(
        cfg, inputs, store, run_dir, manifest, conversations, opts, imported=(chatbots, agents, info)
    )
    outcome.result.conversations = added
    outcome.result.conversations_reused = len(conversations) - added
    outcome.result.conversations_failed = info.failed
    outcome.notes[:0] = notes
    return outcome


def _import_info(
    opts: JudgeOptions, conversations: list[Conversation], personas: PersonaSet | None, store: RunStore
) -> tuple[ImportInfo, list[str]]:
    """What the import found, for the manifest and card, and what the terminal must
    say about it: conversations not judged for lack of a speaker, and persona names the
    persona file does not know (listed in the run directory)."""
    from vera.transcripts import PERSONAS_NOT_FOUND, personas_not_found

    failed = [c for c in conversations if c.status == "failed"]
    missing = personas_not_found(conversations, personas) if personas is not None else Counter()
    notes = [
        f"{n} of {len(conversations)} imported conversation(s): {reason}"
        for reason, n in sorted(Counter(c.error for c in failed).items())
    ]
    stale = store.root / PERSONAS_NOT_FOUND
    if not missing and stale.exists():
        stale.unlink()  # from an earlier import into this directory with another persona file
    if missing:
        store.write_text(PERSONAS_NOT_FOUND, "".join(f"{name}\t{n}\n" for name, n in sorted(missing.items())))
        notes.append(
            f"warning: {sum(missing.values())} of {len(conversations)} conversation(s) name a persona that "
            f"{opts.personas} does not have ({len(missing)} name(s), listed in "
            f"{store.root / PERSONAS_NOT_FOUND}); their risk level is Unknown"
        )
    info = ImportInfo(
        source=str(Path(opts.transcripts or "").resolve()),
        conversations=len(conversations),
        failed=len(failed),
        personas=str(Path(opts.personas).resolve()) if opts.personas else None,
        personas_not_found=dict(sorted(missing.items())),
    )
    return info, notes


def _imported_spec(ref: str) -> ModelSpec:
    return ModelSpec(ref=ref, provider="imported", protocol="imported", model=ref)


async def _judge(
    cfg: RunConfig,
    inputs: Inputs,
    store: RunStore,
    run_dir: Path,
    manifest: RunManifest | None,
    conversations: list[Any],
    opts: JudgeOptions,
    imported: tuple[list[str], list[str], ImportInfo] | None = None,
) -> RunOutcome:
    profiles = load_profiles(cfg.path(cfg.providers))
    cache: ResponseCache | None = None
    events = EventLog(run_dir)
    result = SweepResult()
    try:
        async with _pool(profiles, cfg, lambda r: _record_call(store, events, r)) as pool:
            judges = [pool.spec(r) for r in cfg.judges]
            for spec in judges:
                pool.client(spec.ref, "judge")
            if imported is not None:
                chatbots = [_imported_spec(r) for r in imported[0]]
                agents = [_imported_spec(r) for r in imported[1]]
            else:
                assert manifest is not None
                chatbots, agents = manifest.chatbots, manifest.user_agents
            sweep = Sweep(
                inputs=inputs,
                chatbots=chatbots,
                user_agents=agents,
                judges=judges,
                jobs=[],
                slots=[],
            )
            check_judges(inputs, judges)
            sweep.slots = judge_slots(judges, cfg.judge.instances)
            planned = sweep.manifest(run_id=manifest.run_id if manifest else run_dir.name)
            if manifest is not None:
                planned.created_at = manifest.created_at
                planned.jobs_planned = manifest.jobs_planned
                planned.seeds = manifest.seeds
                planned.config_sha256 = manifest.config_sha256
                planned.offline = manifest.offline or sweep.offline
            else:
                planned.jobs_planned = len(conversations)
            if imported is not None:
                planned.imported = imported[2]
            store.write_manifest(planned)
            cache = _cache(cfg, run_dir)
            clients = CachingClients(pool, cache, lambda r: _record_call(store, events, r))
            stopper = Stopper(cfg.grace_s, store, run_dir)
            sink = _sink(store)
            store.start()
            await _supervised(
                stopper,
                judge_conversations(
                    sweep,
                    store,
                    clients,
                    sorted(conversations, key=lambda c: c.id),
                    max_concurrency=cfg.max_concurrency,
                    progress=Fanout(_progress(RunOptions(), pool), events),
                    should_stop=stopper.should_stop,
                    budget=_budget(cfg, pool),
                    result=result,
                    sink=sink,
                ),
                result,
            )
        events.log.info("judging_finished", **_counts(result))
    finally:
        await store.aclose()
        events.close()
        if cache is not None:
            cache.close()
    notes = [f"stopped early: {result.stopped}"] if result.stopped else []
    card = score_run(run_dir, frames=(sink.frame(), sink.answers_frame()))
    return RunOutcome(run_dir=run_dir, result=result, card=card, notes=notes)
