"""`vera run` and `vera simulate`: load and check inputs, open (or resume) the run
directory, plan, and run the sweep in a run session.

Input problems surface before any call is made. A run directory that already holds a
run is resumed from its manifest alone (see `vera.app._resume`): options that disagree with
the run, or inputs whose content changed, are named and refused, because mixing them
would pool incomparable scores.

Stopping: the first Ctrl-C (or SIGTERM) stops launching new work and lets calls in
flight finish for `grace_s` seconds before cancelling them; a second Ctrl-C cancels the
work at once (see `vera.app._signals`). Either way the session closes the store, cache
and event log, the manifest says why the run stopped, and the message says how to
resume.

How the run ended (complete, failed work, stopped, interrupted) is decided from the run
directory at the end (`vera.report.shared._outcome`) and carried in `RunOutcome.status`. The card is
scored afterwards, outside the event loop (`vera.app._result.scored`).
"""

from __future__ import annotations

import secrets
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from vera.app._checks import preflight, shared_cache_warning
from vera.app._killed import found_killed, left_in, open_session, priced_kills
from vera.app._options import RunOptions, configure
from vera.app._progress import run_strings
from vera.app._result import RunOutcome, failure_lines
from vera.app._resume import (
    check_inputs_present,
    check_profiles_present,
    check_same_run,
    existing_run,
    kept_identities,
    program,
    resume_command,
    resume_config,
)
from vera.app._session import RunSession
from vera.app._stand_ins import RunFacts, fit_stand_in_judges
from vera.engine import Inputs, Shard, Sweep, SweepResult, check_plan_size, plan_sweep, run_sweep
from vera.errors import ConfigError, StorageError, UserError
from vera.inputs import RunConfig, load_config, load_profiles
from vera.records import ModelSpec, Role, RunManifest
from vera.report import read_gate, run_status
from vera.stats import DEFAULT_SPENDING
from vera.store import MANIFEST, Fanout, open_run

FORCED = "cancelled at once by a second signal"


def forced_result(counted: SweepResult, reason: str | None) -> SweepResult:
    """The result of a sweep a second signal cancelled: its counts so far, and why."""
    counted.stopped = f"{reason}; {FORCED}"
    return counted


@dataclass
class Prepared:
    """What a run has checked and loaded before it opens anything (`prepare_run`)."""

    cfg: RunConfig
    profiles: dict[str, Any]
    inputs: Inputs
    existing: RunManifest | None  # the manifest of the run this continues
    shard: Shard | None
    out: Path | None
    notes: list[str]


def prepare_run(opts: RunOptions) -> Prepared:
    """The run's pre-flight: the config (or the resumed run's manifest) with the options
    over it, every check `vera validate config` makes (`preflight`, one function for
    both), the inputs loaded. A `UserError` here leaves nothing behind: no run
    directory is made and no call is sent."""
    notes: list[str] = []
    out = Path(opts.out) if opts.out else None
    existing = existing_run(out, resume=opts.resume) if out is not None else None
    if out is not None and existing is not None and opts.units is None:
        _refuse_gate_run(out)
    if out is not None and existing is not None:
        cfg, profiles = _resumed_config(existing, out, opts, notes)
    else:
        cfg = opts.config or load_config(opts.config_path, reference_data=opts.reference_data)
        profiles = load_profiles(cfg.path(cfg.providers))
        cfg = configure(cfg, opts, profiles, notes)
    shard = Shard.parse(opts.shard) if opts.shard else _manifest_shard(existing)
    if opts.shard_limits and shard is None:
        raise ConfigError(f"--shard-limits {opts.shard_limits}: this run is not sharded")
    where = opts.config_path or (str(out / MANIFEST) if out is not None and existing else "")
    hint = f"; `vera validate config {opts.config_path}` lists them" if opts.config_path else ""
    chosen = bool(opts.judges) or existing is not None
    preflight(cfg, where, judging=opts.judge, chosen_judges=chosen, shard=shard).refuse(hint)
    if warning := shared_cache_warning(cfg, profiles):
        notes.append(f"warning: {warning}")
    inputs = Inputs.load(cfg)
    notes += inputs.warnings
    if existing is None and (note := fit_stand_in_judges(inputs, chosen=bool(opts.judges))):
        notes.append(note)
    check_plan_size(inputs, shard)  # a plan too big to hold is refused before a run directory is made
    return Prepared(cfg, profiles, inputs, existing, shard, out, notes)


