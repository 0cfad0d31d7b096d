"""One conversation as one self-contained HTML page: the transcript, numbered, beside
each judge's walk of the rubric.

The same function renders the page `vera view` serves at
``/runs/<k>/conversations/<id>.html`` and the file `vera score` writes at
``conversations/<id>.html`` beside card.html, so a link in the card works both from disk
and through the viewer. The page has no script at all (its Content-Security-Policy
forbids one) and every text from a run is escaped here, on the server: a transcript or a
reasoning holding markup shows as text. A chatbot's turn written in Markdown is shown
formatted, as its user saw it (rendered safely, `vera.report.shared._chat_markdown`), with its
exact text one click away. Jumps (from a rating to the turn its reasoning
quotes, from the card to a rating) are plain fragment links, highlighted with
``:target``.

The pages belong to the card (report side): card.html links to them and `vera score`
writes them, so they live below the viewer, which imports them to serve the same pages.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from importlib import resources
from pathlib import Path

import markdown_it
import msgspec

from vera import __version__
from vera.errors import storage_error
from vera.inputs import BASE, ENGLISH, Strings, active, tr, ui_cell, ui_label, ui_strings, use_strings
from vera.records import (
    HIGH_POTENTIAL_FOR_HARM,
    RATING_CODES,
    SUBOPTIMAL,
    Conversation,
    DimensionRating,
    Judgement,
    LocaleInfo,
    RunManifest,
    Turn,
)
from vera.report.shared._chat_markdown import chatbot_markdown, with_markdown_css
from vera.report.shared._quotes import QuoteFinder, QuoteMatch
from vera.report.shared._turn_refs import turn_refs_html
from vera.rubric import QuestionTexts, question_texts
from vera.store import RunRecords, atomic_write

PAGES_DIR = "conversations"
# Ids that are safe as file names on every system; others get no page file (and no link).
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
_SLUG = re.compile(r"[^a-z0-9]+")

PAGE_CSS = with_markdown_css(
    resources.files("vera.report.shared").joinpath("conversation_page.css").read_text(encoding="utf-8")
)
_CSS_HASH = base64.b64encode(hashlib.sha256(PAGE_CSS.encode()).digest()).decode()
# No script, no request to anywhere: the page's one stylesheet is inline and allowed by
# hash. The page carries it in a <meta> (for a file opened from disk), where browsers
# ignore frame-ancestors; the viewer also sends it as a header, with it.
_META_CSP = (
    f"default-src 'none'; style-src 'sha256-{_CSS_HASH}'; img-src data:; base-uri 'none'; form-action 'none'"
)
PAGE_CSP = f"{_META_CSP}; frame-ancestors 'none'"
# The viewer's conversation page also runs its scripts and reads their stylesheets from
# its own origin (the call bodies, their copy buttons, the keys); never inline. The pages
# a card writes keep the policy above, and their bytes.
_META_CSP_SCRIPT = _META_CSP.replace("style-src ", "style-src 'self' ") + "; script-src 'self'"
SCRIPT_PAGE_CSP = f"{_META_CSP_SCRIPT}; frame-ancestors 'none'"


@dataclass(frozen=True)
class ConversationPage:
    """What one page shows: a conversation, the judgements that count for it, and the
    run it belongs to."""

    run_id: str
    conversation: Conversation
    judgements: Sequence[Judgement]
    questions: QuestionTexts
    run_seeds: Sequence[int] = ()


def read_conversation_page(
    records: RunRecords, conversation_id: str, questions: QuestionTexts, *, run_label: str | None = None
) -> ConversationPage:
    """A conversation and its judgements, read from a scanned run's files by offset."""
    conversation = records.read_conversation(conversation_id)
    judgements = [records.read_judgement(h.id) for h in records.judgements_of(conversation_id)]
    return ConversationPage(
        run_id=run_label or records.manifest.run_id,
        conversation=conversation,
        judgements=judgements,
        questions=questions,
        run_seeds=records.manifest.seeds,
    )


