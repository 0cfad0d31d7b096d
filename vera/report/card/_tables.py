"""The tables of a card, one builder per table, as plain strings (`Table`): built once
here and rendered as Markdown, HTML or a terminal table. Every number is formatted by
`vera.report.shared._numbers`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vera.inputs import BASE, phrase, tr, ui_cell
from vera.records import OVERALL
from vera.report.card._schema import (
    AgreementBlock,
    Calibrated,
    CallTotals,
    Card,
    ChatbotCard,
    Comparison,
    ConversationFailure,
    Difference,
    DimensionScore,
    Failure,
    HarmfulRating,
    JudgeAgreement,
    Section,
)
from vera.report.card._text import headlines, live_cost_text
from vera.report.improvements._report import SHORT, ChatbotFindings, ranked
from vera.report.shared._diagnostics import END_LABELS, END_REASONS, GroupScore
from vera.report.shared._numbers import MISSING, num, percent_level, why_missing, with_ci
from vera.report.shared._pages import conversation_href
from vera.report.shared._realism import FlaggedConversation, Realism
from vera.report.shared._table import Table, agreement_headers
from vera.stats.bootstrap import MIN_RATED_PERSONAS

DIMENSION_HEADERS = [
    "Dimension",
    "Score [CI]",
    "Best Practice % [CI]",
    "Suboptimal % [CI]",
    "High Potential for Harm % [CI]",
    "Conversations rated HPH % [CI]",
    "Not Relevant %",
    "BP",
    "SUB",
    "HPH",
    "NR",
    "Rated",
    "All ratings",
]


def headline_tables(card: Card, *, short: bool = False) -> list[Table]:
    """The headline as two narrow tables: one row per chatbot, then the dimension scores
    with one column per chatbot (five rows read down more easily than five columns).
    `short` headers fit an 80-column terminal."""
    level = percent_level(card.bootstrap.confidence)
    heads = headlines(card)
    main = Table(
        [
            tr("col.chatbot"),
            tr("col.overall_short", level=level) if short else tr("col.overall_long", level=level),
            tr("col.any_hph_short") if short else tr("col.any_hph_long"),
            tr("col.conv_short") if short else tr("col.conversations"),
            tr("col.failed"),
        ]
    )
    for h in heads:
        main.rows.append([h.chatbot, h.score, h.any_hph, h.conversations, h.failed])
    dims = Table([tr("col.dimension_score"), *(h.chatbot for h in heads)])
    for i, (name, _) in enumerate(heads[0].dimensions if heads else []):
        dims.rows.append([name, *(h.dimensions[i][1] for h in heads)])
    # No chatbot has a complete judgement (its service was down, say): a header with no
    # rows reads as a rendering fault; the first table already says why there are none.
    return [main, dims] if dims.rows else [main]


def overview_table(card: Card) -> Table:
    t = Table(
        [
            "Chatbot",
            "Overall score [CI]",
            "Best Practice % [CI]",
            "High Potential for Harm % [CI]",
            "Conversations with any HPH % [CI]",
            "Conversations",
            "Failed",
        ]
    )
    for bot in card.chatbots:
        if bot.overall is None:
            t.rows.append(
                [
                    bot.chatbot,
                    tr("card.no_complete_judgements"),
                    *[tr("card.missing_why", dash=MISSING, why=tr("card.no_complete_judgement"))] * 3,
                    num(bot.conversations_complete),
                    num(bot.conversations_failed),
                ]
            )
            continue
        o = bot.overall
        t.rows.append(
            [
                bot.chatbot,
                with_ci(o, "score"),
                with_ci(o, "pct_bp"),
                with_ci(o, "pct_hph"),
                with_ci(o, "pct_conversations_any_hph"),
                num(bot.conversations_complete),
                num(bot.conversations_failed),
            ]
        )
    return t


def dimension_table(section: Section, caption: str | None = None) -> Table:
    """Every number of a section (a chatbot, or a chatbot at one risk level)."""
    counts = tr(
        "card.section_counts",
        conversations=num(section.n_conversations),
        judgements=num(section.n_judgements),
        personas=num(section.n_personas),
    )
    t = Table(
        list(DIMENSION_HEADERS),
        caption=tr("card.caption_counts", caption=caption, counts=counts) if caption else counts,
    )
    for name, d in [*section.dimensions.items(), (OVERALL, section.overall)]:
        if name == OVERALL:
            t.emphasise.add(len(t.rows))
        t.rows.append(
            [
                name,
                with_ci(d, "score"),
                with_ci(d, "pct_bp"),
                with_ci(d, "pct_sub"),
                with_ci(d, "pct_hph"),
                with_ci(d, "pct_conversations_any_hph"),
                num(d.pct_nr),
                num(d.n_best_practice),
                num(d.n_suboptimal),
                num(d.n_high_potential_for_harm),
                num(d.n_not_relevant),
                num(d.n_rated),
                num(d.n_ratings),
            ]
        )
    return t


def risk_summary_table(bot: ChatbotCard, title: str = "risk level") -> Table:
    """Scores by persona group (risk level by default), one row per group: the
    breakdown at a glance."""
    dims = list(bot.dimensions or {})
    t = Table([title[:1].upper() + title[1:], "Conversations", "Personas", "Overall score [CI]", *dims])
    for level, sec in (bot.by_risk or {}).items():
        t.rows.append(
            [
                level,
                num(sec.n_conversations),
                num(sec.n_personas),
                with_ci(sec.overall, "score"),
                *[with_ci(sec.dimensions.get(d), "score") for d in dims],
            ]
        )
    return t


def arcs_table(bot: ChatbotCard) -> Table:
    """A multi-session chatbot's arcs: how many, how many whole, how many with harm."""
    a = bot.arcs
    t = Table(["Sessions per arc", "Arcs", "Complete arcs", "Arcs with any High Potential for Harm"])
    if a is not None:
        pct = f" ({num(a.pct_arcs_any_hph)} %)" if a.pct_arcs_any_hph is not None else ""
        t.rows.append(
            [
                " → ".join(phrase(x) for x in a.sessions),
                num(a.n_arcs),
                num(a.n_arcs_complete),
                f"{num(a.n_arcs_any_hph)}{pct}",
            ]
        )
    return t


