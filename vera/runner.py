"""Orchestrate a run: load and check inputs, open (or resume) the run directory, plan,
run the sweep on one event loop, score, and write the card.

Input problems surface before any call is made. A run directory that already holds a
run is resumed from its manifest alone (see `vera.resume`): options that disagree with
the run, or inputs whose content changed, are named and refused, because mixing them
would pool incomparable scores.

Stopping: the first Ctrl-C (or SIGTERM) stops launching new work and lets calls in
flight finish for `grace_s` seconds before cancelling them; everything finished is
already on disk and the message says how to resume. A second Ctrl-C exits at once
(records are flushed as they are written, so resume still works).

How the run ended (complete, failed work, stopped, interrupted) is decided from the run
directory at the end (`vera.outcome`) and carried in `RunOutcome.status`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import Counter
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vera.clients.cache import CACHE_FILE, ResponseCache
from vera.clients.pool import ClientPool
from vera.clients.stack import CachingClients
from vera.config import RunConfig, check_limits_url, load_config
from vera.errors import ConfigError, StorageError, UserError
from vera.events import EventLog, Fanout
from vera.outcome import RunStatus, run_status, tally
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
    role_specs,
    run_sweep,
)
from vera.plan import Shard
from vera.profiles import load_profiles, skip_reason
from vera.progress import RunProgress
from vera.record_index import scan_run
from vera.records import AccountLimits, CallRecord, Conversation, ImportInfo, ModelSpec, Role, RunManifest
from vera.report import score_run
from vera.resume import (
    check_inputs_present,
    check_profiles_present,
    check_same_run,
    existing_run,
    restored_config,
    resume_command,
    resume_config,
    run_to_resume,
)
from vera.store import RunStore, atomic_write


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
    shard_limits: str | None = None  # split (default) or full; see ClientPool
    limits_url: str | None = None  # Redis holding every shard's account budgets
    judge: bool = True
    progress: bool = True
    cache: bool | None = None
    cache_dir: str | None = None
    max_cost: float | None = None
    reference_data: str | None = None
    allow_failures: float | None = None
    seeds_flag: str = "--seeds"  # how the user gave the seeds (--seed or --seeds), for messages
    command: str = "run"  # the command that continues this run: run or simulate


@dataclass
class RunOutcome:
    run_dir: Path
    result: SweepResult
    card: dict[str, Any] | None
    notes: list[str]
    status: RunStatus | None = None
    resume: str = ""  # the command that continues this run

    @property
    def exit_code(self) -> int:
        return self.status.exit_code if self.status is not None else 0


def apply_options(cfg: RunConfig, opts: RunOptions, profiles: dict[str, Any], notes: list[str]) -> RunConfig:
    if opts.providers:
        cfg.chatbots = select_providers(opts.providers, profiles, notes)
    if opts.seeds:
        cfg.seeds = opts.seeds
    if opts.max_concurrency is not None:
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
    # `vera judge` (JudgeOptions) has no shards and no shared limits.
    if shard_limits := getattr(opts, "shard_limits", None):
        cfg.shard_limits = shard_limits  # click checked the choice
    if (limits_url := getattr(opts, "limits_url", None)) is not None:
        cfg.limits_url = check_limits_url(limits_url) if limits_url else ""
    if opts.allow_failures is not None:
        cfg.allow_failures = opts.allow_failures
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


class Stopper:
    """Turns SIGINT/SIGTERM into a graceful stop, then a hard one."""

    def __init__(self, grace_s: float, store: RunStore, resume: str) -> None:
        self.grace_s, self.store, self.resume = grace_s, store, resume
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
        with contextlib.suppress(UserError):
            self.store.close()  # every record is already flushed; make it durable
        print(f"\nexiting now; resume with: {self.resume}", file=sys.stderr, flush=True)
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


async def _supervised(
    stopper: Stopper, coro: Coroutine[Any, Any, SweepResult], result: SweepResult
) -> SweepResult:
    """Run the sweep; a cancellation after the grace period still returns the counts."""
    task = asyncio.ensure_future(coro)
    stopper.task = task
    with stopper.installed():
        try:
            return await task
        except asyncio.CancelledError:
            if stopper.reason is None:
                raise
            result.stopped = (
                f"{stopper.reason}; calls still in flight after {stopper.grace_s:.0f} s were cancelled"
            )
            return result


def _cache(cfg: RunConfig, run_dir: Path) -> ResponseCache | None:
    """The run's response cache, committing on a timer too (call inside the event loop)."""
    if not cfg.cache:
        return None
    folder = Path(cfg.cache_dir) if cfg.cache_dir else run_dir
    cache = ResponseCache(folder / CACHE_FILE)
    cache.start()
    return cache


