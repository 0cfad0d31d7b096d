"""Orchestrate a run: load and check inputs, open (or resume) the run directory, plan,
run the sweep on one event loop, score, and write the card.

Input problems surface before any call is made. A resumed run must match the manifest
already in its directory (same rubric, personas, prompts, models, settings): a
difference is named and refused, because mixing them would pool incomparable scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from vera.clients.pool import ClientPool
from vera.config import RunConfig, load_config
from vera.errors import ConfigError, UserError
from vera.pipeline import Inputs, Sweep, SweepResult, judge_conversations, new_run_dir, plan_sweep, run_sweep
from vera.plan import Shard
from vera.profiles import load_profiles, missing_key
from vera.progress import RunProgress
from vera.records import RunManifest
from vera.report import score_run
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
    cfg.check()
    return cfg


def select_providers(value: str, profiles: dict[str, Any], notes: list[str]) -> list[str]:
    """`all` = every profile whose key is present (saying which were skipped and why);
    otherwise a comma-separated list of profile names or provider/model refs."""
    if value.strip() != "all":
        return [v.strip() for v in value.split(",") if v.strip()]
    chosen: list[str] = []
    for name, profile in sorted(profiles.items()):
        if profile.protocol == "offline":
            continue
        var = missing_key(profile)
        if var is not None:
            notes.append(f"skipped provider {name}: {var} is not set")
        else:
            chosen.append(name)
    if not chosen:
        raise ConfigError(
            "PROVIDERS=all: no provider profile has its key set (see notes above)" + _join(notes)
        )
    return chosen


def _join(notes: list[str]) -> str:
    return "" if not notes else " — " + "; ".join(notes)


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
    try:
        async with ClientPool(profiles, on_call=store.add_call) as pool:
            sweep = plan_sweep(inputs, pool, shard=shard)
            roles = [(s.ref, "chatbot") for s in sweep.chatbots] + [
                (s.ref, "user_agent") for s in sweep.user_agents
            ]
            if opts.judge:
                roles += [(s.ref, "judge") for s in sweep.judges]
            else:
                sweep.slots = []
            for ref, role in roles:
                pool.client(ref, role)  # a missing key or unknown model fails here, before any work
            manifest = _open_manifest(store, sweep, run_dir)
            progress = _progress(opts, pool)
            if progress is not None:
                progress.plan(_per_chatbot(sweep))
            store.start()
            result = await run_sweep(
                sweep, store, pool, max_concurrency=cfg.max_concurrency, progress=progress
            )
            manifest.updated_at = sweep.manifest(manifest.run_id).updated_at
            store.write_manifest(manifest)
    except UserError:
        store.close()
        if fresh and not any(run_dir.iterdir()):
            run_dir.rmdir()  # nothing was done: leave no empty run directory behind
        raise
    finally:
        await store.aclose()
    if result.stopped:
        notes.append(f"stopped early: {result.stopped} (fix it, then rerun with --resume {run_dir})")
    card = score_run(run_dir) if opts.judge else None
    return RunOutcome(run_dir=run_dir, result=result, card=card, notes=notes)


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


async def judge_run(
    run_dir: Path, judges: list[str], instances: int | None, max_concurrency: int | None
) -> RunOutcome:
    """Judge the complete conversations of an existing run (e.g. after `vera simulate`),
    with the run's judges or others. The rubric and judge prompts must still be the
    ones in the manifest (their hashes are checked)."""
    store = RunStore(run_dir)
    manifest = store.read_manifest()
    if manifest is None:
        store.close()
        raise UserError(f"{run_dir}: not a vera run directory (no manifest.json)")
    try:
        cfg = msgspec.convert(manifest.config, RunConfig)
        cfg.base_dir = str(Path(manifest.rubric.path).resolve().parent)
        cfg.rubric = manifest.rubric.path
        cfg.personas = manifest.personas.path
        cfg.user_prompts = manifest.user_prompts.path
        cfg.judge_prompts = manifest.judge_prompts.path
        cfg.judges = judges or [j.ref for j in manifest.judges]
        if instances:
            cfg.judge.instances = instances
        if max_concurrency:
            cfg.max_concurrency = max_concurrency
        cfg.check()
        inputs = Inputs.load(cfg)
        for key in ("rubric", "judge_prompts"):
            was, now = (
                getattr(manifest, key),
                (inputs.rubric_version() if key == "rubric" else inputs.judge_prompts.version),
            )
            if was.sha256 != now.sha256:
                raise UserError(
                    f"{now.path} changed since this run was made ({key} hash {was.sha256[:8]} → {now.sha256[:8]}); judge in a new run"
                )
        profiles = load_profiles(cfg.path(cfg.providers))
        async with ClientPool(profiles, on_call=store.add_call) as pool:
            sweep = plan_sweep(inputs, pool)
            for spec in sweep.judges:
                pool.client(spec.ref, "judge")
            manifest.judges = sweep.judges
            manifest.judge_instances = cfg.judge.instances
            store.write_manifest(manifest)
            conversations = [c for c in store.conversations.values() if c.status == "complete"]
            store.start()
            result = await judge_conversations(
                sweep,
                store,
                pool,
                sorted(conversations, key=lambda c: c.id),
                max_concurrency=cfg.max_concurrency,
                progress=_progress(RunOptions(), pool),
            )
    finally:
        await store.aclose()
    notes = [f"stopped early: {result.stopped}"] if result.stopped else []
    return RunOutcome(run_dir=run_dir, result=result, card=score_run(run_dir), notes=notes)