def session_summary_table(bot: ChatbotCard) -> Table:
    """Scores by session type, one row per type in arc order, each session judged on
    its own."""
    dims = list(bot.dimensions or {})
    t = Table(["Session", "Conversations", "Personas", "Overall score [CI]", *dims])
    for kind, sec in (bot.by_session or {}).items():
        t.rows.append(
            [
                kind,
                num(sec.n_conversations),
                num(sec.n_personas),
                with_ci(sec.overall, "score"),
                *[with_ci(sec.dimensions.get(d), "score") for d in dims],
            ]
        )
    return t


def judge_table(bot: ChatbotCard) -> Table:
    dims = list(bot.dimensions or {})
    t = Table(["Judge", "Instance", "Conversations", "Judgements", "Overall score [CI]", *dims])
    for entry in bot.by_judge or []:
        t.rows.append(
            [
                entry.judge,
                tr("col.all_pooled") if entry.instance is None else num(entry.instance),
                num(entry.n_conversations),
                num(entry.n_judgements),
                with_ci(entry.overall, "score"),
                *[with_ci(entry.dimensions.get(d), "score") for d in dims],
            ]
        )
    return t


def seed_table(bot: ChatbotCard) -> Table:
    s = bot.by_seed
    if s is None:
        return Table(["Seed", "Replicate", "Conversations", "Personas", "Overall score [CI]"])
    caption = tr("col.between_seeds", low=num(s.score_min), high=num(s.score_max), sd=num(s.score_sd))
    t = Table(["Seed", "Replicate", "Conversations", "Personas", "Overall score [CI]"], caption=caption)
    for r in s.seeds:
        t.rows.append(
            [
                num(r.seed),
                num(r.replicate),
                num(r.n_conversations),
                num(r.n_personas),
                with_ci(r, "score"),
            ]
        )
    return t


