"""card.html, and the page pieces the comparison page (vera.report.compare._html) shares:
self-contained HTML5 (inline CSS, plots as SVG
data URIs, no scripts, no fonts or anything else fetched), readable offline and safe to
mail. Every text that comes from a run (names, the judges' reasoning) is escaped.

The page answers first: its title and heading say what it is, then the run's status,
the offline label (once), and the headline per chatbot (`vera.report.card._text.headlines`);
the run's details (versions, hashes, settings, the reading guide) are folded below.
It reads on a phone: the headline reflows, every table scrolls inside its own box, and
plots keep legible text by scrolling sideways within their figure below 36rem.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Sequence
from html import escape

import msgspec

from vera.inputs import active, phrase, tr, ui_cell, ui_label, use_strings
from vera.report.card._plots import Plot
from vera.report.card._schema import Card, ChatbotCard, HarmfulRating
from vera.report.card._sequence import sequential_table, sequential_text
from vera.report.card._tables import (
    accounting_table,
    card_reasons,
    comparison_table,
    diagnostics_table,
    dimension_table,
    failures_table,
    fix_first_table,
    flag_href,
    flagged_table,
    harmful_table,
    overview_table,
    realism_table,
    section_tables,
    turns_table,
)
from vera.report.card._text import (
    Headline,
    about_rows,
    absent_columns_text,
    card_strings,
    excluded_warning,
    group_title,
    headlines,
    interval_meaning,
    offline_note,
    reading_guide,
    realism_text,
    run_title,
    sample_text,
    status_text,
    status_warning,
    unfinished_warning,
)
from vera.report.improvements._report import Improvements, chatbot_details_html, ranked
from vera.report.shared._numbers import num, percent_level
from vera.report.shared._pages import conversation_href
from vera.report.shared._realism import Realism
from vera.report.shared._table import Table, scroll_box

# A cell that starts like a number (or is the missing-value dash) is right-aligned.
_NUMERIC = re.compile(r"^[-+]?(\d|–$)")

STYLE = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
  margin: 0 auto; max-width: 1200px; padding: 1.5rem; color: #1a1a1a; line-height: 1.45;
  overflow-wrap: break-word; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; }
h2 { font-size: 1.3rem; margin-top: 2.2rem; border-bottom: 2px solid #0072B2; padding-bottom: .2rem; }
h3 { font-size: 1.1rem; margin-top: 1.6rem; }
.status { margin: .3rem 0; }
.offline { border: 3px solid #D55E00; background: #fff4ec; padding: .5rem .8rem; margin: .6rem 0; }
.offline strong { color: #a33f00; text-transform: uppercase; letter-spacing: .03em; }
.warning { border-left: 5px solid #E69F00; background: #fff8e6; padding: .6rem 1rem; }
.guide { background: #f2f7fb; padding: .8rem 1rem; border-radius: 4px; }
#results h2 { margin-top: 1rem; }
.meaning { margin: .8rem 0; }
.headlines { display: flex; flex-wrap: wrap; gap: 1rem; }
.headline { flex: 1 1 22rem; max-width: 36rem; border: 1px solid #c8c8c8; border-radius: 6px;
  padding: .7rem 1rem; }
.headline h3 { margin: 0 0 .3rem; font-size: 1.05rem; overflow-wrap: anywhere; }
.headline .score { font-size: 2rem; font-weight: bold; font-variant-numeric: tabular-nums; }
.headline .ci { color: #333; }
.headline dl { display: grid; grid-template-columns: minmax(0, 1fr) auto; gap: .1rem .8rem; margin: .4rem 0; }
.headline dt { color: #444; }
.headline dd { margin: 0; font-variant-numeric: tabular-nums; text-align: right; white-space: nowrap; }
.headline table { margin: .4rem 0 0; width: 100%; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .6rem 0 1.2rem; font-size: .86rem; }
caption, p.caption { caption-side: top; text-align: left; font-style: italic; padding-bottom: .3rem; }
p.caption { margin: .6rem 0 0; }
p.caption + .scroll > table { margin-top: .2rem; }
p.note { margin: -.9rem 0 1.2rem; font-size: .86rem; color: #333; }
.scroll[role="region"]:focus-visible { outline: 2px solid #0072B2; }
@media (max-width: 40rem) {
  .scroll[role="region"]::before { content: "{scroll_hint} \\2192";
    display: block; position: sticky; left: 0; font-size: .8rem; color: #555; }
}
th, td { border: 1px solid #c8c8c8; padding: .25rem .5rem; vertical-align: top; }
thead th { background: #eef2f5; text-align: left; }
td { text-align: right; font-variant-numeric: tabular-nums; }
td.text { text-align: left; }
tbody th { text-align: left; font-weight: normal; }
tr.emphasis th, tr.emphasis td { font-weight: bold; background: #fafafa; }
table.about th { background: #eef2f5; font-weight: bold; width: 14rem; }
table.about td { text-align: left; overflow-wrap: anywhere; }
figure { margin: 1rem 0; }
.plot img { display: block; width: 100%; max-width: 60rem; height: auto; border: 1px solid #e0e0e0; }
figcaption { font-size: .85rem; color: #444; }
details { margin: .5rem 0 1rem; }
summary { cursor: pointer; font-weight: bold; }
.reasoning { min-width: 16rem; max-width: 32rem; text-align: left; }
ul.contents { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; }
footer { margin-top: 3rem; font-size: .8rem; color: #555; }
@media (max-width: 40rem) {
  body { padding: .75rem; }
  h1 { font-size: 1.1rem; }
  .offline { font-size: .9rem; }
  .headline { padding: .5rem .7rem; }
  table.about th { width: auto; }
}
"""


