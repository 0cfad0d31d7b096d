"""`vera judge RUN_DIR`: judge the complete conversations of an existing run (e.g.
after `vera simulate`) with its judges or others. Judging a run again continues where
it stopped. Importing transcripts (`vera.app._importing`) ends in `judge` and `judged`
here too; `vera.app._judge_command` chooses between the two."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from vera.app._checks import preflight
from vera.app._killed import found_killed, left_in, open_session, priced_kills
from vera.app._options import JudgeOptions, configure
from vera.app._progress import run_strings
from vera.app._result import RunOutcome, failure_lines
from vera.app._resume import check_inputs_present, restored_config, resume_command, run_to_resume
from vera.app._run import counts, did_work, forced_result, same_manifest
from vera.app._session import RunSession
from vera.app._stand_ins import RunFacts
from vera.engine import Inputs, Sweep, SweepResult, check_judges, judge_conversations, judge_slots, role_specs
from vera.errors import ConfigError, StorageError, UserError
from vera.inputs import PersonaSet, RunConfig, Template, UserPrompts, load_judge_prompts, load_profiles
from vera.records import Conversation, ImportInfo, JudgeSample, ModelSpec, RunManifest
from vera.report import run_status, tally
from vera.rubric import load_rubric, validate_rubric
from vera.stats.sampling import judging_sample
from vera.store import MANIFEST, Fanout, open_run


async def judge_existing(opts: JudgeOptions) -> RunOutcome:
    """Judge the complete conversations of the run in `opts.run_dir`."""
    if opts.run_dir is None:
        raise UserError("vera judge needs a RUN_DIR to judge, or --transcripts to import")
    run_dir = Path(opts.run_dir)
    for value, flag in (
        (opts.config_path, "--config"),
        (opts.target, "--target"),
        (opts.personas, "--personas"),
        (opts.out, "--out"),
    ):
        if value:
            raise ConfigError(
                f"{flag} is for importing --transcripts; judging {run_dir} uses the settings in its manifest"
            )
    manifest = run_to_resume(run_dir)
    cfg = restored_config(manifest)
    cfg.judges = [j.ref for j in manifest.judges]
    if manifest.reference is not None:  # its prompt templates are read from there again
        cfg.reference.data = manifest.reference.path
    cfg = configure(cfg, opts)
    check_inputs_present(manifest, cfg, run_dir, ("rubric", "judge_prompts"))
    # The checks `vera run` makes, of what judging uses: the judges, rubric and prompts.
    preflight(cfg, str(run_dir / MANIFEST), chosen_judges=True, judging_only=True).refuse()
    inputs = _judging_inputs(cfg, manifest)
    for key, now in (("rubric", inputs.rubric_version()), ("judge_prompts", inputs.judge_prompts.version)):
        was = getattr(manifest, key)
        if was.sha256 != now.sha256:
            raise UserError(
                f"cannot judge {run_dir}: the {key.replace('_', ' ')} changed since this run was made: "
                f"it used {was.name} {was.version} (sha256 {was.sha256[:12]}); {now.path} now holds "
                f"{now.name} {now.version} (sha256 {now.sha256[:12]}); judge in a new run"
            )
    async with RunSession(
        run_dir,
        resume=resume_command("judge", run_dir),
        grace_s=cfg.grace_s,
        call_bodies=cfg.call_bodies is not False,
    ) as session:
        # By id, from the store's index: each is read back only when it is judged (see
        # `judge_conversations`).
        store = session.store
        conversations = [cid for cid in store.conversations if store.conversation_done(cid)]
        sample, note = _sample(opts, manifest, len(conversations))
        if sample is not None:
            conversations = judging_sample(conversations, sample.size, sample.seed)
        done = await judge(
            session, cfg, inputs, manifest, conversations, max_wait_s=opts.max_wait_s, sample=sample
        )
    outcome = judged(done, run_dir, session.signal.resume, cfg.allow_failures)
    if note:
        outcome.notes.insert(0, note)
    return outcome


def _sample(opts: JudgeOptions, manifest: RunManifest, available: int) -> tuple[JudgeSample | None, str]:
    """The sample to judge: the one asked for, or else the run's own (so that `vera
    judge RUN_DIR` continuing a sampled judging stays in its sample), and a note when
    the sample asked for holds every complete conversation."""
    if opts.sample is None:
        return (manifest.judge_sample or None), ""
    if opts.sample <= 0:  # the command line refuses it first; a caller of the API too
        raise UserError(f"--sample must be a whole number of 1 or more, not {opts.sample}")
    sample = JudgeSample(size=opts.sample, seed=opts.sample_seed)
    if opts.sample >= available:
        return (
            sample,
            f"--sample {opts.sample}: the run has {available} complete conversation(s); judging all",
        )
    return sample, ""


def _judging_inputs(cfg: RunConfig, manifest: RunManifest) -> Inputs:
    """What judging reads is the rubric and the judge prompts. The persona set and the
    user-agent prompts are only carried along (their versions stay in the manifest), so
    a run whose persona file has moved away can still be judged."""
    if all(f.exists() for f in cfg.persona_files()) and cfg.path(cfg.user_prompts).exists():
        return Inputs.load(cfg)
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


def imported_spec(ref: str) -> ModelSpec:
    return ModelSpec(ref=ref, provider="imported", protocol="imported", model=ref)


def _manifest(
    sweep: Sweep, run_dir: Path, existing: RunManifest | None, jobs: int, imported: ImportInfo | None
) -> RunManifest:
    """The manifest of a judging session, whole: a run judged again keeps what it was
    planned with (its seeds, jobs, shard, config hash); an import has its own."""
    if existing is None:
        return sweep.manifest(run_dir.name, jobs_planned=jobs, imported=imported)
    return sweep.manifest(
        existing.run_id,
        created_at=existing.created_at,
        jobs_planned=existing.jobs_planned,
        seeds=existing.seeds,
        config_sha256=existing.config_sha256,
        offline=existing.offline or sweep.offline,
        shard=existing.shard,
        missing_shards=existing.missing_shards,
        # A run from before base_dir was recorded keeps the sweep's.
        base_dir=existing.base_dir or None,
        imported=imported,
        # A resume of the run's failed conversations goes on in their sessions.
        session_tag=existing.session_tag,
        # A merged run judged again still names the shards its calls came from.
        merged_from=existing.merged_from,
    )


@dataclass
class Judged:
    """What a judging session did; its status is read once the session is closed."""

    result: SweepResult
    manifest: RunManifest
    warnings: list[str]  # parameters a judge's model family refused
    forced: bool  # a second signal cancelled the work: no card


async def judge(
    session: RunSession,
    cfg: RunConfig,
    inputs: Inputs,
    manifest: RunManifest | None,
    conversations: Sequence[Conversation | str],
    imported: tuple[list[str], list[str], ImportInfo] | None = None,
    max_wait_s: float = 0.0,
    sample: JudgeSample | None = None,
) -> Judged:
    """Judge `conversations` in an open session: the run's own (by id) or imported ones."""
    run_dir = session.run_dir
    resume = session.signal.resume
    warnings: list[str] = []  # parameters a judge's model family refused
    planned: RunManifest | None = None
    try:
        profiles = load_profiles(cfg.path(cfg.providers))
        events = session.open_events()
        pool = await session.open_pool(
            profiles, cfg, stand_ins=RunFacts(inputs, session.store.read_conversation)
        )
        judges = role_specs(cfg.judges, "judge", pool, cfg, warnings)
        for spec in judges:
            pool.client(spec.ref, "judge")
        if imported is not None:
            chatbots = [imported_spec(r) for r in imported[0]]
            agents = [imported_spec(r) for r in imported[1]]
        elif manifest is not None:
            chatbots, agents = manifest.chatbots, manifest.user_agents
        else:
            raise TypeError("judge needs the run's manifest or imported transcripts")
        check_judges(inputs, judges, pool)
        session.check_budget([(spec, "judge") for spec in judges])
        sweep = Sweep(
            inputs=inputs,
            chatbots=chatbots,
            user_agents=agents,
            judges=judges,
            jobs=[],
            slots=judge_slots(judges, cfg.judge.instances),
        )
        planned = _manifest(sweep, run_dir, manifest, len(conversations), imported[2] if imported else None)
        planned = msgspec.structs.replace(planned, judge_sample=sample or msgspec.UNSET)
        if manifest is not None:
            ids = [c if isinstance(c, str) else c.id for c in conversations]
            planned = found_killed(
                manifest, planned, run_dir, lambda: left_in(session.store, sweep, ids, manifest.jobs_planned)
            )
        if not same_manifest(manifest, planned):
            session.store.write_manifest(planned)
        session.count_kills(planned, [(spec, "judge") for spec in judges])  # the budget counts them
        session.mark_open(open_session("judge", cfg, pool, sweep, judging=True))
        session.open_cache(cfg)
        swept = await session.work(
            judge_conversations(
                sweep,
                session.store,
                session.clients(cfg, max_wait_s),
                sorted(conversations, key=lambda c: c if isinstance(c, str) else c.id),
                max_concurrency=cfg.max_concurrency,
                progress=Fanout(session.open_progress(strings=run_strings(planned)), events),
                stop=session.stop,
                result=(counted := SweepResult()),
            )
        )
        # A second signal cancelled the sweep: what it did before is still counted.
        result = swept or forced_result(counted, session.stop.reason)
        session.budget_stop(result)
        kills = priced_kills(session.store, pool, planned, [(spec, "judge") for spec in judges])
        planned = msgspec.structs.replace(planned, stopped=result.stopped, killed_sessions=kills)
        if did_work(result) or not same_manifest(manifest, planned):
            session.store.write_manifest(planned)
        elif manifest is not None:  # judged again with nothing left to do: left as it was
            planned = manifest
        if stats := pool.batch_stats():
            events.log.info("batches", **stats)  # created, submitted, resumed, requeued, live
        events.log.info("judging_finished", **counts(result))
    except StorageError as exc:
        if planned is None:
            raise
        raise StorageError(
            f"{exc}; finished work is saved: make room (or make the folder writable), then: {resume}"
        ) from None
    return Judged(result, planned, warnings, session.signal.forced)


def judged(done: Judged, run_dir: Path, resume: str, allow_failures: float) -> RunOutcome:
    """The outcome of a judging session, its status read from the run directory once
    the session is closed."""
    records = open_run(run_dir)
    conversation_heads, judgement_heads = records.conversation_heads(), records.judgement_heads()
    status = run_status(
        done.manifest,
        conversation_heads,
        judgement_heads,
        stopped=done.result.stopped,
        allow_failures=allow_failures,
    )
    # Only judging can be continued: a transcript that failed to import stays failed
    # however often the run is judged again, so it earns no hint.
    _, judgements = tally(done.manifest, conversation_heads, judgement_heads)
    retryable = status.state != "failed" or judgements.failed > 0
    words = run_strings(done.manifest)
    notes = failure_lines(conversation_heads.values(), judgement_heads.values(), words)
    notes += (
        [words("cli.continue_judging", command=resume)]
        if status.exit_code and retryable and status.state != "budget"  # it names its own way on
        else []
    )
    return RunOutcome(
        run_dir=run_dir,
        result=done.result,
        notes=[*done.warnings, *notes],
        status=status,
        resume=resume,
        scores=not done.forced,
        words=words,
    )
