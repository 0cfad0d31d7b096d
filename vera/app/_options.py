"""Command options, and the one function that turns them into a run config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vera.errors import ConfigError
from vera.inputs import (
    TARGET_FIELDS,
    RunConfig,
    absolute,
    apply_locale,
    apply_target,
    check_limits_url,
    list_problems,
    skip_reason,
)


@dataclass
class RunOptions:
    config_path: str | None = None
    providers: str | None = None
    seeds: list[int] | None = None
    out: str | None = None
    resume: bool = False
    max_concurrency: int | None = None
    target: str | None = None
    locale: str | None = None  # --locale TAG|DIR
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
    call_bodies: bool | None = None  # --no-call-bodies: False
    max_cost: float | None = None
    max_wait_s: float = 0.0  # --max-wait: how long to wait on pending batches (0: no bound)
    reference_data: str | None = None
    allow_failures: float | None = None
    sessions: list[str] | None = None  # --sessions intake,follow-up
    user_memory: bool | None = None  # --user-memory / --no-user-memory
    chatbot_memory: str | None = None  # --chatbot-memory none|history
    max_total_words: int | None = None  # -w / --max-total-words
    judge_max_concurrent: int | None = None  # --judge-max-concurrent N
    per_judge: bool = False  # --per-judge
    seeds_flag: str = "--seeds"  # how the user gave the seeds (--seed or --seeds), for messages
    command: str = "run"  # the command that continues this run: run or simulate
    # `vera gate`: the config a run starts from, given whole (the baseline's) instead of
    # read from config_path, and the (persona, user-agent, replicate) units it plans.
    config: RunConfig | None = None
    units: frozenset[tuple[str, str, int]] | None = None
    # The whole command that continues this run when it is not `vera COMMAND --resume
    # DIR`: a gate's wave is continued by the gate, never by `vera run`, which would run
    # every unit of the baseline's plan.
    resume_with: str = ""


@dataclass
class JudgeOptions:
    run_dir: str | None = None  # judge the conversations of this run
    transcripts: str | None = None  # or import these transcripts into a new run
    out: str | None = None
    config_path: str | None = None
    judges: list[str] = field(default_factory=list)
    instances: int | None = None
    target: str | None = None
    personas: str | None = None
    max_concurrency: int | None = None
    cache: bool | None = None
    call_bodies: bool | None = None  # --no-call-bodies: False
    max_cost: float | None = None
    max_wait_s: float = 0.0  # --max-wait: how long to wait on pending batches (0: no bound)
    reference_data: str | None = None
    allow_failures: float | None = None
    sample: int | None = None  # --sample N: judge only a seeded sample of N conversations
    sample_seed: int = 0  # --sample-seed
    judge_max_concurrent: int | None = None  # --judge-max-concurrent N
    per_judge: bool = False  # --per-judge


def configure(
    cfg: RunConfig,
    opts: RunOptions | JudgeOptions,
    profiles: dict[str, Any] | None = None,
    notes: list[str] | None = None,
) -> RunConfig:
    """`cfg` with every option the user gave over it, checked. The one place options
    become settings: `vera judge` has no providers, seeds or shards, `vera run` no judge
    instances, so each option is applied only where the command has it."""

    def given(name: str) -> Any:
        return getattr(opts, name, None)

    refuse_contradictions(opts)
    if (value := given("providers")) is not None:
        cfg.chatbots = select_providers(value, profiles or {}, notes if notes is not None else [])
    if value := given("seeds"):
        cfg.seeds = value
    if (value := given("max_concurrency")) is not None:
        cfg.max_concurrency = value
    if value := given("reference_data"):  # before --target, which may name a folder in it
        cfg.reference.data = str(absolute(value))
    if value := given("target"):  # before --personas, which may replace the target's
        apply_target(cfg, value)
    if value := given("locale"):  # after --target, whose files it leaves alone
        apply_locale(cfg, value, keep=TARGET_FIELDS if cfg.target else ())
    if value := given("personas"):
        cfg.personas = str(absolute(value))
    if (value := given("limit_personas")) is not None:
        cfg.persona_limit = value
    if value := given("judges"):
        cfg.judges = value
    if value := given("user_agents"):
        cfg.user_agents = value
    if (value := given("instances")) is not None:
        cfg.judge.instances = value
    if (value := given("judge_max_concurrent")) is not None:
        cfg.judge.max_concurrent = value
    if given("per_judge"):
        if not isinstance(cfg.judge.max_concurrent, int):
            raise ConfigError(
                "--per-judge applies --judge-max-concurrent to each judge model: give "
                "--judge-max-concurrent N too (or [judge] max_concurrent in the config)"
            )
        cfg.judge.per_judge = True
    if (value := given("cache")) is not None:
        cfg.cache = value
    if value := given("cache_dir"):
        cfg.cache_dir = str(absolute(value))
    if (value := given("call_bodies")) is not None:
        cfg.call_bodies = value
    if (value := given("max_cost")) is not None:
        cfg.max_cost_usd = value
    if value := given("shard_limits"):
        cfg.shard_limits = value  # click checked the choice
    if (value := given("limits_url")) is not None:
        cfg.limits_url = check_limits_url(value) if value else ""
    if (value := given("allow_failures")) is not None:
        cfg.allow_failures = value
    if (value := given("sessions")) is not None:
        cfg.conversation.sessions = value
    if (value := given("max_total_words")) is not None:
        cfg.conversation.max_total_words = value
    if (value := given("user_memory")) is not None:
        cfg.conversation.user_memory = value
        if value and not cfg.conversation.multi_session:
            raise ConfigError(
                "--user-memory: each persona has one session in this run, so there is nothing to "
                "remember; give --sessions TYPE,TYPE (or sessions in the config's [conversation])"
            )
    if (value := given("chatbot_memory")) is not None:
        cfg.conversation.chatbot_memory = "history" if value == "history" else "none"
        if not cfg.conversation.multi_session:
            raise ConfigError(
                "--chatbot-memory: each persona has one session in this run, so there is nothing to "
                "carry over; give --sessions TYPE,TYPE (or sessions in the config's [conversation])"
            )
    cfg.check()
    return cfg


SHARD_LIMITS_ALONE = "--shard-limits {} applies to a sharded run: give --shard K/N too"


def refuse_contradictions(opts: RunOptions | JudgeOptions) -> None:
    """Options that cannot all be meant, or a list that names one model twice (a model
    twice is planned twice under one job id, so its run could never finish; a judge
    twice is pooled twice): refused, naming the options."""
    for flag, values in (("--judge", opts.judges), ("--user-agent", getattr(opts, "user_agents", []))):
        if problems := list_problems(flag, values, "model"):
            raise ConfigError("; ".join(problems))
    if not isinstance(opts, RunOptions):
        return
    if opts.cache is False and opts.cache_dir:
        raise ConfigError(
            f"--no-cache and --cache-dir {opts.cache_dir}: give one (--no-cache replays nothing, "
            "--cache-dir replays from a shared cache)"
        )
    # A resumed run's manifest says whether it is sharded: checked where it is read.
    if opts.shard_limits and not opts.shard and not opts.resume:
        raise ConfigError(SHARD_LIMITS_ALONE.format(opts.shard_limits))


def select_providers(value: str, profiles: dict[str, Any], notes: list[str]) -> list[str]:
    """`all` = every profile whose key is present (saying which were skipped and why);
    otherwise a comma-separated list of profile names or provider/model refs."""
    if value.strip() != "all":
        refs = [v.strip() for v in value.split(",") if v.strip()]
        if not refs:
            raise ConfigError(
                f"--providers {value!r}: names no chatbot; give profile names or provider/model refs "
                "separated by commas, or 'all'"
            )
        if problems := list_problems("--providers", refs, "chatbot"):
            raise ConfigError("; ".join(problems))
        return refs
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
