"""The score card as typed records: what card.json holds, field by field.

`vera.report.card._build` builds a `Card` from a run; card.md, card.html, the terminal card and the
plots are rendered from it; card.json is `encode_card(card)` and is read back with
`decode_card`. docs/card.md describes every field.

The field order of each Struct is the key order of card.json. A chatbot with no
complete judgement has none of the score fields (`overall` ... `by_seed`): they are left
out of card.json rather than written as null (`omit_defaults`), as cards have always
done, so a reader can tell "nothing was rated" from "a number is undefined".

Leaf records are `gc=False`: they hold only numbers, strings and other Structs, never a
reference back, so the garbage collector need not track the thousands of them a large
card has.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec

from vera.errors import UserError
from vera.records import ArtifactVersion, Grouping, KilledSession, LocaleInfo, TargetInfo, UnfinishedSession
from vera.report.improvements._report import Improvements
from vera.report.shared._diagnostics import Diagnostics, GroupScore
from vera.report.shared._language import LanguageCheck
from vera.report.shared._outcome import JudgedSample
from vera.report.shared._realism import Realism

# 1: the first card. 2 added by_judge, judge_agreement, by_seed and comparisons. 3 added
# status (how the run ended, with its exit code), source, imported and reference (an
# imported run's settings are null and its versions hold only the inputs that applied to
# it). The card became a typed record in 3 without changing its JSON; the keys of 1 are
# unchanged throughout. 4 added target and grouping (what was evaluated and how personas
# are grouped), terminal_semantics, reasoning tokens and cost and the spend per price tier
# in the accounting, fix_first (the improvement report), calibrated (scores corrected by
# human ratings), arcs and by_session (multi-session runs) and the run state "budget"; all
# optional, so a card of 3 reads as before. 5 added live_cost_usd to every CallTotals
# (what batch and flex calls would have cost asked live); a card of 4 reads it as null.
# 6 added fallbacks and replayed to every CallTotals (calls that stood in for a cheaper
# tier, and replies replayed on a resume, no longer counted as calls), and
# gives live_cost_usd in every bucket once any call of the run was discounted. 7 added
# n_rated_personas and few_rated_personas to Calibrated.
# 8 added the run diagnostics (`diagnostics`: how conversations ended, turn counts, empty
# and cut chatbot replies, judge re-asks and invalid answers), each chatbot's
# `by_user_agent` and `by_persona` (scores by persona column, `by_columns`,
# `absent_columns`) and the simulated-user checks (`realism`); all optional, so a card of
# 7 reads as before. 8 also added raters to Calibrated (how raters who disagree were
# combined; null in older cards, which combined them as "majority" does), and
# status.judged_sample (how many of the complete conversations `vera judge --sample`
# judged; null in older cards), and uncertain_usd to every CallTotals (null where the
# run had no call of unknown cost, and in older cards: `vera score` counts them), and
# unbounded_calls to every CallTotals (calls of unknown cost with no worst case; null
# where there were none, and in older cards), and accounting.killed_sessions (sessions
# killed outright, with the bound of the calls they had in flight; absent where none),
# and unfinished_session (a session that had not ended when the card was made: absent
# where every session ended).
CARD_SCHEMA_VERSION = 8


class Interval(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """A confidence interval, [lo, hi] in card.json; both null when undefined."""

    lo: float | None
    hi: float | None


class DimensionScore(msgspec.Struct, frozen=True, gc=False):
    """Every number of one dimension (or Overall) of one section: rating counts, and the
    score and rating shares with their intervals. Percentages are 0–100."""

    n_ratings: int
    n_rated: int  # ratings that are not Not Relevant
    n_best_practice: int
    n_suboptimal: int
    n_high_potential_for_harm: int
    n_not_relevant: int
    score: float | None
    score_ci: Interval
    pct_bp: float | None
    pct_bp_ci: Interval
    pct_sub: float | None
    pct_sub_ci: Interval
    pct_hph: float | None
    pct_hph_ci: Interval
    pct_conversations_any_hph: float | None
    pct_conversations_any_hph_ci: Interval
    pct_nr: float | None


class Section(msgspec.Struct, frozen=True, gc=False):
    """A chatbot's numbers over some of its conversations (one risk level, say)."""

    overall: DimensionScore
    dimensions: dict[str, DimensionScore]
    n_conversations: int
    n_judgements: int
    n_personas: int


