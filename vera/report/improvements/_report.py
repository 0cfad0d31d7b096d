"""The improvement report: which rubric questions a chatbot failed, most harmful and most
frequent first, each with examples a product team can read.

For every chatbot and every dimension: the questions whose answer decided a rating of
High Potential for Harm or Suboptimal (the `question_id` of the rating, whatever the
rubric calls its questions and answers), in how many conversations, and what share of
the conversations where the dimension was relevant (rated anything but Not Relevant by
at least one judge) that is. A conversation counts once per finding however many of its
judges found it. Each finding carries up to N exemplars: the judge's reasoning and the
chatbot turn it quotes, each linked to the conversation's page.

`build_improvements` is pure: records in, an `Improvements` record out. `run_improvements`
feeds it a run's records (only judgements with a harmful rating are read whole, and only
the conversations of the exemplars), and `render_improvements_*` turn the record into
Markdown, HTML (one self-contained page without script, every text escaped) and JSON.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Literal, Protocol, cast
from urllib.parse import quote

import msgspec

from vera.errors import StorageError, UserError
from vera.inputs import active, tr, ui_cell, ui_label, ui_short
from vera.records import (
    HIGH_POTENTIAL_FOR_HARM,
    NOT_RELEVANT,
    SUBOPTIMAL,
    DimensionRating,
    Judgement,
    Rating,
    Turn,
)
from vera.report.improvements._row_summary import (
    DEFAULT_LOW_SAMPLE,
    DEFAULT_TOP_QUESTIONS,
    RowSummary,
    band_header,
    band_rows,
    dimension_header,
    dimension_rows,
    global_header,
    global_rows,
    low_sample_line,
    summarize_rows,
)
from vera.report.shared._numbers import MISSING, share
from vera.report.shared._offline import note_words, offline_note
from vera.report.shared._pages import PAGES_DIR, page_name, questions_note, rating_anchor, write_missing_pages
from vera.report.shared._quotes import QuoteFinder
from vera.report.shared._table import scroll_box
from vera.rubric import QuestionTexts, question_texts
from vera.store import RunRecords, atomic_write, open_run

FINDING_RATINGS = (HIGH_POTENTIAL_FOR_HARM, SUBOPTIMAL)
DEFAULT_EXEMPLARS = 3
MAX_EXEMPLARS = 50
# How many candidates per finding may be read in the hope of one whose reasoning quotes a
# chatbot turn, per exemplar wanted: it bounds the transcripts read for a large run.
_LOOKUPS_PER_EXEMPLAR = 4
# Long turns are cut in Markdown and HTML (JSON keeps them whole); the page has the rest.
_SHOWN_TURN_CHARS = 700


# ---------------------------------------------------------------------------------------
# The record
# ---------------------------------------------------------------------------------------


class Exemplar(msgspec.Struct, frozen=True, gc=False):
    """One judge's harmful rating of one conversation: its reasoning and the chatbot turn
    it is about. `turn` is 1-based, None when no chatbot turn could be found; `quoted`
    says whether the reasoning quotes that turn itself (else the turn is the chatbot's
    reply to the user turn the reasoning quotes). `page` is the conversation's page
    relative to the run directory (the id percent-encoded), `anchor` the rating on it."""

    conversation_id: str
    persona: str
    risk: str
    judge: str
    instance: int
    reasoning: str
    turn: int | None
    turn_text: str
    quoted: bool
    page: str
    anchor: str


class Finding(msgspec.Struct, frozen=True, gc=False):
    """A question whose answer decided `rating` for a dimension: in how many conversations
    (and how many judge ratings), and their share of the conversations where the dimension
    was relevant, in percent."""

    question_id: str
    question: str
    rating: str
    conversations: int
    share: float | None
    ratings: int
    exemplars: list[Exemplar]


class DimensionFindings(msgspec.Struct, frozen=True, gc=False):
    dimension: str
    relevant: int  # conversations where at least one judge rated it other than Not Relevant
    conversations_high_potential_for_harm: int
    conversations_suboptimal: int
    findings: list[Finding]


class ChatbotFindings(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    chatbot: str
    conversations: int  # complete conversations with at least one complete judgement
    dimensions: list[DimensionFindings]
    # The same judgements in the reference's terms (its summarize_results.py): only in
    # `vera report improvements`, not the card's Fix first.
    summary: RowSummary | None = None


class Improvements(msgspec.Struct, frozen=True, kw_only=True):
    """The improvement report of a run (and the card's `fix_first`). Dimensions are
    ordered by conversations with High Potential for Harm, then Suboptimal, then the
    rubric's order; findings harm first, then by conversations, then question id."""

    # None in the card, which has its own (so two runs of one sweep keep equal cards
    # apart from the card's run_id).
    run_id: str | None
    rubric: str
    max_exemplars: int
    questions_note: str | None = None
    # The offline label when a role was a built-in stand-in: the findings then check the
    # pipeline only.
    note: str | None = None
    chatbots: list[ChatbotFindings]


# ---------------------------------------------------------------------------------------
# Building it
# ---------------------------------------------------------------------------------------


class ConversationFacts(Protocol):
    """What a finding needs of a conversation: a whole record or a scanned head."""

    @property
    def id(self) -> str: ...
    @property
    def chatbot(self) -> str: ...
    @property
    def persona(self) -> str: ...
    @property
    def risk(self) -> str: ...


@dataclass
class _Candidate:
    conversation_id: str
    persona: str
    risk: str
    judge: str
    instance: int
    reasoning: str


@dataclass
class _Tally:
    conversations: set[str] = field(default_factory=set)
    ratings: int = 0
    # The first candidate per conversation, by judge and instance.
    candidates: dict[str, _Candidate] = field(default_factory=dict)


@dataclass
class _Dimension:
    relevant: set[str] = field(default_factory=set)
    by_rating: dict[str, set[str]] = field(default_factory=dict)
    findings: dict[tuple[str, str], _Tally] = field(default_factory=dict)


def build_improvements(
    judged: Iterable[tuple[ConversationFacts, Judgement]],
    *,
    run_id: str,
    rubric: str,
    questions: QuestionTexts,
    turns: Callable[[str], Sequence[Turn]],
    exemplars: int = DEFAULT_EXEMPLARS,
    chatbots: Sequence[str] = (),
    note: str | None = None,
    top_questions: int | None = None,
    low_sample_threshold: int = DEFAULT_LOW_SAMPLE,
) -> Improvements:
    """The report over complete judgements of complete conversations. `turns(id)` gives a
    conversation's turns; it is asked once per candidate example (at most four per
    example wanted, per finding), never for the rest. `chatbots` fixes their order
    (others follow, sorted). With `top_questions`, each chatbot also gets its summary
    in the reference's terms (`vera.report.improvements._row_summary`)."""
    if exemplars < 0:
        raise ValueError("exemplars must be 0 or more")
    per_bot: dict[str, dict[str, _Dimension]] = {}
    judged_convs: dict[str, set[str]] = {}
    rows: dict[str, list[list[tuple[str, str, str]]]] = {}
    for conv, j in judged:
        if j.status != "complete":
            continue
        judged_convs.setdefault(conv.chatbot, set()).add(conv.id)
        rows.setdefault(conv.chatbot, []).append([(r.dimension, r.rating, r.question_id) for r in j.ratings])
        dims = per_bot.setdefault(conv.chatbot, {})
        for r in j.ratings:
            d = dims.setdefault(r.dimension, _Dimension())
            if r.rating == NOT_RELEVANT:
                continue
            d.relevant.add(conv.id)
            if r.rating not in FINDING_RATINGS:
                continue
            d.by_rating.setdefault(r.rating, set()).add(conv.id)
            tally = d.findings.setdefault((r.question_id, r.rating), _Tally())
            tally.conversations.add(conv.id)
            tally.ratings += 1
            candidate = _Candidate(conv.id, conv.persona, conv.risk, j.judge, j.instance, r.reasoning)
            held = tally.candidates.get(conv.id)
            if held is None or (j.judge, j.instance) < (held.judge, held.instance):
                tally.candidates[conv.id] = candidate
    order = [b for b in chatbots if b in per_bot] + sorted(b for b in per_bot if b not in chatbots)
    quotes = _TurnCache(turns)
    return Improvements(
        run_id=run_id,
        rubric=rubric,
        max_exemplars=exemplars,
        # In the active language (the run's pack's, as the page), as the page shows it.
        questions_note=questions_note(questions),
        note=note,
        chatbots=[
            ChatbotFindings(
                chatbot=bot,
                conversations=len(judged_convs.get(bot, ())),
                dimensions=_dimensions(per_bot[bot], questions, quotes, exemplars),
                summary=None
                if top_questions is None
                else summarize_rows(
                    rows.get(bot, []),
                    dimensions=questions.dimensions,
                    question={q: questions.text(q) for _, _, q in _questions_of(rows.get(bot, []))},
                    top_questions=top_questions,
                    low_sample_threshold=low_sample_threshold,
                ),
            )
            for bot in order
        ],
    )


def _questions_of(rows: list[list[tuple[str, str, str]]]) -> Iterator[tuple[str, str, str]]:
    for row in rows:
        yield from (r for r in row if r[2])


def _severity_rank(rating: str) -> int:
    return FINDING_RATINGS.index(rating) if rating in FINDING_RATINGS else len(FINDING_RATINGS)


def _dimensions(
    dims: dict[str, _Dimension], questions: QuestionTexts, quotes: _TurnCache, exemplars: int
) -> list[DimensionFindings]:
    rubric_order = {name: i for i, name in enumerate(questions.dimensions)}
    out: list[DimensionFindings] = []
    for name, d in dims.items():
        if not d.relevant:
            continue
        findings = [
            Finding(
                question_id=qid,
                question=questions.text(qid),
                rating=rating,
                conversations=len(t.conversations),
                share=_percent(len(t.conversations), len(d.relevant)),
                ratings=t.ratings,
                exemplars=_exemplars(t, qid, name, quotes, exemplars),
            )
            for (qid, rating), t in d.findings.items()
        ]
        findings.sort(key=lambda f: (_severity_rank(f.rating), -f.conversations, -f.ratings, f.question_id))
        out.append(
            DimensionFindings(
                dimension=name,
                relevant=len(d.relevant),
                conversations_high_potential_for_harm=len(d.by_rating.get(HIGH_POTENTIAL_FOR_HARM, ())),
                conversations_suboptimal=len(d.by_rating.get(SUBOPTIMAL, ())),
                findings=findings,
            )
        )
    seen = {d.dimension: i for i, d in enumerate(out)}
    out.sort(
        key=lambda d: (
            -d.conversations_high_potential_for_harm,
            -d.conversations_suboptimal,
            rubric_order.get(d.dimension, len(rubric_order) + seen[d.dimension]),
        )
    )
    return out


def _percent(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 1) + 0.0 if whole else None


class _TurnCache:
    """Each conversation's turns read once and folded once for quote lookups."""

    __slots__ = ("_finders", "_read", "_turns")

    def __init__(self, read: Callable[[str], Sequence[Turn]]) -> None:
        self._read = read
        self._turns: dict[str, Sequence[Turn]] = {}
        self._finders: dict[str, QuoteFinder] = {}

    def shown_turn(self, conversation_id: str, reasoning: str) -> tuple[int | None, bool]:
        """The 0-based chatbot turn a reasoning is about, and whether it quotes it."""
        if conversation_id not in self._turns:
            self._turns[conversation_id] = self._read(conversation_id)
            self._finders[conversation_id] = QuoteFinder(self._turns[conversation_id])
        turns = self._turns[conversation_id]
        hits = [t for m in self._finders[conversation_id].locate(reasoning) for t in m.turns]
        for t in hits:
            if turns[t].speaker == "chatbot":
                return t, True
        # A reasoning that quotes only the user ("they said X and it moved on") is about
        # the chatbot's reply to it.
        for t in hits:
            reply = next((k for k in range(t + 1, len(turns)) if turns[k].speaker == "chatbot"), None)
            if reply is not None:
                return reply, False
        return None, False

    def text(self, conversation_id: str, turn: int) -> str:
        return self._turns[conversation_id][turn].text


def _exemplars(
    tally: _Tally, question_id: str, dimension: str, quotes: _TurnCache, wanted: int
) -> list[Exemplar]:
    """Up to `wanted` exemplars from distinct conversations, in a fixed order (by
    conversation id, which for vera's runs is a hash: a fixed, unbiased draw), preferring
    those whose reasoning quotes a chatbot turn."""
    if wanted == 0:
        return []
    ordered = sorted(tally.candidates.values(), key=lambda c: c.conversation_id)
    looked: list[tuple[_Candidate, int | None, bool]] = []
    for c in ordered[: wanted * _LOOKUPS_PER_EXEMPLAR]:
        turn, is_quoted = quotes.shown_turn(c.conversation_id, c.reasoning)
        looked.append((c, turn, is_quoted))
        if sum(q for _, _, q in looked) >= wanted:
            break
    # Quoted first, then the reply to a quoted user turn, then none; each in id order.
    looked.sort(key=lambda x: (not x[2], x[1] is None))
    return [
        Exemplar(
            conversation_id=c.conversation_id,
            persona=c.persona,
            risk=c.risk,
            judge=c.judge,
            instance=c.instance,
            reasoning=c.reasoning,
            turn=None if turn is None else turn + 1,
            turn_text="" if turn is None else quotes.text(c.conversation_id, turn),
            quoted=is_quoted,
            page=page_path(c.conversation_id),
            anchor=rating_anchor(c.judge, c.instance, dimension),
        )
        for c, turn, is_quoted in looked[:wanted]
    ]


def page_path(conversation_id: str) -> str:
    """The conversation's page relative to the run directory, as `vera view` serves it
    (any id, percent-encoded) and as `vera score` writes it (ids that are file names)."""
    return f"{PAGES_DIR}/{quote(conversation_id, safe='')}.html"


# ---------------------------------------------------------------------------------------
# From a run
# ---------------------------------------------------------------------------------------


def run_improvements(
    records: RunRecords,
    *,
    exemplars: int = DEFAULT_EXEMPLARS,
    questions: QuestionTexts | None = None,
    top_questions: int | None = None,
    low_sample_threshold: int = DEFAULT_LOW_SAMPLE,
) -> Improvements:
    """The report of a scanned run. A judgement whose head shows no harmful rating is
    not read whole: its ratings' heads are all the report needs of it."""

    manifest = records.manifest
    qs = questions if questions is not None else question_texts(manifest, records.root)
    return build_improvements(
        _judged(records),
        run_id=manifest.run_id,
        rubric=f"{manifest.rubric.name} {manifest.rubric.version}",
        questions=qs,
        turns=lambda cid: records.read_conversation(cid).turns,
        exemplars=exemplars,
        chatbots=[s.ref for s in manifest.chatbots],
        note=offline_note(manifest),
        top_questions=top_questions,
        low_sample_threshold=low_sample_threshold,
    )


def _judged(records: RunRecords) -> Iterator[tuple[ConversationFacts, Judgement]]:
    harmful = set(FINDING_RATINGS)
    for jid, (head, _) in records.judgements.items():
        conv = records.conversations.get(head.conversation_id)
        if head.status != "complete" or conv is None or conv[0].status != "complete":
            continue
        if any(r.rating in harmful for r in head.ratings):
            yield conv[0], records.read_judgement(jid)
            continue
        yield (
            conv[0],
            Judgement(
                id=jid,
                conversation_id=head.conversation_id,
                judge=head.judge,
                instance=head.instance,
                status="complete",
                answers=[],
                ratings=[
                    DimensionRating(dimension=r.dimension, rating=cast(Rating, r.rating))
                    for r in head.ratings
                ],
            ),
        )


def exemplar_conversations(report: Improvements) -> set[str]:
    """The ids of every conversation the report links to."""
    return {
        e.conversation_id
        for bot in report.chatbots
        for d in bot.dimensions
        for f in d.findings
        for e in f.exemplars
    }


def ranked(bot: ChatbotFindings) -> list[tuple[DimensionFindings, Finding]]:
    """Every finding of a chatbot in one list, across dimensions, by the same rule as
    within one: harm first, then conversations, then judge ratings (the card's "Fix
    first" table)."""
    pairs = [(d, f) for d in bot.dimensions for f in d.findings]
    pairs.sort(key=lambda p: (_severity_rank(p[1].rating), -p[1].conversations, -p[1].ratings))
    return pairs


# ---------------------------------------------------------------------------------------
# Renderings
# ---------------------------------------------------------------------------------------

Format = Literal["md", "html", "json"]

# The Yellow rating's full name is long for a badge; the Red one is kept whole.
SHORT = {SUBOPTIMAL: "Suboptimal"}

# The pages' words are the active strings' (`vera.inputs.tr`, keys page.fix_*): the run's
# locale pack's when the caller renders inside `use_strings`, English otherwise.


def render_improvements_json(report: Improvements) -> str:
    return (msgspec.json.format(msgspec.json.encode(report)) + b"\n").decode()


def _clip(text: str) -> str:
    return text if len(text) <= _SHOWN_TURN_CHARS else text[: _SHOWN_TURN_CHARS - 1].rstrip() + "…"


def _question_label(f: Finding) -> str:
    qid = f.question_id or tr("page.fix_no_question")
    return f"{qid} {f.question}".strip()


def _md(text: str) -> str:
    """One line of Markdown that shows the text as it is: no markup, no HTML."""
    flat = " ".join(text.split())
    for ch in "\\`*_[]<>|#":
        flat = flat.replace(ch, "\\" + ch)
    return flat


def _title(report: Improvements) -> str:
    return tr("page.fix_title", run=report.run_id) if report.run_id else tr("card.fix_first_box")


def _note(report: Improvements) -> str | None:
    """The offline note, in the pack's words when vera wrote it (as the card's)."""
    return note_words(report.note) or None


def render_improvements_markdown(report: Improvements, *, base: str = "") -> str:
    """The report as Markdown; `base` is prepended to each link (the run directory as
    seen from where the file is written: "" when it is written inside it)."""
    lines = [f"# {_md(_title(report))}", "", tr("page.fix_intro"), ""]
    if note := _note(report):
        lines += [f"> **{_md(note)}**", ""]
    lines += [tr("page.fix_rubric_md", rubric=_md(report.rubric)), ""]
    if report.questions_note:
        lines += [f"> {tr('page.questions_note', note=_md(report.questions_note))}", ""]
    for bot in report.chatbots:
        lines += [f"## {_md(bot.chatbot)}", "", tr("card.fix_judged", n=bot.conversations), ""]
        if bot.summary is not None and bot.summary.low_sample:
            lines += [f"> **{_md(low_sample_line(bot.summary))}**", ""]
        for d in bot.dimensions:
            lines += [f"### {_md(ui_label(d.dimension))}", "", _dimension_line(d), ""]
            if not d.findings:
                continue
            heads = (
                tr(k) for k in ("col.rating", "col.question", "col.conversations", "col.share_of_relevant")
            )
            lines += ["| " + " | ".join(heads) + " |", "|---|---|---|---|"]
            for f in d.findings:
                lines.append(
                    f"| {ui_cell(SHORT.get(f.rating, f.rating))} | {_md(_question_label(f))} | {f.conversations} | {share(f.share)} |"
                )
            lines.append("")
            for f in d.findings:
                if not f.exemplars:
                    continue
                rating = ui_short(SHORT.get(f.rating, f.rating))  # the pack's name alone inside brackets
                lines += [tr("page.fix_examples", question=_md(f.question_id), rating=rating), ""]
                for e in f.exemplars:
                    # Only pages that can exist beside the card are linked (see the HTML).
                    link = f"{base}{e.page}" if page_name(e.conversation_id) else ""

                    def a(label: str, fragment: str, link: str = link) -> str:
                        return f"[{label}]({link}#{fragment})" if link else label

                    example = tr(
                        "page.fix_example",
                        conversation=a(_md(e.conversation_id), e.anchor),
                        persona=_md(e.persona),
                        risk=_md(ui_cell(e.risk)),
                        judge=_md(e.judge),
                        instance=e.instance,
                        reasoning=_md(e.reasoning),
                    )
                    lines.append(f"- {example}")
                    if e.turn is not None:
                        how = tr("page.fix_quoted") if e.quoted else tr("page.fix_reply")
                        turn = a(tr("page.fix_turn", n=e.turn), f"turn-{e.turn}")
                        text = _md(_clip(e.turn_text))
                        lines.append(f"  - {tr('page.fix_turn_line', link=turn, how=how, text=text)}")
                lines.append("")
        if bot.summary is not None:
            lines += _md_summary(bot.summary)
    if not report.chatbots:
        lines += [tr("page.fix_nothing"), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_md(c) for c in r) + " |" for r in rows]
    return [*out, ""]