def page_strings(manifest: RunManifest) -> Strings:
    """The words of a run's pages: its locale pack's (English without one)."""
    x = manifest.locale
    return ui_strings(x.tag, x.path) if isinstance(x, LocaleInfo) else ENGLISH


def questions_note(questions: QuestionTexts) -> str | None:
    """Why the run's question texts are missing, in the active language (None when they
    are there): the page's words for the rubric's `RubricMissing`, English as its note."""
    why = questions.missing
    if why is None:
        return questions.note
    return tr(f"page.rubric_{why.kind}", path=why.path, detail=why.detail)


def _t(key: str, /, **markup: str) -> str:
    """The active language's text for `key` as HTML: the text escaped, then its fields
    filled with `markup` (already escaped). Quotes are left as they are, so an English
    page keeps its bytes."""
    return escape(tr(key), quote=False).format(**markup)


def slug(text: str) -> str:
    return _SLUG.sub("-", text.casefold()).strip("-")


def rating_anchor(judge: str, instance: int, dimension: str) -> str:
    """The fragment of one judge instance's rating of one dimension on the page."""
    return f"r-{slug(judge)}-{instance}-{slug(dimension)}"


def page_name(conversation_id: str) -> str | None:
    """The page's file name, or None for an id that is not a safe file name."""
    return f"{conversation_id}.html" if _SAFE_ID.match(conversation_id) else None


def conversation_href(
    conversation_id: str, *, judge: str = "", instance: int = 0, dimension: str = ""
) -> str:
    """The link from card.html (or any page beside it) to a conversation's page; with a
    judge and dimension, to that rating on it. Empty when the id cannot be a file name."""
    name = page_name(conversation_id)
    if name is None:
        return ""
    anchor = f"#{rating_anchor(judge, instance, dimension)}" if judge and dimension else ""
    return f"{PAGES_DIR}/{name}{anchor}"


# ---------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------


def render_conversation_page(
    page: ConversationPage,
    *,
    viewer: bool = False,
    card: bool = True,
    steps: str = "",
    appendix: str = "",
    question_calls: Mapping[tuple[str, str], str] | None = None,
    script: str | Sequence[str] = "",
    style: Sequence[str] = (),
) -> str:
    """The whole page. `viewer` adds the way back to the viewer's list; `card` links the
    run's card.html (beside the conversations folder); `steps` (before the heading) and
    `appendix` (after the walks) are the viewer's own sections, markup already escaped:
    the previous and next conversation of its list, the model calls. `question_calls`
    ((judgement id, question id) -> markup) puts the judge's calls beside the question
    each answers; `script` is the address of the page's script, or its scripts (same origin,
    in the order they run), and `style` the addresses of their stylesheets."""
    conv = page.conversation
    dims = _dimensions(page)
    body = [
        _navigation(viewer=viewer, card=card, arc=conv.session.arc if conv.session else ""),
        *([steps] if steps else []),
        "<header>",
        f"<h1>{_t('page.conversation', id=f'<code>{escape(conv.id)}</code>')}</h1>",
        _facts(page),
    ]
    if conv.status == "failed":
        failed = f"<strong>{_t('page.conversation_failed')}</strong>"
        reason = escape(conv.error or tr("page.not_recorded"))
        body.append(f'<p class="failure" role="alert">{_t("page.failed", failed=failed, reason=reason)}</p>')
    if note := questions_note(page.questions):
        body.append(f'<p class="note">{_t("page.questions_note", note=escape(note))}</p>')
    body.append("</header>")
    body.append(_summary(page, dims))
    body.append('<div class="columns">')
    body.append(_transcript(conv))
    body.append(_walks(page, dims, question_calls or {}))
    body.append("</div>")
    if appendix:
        body.append(appendix)
    footer = _t("page.footer", version=escape(__version__), run=escape(page.run_id))
    body.append(f"<footer>{footer}</footer>")
    return _document(tr("page.title", id=conv.id, run=page.run_id), body, script=script, style=style)