async def execute_run(opts: RunOptions) -> RunOutcome:
    """Run (or simulate) into a run directory; the outcome's card is scored later."""
    ready = prepare_run(opts)
    cfg, profiles, inputs, existing, shard, out, notes = (
        ready.cfg,
        ready.profiles,
        ready.inputs,
        ready.existing,
        ready.shard,
        ready.out,
        ready.notes,
    )
    run_dir = out or new_run_dir(cfg, cfg.fingerprint())
    resume = opts.resume_with or resume_command(opts.command, run_dir)
    fresh = not run_dir.exists()
    manifest: RunManifest | None = None
    try:
        async with RunSession(
            run_dir, resume=resume, grace_s=cfg.grace_s, call_bodies=cfg.call_bodies is not False
        ) as session:
            facts = RunFacts(inputs, session.store.read_conversation)
            tag = session_tag(existing)
            pool = await session.open_pool(profiles, cfg, shard, stand_ins=facts, session_tag=tag)
            sweep = plan_sweep(inputs, pool, shard=shard, judge=opts.judge, units=opts.units)
            facts.plan(sweep.jobs)
            notes += sweep.warnings
            roles: list[tuple[str, Role]] = [(s.ref, "chatbot") for s in sweep.chatbots]
            roles += [(s.ref, "user_agent") for s in sweep.user_agents]
            if opts.judge:
                roles += [(s.ref, "judge") for s in sweep.judges]
            for ref, role in roles:
                pool.client(ref, role)  # a missing key or unknown model fails here, before any work
            uses: list[tuple[ModelSpec, Role]] = [(s, "chatbot") for s in sweep.chatbots]
            uses += [(s, "user_agent") for s in sweep.user_agents]
            if opts.judge:
                uses += [(s, "judge") for s in sweep.judges]
            session.check_budget(uses)
            manifest = sweep.manifest(
                existing.run_id if existing is not None else run_dir.name,
                created_at=existing.created_at if existing is not None else None,
                limits=pool.limits(),
                # Only a run with a custom http chatbot has one: other manifests keep their bytes.
                session_tag=tag
                if tag and any(s.protocol == "http" for s in sweep.chatbots)
                else msgspec.UNSET,
                # A merged run resumed still names the shards its calls came from (a
                # call without a body says which shard kept none).
                merged_from=existing.merged_from if existing is not None else msgspec.UNSET,
            )
            if existing is not None:
                check_same_run(existing, manifest, run_dir)
                manifest = kept_identities(existing, manifest)
                manifest = found_killed(existing, manifest, run_dir, lambda: left_in(session.store, sweep))
            if not same_manifest(existing, manifest):
                session.store.write_manifest(manifest)
            session.count_kills(manifest, uses)  # the budget counts their calls in flight
            session.mark_open(open_session(opts.command, cfg, pool, sweep, judging=opts.judge))
            events = session.open_events()
            events.log.info(
                "run_started",
                run_id=manifest.run_id,
                jobs=len(sweep.jobs),
                chatbots=[s.ref for s in sweep.chatbots],
                judges=[s.ref for s in sweep.judges] if opts.judge else [],
                shard=manifest.shard,
                resumed=existing is not None,
                reused=sum(1 for j in sweep.jobs if session.store.conversation_done(j.id)),
            )
            session.open_cache(cfg)
            progress = session.open_progress(opts.progress, run_strings(manifest))
            if progress is not None:
                progress.plan(per_chatbot(sweep))
            swept = await session.work(
                run_sweep(
                    sweep,
                    session.store,
                    session.clients(cfg, opts.max_wait_s),
                    max_concurrency=cfg.max_concurrency,
                    progress=Fanout(progress, events),
                    stop=session.stop,
                    result=(counted := SweepResult()),
                )
            )
            # A second signal cancelled the sweep: what it did before is still counted.
            result = swept or forced_result(counted, session.stop.reason)
            session.budget_stop(result)
            finished = msgspec.structs.replace(
                manifest,
                updated_at=sweep.manifest(manifest.run_id).updated_at,
                stopped=result.stopped,
                killed_sessions=priced_kills(session.store, pool, manifest, uses),
            )
            if did_work(result) or not same_manifest(existing, finished):
                session.store.write_manifest(finished)
            else:  # a resume with nothing left to do leaves the manifest as it was
                finished = existing or finished
            if stats := pool.batch_stats():
                events.log.info("batches", **stats)  # created, submitted, resumed, requeued, live
            events.log.info("run_finished", **counts(result))
    except UserError as exc:
        if fresh and run_dir.is_dir() and not any(run_dir.iterdir()):
            run_dir.rmdir()  # nothing was done: leave no empty run directory behind
        # A resume needs the manifest on disk: only then is there a run to continue (a
        # folder that refused the manifest itself holds nothing to resume).
        if isinstance(exc, StorageError) and manifest is not None and (run_dir / MANIFEST).is_file():
            raise StorageError(
                f"{exc}; finished work is saved: make room (or make the folder writable), then resume with: {resume}"
            ) from None
        raise
    records = open_run(run_dir)
    status = run_status(
        finished,
        records.conversation_heads(),
        records.judgement_heads(),
        stopped=result.stopped,
        allow_failures=cfg.allow_failures,
        judging=opts.judge,
    )
    words = run_strings(finished)
    notes += failure_lines(
        records.conversation_heads().values(), records.judgement_heads().values() if opts.judge else (), words
    )
    if status.exit_code and status.state != "budget":  # a budget stop names its own way on
        notes.append(words("cli.continue", command=resume))
    # A second signal asked to exit at once: no card then.
    scores = opts.judge and not session.signal.forced
    return RunOutcome(
        run_dir=run_dir,
        result=result,
        notes=notes,
        status=status,
        resume=resume,
        scores=scores,
        words=run_strings(finished),
    )