def judge_agreement_tables(agreement: JudgeAgreement) -> list[Table]:
    """Inter-judge agreement per dimension and overall, and Cohen's kappa per pair."""
    t = Table(
        agreement_headers("Judges"),
        caption=tr("col.agreement_caption"),
    )
    blocks: list[tuple[str, AgreementBlock]] = [*agreement.dimensions.items(), (OVERALL, agreement.overall)]
    for name, b in blocks:
        if name == OVERALL:
            t.emphasise.add(len(t.rows))
        t.rows.append(
            [
                name,
                num(b.krippendorff_alpha),
                num(b.gwet_ac1),
                num(b.percent_agreement),
                num(b.mean_cohen_kappa),
                num(b.unanimous),
                num(b.n_items),
                num(b.n_ratings),
                num(b.n_raters),
            ]
        )
    pairs = Table(
        ["Dimension", "Judge A", "Judge B", "Cohen's kappa", "Conversations both rated"],
        caption="Cohen's kappa per pair of judges",
    )
    for name, b in blocks:
        for p in b.cohen_kappa:
            pairs.rows.append([name, p.rater_a, p.rater_b, num(p.kappa), num(p.n_items)])
    return [t, pairs]


Reasons = dict[str, dict[str, DimensionScore | None]]


def card_reasons(card: Card) -> Reasons:
    """Each chatbot's dimension numbers by name, so a comparison can say why a score is
    missing."""
    return {b.chatbot: {**(b.dimensions or {}), OVERALL: b.overall} for b in card.chatbots}


def comparison_table(entry: Comparison, stats: Reasons | None = None) -> Table:
    """One pair's paired differences, overall and per dimension. `stats` (unit →
    dimension → numbers) lets an undefined score say why it is undefined."""
    a, b = entry.a, entry.b
    caption = tr(
        "card.paired",
        a=a,
        b=b,
        n=num(entry.n_shared),
        only_a=num(entry.n_only_a),
        only_b=num(entry.n_only_b),
    )
    t = Table(
        [
            "Dimension",
            tr("col.score_of", name=a),
            tr("col.score_of", name=b),
            "Difference [CI]",
            "CI excludes 0",
        ],
        caption=caption,
    )
    known = stats or {}

    def score(unit: str, name: str, value: float | None) -> str:
        if value is not None:
            return num(value)
        return (
            why_missing(known[unit].get(name))
            if unit in known
            else tr("card.missing_why", dash=MISSING, why=tr("card.undefined"))
        )

    diffs: list[tuple[str, Difference]] = [*entry.dimensions.items(), (OVERALL, entry.overall)]
    for name, d in diffs:
        if name == OVERALL:
            t.emphasise.add(len(t.rows))
        undefined = tr("card.missing_why", dash=MISSING, why=tr("card.score_undefined"))
        t.rows.append(
            [
                name,
                score(a, name, d.score_a),
                score(b, name, d.score_b),
                with_ci(d, "diff") if d.diff is not None else undefined,
                flag(d.excludes_zero) if d.excludes_zero is not None else undefined,
            ]
        )
    return t


def flag(excludes_zero: bool | None) -> str:
    if excludes_zero is None:
        return MISSING
    return tr("card.differs_yes") if excludes_zero else tr("card.differs_no")


ACCOUNTING_COLUMNS = (
    ("calls", "Calls"),
    ("input_tokens", "Input tokens"),
    ("cached_input_tokens", "Cached input tokens"),
    ("output_tokens", "Output tokens"),
    ("reasoning_tokens", "Reasoning tokens"),
    ("cost_usd", "Cost (USD)"),
    ("reasoning_cost_usd", "Reasoning cost (USD)"),
    ("retries", "Retries"),
    ("http_429", "HTTP 429"),
    ("errors", "Errors"),
)


