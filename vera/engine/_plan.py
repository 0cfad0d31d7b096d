"""Plan a sweep: the deterministic list of jobs and their ids.

A conversation job is (chatbot, persona, user-agent, seed); a judgement job is
(conversation, judge, instance). Each id is a hash of everything that determines the
job's output: model specs with their parameters, the persona's fields, the seed, the
prompt and rubric hashes, the simulation settings. The same inputs always give the same
ids, so a rerun on the same run directory skips what is done, and a changed input is a
new job rather than a silent mix.

`plan_sweep` builds the whole plan at once — every conversation job of this shard (or the
first `limit`), every judge slot if the run judges, the role-specific model specs and the
manifest's inputs — and nothing changes it afterwards.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import msgspec

from vera import __version__
from vera.clients.base import ChatClient
from vera.clients.batching import BATCH_PROTOCOLS
from vera.clients.families import fit_params, reasoning_problem
from vera.clients.structured import merge_params
from vera.engine._inputs import Inputs
from vera.engine._simulate import (
    ConversationJob,
    SimulationSettings,
)
from vera.errors import ConfigError
from vera.inputs import (
    MAX_PLANNED,
    ConversationConfig,
    RunConfig,
)
from vera.records import (
    AccountLimits,
    ImportInfo,
    MergedShard,
    ModelSpec,
    Persona,
    Role,
    RunManifest,
    SessionPlace,
)


def digest(*parts: Any) -> str:
    """A stable 16-hex-digit id of JSON-encodable parts (key order independent)."""
    data = msgspec.json.encode(msgspec.to_builtins(list(parts)), order="sorted")
    return hashlib.sha256(data).hexdigest()[:16]


def derive_seed(*parts: Any) -> int:
    return int(digest(*parts), 16) & 0x7FFFFFFF


def persona_key(p: Persona) -> str:
    return digest(p.fields)


class JudgeSlot(msgspec.Struct, frozen=True):
    ref: str
    instance: int


class Shard(msgspec.Struct, frozen=True):
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        if text.strip().lower() == "auto":
            return cls.from_environment(os.environ)
        try:
            k, n = (int(x) for x in text.split("/"))
        except ValueError:
            raise ConfigError(f"--shard {text!r}: expected K/N, e.g. 2/8") from None
        if not 1 <= k <= n:
            raise ConfigError(f"--shard {text!r}: K must be between 1 and N")
        return cls(k, n)

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> Shard:
        """K and N from the scheduler: a Slurm job array (`SLURM_ARRAY_TASK_ID` within
        `SLURM_ARRAY_TASK_MIN`..`_MAX`) or a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`,
        0-based; Kubernetes does not tell a pod the Job's `completions`, so the pod spec
        sets `VERA_SHARD_COUNT` to it)."""
        try:
            if (task := env.get("SLURM_ARRAY_TASK_ID")) is not None:
                low, high = int(env["SLURM_ARRAY_TASK_MIN"]), int(env["SLURM_ARRAY_TASK_MAX"])
                count = int(env.get("SLURM_ARRAY_TASK_COUNT", high - low + 1))
                if count != high - low + 1:
                    raise ConfigError(
                        f"--shard auto: the Slurm array has {count} tasks between {low} and {high}; "
                        "give it a plain range (--array=1-8, no step or list) or use --shard K/N"
                    )
                if not low <= int(task) <= high:
                    raise ConfigError(
                        f"--shard auto: SLURM_ARRAY_TASK_ID={task} is outside the array's {low}..{high}"
                    )
                return cls.parse(f"{int(task) - low + 1}/{count}")
            if (index := env.get("JOB_COMPLETION_INDEX")) is not None:
                if not env.get("VERA_SHARD_COUNT"):
                    raise ConfigError(
                        "--shard auto: JOB_COMPLETION_INDEX is set but VERA_SHARD_COUNT is not; "
                        "set it to the Job's completions in the pod spec"
                    )
                count = int(env["VERA_SHARD_COUNT"])
                if count < 1:
                    raise ConfigError(f"--shard auto: VERA_SHARD_COUNT={count} must be 1 or more")
                if not 0 <= int(index) < count:
                    raise ConfigError(
                        f"--shard auto: JOB_COMPLETION_INDEX={index} is not below VERA_SHARD_COUNT={count} "
                        "(0-based index); set VERA_SHARD_COUNT to the Job's completions"
                    )
                return cls(int(index) + 1, count)
        except (KeyError, ValueError) as exc:
            raise ConfigError(
                f"--shard auto: the scheduler's variables are incomplete or not numbers ({exc})"
            ) from None
        raise ConfigError(
            "--shard auto: neither SLURM_ARRAY_TASK_ID (a Slurm array) nor JOB_COMPLETION_INDEX "
            "(a Kubernetes Indexed Job) is set; give --shard K/N"
        )

    def keeps(self, job_id: str) -> bool:
        return int(job_id, 16) % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def conversation_jobs(
    *,
    chatbots: list[ModelSpec],
    user_agents: list[ModelSpec],
    personas: tuple[Persona, ...],
    seeds: list[int],
    user_prompts_sha: str,
    settings: SimulationSettings,
    shard: Shard | None = None,
    sessions: SessionPlan | None = None,
    session_type: str = "",
) -> list[ConversationJob]:
    """Every conversation of the sweep, in a deterministic interleaved order (sorted by
    id, so providers and personas mix and no account sits idle while another queues).
    With a multi-session plan, each arc's sessions follow one another in order (sorted
    by arc id, then place), and a shard keeps or leaves whole arcs."""
    jobs: list[ConversationJob] = []
    for replicate, seed in enumerate(seeds):
        for bot in chatbots:
            for ua in user_agents:
                for p in personas:
                    key = persona_key(p)
                    jid = digest("conversation", bot, ua, key, seed, user_prompts_sha, settings.id_form())
                    if sessions is not None:
                        # The arc's id covers its whole plan; the single-session id is kept
                        # unchanged above for runs without sessions.
                        jid = digest("arc", jid, sessions.id_form())
                    if shard is not None and not shard.keeps(jid):
                        continue
                    job = ConversationJob(
                        id=jid,
                        chatbot=bot.ref,
                        user_agent=ua.ref,
                        persona=p,
                        seed=derive_seed(seed, key, bot.ref, ua.ref),
                        replicate=replicate,
                        session_type=session_type,
                    )
                    jobs += arc_jobs(job, sessions) if sessions is not None else [job]
    jobs.sort(key=lambda j: (j.session.arc, j.session.index) if j.session is not None else (j.id, 0))
    return jobs


class SessionPlan(msgspec.Struct, frozen=True, kw_only=True):
    """The sessions of every arc: their types in order with each one's settings, and
    what carries over between them. Part of every arc's id."""

    types: tuple[str, ...]
    settings: tuple[SimulationSettings, ...]
    user_memory: bool
    chatbot_memory: str

    def id_form(self) -> dict[str, Any]:
        """This plan as an arc's id encodes it (each session's settings as a job id
        encodes them: `SimulationSettings.id_form`)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        data["settings"] = [s.id_form() for s in self.settings]
        return data


def session_plan(
    c: ConversationConfig, settings_of: Callable[[str], SimulationSettings]
) -> SessionPlan | None:
    """The run's session plan; None for a run with one session per persona."""
    if not c.multi_session:
        return None
    return SessionPlan(
        types=tuple(c.sessions),
        settings=tuple(settings_of(kind) for kind in c.sessions),
        user_memory=c.user_memory,
        chatbot_memory=c.chatbot_memory,
    )


def arc_jobs(arc: ConversationJob, plan: SessionPlan) -> list[ConversationJob]:
    """One conversation job per session of `arc`, with ids and seeds of their own."""
    count = len(plan.types)
    return [
        msgspec.structs.replace(
            arc,
            id=digest("session", arc.id, index, kind),
            seed=derive_seed(arc.seed, index, kind),
            session=SessionPlace(arc=arc.id, index=index, type=kind, count=count),
        )
        for index, kind in enumerate(plan.types, start=1)
    ]


def arcs(jobs: list[ConversationJob]) -> list[list[ConversationJob]]:
    """The jobs grouped by arc, each arc's sessions in order (a job without a session
    is an arc of one). `jobs` come from `conversation_jobs`: an arc's sessions adjacent."""
    out: list[list[ConversationJob]] = []
    for job in jobs:
        place, last = job.session, out[-1][0].session if out else None
        if place is not None and last is not None and last.arc == place.arc:
            out[-1].append(job)
        else:
            out.append([job])
    return out


def judgement_id(
    conversation_id: str,
    judge: ModelSpec,
    instance: int,
    rubric_sha: str,
    prompts_sha: str,
    max_attempts: int,
    terminal: str = "vera",
) -> str:
    parts: tuple[object, ...] = (conversation_id, judge, instance, rubric_sha, prompts_sha, max_attempts)
    # The default semantics stay out of the hash, so judgements made before the choice
    # existed keep their ids (a resumed or re-judged run reuses them).
    if terminal != "vera":
        parts = (*parts, f"terminal={terminal}")
    return digest("judgement", *parts)


# ---------------------------------------------------------------------------------------
# The sweep: every job and judge slot of a run, and its manifest
# ---------------------------------------------------------------------------------------


class Clients(Protocol):
    """What the pipeline needs from a client pool."""

    def client(self, ref: str, role: Role = "chatbot") -> ChatClient: ...

    def spec(self, ref: str) -> ModelSpec: ...

    def rubric_refusal(self, ref: str, rubric_key: str) -> str | None: ...

    def tier_refusal(self, ref: str, tier: str) -> str | None: ...


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
    def session_plan(self) -> SessionPlan | None:
        """The run's sessions per arc (None: one conversation per persona)."""
        return session_plan(self.inputs.config.conversation, self.inputs.settings)

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
            i.config.judge.terminal_semantics,
        )

    def manifest(
        self,
        run_id: str,
        created_at: str | None = None,
        *,
        jobs_planned: int | None = None,
        seeds: list[int] | None = None,
        config_sha256: str | None = None,
        offline: bool | None = None,
        shard: str | msgspec.UnsetType | None = msgspec.UNSET,
        missing_shards: list[str] | None = None,
        base_dir: str | None = None,
        imported: ImportInfo | None = None,
        limits: list[AccountLimits] | None = None,
        session_tag: str | msgspec.UnsetType = msgspec.UNSET,
        merged_from: list[MergedShard] | msgspec.UnsetType = msgspec.UNSET,
    ) -> RunManifest:
        """The run's manifest, whole. The keyword arguments are the fields that come from
        elsewhere (the run being judged again, the accounts' limits, an import) and win
        over what the sweep says, so no caller patches the record afterwards; left out,
        the sweep's own value stands (`shard` may be kept as None, hence UNSET)."""
        i = self.inputs
        now = datetime.now(UTC).isoformat(timespec="seconds")
        own_shard = str(self.shard) if self.shard else None
        return RunManifest(
            vera_version=__version__,
            run_id=run_id,
            rubric=i.rubric_version(),
            personas=i.personas.version,
            user_prompts=i.user_prompts.version,
            judge_prompts=i.judge_prompts.version,
            config_sha256=i.config.fingerprint() if config_sha256 is None else config_sha256,
            config=i.config.snapshot(),
            chatbots=self.chatbots,
            user_agents=self.user_agents,
            judges=self.judges,
            judge_instances=i.config.judge.instances,
            seeds=list(i.config.seeds) if seeds is None else seeds,
            offline=self.offline if offline is None else offline,
            created_at=created_at or now,
            updated_at=now,
            shard=own_shard if isinstance(shard, msgspec.UnsetType) else shard,
            jobs_planned=len(self.jobs) if jobs_planned is None else jobs_planned,
            imported=imported,
            reference=i.reference,
            target=i.target_info(),
            locale=i.locale_info(),
            grouping=i.grouping(),
            base_dir=i.config.base_dir if base_dir is None else base_dir,
            missing_shards=[] if missing_shards is None else missing_shards,
            limits=[] if limits is None else limits,
            terminal_semantics=i.config.judge.terminal_semantics,
            session_tag=session_tag,
            merged_from=merged_from,
        )


def seed_params(spec: ModelSpec, seed: int) -> dict[str, Any] | None:
    """A profile with `seed = "auto"` in its params gets a sampling seed derived from the
    job (the conversation's seed, or the judgement's id), so reruns with the same run
    seeds ask providers that honour seeds for the same samples."""
    return {"seed": seed} if spec.params.get("seed") == "auto" else None


def check_judges(inputs: Inputs, judges: list[ModelSpec], clients: Clients) -> None:
    """Every judge can answer the run's rubric (the lexical baseline judge knows only the
    rubric it was written for); the clients say which cannot."""
    batch = inputs.config.judge.mode == "batch"
    for spec in judges:
        if batch and (why := clients.tier_refusal(spec.ref, "batch")) is not None:
            raise ConfigError(batch_refusal(spec.ref, why))
        reason = clients.rubric_refusal(spec.ref, inputs.rubric.key)
        if reason is not None:
            raise ConfigError(f"{reason} ({inputs.rubric.path}); choose a model judge for this rubric")


def batch_refusal(ref: str, why: str) -> str:
    """The one line that refuses a judge in batch mode (`why` from `tier_refusal`)."""
    protocols = ", ".join(sorted(BATCH_PROTOCOLS))
    return (
        f'[judge] mode = "batch": judge {ref!r}: {why} (batch works with: {protocols}); '
        'use mode = "live" or a judge that can'
    )


def flex_refusal(role: str, ref: str, why: str) -> str:
    """The one line that refuses a role at the flex tier (`why` from `tier_refusal`)."""
    return f'[{role}] service_tier = "flex": {ref!r}: {why}; use the standard tier for this model'


def check_flex(role: str, specs: list[ModelSpec], cfg: RunConfig, clients: Clients) -> None:
    """`[ROLE] service_tier = "flex"` only for models that have a flex tier: OpenAI's
    protocol, and on OpenAI's own API a model its pricing page lists."""
    if getattr(cfg, role).service_tier != "flex":
        return
    for spec in specs:
        if (why := clients.tier_refusal(spec.ref, "flex")) is not None:
            raise ConfigError(flex_refusal(role, spec.ref, why))


def judge_slots(judges: list[ModelSpec], instances: int) -> list[JudgeSlot]:
    """Every (judge, instance) that judges each conversation."""
    return [JudgeSlot(j.ref, k) for j in judges for k in range(1, instances + 1)]


def role_spec(spec: ModelSpec, role: Role, cfg: RunConfig) -> tuple[ModelSpec, list[str]]:
    """`spec` with the parameters `role` actually sends to this model: the profile's,
    with the run config's `[ROLE.params]` (or the role's defaults) over them, fitted to
    the model's family. Returns warnings for parameters the profile or the config asked
    for that the family does not accept (defaults it refuses are left out silently: the
    defaults apply "where the model allows it"). A reasoning setting the model cannot
    take is a `ConfigError` naming the role, the model and where the setting came from."""
    role_params, explicit = cfg.role_params(role)
    if spec.protocol == "http":
        # A product samples as it is built to: its request is the profile's template, which
        # has no slot for a parameter. One asked for is named, never dropped without a word.
        asked = merge_params(spec.params, role_params)
        said = [
            f"warning: {role.replace('_', '-')} {spec.ref} ({spec.model}): not sending "
            f"{', '.join(f'{k}={v}' for k, v in sorted(asked.items()))} (a custom http chatbot is sent "
            "its profile's [http] template only: set its sampling in the product)"
        ]
        return msgspec.structs.replace(spec, params={}), said if asked else []
    merged = merge_params(spec.params, role_params)
    if spec.protocol == "offline":
        return msgspec.structs.replace(spec, params=merged), []
    fitted, dropped = fit_params(spec.protocol, spec.model, merged)
    problem = reasoning_problem(spec.protocol, spec.model, fitted)
    if problem is not None:
        field = problem.split(":")[0].split(".")[0]
        source = (
            f"[{role}.params] of the run config"
            if field in role_params
            else f"[params] of provider profile {spec.provider!r}"
        )
        raise ConfigError(f"{role.replace('_', '-')} {spec.ref} ({source}): {problem}")
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


def check_plan_size(inputs: Inputs, shard: Shard | None = None) -> int:
    """The number of conversations the sweep plans (this shard's part), refused with one
    line before anything is built when it would not fit in memory: every planned
    conversation is held as a job, and the whole sweep is enumerated to pick a shard's."""
    mine, problem = plan_size(inputs.config, len(inputs.selected_personas()), shard)
    if problem is not None:
        raise ConfigError(problem)
    return mine


def plan_size(cfg: RunConfig, personas: int, shard: Shard | None = None) -> tuple[int, str | None]:
    """The conversations a sweep of `personas` personas plans (this shard's part), and
    why that is too many to hold (None: it is not)."""
    sessions = len(cfg.conversation.sessions) if cfg.conversation.multi_session else 1
    total = len(cfg.seeds) * len(cfg.chatbots) * len(cfg.user_agents) * personas * sessions
    mine = -(-total // shard.count) if shard else total
    if mine <= MAX_PLANNED and total <= MAX_PLANNED * 50:
        return mine, None
    how = f"{len(cfg.seeds):,} seed(s) × {len(cfg.chatbots):,} chatbot(s) × {len(cfg.user_agents):,} user-agent(s) × {personas:,} persona(s)"
    if sessions > 1:
        how += f" × {sessions} sessions"
    return mine, (
        f"the sweep plans {total:,} conversations ({how}); one process plans at most {MAX_PLANNED:,}: "
        "use fewer seeds or personas, or split the sweep with --shard K/N"
        + (f" (this shard would plan {mine:,})" if shard else "")
    )


def plan_sweep(
    inputs: Inputs,
    clients: Clients,
    *,
    shard: Shard | None = None,
    judge: bool = True,
    limit: int | None = None,
    units: frozenset[tuple[str, str, int]] | None = None,
) -> Sweep:
    """The whole plan, fixed here: `judge=False` plans no judging (the judges are still
    recorded, for a later `vera judge`), `limit` keeps only the first jobs (a benchmark's
    exact count), `units` only the jobs of these (persona, user-agent, replicate) units
    (a sequential gate's waves: the ids are the full plan's, so a wave's jobs are the
    same jobs whichever wave plans them)."""
    cfg = inputs.config
    warnings: list[str] = []
    chatbots = role_specs(cfg.chatbots, "chatbot", clients, cfg, warnings)
    user_agents = role_specs(cfg.user_agents, "user_agent", clients, cfg, warnings)
    judges = role_specs(cfg.judges, "judge", clients, cfg, warnings)
    for role, specs in (("user_agent", user_agents), ("chatbot", chatbots)):
        check_flex(role, specs, cfg, clients)
    check_judges(inputs, judges, clients)
    check_plan_size(inputs, shard)
    jobs = conversation_jobs(
        chatbots=chatbots,
        user_agents=user_agents,
        personas=inputs.selected_personas(),
        seeds=list(cfg.seeds),
        user_prompts_sha=inputs.user_prompts.version.sha256,
        settings=inputs.settings(),
        shard=shard,
        sessions=session_plan(cfg.conversation, inputs.settings),
        session_type=cfg.conversation.sessions[0] if len(cfg.conversation.sessions) == 1 else "",
    )
    if units is not None:
        jobs = [j for j in jobs if (j.persona.name, j.user_agent, j.replicate) in units]
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