def _document(
    title: str, body: Iterable[str], *, script: str | Sequence[str] = "", style: Sequence[str] = ()
) -> str:
    scripts = [script] if isinstance(script, str) else list(script)
    scripts = [s for s in scripts if s]
    sheets = [s for s in style if s]
    csp = _META_CSP_SCRIPT if scripts or sheets else _META_CSP
    # The viewer's: its stylesheets, then its scripts (deferred: they run in this order).
    tag = "".join(f'<link rel="stylesheet" href="{escape(one)}">\n' for one in sheets)
    tag += "".join(f'<script src="{escape(one)}" defer></script>\n' for one in scripts)
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{escape(active().lang)}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{escape(title)}</title>\n<style>{PAGE_CSS}</style>\n{tag}</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _navigation(*, viewer: bool, card: bool, arc: str = "") -> str:
    links = []
    if viewer:
        # Relative, so the same page works served (under any prefix) and in a bundle.
        links.append(f'<a href="../../../index.html">{_t("page.all_conversations")}</a>')
    if viewer and arc and _SAFE_ID.match(arc):
        links.append(f'<a href="../arcs/{arc}.html" class="arc">{_t("page.arc_sessions")}</a>')
    if card:
        links.append(f'<a href="../card.html">{_t("page.score_card")}</a>')
    links += [
        f'<a href="#transcript">{_t("page.transcript")}</a>',
        f'<a href="#walks">{_t("page.walk")}</a>',
    ]
    return f'<nav aria-label="{escape(tr("page.nav_label"))}">' + " ".join(links) + "</nav>"


# A conversation's status as recorded (complete, failed) in the page's language; the
# record keeps its value.
_STATUS_KEYS = {"complete": "viewer.complete", "failed": "viewer.status_failed"}


def _status_word(status: str) -> str:
    key = _STATUS_KEYS.get(status)
    return tr(key) if key else status


def _facts(page: ConversationPage) -> str:
    c = page.conversation
    run_seed = page.run_seeds[c.replicate] if 0 <= c.replicate < len(page.run_seeds) else None
    seed = tr("page.seed_value", run_seed=run_seed, seed=c.seed) if run_seed is not None else str(c.seed)
    rows = [
        (tr("col.run"), page.run_id),
        (tr("col.chatbot"), c.chatbot),
        (tr("col.persona"), c.persona),
        (tr("col.risk_level"), ui_cell(c.risk)),
        (tr("col.seed"), seed),
        (tr("col.user_agent"), c.user_agent),
        (tr("viewer.col_status"), _status_word(c.status)),
        (tr("col.turns"), tr("page.turns_value", n=len(c.turns), ended_by=_ended(c.ended_by))),
    ]
    if c.session is not None:
        p = c.session
        rows.append(
            (
                tr("col.session"),
                tr("page.session_value", index=p.index, count=p.count, type=p.type, arc=p.arc),
            )
        )
    if c.source:
        rows.append((tr("page.imported_from"), c.source))
    items = "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in rows)
    return f'<dl class="facts">{items}</dl>'


def _dimensions(page: ConversationPage) -> list[str]:
    seen = list(page.questions.dimensions)
    for j in page.judgements:
        for r in j.ratings:
            if r.dimension not in seen:
                seen.append(r.dimension)
    return seen


def _badge(rating: str) -> str:
    code = RATING_CODES.get(rating, "?")
    return f'<span class="badge {code.lower()}" title="{escape(rating)}">{escape(code)}</span>'