async def execute_run(opts: RunOptions) -> RunOutcome:
    notes: list[str] = []
    out = Path(opts.out) if opts.out else None
    existing = existing_run(out, resume=opts.resume) if out is not None else None
    if out is not None and existing is not None:
        cfg, profiles = _resumed_config(existing, out, opts, notes)
    else:
        cfg = load_config(opts.config_path)
        profiles = load_profiles(cfg.path(cfg.providers))
        cfg = apply_options(cfg, opts, profiles, notes)
    inputs = Inputs.load(cfg)
    shard = Shard.parse(opts.shard) if opts.shard else _manifest_shard(existing)
    run_dir = out or new_run_dir(cfg, cfg.fingerprint())
    resume = resume_command(opts.command, run_dir)
    fresh = not run_dir.exists()
    store = RunStore(run_dir)
    cache: ResponseCache | None = None
    events: EventLog | None = None
    result = SweepResult()
    manifest: RunManifest | None = None
    try:
        async with _pool(profiles, cfg, lambda r: _record_call(store, events, r), shard) as pool:
            sweep = plan_sweep(inputs, pool, shard=shard)
            notes += sweep.warnings
            roles: list[tuple[str, Role]] = [(s.ref, "chatbot") for s in sweep.chatbots]
            roles += [(s.ref, "user_agent") for s in sweep.user_agents]
            if opts.judge:
                roles += [(s.ref, "judge") for s in sweep.judges]
            else:
                sweep.slots = []
            for ref, role in roles:
                pool.client(ref, role)  # a missing key or unknown model fails here, before any work
            manifest = _open_manifest(store, sweep, run_dir, existing, limits=pool.limits())
            events = EventLog(run_dir)
            events.log.info(
                "run_started",
                run_id=manifest.run_id,
                jobs=len(sweep.jobs),
                chatbots=[s.ref for s in sweep.chatbots],
                judges=[s.ref for s in sweep.judges] if opts.judge else [],
                shard=manifest.shard,
                resumed=existing is not None,
                reused=sum(1 for j in sweep.jobs if store.conversation_done(j.id)),
            )
            cache = _cache(cfg, run_dir)
            clients = CachingClients(pool, cache, lambda r: _record_call(store, events, r))
            progress = _progress(opts, pool)
            if progress is not None:
                progress.plan(_per_chatbot(sweep))
            budget = _budget(cfg, pool)
            stopper = Stopper(cfg.grace_s, store, resume)
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
                ),
                result,
            )
            manifest.updated_at = sweep.manifest(manifest.run_id).updated_at
            manifest.stopped = result.stopped
            store.write_manifest(manifest)
            events.log.info("run_finished", **_counts(result))
    except UserError as exc:
        _close_quietly(store, cache, events)
        if fresh and run_dir.is_dir() and not any(run_dir.iterdir()):
            run_dir.rmdir()  # nothing was done: leave no empty run directory behind
        if isinstance(exc, StorageError) and manifest is not None:
            raise StorageError(
                f"{exc}; finished work is saved: make room (or make the folder writable), then resume with: {resume}"
            ) from None
        raise
    finally:
        await store.aclose()
        if cache is not None:
            cache.close()
        if events is not None:
            events.close()
    records = scan_run(run_dir)
    status = run_status(
        manifest,
        records.conversation_heads(),
        records.judgement_heads(),
        stopped=result.stopped,
        allow_failures=cfg.allow_failures,
        judging=opts.judge,
    )
    if status.exit_code:
        notes.append(f"to continue this run: {resume}")
    # The card's frames are built from the files, one judgement at a time: the run kept
    # none of its records in memory while it went.
    card = score_run(run_dir) if opts.judge else None
    return RunOutcome(run_dir=run_dir, result=result, card=card, notes=notes, status=status, resume=resume)