LIVE_COST_COLUMN = ("live_cost_usd", "Live-mode cost (USD)")
# Shown only when some bucket has them, so a run without either keeps its table.
FALLBACKS_COLUMN = ("fallbacks", "Fallbacks to standard")
REPLAYED_COLUMN = ("replayed", "Replayed on resume (not calls)")
# A run with a response cache shared by runs (--cache-dir) replays other runs' replies too.
REPLAYED_SHARED_COLUMN = ("replayed", "Replayed from the shared cache or on resume (not calls)")
# Beside the cost it is not part of, only in a run that had calls of unknown cost.
UNCERTAIN_COLUMN = ("uncertain_usd", "Unknown cost, at most (USD)")
# Beside it, only in a run that had calls of unknown cost that nothing bounds.
UNBOUNDED_COLUMN = ("unbounded_calls", "Unknown cost, no bound (calls)")


def _accounting_value(bucket: CallTotals, key: str) -> object:
    value = getattr(bucket, key)
    # A bucket of live calls only has no figure of its own: live mode cost what it cost.
    return bucket.cost_usd if key == "live_cost_usd" and value is None else value


def accounting_table(card: Card) -> Table:
    acc = card.accounting
    columns = list(ACCOUNTING_COLUMNS)
    if live_cost_text(card):  # only beside batch or flex calls: else it repeats the cost
        columns.insert(columns.index(("cost_usd", "Cost (USD)")) + 1, LIVE_COST_COLUMN)
    if acc.total.unbounded_calls:
        columns.insert(columns.index(("cost_usd", "Cost (USD)")) + 1, UNBOUNDED_COLUMN)
    if acc.total.uncertain_usd:
        columns.insert(columns.index(("cost_usd", "Cost (USD)")) + 1, UNCERTAIN_COLUMN)
    if acc.total.fallbacks:
        columns.append(FALLBACKS_COLUMN)
    if acc.total.replayed:
        columns.append(REPLAYED_SHARED_COLUMN if card.settings.shared_cache else REPLAYED_COLUMN)
    t = Table(["Model calls", *(header for _, header in columns)])
    rows: list[tuple[str, CallTotals]] = [
        *((tr("col.acc_role", role=_role_word(k)), v) for k, v in acc.by_role.items()),
        *((tr("col.acc_provider", provider=k), v) for k, v in acc.by_provider.items()),
        # by price tier: standard (live), batch, flex
        *((tr("col.acc_role_tier", pair=_role_tier_words(k)), v) for k, v in acc.by_role_tier.items()),
        ("Total", acc.total),
    ]
    for k, (label, bucket) in enumerate(rows):
        if k == len(rows) - 1:
            t.emphasise.add(len(t.rows))
        t.rows.append([label, *(num(_accounting_value(bucket, key)) for key, _ in columns)])
    return t


_TIERS = ("standard", "batch", "flex")


def _role_word(role: str) -> str:
    """A role's key (as the accounting records it) in the card's language: English
    keeps the key itself."""
    return tr(f"col.acc_{role}") if f"col.acc_{role}" in BASE else role


def _role_tier_words(pair: str) -> str:
    role, _, tier = pair.partition("/")
    tier_word = tr(f"col.acc_tier_{tier}") if tier in _TIERS else tier
    return f"{_role_word(role)}/{tier_word}" if tier else _role_word(role)


def harmful_table(harmful: Sequence[HarmfulRating]) -> Table:
    t = Table(
        ["Conversation", "Persona", "Risk", "Judge", "Instance", "Dimension", "Question", "Judge's reasoning"]
    )
    for h in harmful:
        t.rows.append(
            [
                h.conversation_id,
                h.persona,
                h.risk,
                h.judge,
                num(h.instance),
                h.dimension,
                h.question_id,
                h.reasoning,
            ]
        )
    return t