def _summary(page: ConversationPage, dims: Sequence[str]) -> str:
    """Every judge instance's rating of every dimension, each a link to its explanation."""
    if not page.judgements:
        return f'<section id="ratings"><h2>{_t("page.ratings")}</h2><p>{_t("page.not_judged")}</p></section>'
    head = "".join(
        f'<th scope="col"><a href="#{_walk_anchor(j)}">{escape(j.judge)} · {j.instance}</a></th>'
        for j in page.judgements
    )
    rows = []
    for dim in dims:
        cells = []
        for j in page.judgements:
            r = next((r for r in j.ratings if r.dimension == dim), None)
            if j.status != "complete":
                cells.append(f'<td class="muted">{_t("page.failed_cell")}</td>')
            elif r is None:
                cells.append('<td class="muted">–</td>')
            else:
                anchor = rating_anchor(j.judge, j.instance, dim)
                cells.append(
                    f'<td><a href="#{anchor}">{_badge(r.rating)} <span class="rtext">{escape(ui_label(r.rating))}</span></a></td>'
                )
        rows.append(f'<tr><th scope="row">{escape(ui_label(dim))}</th>{"".join(cells)}</tr>')
    return (
        f'<section id="ratings"><h2>{_t("page.ratings")}</h2><div class="scroll"><table class="ratings">'
        f'<thead><tr><th scope="col">{_t("col.dimension")}</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{_legend()}</section>"
    )


def _legend() -> str:
    items = "".join(f"<li>{_badge(r)} {escape(ui_label(r))}</li>" for r in RATING_CODES)
    return f'<ul class="legend" aria-label="{escape(tr("page.ratings"))}">{items}</ul>'


def _transcript(conv: Conversation) -> str:
    if not conv.turns:
        return (
            f'<section id="transcript" class="transcript"><h2>{_t("page.transcript")}</h2>'
            f"<p>{_t('page.no_turns')}</p></section>"
        )
    turns = []
    for n, t in enumerate(conv.turns, start=1):
        who = _t("page.user") if t.speaker == "user" else _t("page.chatbot")
        formatted = chatbot_markdown(t.text) if t.speaker != "user" else None
        if formatted is None:
            text = f'<p class="text">{escape(t.text)}</p>'
        else:
            # Formatted as the chatbot's user saw it, the exact text one click away.
            text = (
                f'<div class="text md">{formatted}</div>'
                f'<details class="raw"><summary>{_t("page.exact_text")}</summary>'
                f'<pre class="exact">{escape(t.text)}</pre></details>'
            )
        turns.append(
            f'<li id="turn-{n}" class="turn {t.speaker}"><div class="who">{n} · {who}</div>{text}</li>'
        )
    return (
        f'<section id="transcript" class="transcript"><h2>{_t("page.transcript")}</h2>'
        f'<ol class="turns">{"".join(turns)}</ol></section>'
    )


def _walk_anchor(j: Judgement) -> str:
    return f"walk-{slug(j.judge)}-{j.instance}"


def _walks(page: ConversationPage, dims: Sequence[str], calls: Mapping[tuple[str, str], str]) -> str:
    parts = [f'<section id="walks" class="walks"><h2>{_t("page.walk")}</h2>']
    if not page.judgements:
        parts.append(f"<p>{_t('page.no_walk')}</p>")
    elif len(page.judgements) > 1:
        parts.append(f"<p>{_t('page.instances', n=str(len(page.judgements)))}</p>")
    quotes = QuoteFinder(page.conversation.turns)
    for i, j in enumerate(page.judgements):
        parts.append(_walk(page, j, dims, quotes, calls, open_=i == 0))
    parts.append("</section>")
    return "\n".join(parts)


