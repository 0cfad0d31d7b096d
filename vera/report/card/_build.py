"""The score card as data: card.json is the source of truth; card.md, card.html and the
plots are rendered from it (`vera.report.card._tables`, `vera.report.card._markdown`,
`vera.report.card._html`, `vera.report.card._plots`).

The card says what was evaluated (chatbots, personas, rubric and prompt versions), how
(models, turns, judges, seeds), whether it was an offline run with stand-in models,
what failed and was therefore left out, and for each chatbot: the overall score and
every dimension's score with their confidence intervals, the share of each rating, the
share of conversations with any High Potential for Harm, the breakdown by persona risk
level, per-judge and per-seed scores and inter-judge agreement when there are several,
and every harmful rating with the judge's reasoning so a reader can audit it. With
several chatbots, `comparisons` holds their paired differences.

Numbers are rounded here, once, to the precision they are shown with (scores and
percentages 0.1, agreement statistics 0.001, cost 0.0001 USD), so every rendering shows
exactly the numbers of card.json.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence, Set
from typing import Any

import msgspec
import polars as pl

from vera.inputs import PERSONAS_NOT_FOUND
from vera.records import (
    HIGH_POTENTIAL_FOR_HARM,
    OVERALL,
    RISK_LEVELS,
    ArtifactVersion,
    CallRecord,
    HumanRating,
    ImportInfo,
    RaterRule,
    RunManifest,
    SessionPlace,
)
from vera.report.card._calibrated import calibrated_by_chatbot
from vera.report.card._schema import (
    CARD_SCHEMA_VERSION,
    Accounting,
    AccountLimit,
    AgreementBlock,
    ArcCounts,
    Bootstrap,
    BySeed,
    CallTotals,
    Card,
    CardStatus,
    ChatbotCard,
    Comparison,
    ConversationFailure,
    Counts,
    Difference,
    DimensionScore,
    Failure,
    HarmfulRating,
    Imported,
    InputVersion,
    Interval,
    JudgeAgreement,
    JudgementFailure,
    JudgeScores,
    Models,
    PairKappa,
    ReferenceFiles,
    Score,
    Section,
    SeedScore,
    Settings,
)
from vera.report.card._sequence import sequential_card
from vera.report.improvements._report import run_improvements
from vera.report.shared._diagnostics import (
    DEFAULT_BY,
    GroupScore,
    group_frame,
    group_scores,
    persona_columns,
    run_diagnostics,
)
from vera.report.shared._language import check_language
from vera.report.shared._offline import offline_note
from vera.report.shared._outcome import run_status
from vera.report.shared._realism import Realism
from vera.stats import METHOD, RaterBlock, compare, judge_agreement, summarise
from vera.stats.humans import DEFAULT_RATER_RULE
from vera.store import ConversationHead, RunRecords

# Examples per finding in the card's "Fix first" (`vera report improvements` gives more).
CARD_EXEMPLARS = 2


def round_number(x: Any, digits: int = 1) -> float | None:
    """Round for the card; None stays None, and −0.0 becomes 0.0 so it never shows a sign."""
    return None if x is None else round(float(x), digits) + 0.0


class CardStats:
    """Every summary frame a card needs, computed once from the ratings frame."""

    def __init__(self, frame: pl.DataFrame, *, resamples: int, confidence: float, seed: int) -> None:
        kw: dict[str, Any] = {"n_resamples": resamples, "confidence": confidence, "seed": seed}
        self.frame = frame
        chatbots = frame.get_column("chatbot").unique()
        # The pairwise table exists only when there is more than one chatbot to compare.
        self.pairs: pl.DataFrame | None
        if chatbots.len() >= 2:
            # compare's table is summarise by chatbot with the same seeds: no second pass.
            self.by_chatbot, self.pairs = compare(frame, unit="chatbot", **kw)
        else:
            self.by_chatbot, self.pairs = summarise(frame, ["chatbot"], **kw), None
        self.by_risk = summarise(frame, ["chatbot", "risk"], **kw)
        slots = frame.select("judge", "instance").unique()
        self.judge_slots = slots.height
        self.by_judge = (
            summarise(frame, ["chatbot", "judge"], **kw) if slots["judge"].n_unique() > 1 else None
        )
        many_instances = slots.group_by("judge").len().filter(pl.col("len") > 1)
        self.by_instance = (
            summarise(
                frame.join(many_instances.select("judge"), on="judge"), ["chatbot", "judge", "instance"], **kw
            )
            if many_instances.height
            else None
        )
        # The frame's `seed` is each conversation's derived seed; the run's seed
        # replicate (which of the run's seeds produced it) is `replicate`.
        replicates = frame.get_column("replicate").n_unique()
        self.by_seed = summarise(frame, ["chatbot", "replicate"], **kw) if replicates > 1 else None
        self.by_session: pl.DataFrame | None = None
        self.kw = kw

    def add_sessions(self, places: dict[str, SessionPlace]) -> None:
        """The per-session-type numbers of a multi-session run (`places`: its
        conversations' places in their arcs)."""
        if not places or not self.frame.height:
            return
        kinds = pl.DataFrame(
            {"conversation_id": list(places), "session": [p.type for p in places.values()]},
            schema={"conversation_id": pl.Utf8, "session": pl.Utf8},
        )
        framed = self.frame.join(kinds, on="conversation_id", how="inner")
        self.by_session = summarise(framed, ["chatbot", "session"], **self.kw)


def _grouped(manifest: RunManifest) -> bool:
    """Whether the run's personas are grouped at all (a target may name no grouping)."""
    return manifest.grouping is None or bool(manifest.grouping.by)


def _levels(manifest: RunManifest, by_risk: pl.DataFrame) -> list[str]:
    """The groups in the order the card shows them: the grouping's own order, then any
    other value the conversations carry (an imported transcript's "Unknown"), so no
    conversation is left out of the breakdown."""
    known = list(manifest.grouping.levels if manifest.grouping is not None else RISK_LEVELS)
    seen = by_risk.get_column("risk").unique().sort().to_list() if by_risk.height else []
    return known + [v for v in seen if v not in known]


def build_card(
    manifest: RunManifest,
    records: RunRecords,
    frame: pl.DataFrame,
    *,
    resamples: int,
    confidence: float,
    seed: int,
    humans: Sequence[HumanRating] = (),
    answers: pl.DataFrame | None = None,
    by: Sequence[str] | None = None,
    realism: Realism | None = None,
    excluded: Set[str] = frozenset(),
    raters: RaterRule = DEFAULT_RATER_RULE,
) -> Card:
    """The card of a run from its manifest, its records (scanned: heads in memory, whole
    records read one at a time) and its ratings frame; with `humans` (the run's human
    ratings), each rated chatbot's calibrated scores too; with `answers` (the judge
    answers frame), the judge's re-asks in the diagnostics; `by` are the persona columns
    the scores are broken down by (None: the disclosure style, where the personas have it);
    `realism` is the simulated-user checks' block, and `excluded` the conversations the
    scores leave out (flagged by it: `frame` is already without them)."""
    stats = CardStats(frame, resamples=resamples, confidence=confidence, seed=seed)
    calibrated = calibrated_by_chatbot(
        frame, humans, resamples=resamples, confidence=confidence, seed=seed, raters=raters
    )
    conversations = records.conversation_heads()
    judgement_heads = records.judgement_heads()
    convs = list(conversations.values())
    judgements = list(judgement_heads.values())
    failed_convs = [c for c in convs if c.status == "failed"]
    failed_judgements = [j for j in judgements if j.status == "failed"]
    harmful = _harmful(records)
    if excluded:
        harmful = {bot: [h for h in hs if h.conversation_id not in excluded] for bot, hs in harmful.items()}
    places = {c.id: c.session for c in convs if c.session is not None}
    stats.add_sessions(places)
    # An import's types are as its files name them, in place order.
    kinds = _session_types(manifest) or list(
        dict.fromkeys(p.type for p in sorted(places.values(), key=lambda p: p.index))
    )
    by_agent = _by_user_agent(stats)
    by_persona, absent = _by_persona(stats, manifest, conversations, DEFAULT_BY if by is None else by)
    if by is None:
        absent = []  # the default column is shown where the personas have it, unasked
    columns = [c for c in (DEFAULT_BY if by is None else by) if c in by_persona or c in absent]
    chatbots: list[ChatbotCard] = []
    for spec in manifest.chatbots:
        mine = [c for c in convs if c.chatbot == spec.ref]
        rows = _rows(stats.by_chatbot, chatbot=spec.ref)
        # A chatbot with nothing rated has none of the score fields (they are left out).
        section = _section(rows) if rows else None
        several_judges = section is not None and stats.judge_slots > 1
        chatbots.append(
            ChatbotCard(
                chatbot=spec.ref,
                model=spec.model,
                protocol=spec.protocol,
                conversations_complete=sum(c.status == "complete" for c in mine),
                conversations_failed=sum(c.status == "failed" for c in mine),
                overall=section.overall if section else None,
                dimensions=section.dimensions if section else None,
                n_conversations=section.n_conversations if section else None,
                n_judgements=section.n_judgements if section else None,
                n_personas=section.n_personas if section else None,
                by_risk=(
                    {
                        level: _section(rrows)
                        for level in _levels(manifest, stats.by_risk)
                        if (rrows := _rows(stats.by_risk, chatbot=spec.ref, risk=level))
                    }
                    if section and _grouped(manifest)
                    else None
                ),
                by_judge=_by_judge(stats, spec.ref) if several_judges else None,
                judge_agreement=(
                    _judge_agreement(stats.frame.filter(pl.col("chatbot") == spec.ref))
                    if several_judges
                    else None
                ),
                by_seed=(
                    _by_seed(stats.by_seed, spec.ref, manifest.seeds)
                    if section and stats.by_seed is not None
                    else None
                ),
                calibrated=calibrated.get(spec.ref) if section else None,
                arcs=_arcs(mine, kinds, stats.frame) if places else None,
                by_session=(
                    {
                        kind: _section(srows)
                        for kind in dict.fromkeys(kinds)
                        if (srows := _rows(stats.by_session, chatbot=spec.ref, session=kind))
                    }
                    if section and stats.by_session is not None
                    else None
                ),
                by_user_agent=by_agent.get(spec.ref) if section else None,
                by_persona=(
                    {col: g for col, per_bot in by_persona.items() if (g := per_bot.get(spec.ref))} or None
                    if section
                    else None
                ),
                harmful=harmful.get(spec.ref, []),
            )
        )
    complete_convs = [c for c in convs if c.status == "complete"]
    turns = [c.n_turns for c in complete_convs]
    status = run_status(
        manifest,
        conversations,
        judgement_heads,
        stopped=manifest.stopped,
        allow_failures=manifest.config.allow_failures,
    )
    failures: list[Failure] = [
        ConversationFailure(id=c.id, chatbot=c.chatbot, persona=c.persona, reason=c.error)
        for c in sorted(failed_convs, key=lambda c: c.id)
    ]
    failures += [
        JudgementFailure(id=j.id, conversation_id=j.conversation_id, judge=j.judge, reason=j.error)
        for j in sorted(failed_judgements, key=lambda j: j.id)
    ]
    return Card(
        schema_version=CARD_SCHEMA_VERSION,
        run_id=manifest.run_id,
        status=CardStatus(
            status.state,
            status.exit_code,
            status.summary,
            list(status.missing_shards),
            judged_sample=status.judged_sample,
        ),
        vera_version=manifest.vera_version,
        offline=manifest.offline,
        note=offline_note(manifest),
        source="imported transcripts" if manifest.imported is not None else "simulated",
        imported=_imported(manifest.imported),
        versions=_versions(manifest),
        reference=(
            msgspec.convert(msgspec.to_builtins(manifest.reference), ReferenceFiles)
            if manifest.reference is not None
            else None
        ),
        target=manifest.target,
        locale=manifest.locale,
        language=(
            check_language(records.iter_conversations(), [s.ref for s in manifest.chatbots])
            if not isinstance(manifest.locale, msgspec.UnsetType)
            else msgspec.UNSET
        ),
        grouping=manifest.grouping,
        terminal_semantics=manifest.terminal_semantics,
        models=Models(
            chatbots=[s.ref for s in manifest.chatbots],
            user_agents=[s.ref for s in manifest.user_agents],
            judges=[s.ref for s in manifest.judges],
            judge_instances=manifest.judge_instances,
            # The sampling parameters each role sent each model (after its family's rules).
            params={
                "chatbot": {s.ref: s.params for s in manifest.chatbots},
                "user_agent": {s.ref: s.params for s in manifest.user_agents},
                "judge": {s.ref: s.params for s in manifest.judges},
            },
        ),
        settings=_settings(manifest),
        bootstrap=Bootstrap(
            resamples=resamples, confidence=confidence, seed=seed, cluster="persona", method=METHOD
        ),
        counts=Counts(
            conversations_planned=manifest.jobs_planned,
            conversations_complete=len(complete_convs),
            conversations_failed=len(failed_convs),
            judgements_complete=sum(j.status == "complete" for j in judgements),
            judgements_failed=len(failed_judgements),
            mean_turns=round_number(sum(turns) / len(turns)) if turns else None,
        ),
        failures=failures,
        accounting=_accounting(records.calls(), manifest, unused=sum(j.unused_questions for j in judgements)),
        chatbots=chatbots,
        comparisons=comparisons(stats.pairs, "chatbot") if stats.pairs is not None else [],
        fix_first=msgspec.structs.replace(run_improvements(records, exemplars=CARD_EXEMPLARS), run_id=None),
        diagnostics=run_diagnostics(
            [s.ref for s in manifest.chatbots],
            records.iter_conversations(),
            answers if answers is not None else pl.DataFrame(schema=_ANSWERS_COLUMNS),
            [(j.conversation_id, j.error) for j in failed_judgements],
        ),
        by_columns=columns,
        absent_columns=absent,
        realism=realism,
        sequential=sequential_card(records.root) or msgspec.UNSET,
    )


_ANSWERS_COLUMNS = {"conversation_id": pl.Utf8, "attempts": pl.Int64, "auto": pl.Boolean}


def _by_user_agent(stats: CardStats) -> dict[str, dict[str, GroupScore]]:
    """Each chatbot's overall score by user-agent."""
    if not stats.frame.height:
        return {}
    summary = summarise(stats.frame, ["chatbot", "user_agent"], **stats.kw)
    return {bot: group_scores(summary, bot, "user_agent") for bot in summary.get_column("chatbot").unique()}


def _by_persona(
    stats: CardStats, manifest: RunManifest, heads: dict[str, ConversationHead], columns: Sequence[str]
) -> tuple[dict[str, dict[str, dict[str, GroupScore]]], list[str]]:
    """Each chatbot's overall score by each of `columns` (column → chatbot → value →
    score), and the columns neither a persona file nor the conversations carry."""
    if not columns:
        return {}, []
    values, absent = persona_columns(manifest, columns)
    annotations = {cid: h.annotations for cid, h in heads.items() if h.annotations}
    carried = {c for a in annotations.values() for c in a}
    absent = [c for c in absent if c not in carried]
    out: dict[str, dict[str, dict[str, GroupScore]]] = {}
    if not stats.frame.height:
        return out, absent
    for col in columns:
        if col in absent:
            continue
        summary = summarise(
            group_frame(stats.frame, col, values, annotations), ["chatbot", "group"], **stats.kw
        )
        out[col] = {
            bot: group_scores(summary, bot, "group") for bot in summary.get_column("chatbot").unique()
        }
    return out, absent


# ---------------------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------------------


def _rows(summary: pl.DataFrame, **keys: Any) -> list[dict[str, Any]]:
    cond = pl.lit(True)
    for name, value in keys.items():
        cond = cond & (pl.col(name) == value)
    return summary.filter(cond).to_dicts()


def _interval(row: dict[str, Any], key: str) -> Interval:
    return Interval(round_number(row[f"{key}_lo"]), round_number(row[f"{key}_hi"]))


def row_stats(row: dict[str, Any]) -> DimensionScore:
    """One summary row (a dimension or Overall) as card numbers."""
    return DimensionScore(
        n_ratings=row["n_ratings"],
        n_rated=row["n_rated"],
        n_best_practice=row["n_bp"],
        n_suboptimal=row["n_sub"],
        n_high_potential_for_harm=row["n_hph"],
        n_not_relevant=row["n_nr"],
        score=round_number(row["score"]),
        score_ci=_interval(row, "score"),
        pct_bp=round_number(row["pct_bp"]),
        pct_bp_ci=_interval(row, "pct_bp"),
        pct_sub=round_number(row["pct_sub"]),
        pct_sub_ci=_interval(row, "pct_sub"),
        pct_hph=round_number(row["pct_hph"]),
        pct_hph_ci=_interval(row, "pct_hph"),
        pct_conversations_any_hph=round_number(row["pct_conversations_any_hph"]),
        pct_conversations_any_hph_ci=_interval(row, "pct_conversations_any_hph"),
        pct_nr=round_number(row["pct_nr"]),
    )


def _section(rows: list[dict[str, Any]]) -> Section:
    overall = next(r for r in rows if r["dimension"] == OVERALL)
    return Section(
        overall=row_stats(overall),
        dimensions={r["dimension"]: row_stats(r) for r in rows if r["dimension"] != OVERALL},
        n_conversations=overall["n_conversations"],
        n_judgements=overall["n_judgements"],
        n_personas=overall["n_clusters"],
    )


def _score(row: dict[str, Any]) -> Score:
    return Score(round_number(row["score"]), _interval(row, "score"))


def _by_judge(stats: CardStats, chatbot: str) -> list[JudgeScores]:
    """Scores per judge model (instances pooled) when there are several judge models,
    and per judge instance for judges with several instances."""

    def scores(judge: str, instance: int | None, rows: list[dict[str, Any]]) -> JudgeScores:
        # Only the scores of each section: these breakdowns are read side by side.
        overall = next(r for r in rows if r["dimension"] == OVERALL)
        return JudgeScores(
            judge=judge,
            instance=instance,
            n_conversations=overall["n_conversations"],
            n_judgements=overall["n_judgements"],
            overall=_score(overall),
            dimensions={r["dimension"]: _score(r) for r in rows if r["dimension"] != OVERALL},
        )

    out: list[JudgeScores] = []
    judges = sorted(stats.frame.get_column("judge").unique().to_list())
    for judge in judges:
        if stats.by_judge is not None and (rows := _rows(stats.by_judge, chatbot=chatbot, judge=judge)):
            out.append(scores(judge, None, rows))
        if stats.by_instance is None:
            continue
        instances = _rows(stats.by_instance, chatbot=chatbot, judge=judge, dimension=OVERALL)
        for instance in sorted(r["instance"] for r in instances):
            rows = _rows(stats.by_instance, chatbot=chatbot, judge=judge, instance=instance)
            out.append(scores(judge, instance, rows))
    return out


def _by_seed(summary: pl.DataFrame, chatbot: str, seeds: list[int]) -> BySeed:
    """The overall score per seed replicate and how far the replicates spread."""
    per_seed = []
    for row in sorted(_rows(summary, chatbot=chatbot, dimension=OVERALL), key=lambda r: r["replicate"]):
        replicate = row["replicate"]
        per_seed.append(
            SeedScore(
                seed=seeds[replicate] if replicate < len(seeds) else None,
                replicate=replicate,
                n_conversations=row["n_conversations"],
                n_personas=row["n_clusters"],
                score=round_number(row["score"]),
                score_ci=_interval(row, "score"),
            )
        )
    scores = [
        r["score"] for r in _rows(summary, chatbot=chatbot, dimension=OVERALL) if r["score"] is not None
    ]
    return BySeed(
        seeds=per_seed,
        score_min=round_number(min(scores)) if scores else None,
        score_max=round_number(max(scores)) if scores else None,
        score_sd=round_number(statistics.stdev(scores)) if len(scores) > 1 else None,
    )


def _judge_agreement(frame: pl.DataFrame) -> JudgeAgreement:
    """Agreement among the judge slots (judge × instance) on this chatbot's
    conversations, Not Relevant counted as a rating (did the judges agree the dimension
    applied?)."""
    result = judge_agreement(frame, nr="category")

    # The card keeps its own Structs (schema v3, values to 3 places, its own field
    # order): the statistics may grow without changing the card.
    def block(b: RaterBlock) -> AgreementBlock:
        return AgreementBlock(
            krippendorff_alpha=round_number(b.krippendorff_alpha, 3),
            gwet_ac1=round_number(b.gwet_ac1, 3),
            percent_agreement=round_number(b.percent_agreement, 3),
            mean_cohen_kappa=round_number(b.mean_cohen_kappa, 3),
            unanimous=round_number(b.unanimous, 3),
            n_items=b.n_items,
            n_ratings=b.n_ratings,
            n_raters=b.n_raters,
            cohen_kappa=[
                PairKappa(p.rater_a, p.rater_b, round_number(p.kappa, 3), p.n_items) for p in b.cohen_kappa
            ],
        )

    return JudgeAgreement(
        nr=result.nr,
        overall=block(result.overall),
        dimensions={name: block(b) for name, b in result.dimensions.items()},
    )


def comparisons(pairs: pl.DataFrame, unit: str) -> list[Comparison]:
    """`vera.stats.compare` pairs as card entries: one per pair of `unit` values, with
    the paired difference overall and per dimension."""
    out: list[Comparison] = []
    if pairs.height == 0:
        return out
    for part in pairs.partition_by([f"{unit}_a", f"{unit}_b"], maintain_order=True):
        first = part.row(0, named=True)
        dimensions: dict[str, Difference] = {}
        overall: Difference | None = None
        for row in part.iter_rows(named=True):
            diff = Difference(
                score_a=round_number(row["score_a"]),
                score_b=round_number(row["score_b"]),
                diff=round_number(row["diff"]),
                diff_ci=_interval(row, "diff"),
                excludes_zero=row["excludes_zero"],
            )
            if row["dimension"] == OVERALL:
                overall = diff
            else:
                dimensions[row["dimension"]] = diff
        if overall is None:
            raise ValueError(f"compare: no {OVERALL} row for {first[f'{unit}_a']} − {first[f'{unit}_b']}")
        out.append(
            Comparison(
                a=first[f"{unit}_a"],
                b=first[f"{unit}_b"],
                n_shared=first["n_shared"],
                n_only_a=first["n_only_a"],
                n_only_b=first["n_only_b"],
                dimensions=dimensions,
                overall=overall,
            )
        )
    return out


def _harmful(records: RunRecords) -> dict[str, list[HarmfulRating]]:
    """Every High Potential for Harm rating per chatbot, with what a reader needs to
    find the conversation and the judge's words that decided it. Only judgements whose
    heads show such a rating are read whole."""
    out: dict[str, list[HarmfulRating]] = defaultdict(list)
    for conv, j in records.complete_pairs(harmful_only=True):
        for r in j.ratings:
            if r.rating == HIGH_POTENTIAL_FOR_HARM:
                out[conv.chatbot].append(
                    HarmfulRating(
                        conversation_id=j.conversation_id,
                        persona=conv.persona,
                        risk=conv.risk,
                        judge=j.judge,
                        instance=j.instance,
                        dimension=r.dimension,
                        question_id=r.question_id,
                        reasoning=r.reasoning,
                    )
                )
    for entries in out.values():
        entries.sort(key=lambda h: (h.conversation_id, h.judge, h.instance, h.dimension))
    return out


def _accounting(calls: Iterable[CallRecord], manifest: RunManifest, *, unused: int = 0) -> Accounting:
    """Calls, tokens, cost, retries and errors by role, by provider and in total, summed
    as the call log streams by (never all of it in memory); `unused`, the judge questions
    asked ahead that no walk reached."""
    by_role: dict[str, CallTotals] = defaultdict(CallTotals)
    by_provider: dict[str, CallTotals] = defaultdict(CallTotals)
    by_role_tier: dict[str, CallTotals] = defaultdict(CallTotals)
    total = CallTotals()
    live: dict[int, float] = defaultdict(float)  # by id(bucket): the standard tier's cost
    discounted: set[int] = set()  # the buckets holding a batch or flex call
    for c in calls:
        for b in (by_role[c.role], by_provider[c.provider], by_role_tier[f"{c.role}/{c.tier}"], total):
            if c.cached:  # a reply replayed on a resume: no call was made
                b.replayed = (b.replayed or 0) + 1
                continue
            live[id(b)] += c.live_cost_usd
            if c.tier != "standard":
                discounted.add(id(b))
            b.calls += 1
            if c.fallback:
                b.fallbacks = (b.fallbacks or 0) + 1
            b.input_tokens += c.usage.input_tokens
            b.cached_input_tokens += c.usage.cached_input_tokens
            b.output_tokens += c.usage.output_tokens
            b.reasoning_tokens += c.usage.reasoning_tokens
            b.cost_usd += c.cost_usd
            b.reasoning_cost_usd += c.reasoning_cost_usd
            b.retries += max(0, c.attempts - 1)
            b.http_429 += c.http_429
            b.errors += c.status == "error"
            if c.uncertain_usd:
                b.uncertain_usd = (b.uncertain_usd or 0.0) + c.uncertain_usd
            if c.unbounded_attempts:
                b.unbounded_calls = (b.unbounded_calls or 0) + 1
    for b in (*by_role.values(), *by_provider.values(), *by_role_tier.values(), total):
        b.cost_usd = round_number(b.cost_usd, 4) or 0.0
        # Once any call was discounted the card shows what live mode would have cost for
        # every bucket, so card.json gives it for every bucket too (card.md and card.json
        # never disagree on a cost); a run of live calls only shows none.
        if discounted:
            b.live_cost_usd = round_number(live[id(b)], 4) or 0.0
        # Counted in every bucket once the run has any (else null: nothing to say).
        if total.fallbacks:
            b.fallbacks = b.fallbacks or 0
        if total.replayed:
            b.replayed = b.replayed or 0
        # What a provider may bill beyond cost_usd, in every bucket once the run has any.
        if total.uncertain_usd:
            b.uncertain_usd = round_number(b.uncertain_usd or 0.0, 4) or 0.0
        if total.unbounded_calls:
            b.unbounded_calls = b.unbounded_calls or 0
        b.reasoning_cost_usd = round_number(b.reasoning_cost_usd, 4) or 0.0
    return Accounting(
        total=total,
        by_role=dict(by_role),
        by_provider=dict(by_provider),
        # What each account ran with: like the money, a fact of this run, not of the sweep
        # (the same sweep on other endpoints or as shards has other limits, same results).
        limits=[msgspec.convert(msgspec.to_builtins(a), AccountLimit) for a in manifest.limits],
        unused_judge_questions=unused,
        by_role_tier=dict(sorted(by_role_tier.items())),
        killed_sessions=manifest.killed_sessions,
    )


def _version(v: ArtifactVersion) -> InputVersion:
    return InputVersion(v.name, v.version, v.sha256)


def _versions(manifest: RunManifest) -> dict[str, InputVersion]:
    """The versioned inputs that shaped the numbers. An imported run used no simulated-user
    prompts, and personas only when a persona file gave risk levels by name."""
    out = {"rubric": _version(manifest.rubric)}
    imported = manifest.imported
    if imported is None or imported.personas is not None:
        out["personas"] = _version(manifest.personas)
    if imported is None:
        out["user_prompts"] = _version(manifest.user_prompts)
    out["judge_prompts"] = _version(manifest.judge_prompts)
    return out


def _settings(manifest: RunManifest) -> Settings:
    """How conversations were simulated; all None for imported transcripts, where no
    setting of vera's applied (the card shows none)."""
    conversation = manifest.config.conversation
    simulated = manifest.imported is None
    sessions = _session_types(manifest)
    return Settings(
        seeds=manifest.seeds if simulated else None,
        max_turns=conversation.max_turns if simulated else None,
        min_turns=conversation.min_turns if simulated else None,
        shard=manifest.shard,
        sessions=sessions or None,
        user_memory=conversation.user_memory if sessions else None,
        chatbot_memory=conversation.chatbot_memory if sessions else None,
        call_bodies=manifest.config.call_bodies is not False,
        shared_cache=bool(manifest.config.cache and manifest.config.cache_dir),
    )


def _session_types(manifest: RunManifest) -> list[str]:
    """The session types a run planned per arc ([] without sessions)."""
    kinds = manifest.config.conversation.sessions
    return list(kinds) if len(kinds) > 1 else []


def _arcs(convs: list[ConversationHead], kinds: list[str], frame: pl.DataFrame) -> ArcCounts | None:
    """A chatbot's arcs, from its conversations' places and the ratings frame."""
    by_arc: dict[str, list[ConversationHead]] = defaultdict(list)
    for c in convs:
        if c.session is not None:
            by_arc[c.session.arc].append(c)
    if not by_arc:
        return None
    harmful = set(
        frame.filter(pl.col("rating") == HIGH_POTENTIAL_FOR_HARM).get_column("conversation_id").to_list()
    )
    counts = {c.session.arc: c.session.count for c in convs if c.session is not None}
    complete = sum(
        len(sessions) == counts[arc] and all(c.status == "complete" for c in sessions)
        for arc, sessions in by_arc.items()
    )
    with_harm = sum(any(c.id in harmful for c in sessions) for sessions in by_arc.values())
    return ArcCounts(
        sessions=kinds,
        n_arcs=len(by_arc),
        n_arcs_complete=complete,
        n_arcs_any_hph=with_harm,
        pct_arcs_any_hph=round_number(100 * with_harm / len(by_arc)),
    )


def _imported(info: ImportInfo | None) -> Imported | None:
    if info is None:
        return None
    return Imported(
        source=info.source,
        conversations=info.conversations,
        failed=info.failed,
        personas=info.personas,
        personas_not_found=len(info.personas_not_found),
        conversations_without_persona=sum(info.personas_not_found.values()),
        personas_not_found_file=PERSONAS_NOT_FOUND if info.personas_not_found else None,
    )
