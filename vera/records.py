"""Everything that is stored or crosses a boundary, as typed msgspec records.

Records are plain data: no behaviour beyond small derived properties. They are encoded
with msgspec (JSON lines in the run directory) and turned into polars frames for scoring.

The records a sweep makes by the hundred thousand (messages, turns, completions, call
records, answers, ratings, conversations, judgements) are `gc=False`: they hold only
strings, numbers and containers of them, so they can never be part of a reference cycle,
and leaving them out of the garbage collector's tracking keeps its passes short without
tuning the collector for the whole process.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal

import msgspec

# ---------------------------------------------------------------------------------------
# Ratings and risk levels (the vocabulary of the method)
# ---------------------------------------------------------------------------------------

# The four ratings of a dimension, from best to worst, then the exclusion.
BEST_PRACTICE: Final = "Best Practice"
# a Yes on a Yellow question:
SUBOPTIMAL: Final = "Suboptimal but Low Potential for Harm"
# a Yes on a Red question:
HIGH_POTENTIAL_FOR_HARM: Final = "High Potential for Harm"
# the dimension does not apply to the conversation:
NOT_RELEVANT: Final = "Not Relevant"

RATINGS: tuple[str, ...] = (BEST_PRACTICE, SUBOPTIMAL, HIGH_POTENTIAL_FOR_HARM, NOT_RELEVANT)
# Short codes used in frames and tables.
RATING_CODES: dict[str, str] = {
    BEST_PRACTICE: "BP",
    SUBOPTIMAL: "SUB",
    HIGH_POTENTIAL_FOR_HARM: "HPH",
    NOT_RELEVANT: "NR",
}

RISK_LEVELS: tuple[str, ...] = ("None", "Low", "High", "Immediate")

# The method's five dimensions, as VERA-MH v1.1's rubric, both 2.0 rubrics (SI, HFO)
# and vera-si name them: the dimensions a rubric may use unless its `.toml` sidecar
# lists its own (vera.rubric's validation).
METHOD_DIMENSIONS: tuple[str, ...] = (
    "Detects Potential Risk",
    "Confirms Risk",
    "Guides to Human Care",
    "Supportive Conversation",
    "Follows AI Boundaries",
)

# The label of the row that pools every dimension (in summaries, cards and plots); no
# rubric dimension may be called this.
OVERALL: Final = "Overall"

# The one default of every interval vera computes (the run config's [stats], the
# statistics commands and functions): bootstrap resamples, and the interval's level.
DEFAULT_RESAMPLES: Final = 2000
DEFAULT_CONFIDENCE: Final = 0.95

Rating = Literal[
    "Best Practice",
    # (Yellow)
    "Suboptimal but Low Potential for Harm",
    # (Red)
    "High Potential for Harm",
    # (excluded from scores)
    "Not Relevant",
]
Severity = Literal["Red", "Yellow"]

# ---------------------------------------------------------------------------------------
# Messages on the wire and turns in a transcript
# ---------------------------------------------------------------------------------------


class Message(msgspec.Struct, gc=False, frozen=True):
    """One chat message as sent to a model: role is system, user or assistant."""

    role: Literal["system", "user", "assistant"]
    content: str


class Turn(msgspec.Struct, gc=False, frozen=True):
    """One utterance in a conversation between the simulated user and the chatbot."""

    speaker: Literal["user", "chatbot"]
    text: str


def transcript_sha256(turns: Sequence[Turn]) -> str:
    """The fingerprint of a transcript as stored: the sha256 (hex) of the canonical JSON
    (sorted keys, no spaces, UTF-8 as is) of its turns' speakers and texts, in order.
    A human rating carries the fingerprint of the transcript it was made on, so it
    cannot silently attach to a different transcript with the same conversation id (two
    runs of one config plan the same ids, but real models say other things)."""
    canonical = json.dumps(
        [{"speaker": t.speaker, "text": t.text} for t in turns],
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Usage(msgspec.Struct, gc=False):
    """Token usage of one call. `cached_input_tokens` (read from a prompt cache) and
    `cache_write_tokens` (written to one, Anthropic's cache writes) are parts of
    `input_tokens`; `reasoning_tokens` (a reasoning model's thinking, billed as output)
    are part of `output_tokens`, so a total never counts them twice. Anthropic does not
    report its thinking apart from the answer: there they stay 0, inside the output."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_input_tokens += other.cached_input_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.reasoning_tokens += other.reasoning_tokens


class Completion(msgspec.Struct, gc=False):
    """What a chat client returns: the text, parsed structured output, usage, provenance."""

    text: str
    parsed: Any = None
    usage: Usage = msgspec.field(default_factory=Usage)
    finish_reason: str = "stop"
    raw_id: str | None = None
    model: str = ""


# ---------------------------------------------------------------------------------------
# Personas
# ---------------------------------------------------------------------------------------


class Persona(msgspec.Struct, frozen=True):
    """A simulated user. `fields` holds every column of the persona file by its header
    name (so prompt templates can use any column); `risk` is the persona's group for the
    card's breakdowns: the normalised short risk level (None, Low, High, Immediate) by
    default, or the label of the column the target groups by; `line` is the file line
    it came from."""

    name: str
    risk: str
    fields: dict[str, str]
    line: int = 0
    annotations: dict[str, str] | None = None  # the target's annotation columns, carried to results

    def field(self, name: str, default: str = "") -> str:
        return self.fields.get(name, default)


# ---------------------------------------------------------------------------------------
# Conversations
# ---------------------------------------------------------------------------------------

ConversationStatus = Literal["complete", "failed"]


class SessionPlace(msgspec.Struct, gc=False, frozen=True, kw_only=True):
    """Where a conversation stands in a multi-session *arc*: one persona meeting one
    chatbot several times (docs/sessions.md). `arc` is the arc's id (shared by its
    sessions), `index` is 1-based, `type` is the session type ("intake", "follow-up"),
    `count` the number of sessions the arc plans. Single-session conversations have none."""

    arc: str
    index: int
    type: str
    count: int


class ImportSource(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What an imported transcript said about itself, as written there, before vera
    cleaned it up: kept in the record so every cleaned label can be audited."""

    chatbot: str = ""  # e.g. a folder name's "gpt_5_{'max_completion_tokens': 5000}"
    user_agent: str = ""
    persona: str = ""
    speaker_labels: dict[str, str] = msgspec.field(default_factory=dict)  # speaker -> label used
    note: str = ""  # a tool's annotation line removed from the text (not said by anyone)


class Conversation(msgspec.Struct, gc=False, kw_only=True):
    """One simulated (or imported) conversation and how it ended."""

    id: str
    chatbot: str
    user_agent: str
    persona: str
    risk: str
    seed: int
    turns: list[Turn]
    status: ConversationStatus = "complete"
    # How it ended: the user-agent's end marker, the turn limit, the word limit of a run
    # that sets one, a failed call, or an imported transcript (it ended elsewhere).
    ended_by: Literal["end_marker", "max_turns", "max_words", "error", "imported"] = "max_turns"
    error: str | None = None
    replicate: int = 0
    started_at: float = 0.0
    finished_at: float = 0.0
    usage: Usage = msgspec.field(default_factory=Usage)
    cost_usd: float = 0.0
    source: str | None = None
    imported: ImportSource | None = None  # only for conversations vera did not simulate
    # The persona columns the target asks to carry with the results (annotation columns).
    annotations: dict[str, str] | None = None
    session: SessionPlace | None = None  # its place in a multi-session arc, if any
    # Indexes in `turns` of the chatbot replies the provider cut at the output limit
    # (finish reason "length"): kept, but counted on the card. Empty in records from
    # before it was recorded (and in imports, which do not say).
    truncated_turns: list[int] = msgspec.field(default_factory=list)


# ---------------------------------------------------------------------------------------
# Judging
# ---------------------------------------------------------------------------------------


class JudgeAnswer(msgspec.Struct, gc=False, kw_only=True):
    """The judge's answer to one rubric question for one conversation."""

    question_id: str
    dimension: str
    answer: str
    reasoning: str = ""
    raw: str = ""
    attempts: int = 1
    auto: bool = False  # answered without a model call (Auto Answer, or a single option)


class DimensionRating(msgspec.Struct, gc=False, kw_only=True):
    """The rating of one dimension for one conversation by one judge instance.
    `question_id`/`reasoning` point at the answer that decided it (empty for Best
    Practice), so every harmful rating can be audited back to the judge's words."""

    dimension: str
    rating: Rating
    question_id: str = ""
    reasoning: str = ""


JudgementStatus = Literal["complete", "failed"]

# ---------------------------------------------------------------------------------------
# Simulated-user checks (docs/realism.md): is the simulated user still a person in the
# persona's situation?
# ---------------------------------------------------------------------------------------

# role_reversal: the user counsels or questions the chatbot as a clinician would;
# ai_voice: the user speaks as an AI, or about its instructions or the role-play;
# persona_drop: the user contradicts its persona (risk level, disclosure style,
# circumstances); empty_or_repeated: an empty user turn, or one said before.
UserFlagKind = Literal["role_reversal", "ai_voice", "persona_drop", "empty_or_repeated"]
USER_FLAG_KINDS: tuple[str, ...] = ("role_reversal", "ai_voice", "persona_drop", "empty_or_repeated")


class UserFlag(msgspec.Struct, gc=False, frozen=True, kw_only=True):
    """One way a simulated user failed to stay a person in its persona's situation:
    `turn` is the turn's number, from 1, as the conversation's page numbers it (0: the
    conversation as a whole), `evidence` the user's words (or the checker's) that show it."""

    kind: UserFlagKind
    turn: int = 0
    evidence: str = ""


class UserCheck(msgspec.Struct, gc=False, kw_only=True):
    """The simulated-user check of one conversation: by a model (`checker` is its ref,
    `prompt` the versioned check prompt) or by vera's offline heuristic (`checker`
    "heuristic"). A failed check (no valid answer, a provider failure) flags nothing
    and is counted as failed, never as the chatbot's failure."""

    checker: str
    prompt: str
    status: Literal["complete", "failed"] = "complete"
    flags: list[UserFlag] = msgspec.field(default_factory=list)
    error: str | None = None

    @property
    def flagged(self) -> bool:
        return self.status == "complete" and bool(self.flags)


class Judgement(msgspec.Struct, gc=False, kw_only=True):
    """A complete rubric walk of one conversation by one judge instance."""

    id: str
    conversation_id: str
    judge: str
    instance: int
    status: JudgementStatus
    answers: list[JudgeAnswer]
    ratings: list[DimensionRating]
    risk_selected: str | None = None  # the answer of the rubric's risk selector, if asked
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    cost_usd: float = 0.0
    finished_at: float = 0.0
    # Questions asked ahead at the end of the sweep that the walk did not reach and that
    # were paid for (a reply replayed on a resume was not): their calls are
    # in `usage` and the call log, their answers nowhere (vera.rubric._concurrent).
    unused_questions: int = 0
    # The model check of the simulated user (`[judge] check_users`), made by the first
    # judge slot with the same client (so cached, limited and batched as the judge);
    # None in other slots, in runs that do not ask for it and in records from before it.
    user_check: UserCheck | None = None


# ---------------------------------------------------------------------------------------
# Human ratings (a clinician's review of a judged conversation)
# ---------------------------------------------------------------------------------------


class HumanRating(msgspec.Struct, gc=False, frozen=True, kw_only=True):
    """One person's ratings of one conversation of a run, as appended to the run's
    `human_ratings.jsonl` (by `vera review` or `vera ratings import`). The file is
    append-only: a second rating of the same conversation by the same rater is a new
    line, and the later one counts (`vera.store.latest_human_ratings`)."""

    conversation_id: str  # the run's conversation id, as its judgements name it
    rater: str
    ratings: dict[str, Rating]  # dimension name -> rating
    note: str = ""
    source: str = "review"  # "review", or "import:<file name>"
    rated_at: str = ""  # ISO-8601 UTC
    # How realistic the simulated user was, 1 (not at all: no person in this situation
    # would talk like this) to 5 (entirely); None when not rated, and in older lines.
    realism: Annotated[int, msgspec.Meta(ge=1, le=5)] | None = None
    # `transcript_sha256` of the transcript the rater read; None in lines written before
    # vera recorded it (they cannot be checked) and in CSV imports without the column.
    transcript_sha256: str | None = None
    # The transcript rated is not this run's, and `vera ratings import
    # --allow-other-transcripts` was told so: readers then accept the mismatch.
    other_transcript: bool = False


# ---------------------------------------------------------------------------------------
# Calls and the run manifest
# ---------------------------------------------------------------------------------------

Role = Literal["chatbot", "user_agent", "judge"]


class CallRecord(msgspec.Struct, gc=False, kw_only=True):
    """One model call as accounted: who, how long, how many tokens, what it cost."""

    job_id: str
    role: Role
    provider: str
    model: str
    account: str
    latency_ms: float
    status: Literal["ok", "error"]
    attempts: int = 1
    usage: Usage = msgspec.field(default_factory=Usage)
    cost_usd: float = 0.0
    # The part of `cost_usd` paid for reasoning tokens (priced as output).
    reasoning_cost_usd: float = 0.0
    http_429: int = 0
    error: str | None = None
    cached: bool = False  # answered from the response cache, no network call
    at: float = 0.0
    # What attempts whose cost is unknown (a timeout after sending) may have cost, at
    # their worst case; a run's budget counts it as spent (vera.clients.budget).
    uncertain_usd: float = 0.0
    # Attempts whose cost is unknown and has no worst case: sent, then unanswered (or
    # answered without their usage), on a priced model whose output nothing caps (no
    # max_tokens), so `uncertain_usd` cannot count them. An invoice may hold any amount
    # for them, up to what the model itself may write. Absent (unset) when none, so a
    # call log of bounded calls reads, and is written, as before.
    unbounded_attempts: int | msgspec.UnsetType = msgspec.UNSET
    # The price tier the call was served at: "standard" (a live call), "batch" (a
    # provider's batch API, half price; vera.clients.batching) or "flex".
    tier: str = "standard"
    # What the call would have cost asked live, at the standard tier's prices: equal to
    # `cost_usd` for a standard call, more for a batch or flex one. None in call logs
    # from before it was recorded, read as `cost_usd` (no saving claimed).
    standard_cost_usd: float | None = None
    # The price tier this call stands in for ("flex": flex had no answer, so it was
    # asked at the standard tier; "batch": no batch answered it, so it was asked live);
    # "" for a call made at the tier its role asked for. The card counts them.
    fallback: str = ""

    @property
    def live_cost_usd(self) -> float:
        return self.cost_usd if self.standard_cost_usd is None else self.standard_cost_usd


class WireRequest(msgspec.Struct, frozen=True, gc=False):
    """The request as a team's own chatbot received it (protocol `http`): the method, the
    URL with the session id in it, and the body rendered from the profile's template, as
    text, exactly as sent. Never a header (they hold the token); the URL and body with
    every known secret redacted. The wire protocols need none: their kept messages,
    parameters and schema are what was sent."""

    method: str
    url: str
    body: str


class CallBody(msgspec.Struct, gc=False, kw_only=True):
    """One model call in full: its accounting record, the exact request (every message,
    the system prompt first, the parameters as sent, the schema) and what came back.
    The recorder (vera.clients.stack) makes one per call when the run keeps call
    bodies; the store keeps it content-addressed (vera.store's call bodies). Never a
    key or a header: only what the request and the completion hold."""

    call: CallRecord
    conversation_id: str = ""
    # The rubric question a judge call answers ("" for other roles): for the reader.
    question_id: str = ""
    messages: tuple[Message, ...] = ()
    # The parameters the provider was sent: the profile's defaults under the request's.
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    schema: dict[str, Any] | None = None
    reask: int = 0
    response: Completion | None = None  # None: no answer (the error is in `call`)
    # What the service received, for a protocol that renders its own request from a
    # template (`http`); None for the others, a call answered without sending (cache,
    # replay), and bodies kept before vera kept it.
    wire: WireRequest | None = None


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A resolved model reference as recorded in the manifest (never holds secrets)."""

    ref: str
    provider: str
    protocol: str
    model: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)


class ArtifactVersion(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A versioned input: its human version string, path and content hash. An input
    made of several files (a persona set a target combines) lists them all in `paths`
    (`path` is the first) and hashes them in order."""

    name: str
    version: str
    path: str
    sha256: str
    paths: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        return self.paths or (self.path,)


class TargetInfo(msgspec.Struct, frozen=True, kw_only=True):
    """The target a run was configured with (vera.inputs._targets): its name, version
    and file (hashed), the format it was read in, and the persona columns the results
    carry beside each conversation."""

    name: str
    version: str
    path: str
    sha256: str
    format: str  # "vera" (target.toml) or "vera-mh" (VERA-MH 2.0 manifest.json)
    annotation_columns: tuple[str, ...] = ()


class LocaleInfo(msgspec.Struct, frozen=True, kw_only=True):
    """The locale pack a run used (vera.inputs._locales): its tag, version and folder,
    and the crisis resources file (version and hash) its stand-ins and card name."""

    tag: str
    version: str
    path: str
    language: str
    resources_version: str
    resources_sha256: str


class Grouping(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """How a run's personas are grouped for breakdowns: `by` is "risk" (the suicide risk
    level), a persona column whose labels are the groups, or "" (no grouping); `levels`
    are the groups in the order the card shows them. `absent` names annotation columns
    the target names that its persona files lack (a published manifest may; the run
    goes on without them and the card says so), with `files` the persona files."""

    by: str
    levels: tuple[str, ...]
    absent: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        return "risk level" if self.by == "risk" else self.by


class ReferenceData(msgspec.Struct, frozen=True, kw_only=True):
    """The reference tool's own data files a run read from the user's checkout: which
    release they are (as the config declares it) and the hash of every file used."""

    name: str
    version: str
    path: str
    files: dict[str, str]  # file name -> sha256 of its content
    pinned: bool  # every file used matched a hash the config pins for this release


class ImportInfo(msgspec.Struct, kw_only=True):
    """Where an imported run's conversations came from: it stands in the manifest (and
    on the card) for the simulation settings, which did not apply."""

    source: str  # the file or folder given to `vera judge --transcripts`
    conversations: int
    failed: int  # lacking a speaker: recorded with the reason, never judged
    personas: str | None = None  # the persona file that gave risk levels by name
    personas_not_found: dict[str, int] = msgspec.field(default_factory=dict)  # name -> conversations


class AccountLimits(msgspec.Struct, kw_only=True):
    """The limits one provider account ran with in this process (a shard's part of them
    when the sweep was split into shards)."""

    account: str  # host[KEY_VARIABLE], never the key
    rpm: float | None = None
    tpm: float | None = None
    max_in_flight: int | None = None
    share: str = "full"  # "1/3": this shard's part of the account's limits; "full": all of them
    shared: str = ""  # "redis": rpm and tpm drawn by every shard from one budget in Redis


# The run config as a manifest stores it: a field-for-field copy of `vera.inputs.RunConfig`
# and its sections (same names, types, defaults and order; tests/test_config_snapshot.py
# keeps them identical) without `base_dir`, which the manifest keeps on its own. The run
# config's type is above this layer, so the manifest cannot name it. Unlike the config
# file, unknown fields are ignored, so manifests from every version still decode.


class SessionSnapshot(msgspec.Struct, kw_only=True):
    """`[conversation.session.TYPE]` as stored (vera.inputs.SessionConfig)."""

    max_turns: int | None = None
    min_turns: int | None = None
    first_speaker: Literal["user", "chatbot"] | None = None
    opening_message: str | None = None
    chatbot_system_prompt: str | None = None


class ConversationSnapshot(msgspec.Struct, kw_only=True):
    """`[conversation]` as stored (vera.inputs.ConversationConfig)."""

    max_turns: int = 30
    min_turns: int = 10
    first_speaker: Literal["user", "chatbot"] = "user"
    opening_message: str = ""
    chatbot_system_prompt: str = ""
    sessions: list[str] = msgspec.field(default_factory=list)
    session: dict[str, SessionSnapshot] = msgspec.field(default_factory=dict)
    user_memory: bool = False
    chatbot_memory: Literal["history", "none"] = "none"
    max_total_words: int | msgspec.UnsetType = msgspec.UNSET  # absent when there is no word limit


class JudgeSnapshot(msgspec.Struct, kw_only=True):
    """`[judge]` as stored (vera.inputs.JudgeConfig)."""

    instances: int = 1
    max_attempts: int = 3
    params: dict[str, Any] | None = None
    ask_ahead: Literal["auto", "tail", "off"] = "auto"
    terminal_semantics: str = "vera"
    mode: Literal["live", "batch"] = "live"
    batch_poll_s: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    batch_collect_s: Annotated[float, msgspec.Meta(ge=0)] = 0.5
    batch_requeue: Annotated[int, msgspec.Meta(ge=0, le=10)] = 2
    check_users: bool = False
    max_concurrent: int | msgspec.UnsetType = msgspec.UNSET  # absent when judging is not capped
    per_judge: bool | msgspec.UnsetType = msgspec.UNSET


class RoleSnapshot(msgspec.Struct, kw_only=True):
    """`[user_agent]` / `[chatbot]` as stored (vera.inputs.RoleConfig)."""

    params: dict[str, Any] | None = None
    service_tier: Literal["standard", "flex"] = "standard"
    flex_fallback: Literal["standard", "retry"] = "standard"


class ReferenceSnapshot(msgspec.Struct, kw_only=True):
    """`[reference]` as stored (vera.inputs.ReferenceConfig)."""

    data: str = ""
    name: str = ""
    version: str = ""
    sha256: dict[str, str] = msgspec.field(default_factory=dict)


# How raters who disagree become one rating (vera.stats.humans.combine_raters).
RaterRule = Literal["severest", "majority", "mean"]


class StatsSnapshot(msgspec.Struct, kw_only=True):
    """`[stats]` as stored (vera.inputs.StatsConfig): the bootstrap a run's card uses."""

    resamples: int = DEFAULT_RESAMPLES
    confidence: float = DEFAULT_CONFIDENCE
    seed: int = 0


class ConfigSnapshot(msgspec.Struct, kw_only=True):
    """The whole run config as the run used it, minus `base_dir` (vera.inputs.RunConfig;
    the comments on its fields there say what each means). `vera.inputs.config_from_snapshot`
    turns it back into the strict config when a run resumes."""

    chatbots: list[str] = msgspec.field(
        default_factory=lambda: ["offline/best-practice", "offline/risk-ignoring"]
    )
    user_agents: list[str] = msgspec.field(default_factory=lambda: ["offline/scripted-user"])
    judges: list[str] = msgspec.field(default_factory=lambda: ["offline/lexical-judge"])
    target: str = ""
    locale: str | msgspec.UnsetType = msgspec.UNSET  # absent when no locale pack was named
    personas: str | list[str] = "personas/vera-personas.tsv"
    rubric: str = "rubrics/vera-si.tsv"
    user_prompts: str = "personas/prompts"
    judge_prompts: str = "rubrics/prompts"
    group_by: str = ""
    annotation_columns: list[str] = msgspec.field(default_factory=list)
    providers: str = "providers"
    seeds: list[int] = msgspec.field(default_factory=lambda: [1])
    runs_dir: str = "runs"
    max_concurrency: int = 256
    persona_limit: int = 0
    cache: bool = True
    cache_dir: str = ""
    call_bodies: bool | msgspec.UnsetType = msgspec.UNSET  # unset: kept
    max_cost_usd: float = 0.0
    allow_failures: float = 0.0
    grace_s: float = 30.0
    retry_base_delay_s: float = 1.0
    retry_max_delay_s: float = 60.0
    shard_limits: Literal["split", "full"] = "split"
    limits_url: str = ""
    conversation: ConversationSnapshot = msgspec.field(default_factory=ConversationSnapshot)
    judge: JudgeSnapshot = msgspec.field(default_factory=JudgeSnapshot)
    user_agent: RoleSnapshot = msgspec.field(default_factory=RoleSnapshot)
    chatbot: RoleSnapshot = msgspec.field(default_factory=RoleSnapshot)
    stats: StatsSnapshot = msgspec.field(default_factory=StatsSnapshot)
    reference: ReferenceSnapshot = msgspec.field(default_factory=ReferenceSnapshot)


# The manifest schema this vera writes and can continue; a manifest of a later schema
# is read for display only (`vera.store.manifest_notes`), never rewritten.
MANIFEST_SCHEMA_VERSION = 1


class MergedShard(msgspec.Struct, kw_only=True):
    """One shard run that `vera merge` copied into a merged run: where it was, and where
    its calls end in the merged calls.jsonl (a byte offset; the shards' calls follow one
    another in the order given), so a call can be traced back to the run it came from."""

    run_dir: str  # the shard's run directory, resolved, as the merge was given it
    shard: str | None  # its K/N
    call_bodies: bool  # whether it kept its calls' requests and responses
    calls_end: int


class JudgeSample(msgspec.Struct, kw_only=True):
    """`vera judge --sample`: only these many of the complete conversations, chosen by
    a hash keyed by the seed, are planned for judging (the rest stay unjudged)."""

    size: int
    seed: int


class OpenSession(msgspec.Struct, kw_only=True):
    """What a session that writes a run and makes calls says of itself while it runs
    (`session.json` in the run directory, removed when it ends, however it ends short of
    being killed outright). A resume that finds one knows that session was killed
    (`kill -9`, out of memory, power lost) and bounds the calls it cannot see from it."""

    started_at: str
    command: str  # "run", "simulate", "judge"
    max_concurrency: int  # workers: each holds at most one conversation (or a judged one)
    # The accounts' caps on calls in flight, summed; None when an account has none.
    max_in_flight: int | None
    arc_sessions: int = 1  # conversations of one arc whose judgements a worker may hold
    judge_slots: int = 0  # (judge, instance) slots: judgements of each conversation
    questions: int = 0  # the rubric's questions: each asked at most once by a judgement
    # The most calls one judgement can have in flight at once (the rubric's parts asked
    # at once, and asking ahead: vera.rubric.calls_at_once); 0 in a mark written before
    # it was, which is bounded by `questions`.
    judgement_calls: int = 0


class UnfinishedSession(msgspec.Struct, frozen=True, kw_only=True):
    """A run read while the `session.json` of a session that never ended is in it: the
    calls that session had (or has) in flight are in none of the run's records. `state`:
    "killed" (no process writes the run: the resume finds it and bounds those calls),
    "running" (another process writes it now), "unknown" (a filesystem that cannot say
    which). Said by the commands that read a run, and on the card (`vera score`, `vera
    card`); never in a run whose sessions all ended."""

    started_at: str  # when that session started
    command: str  # "run", "simulate", "judge": what continues it
    state: Literal["killed", "running", "unknown"]


class KilledSession(msgspec.Struct, kw_only=True):
    """A session of the run that was killed outright, as the resume that found it
    bounds it: the calls in flight at the kill were sent (and may be billed) but no
    record holds them. `calls` is at most `jobs_calls` (what the jobs that may have been
    running could have had in flight) and at most `max_in_flight` (the accounts' caps;
    None: an account had none)."""

    started_at: str  # when the killed session started
    found_at: str  # when the resume that found it started
    calls: int  # the bound: calls that may have been in flight at the kill
    conversations: int  # conversations that may have been under way (one call each at a time)
    judgements: int  # judgements that may have been under way
    # The most calls one judgement may have in flight (its rubric's parts asked at once,
    # and asking ahead: vera.rubric.calls_at_once; the rubric's questions for a mark
    # written before that was recorded).
    per_judgement: int
    jobs_calls: int  # conversations + judgements × per_judgement
    max_in_flight: int | None = None
    # The most those calls may cost: each at the largest input a call of its role sent in
    # this run plus its output cap, at the highest prices; None where a priced role's
    # output has no cap (no bound), unset until the resume has made its calls.
    worst_usd: float | msgspec.UnsetType | None = msgspec.UNSET


class RunManifest(msgspec.Struct, kw_only=True):
    """Exactly what produced a run: versions and hashes of every input, models, seeds.

    `config` is the whole run config as the run used it (without `base_dir`, which is a
    field of its own), typed: a resumed run restores exactly it (`vera.app`), and the
    report reads its settings (`[stats]`, `[conversation]`, `allow_failures`)."""

    schema_version: int = MANIFEST_SCHEMA_VERSION
    vera_version: str
    run_id: str
    rubric: ArtifactVersion
    personas: ArtifactVersion
    user_prompts: ArtifactVersion
    judge_prompts: ArtifactVersion
    config_sha256: str
    config: ConfigSnapshot
    chatbots: list[ModelSpec]
    user_agents: list[ModelSpec]
    judges: list[ModelSpec]
    judge_instances: int
    seeds: list[int]
    offline: bool
    created_at: str
    updated_at: str
    shard: str | None = None
    jobs_planned: int = 0
    imported: ImportInfo | None = None  # set for `vera judge --transcripts` runs
    reference: ReferenceData | None = None  # set when inputs came from the reference data folder
    target: TargetInfo | None = None  # set when the config named a target
    locale: LocaleInfo | msgspec.UnsetType = msgspec.UNSET  # set when the config named a locale pack
    # How personas are grouped on the card; None in runs from before targets (risk level).
    grouping: Grouping | None = None
    base_dir: str = ""  # where the config's relative paths (providers, runs_dir) resolve
    stopped: str | None = None  # why the last session was stopped (a signal, the budget, a bad key)
    missing_shards: list[str] = msgspec.field(default_factory=list)  # a merge with --allow-partial
    limits: list[AccountLimits] = msgspec.field(default_factory=list)  # per provider account
    # What the rubric's END did to the ratings already collected: "vera" (kept) or
    # "reference" (all Not Relevant, as VERA-MH's judge); runs from before the choice: "vera".
    terminal_semantics: str = "vera"
    # Set by `vera judge --sample`; unset (and not written, so older manifests keep their
    # bytes): every complete conversation is judged.
    judge_sample: JudgeSample | msgspec.UnsetType = msgspec.UNSET
    # Set by `vera merge` (unset, and not written, in every other run): the shard runs
    # it combined, so a call without a body names the shard run that kept none.
    merged_from: list[MergedShard] | msgspec.UnsetType = msgspec.UNSET
    # Sessions of the run killed outright, each with the bound of the calls it had in
    # flight (unset, and not written, in a run never killed).
    killed_sessions: list[KilledSession] | msgspec.UnsetType = msgspec.UNSET
    # Set in a run with a custom `http` chatbot (unset, and not written, in every other
    # run and in runs from before it): a random tag appended to the session and arc ids
    # that chatbot is sent, so a product that keeps history by session id never sees an
    # earlier run's conversation continued by this one; a resume keeps it, so the
    # product's session goes on where it stopped (docs/protocols.md).
    session_tag: str | msgspec.UnsetType = msgspec.UNSET


def encode_json(obj: Any) -> bytes:
    """Compact JSON for records (msgspec handles Structs natively)."""
    return msgspec.json.encode(obj)


def to_builtins(obj: Any) -> Any:
    return msgspec.to_builtins(obj)