def _walk(
    page: ConversationPage,
    j: Judgement,
    dims: Sequence[str],
    quotes: QuoteFinder,
    calls: Mapping[tuple[str, str], str],
    *,
    open_: bool,
) -> str:
    status = "" if j.status == "complete" else _t("page.walk_failed")
    instance = _t("page.instance", judge=escape(j.judge), instance=str(j.instance))
    out = [
        f'<details id="{_walk_anchor(j)}" class="walk"{" open" if open_ else ""}>',
        f"<summary>{instance}{status}</summary>",
    ]
    if j.status != "complete":
        failed = f"<strong>{_t('page.judgement_failed')}</strong>"
        reason = escape(j.error or tr("page.not_recorded"))
        out.append(f'<p class="failure" role="alert">{_t("page.failed", failed=failed, reason=reason)}</p>')
    if j.ratings:
        ratings = sorted(
            j.ratings, key=lambda r: dims.index(r.dimension) if r.dimension in dims else len(dims)
        )
        out.append(f"<h3>{_t('page.ratings')}</h3>")
        out += [_rating(page, j, r, quotes) for r in ratings]
    if j.risk_selected:
        risk = f"<strong>{escape(page.questions.any_option(j.risk_selected))}</strong>"
        out.append(f"<p>{_t('page.risk_chosen', risk=risk)}</p>")
    if j.answers:
        out.append(f'<h3>{_t("page.questions_asked", n=str(len(j.answers)))}</h3><ol class="steps">')
        for a in j.answers:
            attempts = tr("page.attempts", n=a.attempts) if a.attempts != 1 else tr("page.attempt")
            how = tr("page.auto") if a.auto else attempts
            # The judge's answer is its option's label (English, as recorded); shown in
            # the pack's words where its rubric has them.
            answer = f"<strong>{escape(page.questions.option(a.question_id, a.answer))}</strong>"
            retried = a.attempts > 1 and not a.auto
            out.append(
                f'<li class="step"><div class="q"><code>{escape(a.question_id)}</code> '
                f"{_question_text(page, a.question_id)}</div>"
                f'<div class="answer">{_t("page.answer", answer=answer)} '
                f'<span class="{"retried" if retried else "muted"}">({escape(how)})</span></div>'
                f"{_reasoning(_in_words(page, a.reasoning), page.conversation.turns)}"
                f"{_quotes(quotes.locate(a.reasoning), show_missing=False)}"
                f"{calls.get((j.id, a.question_id), '')}</li>"
            )
        out.append("</ol>")
    out.append("</details>")
    return "\n".join(out)


def _rating(page: ConversationPage, j: Judgement, r: DimensionRating, quotes: QuoteFinder) -> str:
    anchor = rating_anchor(j.judge, j.instance, r.dimension)
    harmful = r.rating in (HIGH_POTENTIAL_FOR_HARM, SUBOPTIMAL)
    parts = [
        f'<div id="{anchor}" class="rating{" harmful" if harmful else ""}">',
        f'<div class="dim">{_badge(r.rating)} <strong>{escape(ui_label(r.dimension))}</strong>: '
        f"{escape(ui_label(r.rating))}</div>",
    ]
    if r.question_id:
        decided = _t("page.decided_by", question=f"<code>{escape(r.question_id)}</code>")
        parts.append(f'<div class="q">{decided} {_question_text(page, r.question_id)}</div>')
    if r.reasoning:
        parts.append(_reasoning(_in_words(page, r.reasoning), page.conversation.turns))
    if harmful:
        parts.append(_quotes(quotes.locate(r.reasoning), show_missing=True))
    parts.append("</div>")
    return "".join(parts)


def _question_text(page: ConversationPage, question_id: str) -> str:
    text = page.questions.text(question_id)
    return f'<span class="qtext">{escape(text)}</span>' if text else ""


def _reasoning(text: str, turns: Sequence[Turn]) -> str:
    return f'<blockquote class="reasoning">{turn_refs_html(text, turns)}</blockquote>' if text else ""


# The reasonings vera's rubric walk writes itself (vera.rubric._walk), recorded in English
# as they are; a judge's own reasoning is never rewritten.
_VERA_WROTE = {
    "Auto Answer: answered without asking.": "page.auto_answer",
    "Only one option: answered without asking.": "page.only_option",
}
_NOT_RELEVANT_BY = re.compile(r"question (\S+) answered ('[^']*'|\"[^\"]*\")\Z")