def _refuse_gate_run(run_dir: Path) -> None:
    """Refuse to continue a sequential gate's run as an ordinary run (`vera run --resume`,
    `vera run --out` on it): it would plan every unit of the baseline, not the ones the
    gate drew, and the card would still say the scores are of the gate's units only.
    The gate's own command continues it; this names it."""
    record = read_gate(run_dir)
    if record is None:
        return
    s = record.settings
    parts = [program(), "gate", shlex.quote(s.baseline_path), "--candidate", shlex.quote(s.candidate)]
    parts += ["--margin", f"{s.margin:g}", "--alpha", f"{s.alpha:g}", "--wave", str(s.wave)]
    parts += ["--seed", str(s.order_seed)]
    if s.max_conversations is not None:
        parts += ["--max-conversations", str(s.max_conversations)]
    if s.method == "betting":
        parts.append("--exact")
    elif s.method == "asymptotic":
        parts += ["--boundary", "sequence"]
    elif s.spending not in (None, DEFAULT_SPENDING):
        parts += ["--spending", shlex.quote(str(s.spending))]
    parts += ["--out", shlex.quote(str(run_dir))]
    raise UserError(
        f"cannot continue {run_dir} as a run: it is a sequential gate's run (vera gate), which "
        "draws the baseline's units in waves; continue it with its gate: " + " ".join(parts)
    )


def _resumed_config(
    existing: RunManifest, run_dir: Path, opts: RunOptions, notes: list[str]
) -> tuple[RunConfig, dict[str, Any]]:
    """The run config and provider profiles a run continues with, from its manifest and
    the options given with the resume (checked against the run)."""
    profiles: dict[str, Any] = {}

    def apply(cfg: RunConfig) -> RunConfig:
        profiles.update(load_profiles(cfg.path(cfg.providers)))
        return configure(cfg, opts, profiles, notes)

    given = {
        k: getattr(opts, k)
        for k in (
            "providers",
            "user_agents",
            "judges",
            "seeds",
            "limit_personas",
            "sessions",
            "user_memory",
            "chatbot_memory",
        )
    }
    given |= {"seeds_flag": opts.seeds_flag, "shard": str(Shard.parse(opts.shard)) if opts.shard else None}
    cfg = resume_config(existing, run_dir, config_path=opts.config_path, given=given, apply=apply)
    needed = ("rubric", "personas", "user_prompts", "judge_prompts")
    check_inputs_present(existing, cfg, run_dir, needed)
    check_profiles_present(existing, cfg, profiles, run_dir)
    return cfg, profiles


def _manifest_shard(manifest: RunManifest | None) -> Shard | None:
    return Shard.parse(manifest.shard) if manifest is not None and manifest.shard else None


def session_tag(existing: RunManifest | None) -> str:
    """The tag a custom http chatbot's session ids carry in this run: a new random one
    for a new run, the run's own on a resume, none for a run made before the tag (its
    sessions went out under the bare ids, and a resumed one must go on under them)."""
    if existing is None:
        return secrets.token_hex(4)
    return existing.session_tag if isinstance(existing.session_tag, str) else ""


def same_manifest(existing: RunManifest | None, planned: RunManifest) -> bool:
    """Whether `planned` says nothing `existing` does not, but the time: a resume that
    has nothing to do does not rewrite the manifest."""
    return (
        existing is not None and msgspec.structs.replace(planned, updated_at=existing.updated_at) == existing
    )


def did_work(result: SweepResult) -> bool:
    """Whether a session added any record (done or failed) to the run."""
    return bool(
        result.conversations or result.conversations_failed or result.judgements or result.judgements_failed
    )


def counts(result: SweepResult) -> dict[str, Any]:
    return {k: v for k, v in vars(result).items() if v is not None}


def per_chatbot(sweep: Sweep) -> dict[str, int]:
    out: dict[str, int] = {}
    for j in sweep.jobs:
        out[j.chatbot] = out.get(j.chatbot, 0) + 1
    return out


def new_run_dir(cfg: RunConfig, sweep_key: str) -> Path:
    """A new run's folder: the start time, then the first hex digits of what defines
    the sweep, so two runs of one config sort by time and show they are the same sweep."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return cfg.path(cfg.runs_dir) / f"{stamp}-{sweep_key[:8]}"