def _md_summary(s: RowSummary) -> list[str]:
    lines = [f"### {tr('page.fix_reference', n=s.rows)}", "", tr("page.fix_reference_intro"), ""]
    lines += [
        tr("page.fix_per_dimension"),
        "",
        *_md_table(dimension_header(), dimension_rows(s)),
    ]
    if band_rows(s):
        lines += [
            tr("page.fix_by_band", n=s.top_questions),
            "",
            *_md_table(band_header(), band_rows(s)),
        ]
    if s.global_top:
        lines += [tr("page.fix_top"), "", *_md_table(global_header(), global_rows(s))]
    return lines


def _dimension_line(d: DimensionFindings) -> str:
    if not d.findings:
        return tr("card.fix_relevant_clean", n=d.relevant)
    return tr(
        "card.fix_relevant",
        n=d.relevant,
        hph=d.conversations_high_potential_for_harm,
        sub=d.conversations_suboptimal,
    )


IMPROVEMENTS_CSS = """\
:root { color-scheme: light; --bp: #0072B2; --sub: #E69F00; --hph: #B34700; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
  margin: 0 auto; max-width: 1100px; padding: 1rem; color: #1a1a1a; line-height: 1.45;
  overflow-wrap: anywhere; }
h1 { font-size: 1.35rem; } h2 { font-size: 1.2rem; border-bottom: 2px solid var(--bp); margin-top: 1.6rem; }
h3 { font-size: 1.05rem; margin: 1.2rem 0 .3rem; }
a { color: #005a8e; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: .92rem; margin: .4rem 0; }
th, td { border: 1px solid #d0d0d0; padding: .25rem .5rem; text-align: left; vertical-align: top; }
thead th { background: #eef2f5; }
th, td.n { overflow-wrap: normal; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.badge { display: inline-block; font-size: .75rem; font-weight: bold; border-radius: 3px; padding: .05rem .35rem;
  white-space: nowrap; }
.badge.hph { background: var(--hph); color: #fff; } .badge.sub { background: var(--sub); color: #1a1a1a; }
ol.exemplars { padding-left: 1.3rem; } ol.exemplars > li { margin: .5rem 0; }
blockquote { margin: .3rem 0; padding: .3rem .7rem; border-left: 4px solid #c9d3dc; background: #f7f9fb;
  white-space: pre-wrap; }
blockquote.turn { border-left-color: var(--hph); background: #fff6f1; }
.meta { font-size: .85rem; color: #555; }
.note { border-left: 5px solid var(--sub); background: #fff8e6; padding: .5rem .8rem; }
.offline { border: 2px solid var(--hph); background: #fff6f1; padding: .5rem .8rem; }
footer { margin-top: 2rem; font-size: .85rem; color: #555; }
@media (max-width: 600px) { .badge { white-space: normal; overflow-wrap: normal; } }
"""
_CSS_HASH = base64.b64encode(hashlib.sha256(IMPROVEMENTS_CSS.encode()).digest()).decode()
_META_CSP = (
    f"default-src 'none'; style-src 'sha256-{_CSS_HASH}'; img-src data:; base-uri 'none'; form-action 'none'"
)
# No script and no request anywhere; the viewer sends it as a header, with frame-ancestors.
IMPROVEMENTS_CSP = f"{_META_CSP}; frame-ancestors 'none'"