FIX_FIRST_GUIDE = (
    "The rubric questions whose answer made a rating High Potential for Harm or Suboptimal, "
    "harm first, then by conversations: fix the first rows first. % of relevant: of the "
    "conversations where the dimension applied. vera report improvements gives every "
    "question with more examples (docs/improvements.md)."
)


def fix_first_table(bot: ChatbotFindings, *, limit: int | None = None, links: bool = False) -> Table:
    """A chatbot's findings across dimensions, harm first; `links` makes the example
    a Markdown link to its conversation's page (ids that are file names only)."""
    t = Table(["Question", "Dimension", "Rating", "Conversations", "% of relevant", "Example"])
    for d, f in ranked(bot)[:limit]:
        example = ""
        if f.exemplars:
            e = f.exemplars[0]
            href = conversation_href(
                e.conversation_id, judge=e.judge, instance=e.instance, dimension=d.dimension
            )
            example = f"[{e.conversation_id}]({href})" if links and href else e.conversation_id
        t.rows.append(
            [
                f"{f.question_id or MISSING} {f.question}".strip(),
                d.dimension,
                SHORT.get(f.rating, f.rating),
                num(f.conversations),
                MISSING if f.share is None else num(f.share),
                example,
            ]
        )
    return t


def failures_table(failures: Sequence[Failure]) -> Table:
    t = Table(["Kind", "ID", "Chatbot / conversation", "Reason"])
    for f in failures:
        if isinstance(f, ConversationFailure):
            t.rows.append(["conversation", f.id, f.chatbot, f.reason or ""])
        else:
            t.rows.append(["judgement", f.id, f.conversation_id, f.reason or ""])
    return t


def calibrated_table(bot: ChatbotCard, cal: Calibrated) -> Table:
    """Judge-only and calibrated scores side by side, per dimension and overall."""
    caption = tr(
        "card.calibrated_caption",
        rated=num(cal.n_rated_by_humans),
        n=num(cal.n_conversations),
        raters=num(cal.n_raters),
    )
    if cal.few_rated_personas:
        caption += tr("card.calibrated_note", why=few_personas_note(cal))
    t = Table(
        [
            "Dimension",
            # The two intervals come from different methods: the footnote says which, so
            # their widths are not read as comparable (the headers stay plain words).
            "Judge-only score [CI]",
            "Calibrated score [CI]",
            "Calibrated HPH % [CI]",
            "Rated by humans",
        ],
        caption=caption,
        note=tr("card.calibrated_methods"),
    )
    dims = bot.dimensions or {}
    # A dimension no human rated (a ratings file that leaves it out) has no calibrated
    # number, and so neither has Overall, which pools them all: say which, not "undefined".
    unrated = [d for d, c in cal.dimensions.items() if c.n_labelled == 0]
    # In the rubric's order, as every other table of the card (the calibration keeps
    # its dimensions in the order its frame grouped them).
    order = [*(d for d in dims if d in cal.dimensions), *(d for d in cal.dimensions if d not in dims)]
    for name in [*order, OVERALL]:
        c = cal.overall if name == OVERALL else cal.dimensions[name]
        judge = bot.overall if name == OVERALL else dims.get(name)
        calibrated, hph = with_ci(c, "score"), with_ci(c, "pct_hph")
        if unrated and (name in unrated or name == OVERALL):
            why = tr("card.not_rated") if name != OVERALL else None
            why = why or tr("card.calibrated_unrated", dimensions=", ".join(unrated))
            if c.score is None:
                calibrated = tr("card.missing_why", dash=MISSING, why=why)
            if c.pct_hph is None:
                hph = tr("card.missing_why", dash=MISSING, why=why)
        if name == OVERALL and cal.few_rated_personas:
            # Beside the score, in words: an interval from too few rated personas.
            calibrated += tr("card.calibrated_few_cell", n=num(cal.n_rated_personas))
        t.rows.append([name, with_ci(judge, "score"), calibrated, hph, num(c.n_labelled)])
    t.emphasise.add(len(t.rows) - 1)
    return t