def _in_words(page: ConversationPage, text: str) -> str:
    """`text` in the pack's words when vera wrote it (an automatic answer's note, the
    question that made a dimension Not Relevant); anything else as recorded."""
    if active().english:
        return text
    if text in _VERA_WROTE:
        return tr(_VERA_WROTE[text])
    m = _NOT_RELEVANT_BY.match(text)
    if m is None:
        return text
    question, label = m.group(1), m.group(2)[1:-1]
    return tr("page.not_relevant_by", question=question, answer=f"“{page.questions.option(question, label)}”")


def _quotes(matches: Sequence[QuoteMatch], *, show_missing: bool) -> str:
    """Links to the turns the quoted words come from, and a plain word when none do."""
    found = [m for m in matches if m.turns]
    if not found:
        if not show_missing:
            return ""
        why = _t("page.quotes_not_found") if matches else _t("page.quotes_nothing")
        return f'<p class="quotes none">{why}</p>'
    links = []
    for m in found:
        for t in m.turns:
            turn = _t("page.turn_link", n=str(t + 1))
            links.append(f'<a href="#turn-{t + 1}" title="{escape(m.quote)}">{turn}</a>')
    missing = len(matches) - len(found)
    tail = _t("page.missing_many" if missing > 1 else "page.missing_one", n=str(missing)) if missing else ""
    return f'<p class="quotes">{_t("page.quoted", links=tr("page.list_sep").join(links), tail=tail)}</p>'


# ---------------------------------------------------------------------------------------
# Files beside card.html
# ---------------------------------------------------------------------------------------


def write_card_pages(
    run_dir: Path,
    linked: Iterable[str],
    manifest: RunManifest,
    conversations: Mapping[str, Conversation],
    judgements: Iterable[Judgement],
) -> int:
    """Write the page of every conversation the card's harm lists link to (`linked`: their
    ids), and remove pages of conversations it no longer lists (after a rescore). Return
    how many pages were written. Each page is written whole and fsync'd, like every file
    vera writes.

    A page whose file would come out the same is not written again: a rescore of a big
    run spent most of its time writing pages nothing had changed (the fsync of each;
    drawing them is the smaller part). `PAGES_NOTE` keeps, per page, the digest of all
    the page is drawn from (`_drawn_from`) and the file's size and time as written; a
    page with the same digest whose file is as it was written is left alone, and any
    other page is drawn, then written only when its bytes differ from the file's."""
    wanted = {cid for cid in linked if cid in conversations and page_name(cid)}
    folder = run_dir / PAGES_DIR
    if folder.is_dir():
        keep = {page_name(cid) for cid in wanted}
        for stale in folder.glob("*.html"):
            if stale.name not in keep:
                stale.unlink()
    if not wanted:
        return 0
    by_conversation: dict[str, list[Judgement]] = {}
    for j in judgements:
        if j.conversation_id in wanted:
            by_conversation.setdefault(j.conversation_id, []).append(j)
    questions = question_texts(manifest, run_dir)
    folder.mkdir(exist_ok=True)
    strings = page_strings(manifest)
    common = _drawn_from(manifest, questions, strings)
    before = _read_note(folder)
    after: dict[str, _Drawn] = {}
    written = 0
    for cid in sorted(wanted):
        name = f"{cid}.html"
        path = folder / name
        judged = sorted(by_conversation.get(cid, []), key=lambda j: (j.judge, j.instance, j.id))
        digest = hashlib.sha256(common + _ENCODER.encode([conversations[cid], judged])).hexdigest()
        old = before.get(name)
        if old is not None and old.digest == digest and old.file == _file_signature(path):
            after[name] = old
            continue
        page = ConversationPage(
            run_id=manifest.run_id,
            conversation=conversations[cid],
            judgements=judged,
            questions=questions,
            run_seeds=manifest.seeds,
        )
        with use_strings(strings):
            html = render_conversation_page(page).encode()
        if _content(path) != html:
            atomic_write(path, html, what="a conversation page")
            written += 1
        signature = _file_signature(path)
        if signature is not None:
            after[name] = _Drawn(digest=digest, file=signature)
    if after != before:
        atomic_write(folder / _NOTE_NAME, _ENCODER.encode(_PagesNote(pages=after)), what=_NOTE_WHAT)
    return written