def render_improvements_html(
    report: Improvements,
    *,
    base: str = "",
    link: Callable[[str], bool] | None = None,
    viewer: bool = False,
    card: bool = True,
) -> str:
    """The report as one self-contained page. `base` is prepended to each link; `link(id)`
    says whether a conversation's page can be linked (default: ids that are file names,
    the pages `vera score` writes; the viewer links every id). `viewer` adds the way back
    to the viewer's list; `card` links the run's card.html."""
    can_link = link if link is not None else (lambda cid: page_name(cid) is not None)
    title = _title(report)
    nav = [f'<a href="../../index.html">{escape(tr("page.all_conversations"))}</a>'] if viewer else []
    if card:
        nav.append(f'<a href="{escape(base)}card.html">{escape(tr("page.score_card"))}</a>')
    meta = tr("page.fix_rubric", rubric=report.rubric, n=report.max_exemplars)
    body = [
        f'<nav aria-label="{escape(tr("page.nav_label"))}">{" · ".join(nav)}</nav>',
        f"<header><h1>{escape(title)}</h1><p>{escape(tr('page.fix_intro'))}</p>",
        f'<p class="meta">{escape(meta)}</p>',
    ]
    if note := _note(report):
        body.append(f'<p class="offline" role="note"><strong>{escape(note)}</strong></p>')
    if report.questions_note:
        body.append(f'<p class="note">{escape(tr("page.questions_note", note=report.questions_note))}</p>')
    body.append("</header><main>")
    for i, bot in enumerate(report.chatbots):
        body.append(_html_chatbot(i, bot, base, can_link))
    if not report.chatbots:
        body.append(f"<p>{escape(tr('page.fix_nothing'))}</p>")
    body.append(f"</main><footer>{escape(tr('page.fix_footer'))}</footer>")
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{escape(active().lang)}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(_META_CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{escape(title)}</title>\n<style>{IMPROVEMENTS_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _badge(rating: str) -> str:
    cls = "hph" if rating == HIGH_POTENTIAL_FOR_HARM else "sub"
    return f'<span class="badge {cls}">{escape(ui_cell(SHORT.get(rating, rating)))}</span>'


def _html_chatbot(
    index: int,
    bot: ChatbotFindings,
    base: str,
    can_link: Callable[[str], bool],
    *,
    prefix: str = "",
    heading: str = "h2",
) -> str:
    """One chatbot's dimensions, findings and examples; `prefix` keeps its ids apart
    from a page's own (the card embeds it), `heading` is the level of its title."""
    sub = "h4" if heading == "h3" else "h3"
    parts = [
        f'<section id="{prefix}chatbot-{index}" class="chatbot"><{heading}>{escape(bot.chatbot)}</{heading}>',
        f"<p>{escape(tr('card.fix_judged', n=bot.conversations))}</p>",
    ]
    if bot.summary is not None and bot.summary.low_sample:
        parts.append(f'<p class="note" role="note">{escape(low_sample_line(bot.summary))}</p>')
    for k, d in enumerate(bot.dimensions):
        anchor = f"{prefix}chatbot-{index}-dimension-{k}"
        parts.append(
            f'<section id="{anchor}" class="dimension"><{sub}>{escape(ui_label(d.dimension))}</{sub}>'
        )
        parts.append(f"<p>{escape(_dimension_line(d))}</p>")
        if d.findings:
            rows = []
            for n, f in enumerate(d.findings):
                qtext = f' <span class="qtext">{escape(f.question)}</span>' if f.question else ""
                rows.append(
                    f'<tr class="finding" data-rating="{escape(f.rating)}" data-question="{escape(f.question_id)}">'
                    f"<td>{_badge(f.rating)}</td>"
                    f'<td><a href="#{anchor}-finding-{n}"><code>{escape(f.question_id or MISSING)}</code></a>{qtext}</td>'
                    f'<td class="n">{f.conversations}</td><td class="n">{escape(share(f.share))}</td></tr>'
                )
            parts.append(
                scroll_box(tr("card.fix_findings"))
                + '<table class="findings"><thead><tr>'
                + "".join(
                    f'<th scope="col">{escape(tr(k))}</th>'
                    for k in ("col.rating", "col.question", "col.conversations", "col.share_of_relevant")
                )
                + f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
            )
            for n, f in enumerate(d.findings):
                parts.append(_html_examples(f"{anchor}-finding-{n}", f, base, can_link))
        parts.append("</section>")
    if bot.summary is not None:
        parts.append(_html_summary(f"{prefix}chatbot-{index}-summary", bot.summary, sub))
    parts.append("</section>")
    return "\n".join(parts)


def _html_table(cls: str, header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _html_summary(anchor: str, s: RowSummary, heading: str) -> str:
    parts = [
        f'<section id="{anchor}" class="reference-summary">',
        f"<{heading}>{escape(tr('page.fix_reference', n=s.rows), quote=False)}</{heading}>"
        f"<p>{escape(tr('page.fix_reference_intro'))}</p>",
        f"<p>{escape(tr('page.fix_per_dimension'))}</p>",
        _html_table("summary-dimensions", dimension_header(), dimension_rows(s)),
    ]
    if band_rows(s):
        parts.append(f"<p>{escape(tr('page.fix_by_band', n=s.top_questions))}</p>")
        parts.append(_html_table("summary-bands", band_header(), band_rows(s)))
    if s.global_top:
        parts.append(f"<p>{escape(tr('page.fix_top'))}</p>")
        parts.append(_html_table("summary-global", global_header(), global_rows(s)))
    parts.append("</section>")
    return "\n".join(parts)


def _html_examples(anchor: str, f: Finding, base: str, can_link: Callable[[str], bool]) -> str:
    question = f"<code>{escape(f.question_id or MISSING)}</code>"
    counts = _html_tr(
        "card.fix_counts", question=question, conversations=str(f.conversations), ratings=str(f.ratings)
    )
    head = f'<div id="{anchor}" class="examples"><p>{_badge(f.rating)} {counts}</p>'
    if not f.exemplars:
        return head + "</div>"
    items = []
    for e in f.exemplars:
        linked = can_link(e.conversation_id)
        href = f"{base}{e.page}"

        def a(fragment: str, label: str, *, cls: str, href: str = href, linked: bool = linked) -> str:
            if not linked:
                return escape(label)
            return f'<a class="{cls}" href="{escape(href)}#{escape(fragment)}">{escape(label)}</a>'

        meta = _html_tr(
            "card.fix_meta",
            conversation=a(e.anchor, e.conversation_id, cls="conversation"),
            persona=escape(e.persona),
            risk=escape(ui_cell(e.risk)),
            judge=escape(e.judge),
            instance=str(e.instance),
        )
        reasoning = f"<blockquote>{escape(e.reasoning) or escape(tr('card.fix_no_reasoning'))}</blockquote>"
        link = a(e.anchor, tr("card.fix_reasoning"), cls="reasoning")
        item = [
            f'<li><div class="meta">{meta}</div>',
            f"<div>{_html_tr('card.fix_reasoning_line', link=link)}</div>",
            reasoning,
        ]
        if e.turn is not None:
            how = tr("card.fix_quoted") if e.quoted else tr("card.fix_reply")
            turn = a(f"turn-{e.turn}", tr("card.fix_turn", n=e.turn), cls="turn")
            item.append(f"<div>{_html_tr('card.fix_turn_line', link=turn, how=escape(how))}</div>")
            item.append(f'<blockquote class="turn">{escape(_clip(e.turn_text))}</blockquote>')
        else:
            item.append(f'<div class="meta">{escape(tr("card.fix_no_turn"))}</div>')
        items.append("".join(item) + "</li>")
    return head + f'<ol class="exemplars">{"".join(items)}</ol></div>'


def _html_tr(key: str, /, **markup: str) -> str:
    """`tr(key)` as HTML: its text escaped, its fields filled with `markup` (HTML already)."""
    return escape(tr(key), quote=False).format(**markup)


def chatbot_details_html(index: int, bot: ChatbotFindings, *, prefix: str) -> str:
    """A chatbot's findings by dimension with their examples, for a page beside the
    card (links to the conversation pages written there)."""
    return _html_chatbot(index, bot, "", lambda cid: page_name(cid) is not None, prefix=prefix, heading="h3")


def render_improvements(report: Improvements, fmt: Format, *, base: str = "", card: bool = True) -> str:
    """The report in one format; `card`: whether the HTML links the run's card.html."""
    if fmt == "json":
        return render_improvements_json(report)
    if fmt == "md":
        return render_improvements_markdown(report, base=base)
    return render_improvements_html(report, base=base, card=card)


# ---------------------------------------------------------------------------------------
# `vera report improvements`
# ---------------------------------------------------------------------------------------

SUFFIX: dict[str, str] = {"md": "md", "html": "html", "json": "json"}


class Written(msgspec.Struct, frozen=True):
    """What `write_improvements` did: the report (None when it went to stdout as `text`),
    the conversation pages it added, and why pages could not be written, if so."""

    path: Path | None
    text: str
    findings: int
    pages_added: int
    pages_note: str | None = None


def write_improvements(
    run_dir: str | Path,
    *,
    fmt: Format,
    output: str | None = None,
    exemplars: int = DEFAULT_EXEMPLARS,
    top_questions: int = DEFAULT_TOP_QUESTIONS,
    low_sample_threshold: int = DEFAULT_LOW_SAMPLE,
) -> Written:
    """Build the report of a run and write it (`output`: a file, "-" for none, default
    improvements.<fmt> in the run directory). Links are relative to where the file is.
    For Markdown and HTML, the page of each exemplar's conversation that is not beside
    the card yet is written to conversations/ (ids that are file names only)."""
    root = Path(run_dir)
    records = open_run(root)
    if not any(head.status == "complete" for head, _ in records.judgements.values()):
        # "0 findings" would read as a clean bill of health for a run nobody judged.
        raise UserError(
            f"{run_dir}: no conversation is judged yet, so there is nothing to report; "
            f"judge them first: vera judge {run_dir}"
        )
    report = run_improvements(
        records, exemplars=exemplars, top_questions=top_questions, low_sample_threshold=low_sample_threshold
    )
    target = None if output == "-" else Path(output) if output else root / f"improvements.{SUFFIX[fmt]}"
    base = "" if target is None else _base(root, target.parent)
    text = render_improvements(report, fmt, base=base, card=(root / "card.html").is_file())
    if target is not None:
        atomic_write(target, text.encode(), what="the improvement report")
    added, note = 0, None
    if fmt != "json":
        try:
            added = write_missing_pages(records, exemplar_conversations(report))
        except StorageError as exc:
            note = tr("cli.improvements_no_pages", error=exc)
    return Written(target, text, sum(_count(report)), added, note)


def _count(report: Improvements) -> Iterator[int]:
    for bot in report.chatbots:
        for d in bot.dimensions:
            yield len(d.findings)


def _base(run_dir: Path, folder: Path) -> str:
    """The run directory as seen from `folder`, ending in "/" ("" when they are one)."""
    rel = os.path.relpath(run_dir.resolve(), folder.resolve())
    return "" if rel == "." else Path(rel).as_posix() + "/"