def render_html(card: Card, plots: Sequence[Plot]) -> str:
    """The whole card as one HTML page: every number of card.json, every plot; in the
    words of the run's locale pack."""
    with use_strings(card_strings(card)):
        return _render_html(card, plots)


def _render_html(card: Card, plots: Sequence[Plot]) -> str:
    by_name = {p.name: p for p in plots}

    def figures(*names: str) -> list[str]:
        return [figure(by_name[n]) for n in names if n in by_name]

    body: list[str] = [f"<header><h1>{escape(run_title(card))}</h1>"]
    body.append(
        f'<p class="status"><strong>{escape(tr("card.run_status") + tr("card.colon"))}</strong> {escape(status_text(card))}</p>'
    )
    if judged := sample_text(card):
        body.append(
            f'<p class="sample"><strong>{escape(tr("card.judged") + tr("card.colon"))}</strong> {escape(judged)}</p>'
        )
    if warning := status_warning(card):
        body.append(f'<p class="warning" role="alert"><strong>{escape(warning)}</strong></p>')
    if unfinished := unfinished_warning(card):
        body.append(f'<p class="warning" role="alert"><strong>{escape(unfinished)}</strong></p>')
    if card.offline and card.note:
        body.append(offline_banner(offline_note(card), tr("card.offline_badge")))
    if excluded := excluded_warning(card):
        body.append(f'<p class="warning"><strong>{escape(excluded)}</strong></p>')
    body += ["</header>", "<main>", _results(card)]
    if card.fix_first is not None and card.fix_first.chatbots:  # none: nothing was judged
        body.append(_fix_first(card.fix_first))
    body.append(
        f'<details class="run-details" id="details"><summary>{escape(tr("card.run_details_summary"))}</summary>'
        + _about_table(about_rows(card))
        + f'<h3 id="how-to-read">{escape(tr("card.how_to_read"))}</h3><p class="guide">{escape(reading_guide(card))}</p>'
        + "</details>"
    )
    body.append(_contents(card))
    if not isinstance(card.sequential, msgspec.UnsetType):
        seq = card.sequential
        body.append(
            html_section(
                "sequential",
                tr("col.sequential_gate"),
                f"<p>{escape(tr('card.seq_this_run', text=sequential_text(seq)))}</p>",
                *figures("sequence.png"),
                html_table(sequential_table(seq)),
            )
        )
    body.append(
        html_section(
            "overview", tr("card.overview"), html_table(overview_table(card)), *figures("chatbots.png")
        )
    )
    if card.comparisons:
        parts = [f"<p>{escape(tr('card.comparisons_intro'), quote=False)}</p>"]
        parts += figures("differences.png")
        reasons = card_reasons(card)
        parts += [html_table(comparison_table(e, reasons)) for e in card.comparisons]
        body.append(html_section("comparisons", tr("card.comparisons"), *parts))
    if plots:
        body.append(
            html_section("plots", tr("card.plots"), *figures("ratings.png", "scores.png", "risk.png"))
        )
    for i, bot in enumerate(card.chatbots):
        body.append(_chatbot(i, bot, group_title(card)))
    if card.failures:
        body.append(
            html_section(
                "failures",
                tr("card.failures"),
                f"<p>{escape(tr('card.failures_intro'))}</p>",
                html_table(failures_table(card.failures)),
            )
        )
    if card.diagnostics:
        body.append(
            html_section(
                "diagnostics",
                tr("card.diagnostics"),
                html_table(diagnostics_table(card)),
                f"<details><summary>{escape(tr('card.turn_counts'))}</summary>",
                html_table(turns_table(card)),
                "</details>",
                *([f"<p>{escape(absent_columns_text(card))}</p>"] if card.absent_columns else []),
            )
        )
    if card.realism is not None:
        body.append(_realism(card, card.realism))
    unused = card.accounting.unused_judge_questions
    body.append(
        html_section(
            "accounting",
            tr("card.accounting"),
            html_table(accounting_table(card)),
            f"<p>{escape(tr('card.reasoning_note'))}</p>",
            *([f"<p>{escape(tr('card.unused_calls', n=num(unused)), quote=False)}</p>"] if unused else []),
        )
    )
    body.append("</main>")
    b = card.bootstrap
    footer = tr(
        "card.footer",
        schema=num(card.schema_version),
        version=card.vera_version,
        method=phrase(b.method),
        resamples=num(b.resamples),
        confidence=num(b.confidence),
        seed=num(b.seed),
    )
    body.append(f"<footer>{escape(footer)}</footer>")
    return page(run_title(card), body)