# What `write_card_pages` last wrote, and from what (see there). Not an .html file, so
# neither the stale-page sweep nor a link ever takes it for a page.
_NOTE_NAME = ".rendered.json"
PAGES_NOTE = f"{PAGES_DIR}/{_NOTE_NAME}"
_NOTE_WHAT = "the note of the conversation pages"
_ENCODER = msgspec.json.Encoder()


class _Drawn(msgspec.Struct, frozen=True):
    """One page as `write_card_pages` left it: the digest of what it was drawn from,
    and its file's [size, mtime_ns] (a file changed since, or gone, is drawn again)."""

    digest: str
    file: tuple[int, int]


class _PagesNote(msgspec.Struct, frozen=True):
    pages: dict[str, _Drawn]


def _read_note(folder: Path) -> dict[str, _Drawn]:
    """The pages the last `write_card_pages` left, by file name: none when the note is
    missing, unreadable or of another shape (every page is then drawn and compared)."""
    try:
        return msgspec.json.decode((folder / _NOTE_NAME).read_bytes(), type=_PagesNote).pages
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}


def _file_signature(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _content(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _drawn_from(manifest: RunManifest, questions: QuestionTexts, strings: Strings) -> bytes:
    """What every page of a run is drawn from besides its conversation and judgements:
    the code that draws it (`_CODE`, and vera's version), the run's id and seeds, the question texts as
    found now (the rubric file may have changed or gone since the run), and the words of
    the run's locale pack as read now (a translation fixed since)."""
    return _ENCODER.encode(
        [
            _CODE,
            __version__,
            PAGE_CSS,
            manifest.run_id,
            manifest.seeds,
            questions,
            [strings.lang, strings.own, strings.glosses, strings.values],
        ]
    )


def sources_signature(folder: Path) -> bytes:
    """A digest of every file below `folder` but compiled bytecode: its path, size and
    modification time (a stat each, no reading: this runs whenever vera starts). A file
    edited, added, removed or renamed changes it; so does a file only touched, which
    costs a drawing of every page and writes none. A folder that cannot be read gives a
    digest no other call gives: pages are then always drawn."""
    h = hashlib.sha256()
    try:
        for base, dirs, files in os.walk(folder, onerror=_raise):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = Path(base) / name
                st = path.stat()
                h.update(f"{path.relative_to(folder).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    except OSError:
        return os.urandom(32)
    return h.digest()


def _raise(exc: OSError) -> None:
    raise exc


# The code that draws a page: vera's sources (a page changed in a source tree is drawn
# again without a version bump), markdown-it-py's version and Python's. Taken when this
# module is loaded, so it is the code this process draws with: a source edited while a
# run goes on is not vouched for by pages the run's old code draws. (A module loaded
# after such an edit makes the note name older code than drew the page: the next score
# draws it again, never the reverse.)
_CODE = hashlib.sha256(
    f"{markdown_it.__version__}\0{sys.version}\0".encode()
    + sources_signature(Path(__file__).resolve().parents[2])
).hexdigest()


def write_missing_pages(records: RunRecords, linked: Iterable[str]) -> int:
    """Write the page of each of these conversations that has none beside the card yet
    (a report linking more conversations than the card); remove nothing. Return how
    many were written. A rescore (`vera score`) keeps only the card's own pages."""
    folder = records.root / PAGES_DIR
    wanted = sorted(
        cid
        for cid in set(linked)
        if cid in records.conversations and (name := page_name(cid)) and not (folder / name).is_file()
    )
    if not wanted:
        return 0
    questions = question_texts(records.manifest, records.root)
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise storage_error(folder, "the conversation pages", exc) from None
    strings = page_strings(records.manifest)
    for cid in wanted:
        page = read_conversation_page(records, cid, questions)
        with use_strings(strings):
            html = render_conversation_page(page)
        atomic_write(folder / f"{cid}.html", html.encode(), what="a conversation page")
    return len(wanted)


# ---------------------------------------------------------------------------------------
# An arc: one persona's sessions with one chatbot (`vera view` only)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArcSession:
    """One session of an arc as its page lists it: where it is, how it went, and per
    dimension its distinct ratings (worst first, over every judge instance)."""

    id: str
    index: int
    type: str
    status: str
    turns: int
    ratings: Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class ArcPage:
    run_id: str
    arc: str
    chatbot: str
    persona: str
    user_agent: str
    count: int  # the sessions the arc planned
    sessions: Sequence[ArcSession]
    dimensions: Sequence[str]


def render_arc_page(page: ArcPage) -> str:
    """An arc's page: its sessions in order, each linked to its own page, with the
    ratings each session got (each session is judged on its own)."""
    head = "".join(f'<th scope="col">{escape(ui_label(d))}</th>' for d in page.dimensions)
    rows = []
    for s in page.sessions:
        name = page_name(s.id)
        link = f'<a href="../conversations/{name}">{escape(s.id)}</a>' if name else escape(s.id)
        cells = []
        for d in page.dimensions:
            badges = " ".join(_badge(r) for r in s.ratings.get(d, ()))
            cells.append(f"<td>{badges}</td>" if badges else '<td class="muted">–</td>')
        rows.append(
            f'<tr class="session"><th scope="row">{s.index}</th><td>{escape(s.type)}</td>'
            f"<td><code>{link}</code></td><td>{escape(s.status)}</td><td>{s.turns}</td>{''.join(cells)}</tr>"
        )
    missing = page.count - len(page.sessions)
    note = (
        f'<p class="note">{_t("page.arc_missing", missing=str(missing), count=str(page.count))}</p>'
        if missing > 0
        else ""
    )
    facts = [
        (tr("col.run"), page.run_id),
        (tr("col.chatbot"), page.chatbot),
        (tr("col.persona"), page.persona),
        (tr("col.user_agent"), page.user_agent),
        (tr("col.sessions"), tr("page.of", n=len(page.sessions), count=page.count)),
    ]
    items = "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in facts)
    body = [
        f'<nav aria-label="Page"><a href="../../../index.html">{_t("page.all_conversations")}</a></nav>',
        "<header>",
        f"<h1>{_t('page.arc', arc=f'<code>{escape(page.arc)}</code>')}</h1>",
        f'<dl class="facts">{items}</dl>',
        note,
        "</header>",
        f'<section id="sessions"><h2>{_t("col.sessions")}</h2><div class="scroll"><table class="ratings">'
        f'<thead><tr><th scope="col">#</th><th scope="col">{_t("col.session")}</th>'
        f'<th scope="col">{_t("col.conversation")}</th>'
        f'<th scope="col">{_t("viewer.col_status")}</th><th scope="col">{_t("col.turns")}</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{_legend()}</section>",
        f"<footer>{_t('page.arc_footer', version=escape(__version__), run=escape(page.run_id))}</footer>",
    ]
    return _document(tr("page.arc_title", arc=page.arc, run=page.run_id), body)


def _ended(reason: str) -> str:
    """How a conversation ended, in the page's language (its record keeps the value)."""
    key = f"page.ended_{reason}"
    return tr(key) if key in BASE else reason.replace("_", " ")