def _resumed_config(
    existing: RunManifest, run_dir: Path, opts: RunOptions, notes: list[str]
) -> tuple[RunConfig, dict[str, Any]]:
    """The run config and provider profiles a run continues with, from its manifest and
    the options given with the resume (checked against the run)."""
    profiles: dict[str, Any] = {}

    def apply(cfg: RunConfig) -> RunConfig:
        profiles.update(load_profiles(cfg.path(cfg.providers)))
        return apply_options(cfg, opts, profiles, notes)

    given = {k: getattr(opts, k) for k in ("providers", "user_agents", "judges", "seeds", "limit_personas")}
    given |= {"seeds_flag": opts.seeds_flag, "shard": str(Shard.parse(opts.shard)) if opts.shard else None}
    cfg = resume_config(existing, run_dir, config_path=opts.config_path, given=given, apply=apply)
    needed = ("rubric", "personas", "user_prompts", "judge_prompts")
    check_inputs_present(existing, cfg, run_dir, needed)
    check_profiles_present(existing, cfg, profiles, run_dir)
    return cfg, profiles


def _manifest_shard(manifest: RunManifest | None) -> Shard | None:
    return Shard.parse(manifest.shard) if manifest is not None and manifest.shard else None


def _close_quietly(store: RunStore, cache: ResponseCache | None, events: EventLog | None) -> None:
    """Close what a failed run opened without letting a second failure (the same full
    disk) hide the first one."""
    for closer in (store.close, cache.close if cache else None, events.close if events else None):
        if closer is not None:
            with contextlib.suppress(UserError, OSError):
                closer()