def _chatbot(index: int, bot: ChatbotCard, title: str) -> str:
    name = bot.chatbot
    section = bot.section()
    if section is None:
        return html_section(
            f"chatbot-{index}",
            name,
            f"<p>{escape(tr('card.no_judgement', complete=num(bot.conversations_complete), failed=num(bot.conversations_failed)))}</p>",
        )
    parts = [
        f"<p>{html_tr('card.model_over', model=f'<code>{escape(bot.model)}</code>', protocol=escape(bot.protocol))}</p>",
        html_table(dimension_table(section)),
    ]
    for heading, tables in section_tables(bot, title):
        parts.append(f"<h3>{escape(phrase(heading))}</h3>")
        parts.append(html_table(tables[0]))
        if len(tables) > 1:
            parts.append(f"<details><summary>{escape(tr('card.every_number'))}</summary>")
            parts += [html_table(t) for t in tables[1:]]
            parts.append("</details>")
    harmful = bot.harmful
    parts.append(f"<h3>{escape(tr('card.harmful'))} ({num(len(harmful))})</h3>")
    if harmful:
        parts += [
            f"<p>{html_tr('card.harmful_intro', command='<code>vera view</code>')}</p>",
            f"<details><summary>{escape(tr('card.show_all', n=num(len(harmful))), quote=False)}</summary>",
            html_table(harmful_table(harmful), wide_column=7, links=[_harm_link(h) for h in harmful]),
            "</details>",
        ]
    else:
        parts.append(f"<p>{escape(tr('card.none'))}</p>")
    return html_section(f"chatbot-{index}", name, *parts)


# ---------------------------------------------------------------------------------------
# Pieces
# ---------------------------------------------------------------------------------------


def page(title: str, body: Iterable[str]) -> str:
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{escape(active().lang)}">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{style()}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def style() -> str:
    """The stylesheet, its phone hint for a table that scrolls in the active language."""
    return STYLE.replace("{scroll_hint}", _css_text(tr("card.scroll_hint")))


def _css_text(text: str) -> str:
    # Inside a CSS string inside <style>: no quote, backslash or tag may end either early.
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("<", "\\3c ")


def html_tr(key: str, /, **markup: str) -> str:
    """`tr(key)` as HTML: its text escaped (as element text: quotes stay), its fields
    filled with `markup` (HTML already, e.g. a name in <code>), so a pack's words never
    carry markup of their own."""
    return escape(tr(key), quote=False).format(**markup)


def _harm_link(h: HarmfulRating) -> str:
    return conversation_href(h.conversation_id, judge=h.judge, instance=h.instance, dimension=h.dimension)