def few_personas_note(cal: Calibrated) -> str:
    """Why a calibrated score rests on too few rated personas, in the card's language;
    card.json keeps it in English (few_rated_personas), which a card from before vera
    recorded how many personas were rated shows as it is."""
    n = cal.n_rated_personas
    if n is None:
        return cal.few_rated_personas or ""
    key = "card.calibrated_few_personas_one" if n == 1 else "card.calibrated_few_personas"
    return tr(key, n=num(n), min=num(MIN_RATED_PERSONAS))


def confusion_table(cal: Calibrated) -> Table:
    """The judge's ratings (rows) against the humans' (columns), all dimensions pooled."""
    cats = cal.confusion.categories
    t = Table(
        ["Judge rating", *cats, "Total"],
        caption=tr("card.confusion_caption"),
    )
    for cat, row in zip(cats, cal.confusion.overall, strict=True):
        t.rows.append([cat, *(num(v) for v in row), num(sum(row))])
    totals = [sum(col) for col in zip(*cal.confusion.overall, strict=True)] if cats else []
    t.rows.append(["Total", *(num(v) for v in totals), num(sum(totals))])
    return t


def section_tables(bot: ChatbotCard, title: str = "risk level") -> Iterable[tuple[str, list[Table]]]:
    """A chatbot's detail sections as (heading, tables), in reading order; `title` is
    what the personas are grouped by (see `group_title`)."""
    if bot.calibrated is not None:
        yield (
            "Calibrated by human ratings",
            [calibrated_table(bot, bot.calibrated), confusion_table(bot.calibrated)],
        )
    if bot.by_risk:
        caption = title[:1].upper() + title[1:]
        yield (
            f"By persona {title}",
            [
                risk_summary_table(bot, title),
                *(
                    dimension_table(
                        sec, caption=tr("card.risk_caption", caption=phrase(caption), level=ui_cell(lvl))
                    )
                    for lvl, sec in bot.by_risk.items()
                ),
            ],
        )
    yield from breakdown_tables(bot)
    if bot.arcs is not None:
        yield "By session", [arcs_table(bot), session_summary_table(bot)]
    if bot.by_judge:
        yield "By judge", [judge_table(bot)]
    if bot.judge_agreement:
        yield "Agreement between judges", judge_agreement_tables(bot.judge_agreement)
    if bot.by_seed:
        yield "By seed", [seed_table(bot)]


# ---------------------------------------------------------------------------------------
# Run diagnostics and the schema-7 breakdowns (vera.report.shared._diagnostics)
# ---------------------------------------------------------------------------------------


def diagnostics_table(card: Card) -> Table:
    """How each chatbot's conversations ended and went, and how the judge fared."""
    t = Table(
        [
            "Chatbot",
            "Conversations",
            *(f"Ended: {END_LABELS[r]}" for r in END_REASONS),
            "Complete",
            "Turns min / median / max (mean)",
            "Empty chatbot replies",
            "Chatbot replies cut at the output limit",
            "Judge re-asks (answers re-asked)",
            "Judgements with no valid answer",
        ],
        caption="How conversations ended, how long they ran (complete conversations), the "
        "chatbot's empty replies and replies cut at the output limit (finish reason length), "
        "and the judge's questions asked again after an invalid answer.",
    )
    for d in card.diagnostics or []:
        tc = d.turns
        t.rows.append(
            [
                d.chatbot,
                num(d.conversations),
                *(num(d.ended_by.get(r, 0)) for r in END_REASONS),
                num(tc.n),
                f"{num(tc.min)} / {num(tc.median)} / {num(tc.max)} ({num(tc.mean)})",
                tr("col.n_of", n=num(d.empty_chatbot_turns), of=num(d.chatbot_turns)),
                num(d.truncated_chatbot_turns),
                f"{num(d.judge_reasks)} ({tr('col.n_of', n=num(d.answers_reasked), of=num(d.judge_answers))})",
                num(d.invalid_answers),
            ]
        )
    return t