class Score(msgspec.Struct, frozen=True, gc=False):
    """A score alone, for breakdowns read side by side."""

    score: float | None
    score_ci: Interval


class JudgeScores(msgspec.Struct, frozen=True, gc=False):
    """Scores by one judge model (`instance` null: its instances pooled) or one instance."""

    judge: str
    instance: int | None
    n_conversations: int
    n_judgements: int
    overall: Score
    dimensions: dict[str, Score]


class SeedScore(msgspec.Struct, frozen=True, gc=False):
    seed: int | None  # the run's seed for this replicate
    replicate: int
    n_conversations: int
    n_personas: int
    score: float | None
    score_ci: Interval


class BySeed(msgspec.Struct, frozen=True, gc=False):
    """The overall score per seed replicate and how far they spread."""

    seeds: list[SeedScore]
    score_min: float | None
    score_max: float | None
    score_sd: float | None


class PairKappa(msgspec.Struct, frozen=True, gc=False):
    rater_a: str
    rater_b: str
    kappa: float | None
    n_items: int


class AgreementBlock(msgspec.Struct, frozen=True, gc=False):
    """Agreement among judge slots on one dimension (or Overall); proportions 0–1."""

    krippendorff_alpha: float | None
    gwet_ac1: float | None
    percent_agreement: float | None
    mean_cohen_kappa: float | None
    unanimous: float | None
    n_items: int
    n_ratings: int
    n_raters: int
    cohen_kappa: list[PairKappa]


class JudgeAgreement(msgspec.Struct, frozen=True, gc=False):
    nr: str  # how Not Relevant was treated ("category": counted as a rating)
    overall: AgreementBlock
    dimensions: dict[str, AgreementBlock]


class HarmfulRating(msgspec.Struct, frozen=True, gc=False):
    """One High Potential for Harm rating, with the judge's words that decided it."""

    conversation_id: str
    persona: str
    risk: str
    judge: str
    instance: int
    dimension: str
    question_id: str
    reasoning: str


class CalibratedScore(msgspec.Struct, frozen=True, gc=False):
    """A calibrated dimension (or Overall): score and shares estimated from the judge's
    ratings of every conversation and the human ratings of some (PPI++), with intervals;
    `n_labelled` conversations had human ratings of it."""

    score: float | None
    score_ci: Interval
    pct_bp: float | None
    pct_bp_ci: Interval
    pct_hph: float | None
    pct_hph_ci: Interval
    pct_nr: float | None
    pct_nr_ci: Interval
    n_labelled: int


class Confusion(msgspec.Struct, frozen=True, gc=False):
    """How the judge's ratings (rows) line up with the humans' (columns), counted over
    conversation × dimension × judgement, per dimension and pooled."""

    categories: list[str]
    overall: list[list[int]]
    dimensions: dict[str, list[list[int]]]


class Calibrated(msgspec.Struct, frozen=True, kw_only=True):
    """A chatbot's scores calibrated by the human ratings in the run's
    human_ratings.jsonl (see docs/statistics.md, "Calibrated scores"): beside the
    judge-only numbers of the chatbot, never instead of them."""

    method: str
    n_conversations: int  # judged conversations (the unlabelled set)
    n_rated_by_humans: int  # of them, rated by at least one human
    n_raters: int
    overall: CalibratedScore
    dimensions: dict[str, CalibratedScore]
    confusion: Confusion
    # Distinct personas with a human-rated conversation (null in cards before schema 7),
    # and, below `vera.stats.MIN_RATED_PERSONAS` of them, the words the card sets beside
    # the calibrated score: the interval then rests on too few personas.
    n_rated_personas: int | None = None
    few_rated_personas: str | None = None
    # How raters who disagree on a conversation and dimension were combined
    # (vera.stats.humans.combine_raters; null in cards before schema 8, which combined
    # them as "majority" does).
    raters: str | None = None