def html_table(t: Table, *, wide_column: int | None = None, links: Sequence[str] | None = None) -> str:
    """A Table as HTML; the first column is the row header. Numbers are right-aligned,
    prose left-aligned; `wide_column` holds long prose (the judges' reasoning); `links`
    (one per row, "" for none) makes each row's first cell a link."""
    # Wide tables scroll inside their own box, never the page, and say so: the box is a
    # labelled region (keyboard users can scroll it) with a hint a phone shows. The
    # caption goes above the box, where it wraps to the screen instead of being cut.
    out = []
    if t.caption:
        out.append(f'<p class="caption">{escape(phrase(t.caption))}</p>')
    out.append(scroll_box(phrase(t.caption) if t.caption else tr("card.table")) + "<table>")
    out.append(
        "<thead><tr>"
        + "".join(f'<th scope="col">{escape(ui_label(h))}</th>' for h in t.headers)
        + "</tr></thead>"
    )
    out.append("<tbody>")
    for i, row in enumerate(t.rows):
        attrs = ' class="emphasis"' if i in t.emphasise else ""
        head = escape(ui_cell(row[0]))
        if links and links[i]:
            head = f'<a href="{escape(links[i])}">{head}</a>'
        cells = [f'<th scope="row">{head}</th>']
        for j, cell in enumerate(row[1:], start=1):
            classes = [
                c for c, on in (("text", not _NUMERIC.match(cell)), ("reasoning", j == wide_column)) if on
            ]
            cls = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{cls}>{escape(ui_cell(cell))}</td>")
        out.append(f"<tr{attrs}>{''.join(cells)}</tr>")
    out.append("</tbody></table></div>")
    if t.note:
        out.append(f'<p class="note">{escape(t.note)}</p>')
    return "\n".join(out)


def figure(plot: Plot) -> str:
    """A plot as SVG (sharp on any screen, its numbers text), as wide as the page: on a
    screen narrower than 40rem, its phone drawing (narrower, larger text), so that it
    fits without scrolling sideways and its text stays readable."""
    data = base64.b64encode(plot.svg).decode("ascii")
    phone = ""
    if plot.phone_svg:
        narrow = base64.b64encode(plot.phone_svg).decode("ascii")
        phone = f'<source media="(max-width: 40rem)" srcset="data:image/svg+xml;base64,{narrow}">'
    return (
        f'<figure><div class="plot"><picture>{phone}<img src="data:image/svg+xml;base64,{data}" '
        f'alt="{escape(plot.description)}"></picture>'
        f"</div><figcaption>{escape(tr('card.figure_caption', title=plot.title, description=plot.description))}</figcaption></figure>"
    )


def _results(card: Card) -> str:
    """The headline: per chatbot, a box with the overall score and its interval, the
    share of conversations with any harmful rating, conversations and failures, and the
    dimension scores; the boxes sit side by side on a wide screen and stack on a phone."""
    level = percent_level(card.bootstrap.confidence)
    boxes = [_headline_box(i, h, level) for i, h in enumerate(headlines(card))]
    return (
        f'<section id="results">\n<h2>{escape(tr("card.results"))}</h2>\n'
        f'<div class="headlines">{"".join(boxes)}</div>\n'
        f'<p class="meaning">{escape(tr("card.score_meaning"))}</p>\n'
        f'<p class="meaning">{escape(interval_meaning(card))}</p>\n</section>'
    )


def _headline_box(index: int, h: Headline, level: str) -> str:
    value, _, interval = h.score.partition(" ")
    dims = "".join(
        f'<tr><th scope="row">{escape(ui_cell(name))}</th><td data-key="dimension">{escape(cell)}</td></tr>'
        for name, cell in h.dimensions
    )
    return (
        f'<article class="headline" id="headline-{index}" aria-labelledby="headline-{index}-name">'
        f'<h3 id="headline-{index}-name">{escape(h.chatbot)}</h3>'
        f'<p><span class="score" data-key="score">{escape(value)}</span> '
        f'<span class="ci" data-key="score_ci">{escape(interval)}</span> {escape(tr("card.overall_ci", level=level))}</p>'
        "<dl>"
        f'<dt>{escape(tr("card.any_hph"))}</dt><dd data-key="any_hph">{escape(h.any_hph)}</dd>'
        f'<dt>{escape(tr("card.conversations"))}</dt><dd data-key="conversations">{escape(h.conversations)}</dd>'
        f'<dt>{escape(tr("card.failed"))}</dt><dd data-key="failed">{escape(h.failed)}</dd>'
        "</dl>"
        f'{scroll_box(tr("card.score_per_dimension"))}<table class="dimensions"><thead><tr>'
        f'<th scope="col">{escape(tr("col.dimension"))}</th>'
        f'<th scope="col">{escape(tr("col.score"))}</th></tr></thead><tbody>{dims}</tbody></table></div>'
        "</article>"
    )