def _pool(profiles: dict[str, Any], cfg: RunConfig, on_call: Any, shard: Shard | None = None) -> ClientPool:
    return ClientPool(
        profiles,
        on_call=on_call,
        retry_base_delay=cfg.retry_base_delay_s,
        retry_max_delay=cfg.retry_max_delay_s,
        shards=shard.count if shard is not None else 1,
        shard_limits=cfg.shard_limits,
        limits_url=cfg.limits_url,
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


def _open_manifest(
    store: RunStore,
    sweep: Sweep,
    run_dir: Path,
    existing: RunManifest | None,
    *,
    limits: list[AccountLimits] | None = None,
) -> RunManifest:
    planned = sweep.manifest(run_id=run_dir.name)
    planned.limits = limits or []
    if existing is not None:
        check_same_run(existing, planned, run_dir)
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
    allow_failures: float | None = None


async def judge_run(opts: JudgeOptions) -> RunOutcome:
    """Judge the complete conversations of an existing run (e.g. after `vera simulate`)
    with its judges or others, or import transcripts into a new run and judge them.
    Judging a run again continues where it stopped: `vera judge RUN_DIR` alone."""
    if opts.transcripts:
        return await _judge_imported(opts)
    if opts.run_dir is None:
        raise UserError("vera judge needs a RUN_DIR to judge, or --transcripts to import")
    run_dir = Path(opts.run_dir)
    for value, flag in ((opts.config_path, "--config"), (opts.personas, "--personas"), (opts.out, "--out")):
        if value:
            raise ConfigError(
                f"{flag} is for importing --transcripts; judging {run_dir} uses the settings in its manifest"
            )
    manifest = run_to_resume(run_dir)
    cfg = restored_config(manifest)
    cfg.judges = opts.judges or [j.ref for j in manifest.judges]
    if manifest.reference is not None:  # its prompt templates are read from there again
        cfg.reference.data = manifest.reference.path
    _judge_settings(cfg, opts)
    check_inputs_present(manifest, cfg, run_dir, ("rubric", "judge_prompts"))
    inputs = _judging_inputs(cfg, manifest)
    for key, now in (("rubric", inputs.rubric_version()), ("judge_prompts", inputs.judge_prompts.version)):
        was = getattr(manifest, key)
        if was.sha256 != now.sha256:
            raise UserError(
                f"cannot judge {run_dir}: the {key.replace('_', ' ')} changed since this run was made: "
                f"it used {was.name} {was.version} (sha256 {was.sha256[:12]}); {now.path} now holds "
                f"{now.name} {now.version} (sha256 {now.sha256[:12]}); judge in a new run"
            )
    store = RunStore(run_dir)
    # By id, from the store's index: each is read back only when it is judged (see
    # `judge_conversations`).
    conversations = [cid for cid in store.conversations if store.conversation_done(cid)]
    return await _judge(cfg, inputs, store, run_dir, manifest, conversations, opts)


def _judging_inputs(cfg: RunConfig, manifest: RunManifest) -> Inputs:
    """What judging reads is the rubric and the judge prompts. The persona set and the
    user-agent prompts are only carried along (their versions stay in the manifest), so
    a run whose persona file has moved away can still be judged."""
    if cfg.path(cfg.personas).exists() and cfg.path(cfg.user_prompts).exists():
        return Inputs.load(cfg)
    from vera.personas import PersonaSet
    from vera.prompts import Template, UserPrompts, load_judge_prompts
    from vera.rubric import load_rubric, validate_rubric

    rubric = load_rubric(cfg.path(cfg.rubric))
    if problems := validate_rubric(rubric):
        raise ConfigError(problems[0].render(rubric.path))
    up = manifest.user_prompts
    absent = Template(path=up.path, text="")
    return Inputs(
        config=cfg,
        rubric=rubric,
        personas=PersonaSet(personas=(), columns=(), version=manifest.personas),
        user_prompts=UserPrompts(system=absent, reminder=absent, end_marker="", version=up),
        judge_prompts=load_judge_prompts(cfg.path(cfg.judge_prompts)),
    )


def _judge_settings(cfg: RunConfig, opts: JudgeOptions) -> None:
    if opts.instances is not None:
        cfg.judge.instances = opts.instances
    if opts.max_concurrency is not None:
        cfg.max_concurrency = opts.max_concurrency
    if opts.cache is not None:
        cfg.cache = opts.cache
    if opts.max_cost is not None:
        cfg.max_cost_usd = opts.max_cost
    if opts.reference_data:
        cfg.reference.data = str(Path(opts.reference_data).resolve())
    # `vera judge` (JudgeOptions) has no shards and no shared limits.
    if shard_limits := getattr(opts, "shard_limits", None):
        cfg.shard_limits = shard_limits  # click checked the choice
    if (limits_url := getattr(opts, "limits_url", None)) is not None:
        cfg.limits_url = check_limits_url(limits_url) if limits_url else ""
    if opts.allow_failures is not None:
        cfg.allow_failures = opts.allow_failures
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
    manifest = existing_run(run_dir, resume=False)
    store = RunStore(run_dir)
    if manifest is not None and any(c.id not in store.conversations for c in conversations):
        store.close()
        raise UserError(
            f"{run_dir}: holds another run; import these transcripts into a new folder "
            f"(to continue judging that run: {resume_command('judge', run_dir)})"
        )
    added = 0
    for c in conversations:
        if c.id not in store.conversations:  # a rerun on the same --out records nothing twice
            store.add_conversation(c)
            added += 1
    info, notes = _import_info(opts, conversations, personas, store)
    chatbots = sorted({c.chatbot for c in conversations})
    agents = sorted({c.user_agent for c in conversations})
    cfg.chatbots, cfg.user_agents, cfg.seeds = chatbots, agents, [0]
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
        atomic_write(
            store.root / PERSONAS_NOT_FOUND,
            "".join(f"{name}\t{n}\n" for name, n in sorted(missing.items())).encode(),
            what="the list of persona names not found",
        )
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
    conversations: list[Conversation] | list[str],
    opts: JudgeOptions,
    imported: tuple[list[str], list[str], ImportInfo] | None = None,
) -> RunOutcome:
    resume = resume_command("judge", run_dir)
    cache: ResponseCache | None = None
    events: EventLog | None = None
    result = SweepResult()
    planned: RunManifest | None = None
    warnings: list[str] = []  # parameters a judge's model family refused
    try:
        profiles = load_profiles(cfg.path(cfg.providers))
        events = EventLog(run_dir)
        async with _pool(profiles, cfg, lambda r: _record_call(store, events, r)) as pool:
            judges = role_specs(cfg.judges, "judge", pool, cfg, warnings)
            for spec in judges:
                pool.client(spec.ref, "judge")
            if imported is not None:
                chatbots = [_imported_spec(r) for r in imported[0]]
                agents = [_imported_spec(r) for r in imported[1]]
            elif manifest is not None:
                chatbots, agents = manifest.chatbots, manifest.user_agents
            else:
                raise TypeError("_judge needs the run's manifest or imported transcripts")
            sweep = Sweep(
                inputs=inputs,
                chatbots=chatbots,
                user_agents=agents,
                judges=judges,
                jobs=[],
                slots=[],
            )
            check_judges(inputs, judges, pool)
            sweep.slots = judge_slots(judges, cfg.judge.instances)
            planned = sweep.manifest(run_id=manifest.run_id if manifest else run_dir.name)
            if manifest is not None:
                planned.created_at = manifest.created_at
                planned.jobs_planned = manifest.jobs_planned
                planned.seeds = manifest.seeds
                planned.config_sha256 = manifest.config_sha256
                planned.offline = manifest.offline or sweep.offline
                planned.shard = manifest.shard
                planned.missing_shards = manifest.missing_shards
                planned.base_dir = manifest.base_dir or planned.base_dir
            else:
                planned.jobs_planned = len(conversations)
            if imported is not None:
                planned.imported = imported[2]
            store.write_manifest(planned)
            cache = _cache(cfg, run_dir)
            clients = CachingClients(pool, cache, lambda r: _record_call(store, events, r))
            stopper = Stopper(cfg.grace_s, store, resume)
            store.start()
            await _supervised(
                stopper,
                judge_conversations(
                    sweep,
                    store,
                    clients,
                    sorted(conversations, key=lambda c: c if isinstance(c, str) else c.id),
                    max_concurrency=cfg.max_concurrency,
                    progress=Fanout(_progress(RunOptions(), pool), events),
                    should_stop=stopper.should_stop,
                    budget=_budget(cfg, pool),
                    result=result,
                ),
                result,
            )
            planned.stopped = result.stopped
            store.write_manifest(planned)
        events.log.info("judging_finished", **_counts(result))
    except UserError as exc:
        _close_quietly(store, cache, events)
        if isinstance(exc, StorageError) and planned is not None:
            raise StorageError(
                f"{exc}; finished work is saved: make room (or make the folder writable), then: {resume}"
            ) from None
        raise
    finally:
        await store.aclose()
        if events is not None:
            events.close()
        if cache is not None:
            cache.close()
    records = scan_run(run_dir)
    conversation_heads, judgement_heads = records.conversation_heads(), records.judgement_heads()
    status = run_status(
        planned,
        conversation_heads,
        judgement_heads,
        stopped=result.stopped,
        allow_failures=cfg.allow_failures,
    )
    # Only judging can be continued: a transcript that failed to import stays failed
    # however often the run is judged again, so it earns no hint.
    _, judged = tally(planned, conversation_heads, judgement_heads)
    retryable = status.state != "failed" or judged.failed > 0
    notes = [f"to continue judging: {resume}"] if status.exit_code and retryable else []
    notes[:0] = warnings
    card = score_run(run_dir)
    return RunOutcome(run_dir=run_dir, result=result, card=card, notes=notes, status=status, resume=resume)