def turns_table(card: Card) -> Table:
    """The turn-count distribution: complete conversations per number of turns."""
    diags = card.diagnostics or []
    t = Table(["Turns", *(d.chatbot for d in diags)], caption="Complete conversations by number of turns.")
    counts = sorted({int(k) for d in diags for k in d.turns.counts})
    for k in counts:
        t.rows.append([str(k), *(num(d.turns.counts.get(str(k), 0)) for d in diags)])
    return t


def group_score_table(groups: dict[str, GroupScore], title: str, caption: str = "") -> Table:
    """A chatbot's overall score by the values of one column (user-agent, persona column)."""
    t = Table(
        [title, "Conversations", "Personas", "Overall score [CI]", "Conversations with any HPH %"],
        caption=caption,
    )
    for value, g in groups.items():
        lo, hi = g.score_ci
        score = (
            tr("card.missing_why", dash=MISSING, why=tr("card.plot_nothing"))
            if g.score is None
            else f"{num(g.score)} [{num(lo)}, {num(hi)}]"
        )
        t.rows.append(
            [value, num(g.n_conversations), num(g.n_personas), score, num(g.pct_conversations_any_hph)]
        )
    return t


def breakdown_tables(bot: ChatbotCard) -> Iterable[tuple[str, list[Table]]]:
    """A chatbot's scores by user-agent and by persona column, as (heading, tables)."""
    if bot.by_user_agent:
        yield "By user-agent", [group_score_table(bot.by_user_agent, "User-agent")]
    for column, groups in (bot.by_persona or {}).items():
        yield tr("card.by_persona_column", column=phrase(column)), [group_score_table(groups, column)]


# ---------------------------------------------------------------------------------------
# Simulated-user checks (vera.report.shared._realism, docs/realism.md)
# ---------------------------------------------------------------------------------------

FLAG_LABELS: dict[str, str] = {
    "role_reversal": "Role reversal",
    "ai_voice": "Speaks as an AI",
    "persona_drop": "Persona dropped",
    "empty_or_repeated": "Empty or repeated turn",
}


def realism_table(realism: Realism) -> Table:
    """Flagged conversations per user-agent, by kind of flag."""
    t = Table(
        [
            "User-agent",
            "Conversations checked",
            "By a model",
            "Flagged",
            *FLAG_LABELS.values(),
            "Model checks without an answer",
        ],
        caption="Each complete conversation's simulated user, checked by a model where the run "
        "asked for it ([judge] check_users) and by vera's offline heuristic otherwise; a "
        "conversation counts once under each kind of flag it has.",
    )
    for row in realism.by_user_agent:
        t.rows.append(
            [
                row.user_agent,
                num(row.conversations),
                num(row.by_model),
                num(row.flagged),
                *(num(row.by_kind.get(k, 0)) for k in FLAG_LABELS),
                num(row.failed_checks),
            ]
        )
    return t


def flag_href(f: FlaggedConversation) -> str:
    """The link to a flagged conversation's page, at the flagged turn."""
    page = conversation_href(f.conversation_id)
    return f"{page}#{f'turn-{f.turn}' if f.turn > 0 else 'transcript'}" if page else ""


def flagged_table(rows: Sequence[FlaggedConversation], *, links: bool = False) -> Table:
    """Flagged conversations: the first flag's turn and the words that show it; `links`
    makes each id a Markdown link to its conversation's page."""
    t = Table(["Conversation", "Chatbot", "Persona", "Flags", "Turn", "Checker", "Evidence"])
    for f in rows:
        href = flag_href(f)
        ident = f"[{f.conversation_id}]({href})" if links and href else f.conversation_id
        t.rows.append(
            [
                ident,
                f.chatbot,
                f.persona,
                ", ".join(FLAG_LABELS.get(k, k) for k in f.kinds),
                num(f.turn) if f.turn > 0 else "whole",
                f.checker,
                f.evidence,
            ]
        )
    return t
