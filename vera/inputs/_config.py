"""The run configuration: what to evaluate, with what, and how.

A config is a TOML file (see ``configs/``); every field has a default, so the smallest
config is empty. Relative paths are resolved against the directory of the config file
(or, for the built-in defaults, the repository root). Command-line options override
the file. Unknown keys are errors, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, urlsplit

import msgspec

from vera.errors import ConfigError
from vera.inputs._defaults import builtin_config, data_root, runs_root
from vera.inputs._locales import PACK_FILES, apply_locale
from vera.inputs._refconfig import is_reference_layout, translate
from vera.inputs._refdir import REFERENCE_PREFIX, reference_folder
from vera.inputs._targets import ReferenceDir, Target, find_target, load_target
from vera.ranges import (
    LEVEL,
    MAX_RESAMPLES,
    POSITIVE_SECONDS,
    SECONDS,
    SEED,
    SHARE,
    Range,
    sampling_problems,
)
from vera.records import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, ConfigSnapshot
from vera.rubric import TERMINAL_SEMANTICS
from vera.text import decode

# Shared limits live in Redis (vera.clients.shared_limits); the URL is an input, checked
# here with the rest of the config so this layer never imports the clients.
PASSWORD_ENV = "VERA_REDIS_PASSWORD"
_SCHEMES = ("redis", "rediss", "unix")


def check_limits_url(url: str) -> str:
    """`url` if it can name a Redis server for shared limits; ConfigError otherwise."""
    form = "expected redis://HOST:PORT/DB (or rediss://, unix://)"
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # not echoed: it may hold a password
        raise ConfigError(f"--limits-url: {form}: {exc}") from None
    if parts.password is not None:
        raise ConfigError(
            f"--limits-url: put the Redis password in {PASSWORD_ENV}, not in the URL "
            "(the URL is recorded in the run's manifest)"
        )
    expected = f"--limits-url {url!r}: {form}"
    if parts.scheme not in _SCHEMES:
        raise ConfigError(expected)
    try:
        # Reading the port checks it: the redis client reads it only as it connects,
        # and a bad one was a traceback there.
        parts.port  # noqa: B018
    except ValueError as exc:
        raise ConfigError(f"{expected}: {exc}") from None
    # The redis client takes a database that is not a number as 0, in silence.
    db = parts.path.strip("/") if parts.scheme != "unix" else ""
    db = db or next((v for k, v in parse_qsl(parts.query) if k == "db"), "")
    if db and not db.isdigit():
        raise ConfigError(f"{expected}: the database {db!r} is not a number")
    return url


def absolute(path: str | Path) -> Path:
    """`path` made absolute without resolving symbolic links, so that messages name a
    file the way the user reaches it (`~/evals/personas.tsv`, not the disk it is linked
    to); `..` is folded only where that still names the same file."""
    p = Path(path).expanduser()
    p = p if p.is_absolute() else Path.cwd() / p
    folded = Path(os.path.normpath(p))
    return folded if folded == p or os.path.realpath(folded) == os.path.realpath(p) else p


# Where the built-in defaults' relative paths resolve: the checkout, or the package data
# of an installed vera (see vera.inputs._defaults).
REPO_ROOT = data_root()


# Sane bounds, so a typo is refused rather than run (docs/configuration.md, "Bounds"): a
# conversation longer than MAX_TURNS messages outgrows every model's context window; more
# seeds than MAX_SEEDS, or a plan of more than MAX_PLANNED conversations per process,
# would not fit in memory (use shards: each plans only its part); MAX_RESAMPLES bootstrap
# resamples already give interval ends a Monte Carlo error far below their rounding.
MAX_TURNS = 1_000
MAX_SEEDS = 10_000
MAX_PLANNED = 1_000_000


class SessionConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`[conversation.session.TYPE]`: what one session type changes of `[conversation]`
    (None = as there)."""

    max_turns: int | None = None
    min_turns: int | None = None
    first_speaker: Literal["user", "chatbot"] | None = None
    opening_message: str | None = None
    chatbot_system_prompt: str | None = None


# A session type is part of transcript file names (`..._run1_s2_follow-up.txt`), where
# `_` separates the parts.
_SESSION_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")


class ConversationConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    max_turns: int = 30
    min_turns: int = 10
    first_speaker: Literal["user", "chatbot"] = "user"
    opening_message: str = ""
    chatbot_system_prompt: str = ""
    # Several sessions per persona (an *arc*, docs/sessions.md): their types in order;
    # empty or one type = one conversation per persona, as before.
    sessions: list[str] = msgspec.field(default_factory=list)
    session: dict[str, SessionConfig] = msgspec.field(default_factory=dict)
    # The simulated user remembers its earlier sessions (vera's option; the reference's
    # simulated user starts every session fresh).
    user_memory: bool = False
    # What a model chatbot is sent of earlier sessions: "none" (this session only, as the
    # reference sends a model: the default) or "history" (vera's replay of the earlier
    # sessions' messages before this session's). A custom HTTP chatbot is always sent
    # this session only: it keeps its own memory.
    chatbot_memory: Literal["history", "none"] = "none"
    # The reference's --max-total-words: a conversation ends after the chatbot's reply
    # once the words of both sides reach this many (ended_by "max_words"). Unset (no
    # limit) it is left out of the manifest, so older runs keep their bytes and fingerprint.
    max_total_words: int | msgspec.UnsetType = msgspec.UNSET

    @property
    def multi_session(self) -> bool:
        return len(self.sessions) > 1

    def for_session(self, kind: str) -> ConversationConfig:
        """These settings with the session type's own over them."""
        given = self.session.get(kind)
        if given is None:
            return self
        changes = {k: v for k, v in msgspec.structs.asdict(given).items() if v is not None}
        return msgspec.structs.replace(self, **changes)


# Sampling parameters of each role when the run config gives none: the judge
# deterministic (the reference method judges at temperature 0), the simulated user varied
# like a person, the chatbot as deployed (its profile's parameters only). A family that
# does not accept one of them (vera/clients/families.py) is sent it not at all.
DEFAULT_ROLE_PARAMS: dict[str, dict[str, Any]] = {
    "judge": {"temperature": 0},
    "user_agent": {"temperature": 0.7},
    "chatbot": {},
}


class JudgeConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    instances: int = 1
    max_attempts: int = 3
    params: dict[str, Any] | None = None  # [judge.params]; None = DEFAULT_ROLE_PARAMS
    # "tail": once no job is left to start, long rubric chains ask their likely next
    # question early (a few unused, paid questions for a shorter end of the sweep;
    # vera.rubric._concurrent); "off": only questions the walk reaches are asked; "auto"
    # (the default): "tail" live, "off" in batch mode, where the latency it buys is
    # not there to buy and each unused question is paid for (`asks_ahead`).
    ask_ahead: Literal["auto", "tail", "off"] = "auto"
    # What the rubric's END does to the ratings already collected: "vera" keeps them,
    # "reference" reproduces the VERA-MH judge (every dimension Not Relevant); see
    # docs/rubric.md.
    terminal_semantics: str = "vera"  # checked in RunConfig.check (one line naming the choices)
    # "live": one API call per question; "batch": every walk's next question goes into
    # one batch per wave, at the provider's batch price (docs/batch.md). Only for judge
    # profiles whose protocol has a batch API here (checked when the run is planned).
    mode: Literal["live", "batch"] = "live"
    batch_poll_s: Annotated[float, msgspec.Meta(gt=0)] = 30.0  # between polls of a pending batch
    batch_collect_s: Annotated[float, msgspec.Meta(ge=0)] = 0.5  # a wave is closed after this quiet time
    batch_requeue: Annotated[int, msgspec.Meta(ge=0, le=10)] = (
        2  # waves an unanswered request gets, then live
    )
    # Check each conversation's simulated user with the first judge model (one more
    # structured call per conversation, through the judge's client: docs/realism.md).
    check_users: bool = False
    # The reference's judge `--max-concurrent N [--per-judge]`: at most N rubric walks
    # (one conversation by one judge instance) in flight at once, in total or, with
    # `per_judge`, for each judge model. Unset: bounded only by the conversations in
    # flight and each account's limits. Neither changes an answer: both are left out of
    # the fingerprint, and out of the manifest when unset.
    max_concurrent: int | msgspec.UnsetType = msgspec.UNSET
    per_judge: bool | msgspec.UnsetType = msgspec.UNSET

    def asks_ahead(self) -> bool:
        """Whether the judge asks ahead at the end of the sweep (`ask_ahead`)."""
        return self.ask_ahead == "tail" or (self.ask_ahead == "auto" and self.mode == "live")


class RoleConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`[user_agent]` / `[chatbot]`: the role's sampling parameters (`[ROLE.params]`),
    laid over each model's profile parameters; None = DEFAULT_ROLE_PARAMS."""

    params: dict[str, Any] | None = None
    # "flex": OpenAI's flex tier (slower, sometimes without capacity, priced as batch);
    # OpenAI models only, checked when the run is planned. docs/batch.md#flex
    service_tier: Literal["standard", "flex"] = "standard"
    # When flex has no capacity (or fails): "standard" asks again at once at the standard
    # tier; "retry" retries at flex with the profile's backoff, then fails the call.
    flex_fallback: Literal["standard", "retry"] = "standard"


class ReferenceConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`[reference]`: the reference tool's data folder, what it is, and the content hash
    of each of its files this config expects (a differing file is refused, so a run
    never silently mixes another version's rubric or prompts into "v1.1" numbers)."""

    data: str = ""  # the folder; empty = $VERA_MH_DATA; `--reference-data` overrides
    name: str = ""
    version: str = ""
    sha256: dict[str, str] = msgspec.field(default_factory=dict)  # file name -> sha256


class StatsConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    resamples: int = DEFAULT_RESAMPLES
    confidence: float = DEFAULT_CONFIDENCE
    seed: int = 0


# A run's manifest stores this config as `vera.records.ConfigSnapshot`, a copy of these
# Structs without `base_dir` (records cannot import this layer): a field added, renamed or
# retyped here is changed there too (tests/test_config_snapshot.py fails until it is).
class RunConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    chatbots: list[str] = msgspec.field(
        default_factory=lambda: ["offline/best-practice", "offline/risk-ignoring"]
    )
    user_agents: list[str] = msgspec.field(default_factory=lambda: ["offline/scripted-user"])
    judges: list[str] = msgspec.field(default_factory=lambda: ["offline/lexical-judge"])
    # A target (a name such as "vera-si", a folder or a target file, or "reference:SI"
    # in a VERA-MH checkout) supplies the four fields below; a config names either the
    # target or those fields (vera.inputs._targets).
    target: str = ""
    # A locale pack (a tag such as "zh-CN" for vera's own under locales/, or a folder):
    # its personas, prompts, rubric texts and crisis resources replace the base's where
    # it holds them (vera.inputs._locales). UNSET rather than "" when none is named, so
    # the manifests (and fingerprints) of runs without a locale stay byte for byte as they were.
    locale: str | msgspec.UnsetType = msgspec.UNSET
    personas: str | list[str] = "personas/vera-personas.tsv"  # several files are one set
    rubric: str = "rubrics/vera-si.tsv"
    user_prompts: str = "personas/prompts"
    judge_prompts: str = "rubrics/prompts"
    # How the card groups personas: "risk" (suicide risk level), a persona column, or
    # empty for the target's own grouping (vera-si: risk level).
    group_by: str = ""
    # Persona columns copied into the results beside each conversation (the target's).
    annotation_columns: list[str] = msgspec.field(default_factory=list)
    providers: str = "providers"
    seeds: list[int] = msgspec.field(default_factory=lambda: [1])
    runs_dir: str = "runs"
    max_concurrency: int = 256
    persona_limit: int = 0  # 0 = every persona; otherwise the first N (quick trials)
    cache: bool = True  # replay paid-for responses on reruns (never for offline stand-ins)
    cache_dir: str = ""  # a shared cache folder; empty = the run directory
    # Keep each call's exact request and response in the run directory (call_bodies.vlog);
    # false for data that must not be kept (`--no-call-bodies`). Decides no result. Unset
    # (kept) is left out of the manifest, so manifests from before it keep their bytes.
    call_bodies: bool | msgspec.UnsetType = msgspec.UNSET
    max_cost_usd: float = 0.0  # 0 = no budget; else the run's limit in USD (vera.clients.budget)
    allow_failures: float = 0.0  # share of failed work that still counts as a success (exit 0)
    grace_s: float = 30.0  # after Ctrl-C/SIGTERM, how long in-flight work may finish
    retry_base_delay_s: float = 1.0  # backoff ceiling starts here and doubles per retry
    retry_max_delay_s: float = 60.0
    shard_limits: Literal["split", "full"] = "split"  # what each of N shards takes of an account's limits
    limits_url: str = ""  # redis://HOST:PORT/DB: shards share every account's budget there
    conversation: ConversationConfig = msgspec.field(default_factory=ConversationConfig)
    judge: JudgeConfig = msgspec.field(default_factory=JudgeConfig)
    user_agent: RoleConfig = msgspec.field(default_factory=RoleConfig)
    chatbot: RoleConfig = msgspec.field(default_factory=RoleConfig)
    stats: StatsConfig = msgspec.field(default_factory=StatsConfig)
    reference: ReferenceConfig = msgspec.field(default_factory=ReferenceConfig)
    base_dir: str = ""  # where relative paths resolve; set on load, not in files

    def snapshot(self) -> ConfigSnapshot:
        """This config as a run's manifest stores it: every field but `base_dir` (which
        the manifest keeps on its own), with the same values and in the same order."""
        data = msgspec.to_builtins(self)
        del data["base_dir"]
        return msgspec.convert(data, ConfigSnapshot)

    @classmethod
    def from_snapshot(cls, snapshot: ConfigSnapshot, base_dir: str = "") -> RunConfig:
        """The config a manifest's snapshot was taken of (the two types have the same
        fields, so this cannot fail), with `base_dir` given apart."""
        return msgspec.convert({**msgspec.to_builtins(snapshot), "base_dir": base_dir}, cls)

    def persona_files(self) -> list[Path]:
        """The persona files, resolved (a set may be made of several)."""
        values = [self.personas] if isinstance(self.personas, str) else self.personas
        return [self.path(v) for v in values]

    def path(self, value: str) -> Path:
        if value.startswith(REFERENCE_PREFIX):
            return self.reference_dir() / value.removeprefix(REFERENCE_PREFIX)
        p = Path(value).expanduser()
        return p if p.is_absolute() else absolute(Path(self.base_dir or REPO_ROOT) / p)

    def role_params(self, role: str) -> tuple[dict[str, Any], bool]:
        """The sampling parameters the config sets for `role` ("judge", "user_agent",
        "chatbot"), and whether the config gave them (False: the documented defaults)."""
        given = {
            "judge": self.judge.params,
            "user_agent": self.user_agent.params,
            "chatbot": self.chatbot.params,
        }[role]
        return (dict(DEFAULT_ROLE_PARAMS[role]), False) if given is None else (dict(given), True)

    def reference_dir(self) -> Path:
        """The reference tool's data folder (see `reference_folder`)."""
        return reference_folder(self.reference.data, base=Path(self.base_dir or REPO_ROOT))

    def check(self) -> None:
        """Every setting within its range and consistent with the others; one ConfigError
        listing each problem, named by its field."""
        c = self.conversation
        problems = []
        if not 2 <= c.max_turns <= MAX_TURNS:
            problems.append(f"conversation.max_turns must be between 2 and {MAX_TURNS:,}")
        if not 0 <= c.min_turns <= c.max_turns:
            problems.append("conversation.min_turns must be between 0 and max_turns")
        if isinstance(c.max_total_words, int) and c.max_total_words < 1:
            problems.append("conversation.max_total_words must be at least 1 (leave it out for no limit)")
        problems += _session_problems(c)
        if self.judge.instances < 1:
            problems.append("judge.instances must be at least 1")
        if self.judge.max_attempts < 1:
            problems.append("judge.max_attempts must be at least 1")
        if isinstance(self.judge.max_concurrent, int) and self.judge.max_concurrent < 1:
            problems.append("judge.max_concurrent must be at least 1 (leave it out for no cap)")
        if self.judge.per_judge is True and not isinstance(self.judge.max_concurrent, int):
            problems.append(
                "judge.per_judge applies judge.max_concurrent to each judge model: set max_concurrent too"
            )
        if self.judge.terminal_semantics not in TERMINAL_SEMANTICS:
            problems.append(
                "judge.terminal_semantics must be "
                + " or ".join(repr(x) for x in TERMINAL_SEMANTICS)
                + f", not {self.judge.terminal_semantics!r}"
            )
        if self.max_concurrency < 1:
            problems.append("max_concurrency must be at least 1")
        if not self.seeds:
            problems.append("seeds must list at least one seed")
        if len(self.seeds) > MAX_SEEDS:
            problems.append(
                f"seeds: {len(self.seeds):,} seeds; at most {MAX_SEEDS:,} (each is a whole sweep)"
            )
        if len(set(self.seeds)) != len(self.seeds):
            problems.append("seeds must not repeat")
        problems += [f"seeds: {s} {p}" for s in self.seeds if (p := SEED.problem(s)) is not None][:1]
        for role in ("chatbots", "user_agents", "judges"):
            refs = getattr(self, role)
            if not refs:
                problems.append(f"{role} must list at least one model")
            problems += list_problems(role, refs, "model")
        if self.persona_limit < 0:
            problems.append("persona_limit must not be negative (0 = every persona)")
        if not math.isfinite(self.max_cost_usd) or self.max_cost_usd < 0:
            problems.append("max_cost_usd must be a finite amount of US dollars, 0 or more (0 = no budget)")
        if not 1 <= self.stats.resamples <= MAX_RESAMPLES:
            problems.append(f"stats.resamples must be between 1 and {MAX_RESAMPLES:,}")
        for name, kind, value in self._numbers():
            if (problem := kind.problem(value)) is not None:
                problems.append(f"{name} {problem}")
        if self.retry_max_delay_s < self.retry_base_delay_s:
            problems.append(
                f"retry_max_delay_s ({self.retry_max_delay_s:g}) must be at least retry_base_delay_s "
                f"({self.retry_base_delay_s:g}): the backoff starts at the base and grows to the maximum"
            )
        for role in ("judge", "user_agent", "chatbot"):
            params = getattr(self, role).params
            problems += sampling_problems(params or {}, f"{role}.params")
        if isinstance(self.personas, list):
            if not self.personas:
                problems.append("personas must name at least one persona file")
            problems += list_problems("personas", self.personas, "file")
        for field in ("personas", "rubric", "user_prompts", "judge_prompts", "providers", "runs_dir"):
            value = getattr(self, field)
            if isinstance(value, str) and not value.strip():
                problems.append(f"{field} is empty: name a path, or leave the field out for the default")
        problems += list_problems("annotation_columns", self.annotation_columns, "column")
        if c.user_memory and not c.multi_session:
            problems.append(
                "conversation.user_memory is set but a persona has one session: list two or more "
                "session types in conversation.sessions (or leave user_memory out)"
            )
        if self.group_by != self.group_by.strip():
            problems.append("group_by must not start or end with spaces")
        if self.limits_url:
            try:
                check_limits_url(self.limits_url)
            except ConfigError as exc:
                problems.append(f"limits_url: {exc}")
        if problems:
            raise ConfigError("; ".join(problems))

    def _numbers(self) -> list[tuple[str, Range, float]]:
        """The settings that are numbers in a range of `vera.ranges`: (field, range, value)."""
        return [
            ("allow_failures", SHARE, self.allow_failures),
            ("grace_s", SECONDS, self.grace_s),
            ("retry_base_delay_s", SECONDS, self.retry_base_delay_s),
            ("retry_max_delay_s", SECONDS, self.retry_max_delay_s),
            ("judge.batch_poll_s", POSITIVE_SECONDS, self.judge.batch_poll_s),
            ("judge.batch_collect_s", SECONDS, self.judge.batch_collect_s),
            ("stats.confidence", LEVEL, self.stats.confidence),
            ("stats.seed", SEED, self.stats.seed),
        ]

    def fingerprint(self) -> str:
        """A hash of everything that decides results. Not where files are: the inputs'
        contents are pinned by their own hashes in the manifest, so a run whose files
        moved (or a shard made on another machine) keeps its fingerprint."""
        data = msgspec.to_builtins(self)
        for key in (
            "base_dir",
            # Where the inputs come from, and how the card groups and labels them, never
            # changes an output; the inputs' contents are pinned by the manifest's hashes.
            "target",
            "group_by",
            "annotation_columns",
            "rubric",
            "personas",
            "user_prompts",
            "judge_prompts",
            "providers",
            "runs_dir",
            "max_concurrency",
            "cache",
            "cache_dir",
            "call_bodies",
            "max_cost_usd",
            "allow_failures",
            "grace_s",
            "retry_base_delay_s",
            "retry_max_delay_s",
            "shard_limits",
            "limits_url",
        ):
            data.pop(key, None)
        # Asking ahead changes which calls are made at the end of a sweep, never an
        # answer (vera.rubric._concurrent); and runs from before it keep their fingerprint.
        data["judge"].pop("ask_ahead")
        # Batch or live asks the same requests and gets the same answers (only price and
        # waiting differ; vera.clients.batching): a run may be resumed in the other mode.
        for key in ("mode", "batch_poll_s", "batch_collect_s", "batch_requeue"):
            data["judge"].pop(key)
        for key in ("max_concurrent", "per_judge"):  # how many walks at once, never an answer
            data["judge"].pop(key, None)
        for role in ("user_agent", "chatbot"):  # the tier prices a call, it asks nothing else
            data[role].pop("service_tier")
            data[role].pop("flex_fallback")
        if not data.get("locale", ""):  # the base: runs from before locale packs keep their fingerprint
            data.pop("locale", None)
        if not data["judge"]["check_users"]:  # off, the default: older runs keep their fingerprint
            data["judge"].pop("check_users")
        if data["judge"]["terminal_semantics"] == "vera":  # the default: older runs keep their fingerprint
            data["judge"].pop("terminal_semantics")
        if not self.conversation.sessions:
            # No sessions listed: the session settings decide nothing, and runs from
            # before sessions keep their fingerprint.
            for key in ("sessions", "session", "user_memory", "chatbot_memory"):
                data["conversation"].pop(key)
        reference = data.pop("reference")
        reference.pop("data")  # where the reference files are kept does not matter; their hashes do
        if any(reference.values()):  # left out when unused, so older runs keep their fingerprint
            data["reference"] = reference
        return hashlib.sha256(msgspec.json.encode(data, order="sorted")).hexdigest()


def list_problems(name: str, values: list[str], what: str) -> list[str]:
    """An empty entry, or one given twice, in a list of names (`chatbots`, `--judge`):
    a model listed twice would be planned twice under one job id, and its run could
    never finish; a judge listed twice would be pooled twice."""
    problems = []
    if any(not v.strip() for v in values):
        problems.append(f"{name}: an empty {what} name")
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        problems.append(f"{name}: {', '.join(repr(v) for v in twice)} listed twice (each {what} once)")
    return problems


def _session_problems(c: ConversationConfig) -> list[str]:
    problems = []
    for kind in c.sessions:
        if not _SESSION_TYPE.match(kind):
            problems.append(
                f"conversation.sessions: {kind!r} is not a session type name "
                "(letters, digits and hyphens, e.g. follow-up)"
            )
    for kind in c.session:
        if kind not in c.sessions:
            listed = ", ".join(c.sessions) or "none"
            problems.append(
                f"[conversation.session.{kind}]: {kind!r} is not in conversation.sessions (listed: {listed})"
            )
            continue
        s = c.for_session(kind)
        if not 2 <= s.max_turns <= MAX_TURNS:
            problems.append(f"conversation.session.{kind}.max_turns must be between 2 and {MAX_TURNS:,}")
        if not 0 <= s.min_turns <= s.max_turns:
            problems.append(f"conversation.session.{kind}.min_turns must be between 0 and max_turns")
    return problems


# The inputs a config may leave out, found among vera's own data when it does.
BUILT_IN_INPUTS = ("personas", "rubric", "user_prompts", "judge_prompts", "providers")
_DEFAULTS = RunConfig()


RUN_CONFIG_ENV = "VERA_RUN_CONFIG"  # a whole run config, inline JSON (as the reference's)


def _print_warning(where: str, message: str) -> None:
    print(f"warning: {where}: {message}", file=sys.stderr)


def load_config(
    path: str | Path | None,
    *,
    reference_data: str | None = None,
    warn: Callable[[str, str], None] = _print_warning,
) -> RunConfig:
    """The config in `path` (TOML, or JSON for a `.json` file; "-" reads it from standard
    input), else the inline JSON of `$VERA_RUN_CONFIG`, else the built-in offline
    defaults. The keys are vera's in either syntax; a JSON document in the reference
    tool's layout (`generation` / `judging` / `scoring`) is translated into them
    (vera.inputs._refconfig). `reference_data`
    (`--reference-data`) replaces the config's reference folder before a target in it is
    looked up. `warn(where, message)` is told each field of a reference-layout config
    that vera does not use (printed to stderr unless given)."""
    inline = os.environ.get(RUN_CONFIG_ENV, "").strip()
    if path is None and not inline:
        cfg = RunConfig(base_dir=str(REPO_ROOT), runs_dir=str(runs_root() / "runs"))
        cfg.check()
        return cfg
    if path is None or str(path) == "-":
        # Inline or piped: paths in it are relative to the working directory.
        p = Path.cwd() / (RUN_CONFIG_ENV if path is None else "<stdin>")
        raw = inline if path is None else sys.stdin.read()
        syntax = "JSON" if path is None or raw.lstrip().startswith("{") else "TOML"
    else:
        p = Path(path)
        if not p.exists() and (shipped := builtin_config(str(path))) is not None:
            p = shipped  # `--config recommended`: a config that ships with vera
        try:
            raw = decode(p.read_bytes(), p, "the run config")
        except OSError as exc:
            raise ConfigError(f"{p}: cannot read config: {exc.strerror or exc}") from None
        syntax = "JSON" if p.suffix.lower() == ".json" else "TOML"
    if path is None and not (isinstance(raw, str) and raw):
        raise ConfigError(f"{RUN_CONFIG_ENV}: empty")
    where = p.name if p.name in (RUN_CONFIG_ENV, "<stdin>") else str(p)
    parse = msgspec.json.decode if syntax == "JSON" else msgspec.toml.decode
    try:
        doc = parse(raw)
        if syntax == "JSON" and is_reference_layout(doc):
            # The reference tool's own layout (`generation` / `judging` / `scoring`):
            # translated into vera's keys, each field it cannot map a warning.
            doc, warnings = translate(doc, where)
            for w in warnings:
                warn(where, w)
        cfg = msgspec.convert(doc, type=RunConfig)
        given = set(doc)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{where}: invalid {syntax}: {exc}") from None
    cfg.base_dir = str(absolute(p).parent)
    for field in BUILT_IN_INPUTS:
        if field not in given:
            # Left out: the built-in one, wherever the config is (an empty config is the
            # built-in evaluation, in the project or anywhere else).
            setattr(cfg, field, str(REPO_ROOT / getattr(_DEFAULTS, field)))
    if reference_data:
        cfg.reference.data = str(absolute(reference_data))
    if cfg.target:
        both = [k for k in TARGET_FIELDS if k in given]
        if both:
            raise ConfigError(
                f"{p}: `target` and `{both[0]}` both given: a target supplies the rubric, personas "
                "and prompts, so name either the target or those files"
            )
        group_by = cfg.group_by if "group_by" in given else None
        apply_target(cfg, cfg.target)
        if group_by is not None:  # the config's own grouping wins over the target's
            cfg.group_by = group_by
    if isinstance(cfg.locale, str) and cfg.locale:
        # The pack's files replace the base's, but not files the config (or its target) names.
        named = TARGET_FIELDS if cfg.target else tuple(k for k in PACK_FILES if k in given)
        apply_locale(cfg, cfg.locale, keep=named)
    if (
        runs_root() != REPO_ROOT
        and p.resolve().is_relative_to(REPO_ROOT)
        and not Path(cfg.runs_dir).is_absolute()
    ):
        # A config shipped inside an installed package: runs belong to the user, not
        # to site-packages.
        cfg.runs_dir = str(runs_root() / "runs")
    cfg.check()
    return cfg


# The run config fields a target supplies.
TARGET_FIELDS = ("rubric", "personas", "user_prompts", "judge_prompts")


def apply_target(cfg: RunConfig, selection: str, *, reference: ReferenceDir | None = None) -> Target:
    """Point `cfg`'s rubric, personas and prompt fields at the target's files, and its
    annotation columns and grouping at the target's; returns the target, whose identity
    the caller records. (A config file's own `group_by` is put back by `load_config`.)"""
    base = Path(cfg.base_dir) if cfg.base_dir else None
    path = find_target(selection, base=base, reference=reference or cfg.reference_dir)
    target = load_target(path)
    cfg.target = selection
    cfg.rubric = target.rubric
    cfg.personas = list(target.personas) if len(target.personas) > 1 else target.personas[0]
    cfg.user_prompts = target.user_prompts
    cfg.judge_prompts = target.judge_prompts
    cfg.annotation_columns = list(target.annotation_columns)
    cfg.group_by = target.group_by or ""
    if target.locale and not isinstance(cfg.locale, str):
        cfg.locale = target.locale  # its files are the target's; the pack adds resources
    return target