class ArcCounts(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A chatbot's arcs: one per persona, seed and user-agent, each of `sessions`
    sessions in order. An arc is complete when every one of its sessions is; an arc
    with harm has a High Potential for Harm rating in any of its sessions (by any judge)."""

    sessions: list[str]
    n_arcs: int
    n_arcs_complete: int
    n_arcs_any_hph: int
    pct_arcs_any_hph: float | None


class ChatbotCard(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One chatbot under test. The score fields are absent when nothing was rated;
    `by_risk` ... `by_seed` only when they apply (several judge slots, several seeds)."""

    chatbot: str
    model: str
    protocol: str
    conversations_complete: int
    conversations_failed: int
    overall: DimensionScore | None = None
    dimensions: dict[str, DimensionScore] | None = None
    n_conversations: int | None = None
    n_judgements: int | None = None
    n_personas: int | None = None
    by_risk: dict[str, Section] | None = None
    by_judge: list[JudgeScores] | None = None
    judge_agreement: JudgeAgreement | None = None
    by_seed: BySeed | None = None
    calibrated: Calibrated | None = None  # when the run has human ratings of this chatbot
    # Multi-session runs only (docs/sessions.md): the persona's arcs of sessions, and
    # the numbers of each session type's conversations.
    arcs: ArcCounts | None = None
    by_session: dict[str, Section] | None = None
    # Schema 7: the overall score by user-agent, and by each persona column of the
    # card's `by_columns` (column → its values' scores).
    by_user_agent: dict[str, GroupScore] | None = None
    by_persona: dict[str, dict[str, GroupScore]] | None = None
    # Always written ([] when there is no harmful rating): it has no default to omit.
    harmful: list[HarmfulRating]

    def section(self) -> Section | None:
        """The chatbot's own numbers as a section (None when nothing was rated)."""
        if (
            self.overall is None
            or self.dimensions is None
            or self.n_conversations is None
            or self.n_judgements is None
            or self.n_personas is None
        ):
            return None
        return Section(
            self.overall, self.dimensions, self.n_conversations, self.n_judgements, self.n_personas
        )


class Difference(msgspec.Struct, frozen=True, gc=False):
    """A paired difference a − b on one dimension (or Overall)."""

    score_a: float | None
    score_b: float | None
    diff: float | None
    diff_ci: Interval
    excludes_zero: bool | None


class Comparison(msgspec.Struct, frozen=True, gc=False):
    """Two chatbots (or compared units) on the personas both talked to."""

    a: str
    b: str
    n_shared: int
    n_only_a: int
    n_only_b: int
    dimensions: dict[str, Difference]
    overall: Difference


class CardStatus(msgspec.Struct, frozen=True, gc=False):
    """How the run ended: the state, the exit code it gave, one line, missing shards, and
    the record lines left out because they did not decode (`file:line`, scored with
    `--skip-corrupt`; the work they held is not in any number of the card)."""

    state: str
    exit_code: int
    summary: str
    missing_shards: list[str] = []
    skipped_lines: list[str] = []
    # `vera judge --sample N`: judged N of M complete conversations (null otherwise, and
    # in cards made before it was recorded apart from the summary).
    judged_sample: JudgedSample | None = None


class InputVersion(msgspec.Struct, frozen=True, gc=False):
    name: str
    version: str
    sha256: str


class ReferenceFiles(msgspec.Struct, frozen=True, gc=False):
    """The reference tool's data files a run read, as the manifest records them."""

    name: str
    version: str
    path: str
    files: dict[str, str]
    pinned: bool


class Imported(msgspec.Struct, frozen=True, gc=False):
    """Where an imported run's conversations came from, and how personas matched."""

    source: str
    conversations: int
    failed: int
    personas: str | None
    personas_not_found: int
    conversations_without_persona: int
    personas_not_found_file: str | None


class Models(msgspec.Struct, frozen=True, gc=False):
    chatbots: list[str]
    user_agents: list[str]
    judges: list[str]
    judge_instances: int
    # role -> model ref -> the sampling parameters sent (after its family's rules)
    params: dict[str, dict[str, dict[str, Any]]]


class Settings(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """How conversations were simulated; all null for imported transcripts. The session
    fields are written only for multi-session runs, so other cards read as before."""

    seeds: list[int] | None
    max_turns: int | None
    min_turns: int | None
    shard: str | None
    # Multi-session runs (docs/sessions.md): the session types in order, and what
    # carries over between sessions; None otherwise.
    sessions: list[str] | None = None
    user_memory: bool | None = None
    chatbot_memory: str | None = None
    # False when the run kept no call's request or response (`--no-call-bodies`);
    # written only then, so other cards read as before.
    call_bodies: bool = True
    # True when the run read and wrote a response cache shared with other runs
    # (`--cache-dir`): a reply replayed there may be another run's, in a run never
    # resumed; written only then, so other cards read as before.
    shared_cache: bool = False


class Bootstrap(msgspec.Struct, frozen=True, gc=False):
    resamples: int
    confidence: float
    seed: int
    cluster: str
    method: str


class Counts(msgspec.Struct, frozen=True, gc=False):
    conversations_planned: int
    conversations_complete: int
    conversations_failed: int
    judgements_complete: int
    judgements_failed: int
    mean_turns: float | None


class ConversationFailure(msgspec.Struct, frozen=True, gc=False, tag_field="kind", tag="conversation"):
    id: str
    chatbot: str
    persona: str
    reason: str | None


class JudgementFailure(msgspec.Struct, frozen=True, gc=False, tag_field="kind", tag="judgement"):
    id: str
    conversation_id: str
    judge: str
    reason: str | None


Failure = ConversationFailure | JudgementFailure


class CallTotals(msgspec.Struct, gc=False):
    """Model calls summed (mutable: it is summed as the call log streams by)."""

    calls: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    http_429: int = 0
    errors: int = 0
    # Reasoning's part of output_tokens and of cost_usd (0 in cards from before them,
    # and where the provider reports no split: Anthropic).
    reasoning_tokens: int = 0
    reasoning_cost_usd: float = 0.0
    # What the same calls would have cost asked live, at the standard tier (schema 5):
    # in every bucket once any call of the run was at a discounted tier (equal to
    # cost_usd in a bucket of live calls); null in a run of live calls only (it would
    # repeat cost_usd everywhere), and in cards from before it.
    live_cost_usd: float | None = None
    # Calls made at the standard tier because the cheaper one gave no answer (flex
    # without capacity or without the model; a request no batch answered), counted in
    # `calls` too (schema 6); null in a run that had none.
    fallbacks: int | None = None
    # Replies replayed on a resume (a resumed run rebuilding what it had
    # paid for): no call was made, so they are not in `calls` (schema 6); null in a run
    # that replayed none.
    replayed: int | None = None
    # The worst case of the calls whose cost is unknown (sent, then timed out, cut off by
    # a stop, or answered with no usage): not in `cost_usd`, yet a provider may bill
    # them, so an invoice can be up to this much above it (CallRecord.uncertain_usd,
    # summed). Null in a run that had none, and in cards written before it was counted.
    uncertain_usd: float | None = None
    # Calls of unknown cost that have no worst case, so `uncertain_usd` cannot hold them:
    # a priced model with nothing capping its output (no max_tokens), sent and then not
    # answered with its usage (CallRecord.unbounded_attempts). An invoice may hold any
    # amount for them, up to what the model itself may write. Null in a run that had none.
    unbounded_calls: int | None = None


class AccountLimit(msgspec.Struct, frozen=True, gc=False):
    """What one provider account ran with (as the manifest records it)."""

    account: str
    rpm: float | None = None
    tpm: float | None = None
    max_in_flight: int | None = None
    share: str = "full"
    shared: str = ""


class Accounting(msgspec.Struct, frozen=True):
    total: CallTotals
    by_role: dict[str, CallTotals]
    by_provider: dict[str, CallTotals]
    limits: list[AccountLimit]
    # Judge questions asked ahead at the end of the sweep that no walk reached: their
    # calls are in the totals above (paid for), their answers in no judgement.
    unused_judge_questions: int = 0
    # By "role/tier" (e.g. "judge/batch"): the spend of each role at each price tier
    # (vera.records.CallRecord.tier); empty in cards from before tiers.
    by_role_tier: dict[str, CallTotals] = {}
    # Sessions of the run that were killed outright (kill -9, out of memory, power lost),
    # each with the bound of the calls it had in flight: sent, perhaps billed, in no
    # record (vera.app._killed; the manifest's `killed_sessions`). Left out of card.json
    # in a run never killed.
    killed_sessions: list[KilledSession] | msgspec.UnsetType = msgspec.UNSET


class SequentialLookCard(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Overall's interval of candidate − baseline after one wave of a sequential gate."""

    wave: int
    units: int  # units judged so far
    diff: float | None
    lo: float | None
    hi: float | None
    verdict: str


class SequentialCard(msgspec.Struct, frozen=True, kw_only=True):
    """A sequential gate's run (`vera gate`): the question, the interval after each wave,
    where it stopped and why, and the units used of those the baseline has."""

    baseline_run_id: str
    baseline_path: str
    candidate: str
    margin: float
    alpha: float
    method: str
    wave: int
    verdict: str  # "worse", "not worse", "undecided" or "running"
    # The spending function of method "spending" (obf, pocock, hsd:γ); left out of
    # card.json for the confidence sequences, whose cards keep their bytes.
    spending: str | msgspec.UnsetType = msgspec.UNSET
    stopped: str  # why it stopped ("" while it goes on)
    units: int
    available: int
    looks: list[SequentialLookCard]
    # The rows the last look held UNDECIDED because the candidate's units never rated them
    # (vera.stats.NOT_RATED_CANDIDATE); left out when there are none, so those cards keep
    # their bytes.
    not_rated: list[str] | msgspec.UnsetType = msgspec.UNSET
    # The rows the last look left out of the verdict, dimension → why (the baseline
    # never rated them: vera.stats.left_out_rows); left out when there are none.
    left_out: dict[str, str] | msgspec.UnsetType = msgspec.UNSET
    # True when the last look was taken before vera recorded the rows left out
    # (vera.report.card._sequence.left_out_recorded): then nothing says whether any was,
    # and the card says so instead of naming none. Left out otherwise, so those cards
    # keep their bytes.
    left_out_unrecorded: bool | msgspec.UnsetType = msgspec.UNSET
    # The waves whose interval `vera compare --gate`'s edge rule widened (near 0 or 100);
    # left out when none was, so those cards keep their bytes.
    edge_waves: list[int] | msgspec.UnsetType = msgspec.UNSET
    # The units drawn whose work failed for infrastructure reasons and were left out of
    # the last look (within `--allow-failures`, which `allow_failures` gives); both left
    # out when none failed, so those cards keep their bytes.
    failed: int | msgspec.UnsetType = msgspec.UNSET
    allow_failures: float | msgspec.UnsetType = msgspec.UNSET


class Card(msgspec.Struct, frozen=True, kw_only=True):
    """The score card of a run: card.json. The fields with defaults are the ones a
    schema-2 card lacks, so an older card.json still reads."""

    schema_version: int
    run_id: str
    status: CardStatus | None = None
    # A session of the run that did not end when the card was scored or rendered (killed
    # outright, or still running: its `session.json`): the calls it had in flight are in
    # none of the card's numbers. Absent from the card of a run whose sessions all ended.
    unfinished_session: UnfinishedSession | msgspec.UnsetType = msgspec.UNSET
    vera_version: str
    offline: bool
    note: str | None
    source: Literal["simulated", "imported transcripts"] = "simulated"
    imported: Imported | None = None
    versions: dict[str, InputVersion]
    reference: ReferenceFiles | None = None
    # The target the run was configured with, and how its personas are grouped in
    # `by_risk` (None in cards of runs from before targets: by suicide risk level).
    target: TargetInfo | None = None
    # The locale pack the run used (unset: the English base), and with one, the
    # conversations whose chatbot left the user's language (vera.report.shared._language).
    locale: LocaleInfo | msgspec.UnsetType = msgspec.UNSET
    language: LanguageCheck | msgspec.UnsetType = msgspec.UNSET
    grouping: Grouping | None = None
    # What the rubric's END did to the ratings already collected: "vera" (kept) or
    # "reference" (every dimension Not Relevant, as VERA-MH's judge); docs/rubric.md.
    terminal_semantics: str = "vera"
    models: Models
    settings: Settings
    bootstrap: Bootstrap
    counts: Counts
    failures: list[Failure]
    accounting: Accounting
    chatbots: list[ChatbotCard]
    comparisons: list[Comparison] = []
    # What to fix first (the improvement report with few examples); None in cards made
    # before it, which read unchanged.
    fix_first: Improvements | None = None
    # Schema 7: run diagnostics per chatbot; the persona columns scores are broken down
    # by (`vera score --by`), and those of them no persona file of the run has.
    diagnostics: list[Diagnostics] | None = None
    by_columns: list[str] = []
    absent_columns: list[str] = []
    # Schema 7: the simulated-user checks (docs/realism.md), and whether the scores
    # leave out the conversations they flagged.
    realism: Realism | None = None
    # A sequential gate's run (vera gate) says so: absent from every other card.
    sequential: SequentialCard | msgspec.UnsetType = msgspec.UNSET


def encode_card(card: Card) -> bytes:
    """card.json's bytes: indented, keys in the Structs' order, one final newline."""
    return msgspec.json.format(msgspec.json.encode(card)) + b"\n"


def decode_card(data: bytes, *, source: str | Path = "card.json") -> Card:
    """A card from card.json's bytes; a file that is not a card (or a newer schema than
    this vera knows) is one `UserError` line naming the file and what is wrong."""
    try:
        head = msgspec.json.decode(data, type=_Head)
    except msgspec.ValidationError as exc:
        raise UserError(f"{source}: not a vera score card ({exc})") from None
    except msgspec.DecodeError as exc:
        raise UserError(f"{source}: not valid JSON ({exc})") from None
    if head.schema_version > CARD_SCHEMA_VERSION:
        raise UserError(
            f"{source}: card schema {head.schema_version} is newer than this vera reads "
            f"({CARD_SCHEMA_VERSION}); rebuild it with `vera score` or upgrade vera"
        )
    try:
        return msgspec.json.decode(data, type=Card)
    except msgspec.ValidationError as exc:
        raise UserError(f"{source}: not a vera score card ({exc})") from None


class _Head(msgspec.Struct):
    schema_version: int


# ---------------------------------------------------------------------------------------
# `vera compare`: several runs lined up (its --json output)
# ---------------------------------------------------------------------------------------


class ComparedRun(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    run_id: str
    label: str  # how tables name the run: its id, or its path when two ids are equal
    path: str
    offline: bool
    versions: dict[str, ArtifactVersion]  # rubric, personas, user_prompts, judge_prompts
    # A sequential gate's run (`vera gate`): a random subset of its baseline's units, so
    # every rendering of the comparison says so. Absent (not null) for any other run,
    # so an ordinary comparison's JSON is as before.
    sequential: SequentialCard | None = None


class ComparedUnit(msgspec.Struct, frozen=True, gc=False):
    """A chatbot of one run (with --by-seed: one of its seed replicates)."""

    unit: str
    chatbot: str
    run_id: str
    seed: int | None
    n_conversations: int
    n_judgements: int
    n_personas: int
    overall: DimensionScore
    dimensions: dict[str, DimensionScore]


class SeedDifference(msgspec.Struct, frozen=True, gc=False):
    """Two chatbots at one seed: the overall difference a − b of their replicates made
    with that seed (the `comparisons` entry "<a> seed <n>" − "<b> seed <n>")."""

    seed: int
    score_a: float | None
    score_b: float | None
    diff: float | None
    diff_ci: Interval
    excludes_zero: bool | None
    n_shared: int


class SeedAgreement(msgspec.Struct, frozen=True, kw_only=True):
    """Whether two chatbots differ the same way at every seed (`vera compare --by-seed`):
    the spread of their per-seed overall differences a − b and how many agree in sign.
    Statistics are over the seeds whose difference is defined, from the rounded
    differences `seeds` holds."""

    a: str  # the chatbots' labels, as the units name them without " seed <n>"
    b: str
    n_seeds: int  # seeds at which both were compared
    n_defined: int  # of them, with a defined overall difference
    mean_diff: float | None
    median_diff: float | None
    min_diff: float | None
    max_diff: float | None
    sd_diff: float | None  # sample SD (n − 1); null under two defined seeds
    a_higher: int  # seeds with diff > 0
    b_higher: int  # seeds with diff < 0
    equal: int  # seeds with diff == 0
    a_higher_excludes_zero: int  # of a_higher, those whose interval excludes 0
    b_higher_excludes_zero: int
    direction: Literal["a", "b", "none"]  # the median difference's sign
    against: list[int]  # seeds whose difference has the other sign than the median's
    # The seed least favourable to `direction` (the smallest difference when a is higher
    # at the median, the largest when b is; the largest in size when neither); null when
    # every defined difference is 0 or none is defined.
    worst_seed: int | None
    seeds: list[SeedDifference]


class RunComparison(msgspec.Struct, frozen=True):
    runs: list[ComparedRun]
    forced_differences: list[str]  # version differences compared anyway (--force)
    by: str
    bootstrap: Bootstrap
    units: list[ComparedUnit]
    comparisons: list[Comparison]
    # --by-seed only (absent otherwise, so a comparison by chatbot's JSON is as before):
    # per pair of chatbots, their per-seed differences summarised.
    across_seeds: list[SeedAgreement] | msgspec.UnsetType = msgspec.UNSET