def _fix_first(report: Improvements) -> str:
    """Per chatbot, every finding across dimensions, harm first, each with a link to its
    first example's rating (conversations beside the card; ids that are file names)."""
    parts = [f'<p class="guide">{escape(tr("card.fix_first_guide"))}</p>']
    for i, bot in enumerate(report.chatbots):
        if len(report.chatbots) > 1:
            parts.append(f"<h3>{escape(bot.chatbot)}</h3>")
        found = ranked(bot)
        if not found:
            parts.append(f"<p>{escape(tr('card.no_findings'))}</p>")
            continue
        links = []
        for d, f in found:
            e = f.exemplars[0] if f.exemplars else None
            links.append(
                conversation_href(
                    e.conversation_id, judge=e.judge, instance=e.instance, dimension=d.dimension
                )
                if e
                else ""
            )
        table = fix_first_table(bot)
        rows = []
        for row, href in zip(table.rows, links, strict=True):
            cells = [f'<th scope="row">{escape(row[0])}</th>']
            dimension, rating, conversations, share = row[1:-1]
            cells += [
                f'<td class="text">{escape(ui_cell(dimension))}</td>',
                f'<td class="text">{escape(ui_cell(rating))}</td>',
            ]
            cells += [f"<td>{escape(conversations)}</td>", f"<td>{escape(share)}</td>"]
            example = f'<a href="{escape(href)}">{escape(row[-1])}</a>' if href else escape(row[-1])
            cells.append(f'<td class="text">{example}</td>')
            rows.append(f"<tr>{''.join(cells)}</tr>")
        head = "".join(f'<th scope="col">{escape(ui_label(h))}</th>' for h in table.headers)
        parts.append(
            f'{scroll_box(tr("card.fix_first_box"))}<table id="fix-first-{i}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>"
        )
        parts.append(
            f"<details><summary>{escape(tr('card.fix_first_more', n=num(report.max_exemplars)), quote=False)}</summary>"
            + chatbot_details_html(i, bot, prefix="fix-first-")
            + "</details>"
        )
    return html_section("fix-first", tr("card.fix_first"), *parts)


def _realism(card: Card, r: Realism) -> str:
    """The simulated-user checks (`r`, the card's): counts per user-agent, and every
    flagged conversation linked to its page."""
    parts = [f"<p>{escape(realism_text(card))}</p>", html_table(realism_table(r))]
    for row in r.by_user_agent:
        if row.flagged_conversations:
            flagged = row.flagged_conversations
            parts += [
                f"<details><summary>{escape(tr('card.flagged_of', n=num(len(flagged)), user_agent=row.user_agent))}</summary>",
                html_table(
                    flagged_table(flagged),
                    wide_column=6,
                    links=[flag_href(f) for f in flagged],
                ),
                "</details>",
            ]
    return html_section("realism", tr("card.realism"), *parts)


def _contents(card: Card) -> str:
    """Links to the sections, so a reader can jump to one chatbot or the harmful ratings."""
    links = [
        ("results", tr("card.results")),
        ("details", tr("card.nav_details")),
        ("overview", tr("card.overview")),
    ]
    if not isinstance(card.sequential, msgspec.UnsetType):
        links.insert(2, ("sequential", tr("col.sequential_gate")))
    if card.fix_first is not None and card.fix_first.chatbots:  # as the section itself
        links.insert(1, ("fix-first", tr("card.fix_first")))
    if card.comparisons:
        links.append(("comparisons", tr("card.nav_comparisons")))
    links += [(f"chatbot-{i}", bot.chatbot) for i, bot in enumerate(card.chatbots)]
    if card.failures:
        links.append(("failures", tr("card.nav_failures")))
    if card.diagnostics:
        links.append(("diagnostics", tr("card.diagnostics")))
    if card.realism is not None:
        links.append(("realism", tr("card.realism")))
    links.append(("accounting", tr("card.accounting")))
    items = "".join(f'<li><a href="#{anchor}">{escape(label)}</a></li>' for anchor, label in links)
    return f'<nav aria-label="{escape(tr("card.contents"))}"><ul class="contents">{items}</ul></nav>'


def html_section(anchor: str, heading: str, *parts: str) -> str:
    return (
        f'<section id="{escape(anchor)}">\n<h2>{escape(heading)}</h2>\n' + "\n".join(parts) + "\n</section>"
    )


def offline_banner(note: str, badge: str = "Offline run:") -> str:
    # The badge says "offline run"; the note need not say it again.
    text = note.removeprefix("Offline run: ").removeprefix(badge)
    return f'<p class="offline" role="note"><strong>{escape(badge)}</strong> {escape(text[:1].upper() + text[1:])}</p>'


def _about_table(rows: Sequence[tuple[str, str]]) -> str:
    cells = "".join(f'<tr><th scope="row">{escape(phrase(k))}</th><td>{escape(v)}</td></tr>' for k, v in rows)
    return f'<table class="about"><tbody>{cells}</tbody></table>'
