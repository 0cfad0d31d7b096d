"""card.md: the card's tables and words as Markdown."""

from __future__ import annotations

import msgspec

from vera.inputs import phrase, tr, ui_cell, ui_label, use_strings
from vera.report.card._schema import Card, ChatbotCard
from vera.report.card._sequence import SEQUENCE_PLOT, sequential_table, sequential_text
from vera.report.card._tables import (
    accounting_table,
    card_reasons,
    comparison_table,
    diagnostics_table,
    dimension_table,
    failures_table,
    fix_first_table,
    flagged_table,
    harmful_table,
    headline_tables,
    overview_table,
    realism_table,
    section_tables,
    turns_table,
)
from vera.report.card._text import (
    about_rows,
    absent_columns_text,
    card_strings,
    excluded_warning,
    group_title,
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
from vera.report.improvements._report import Improvements, ranked
from vera.report.shared._realism import SHOWN_FLAGGED
from vera.report.shared._table import Table


def fix_first_markdown(report: Improvements | None, *, limit: int = 10) -> list[str]:
    """card.md's "Fix first": per chatbot, its first `limit` findings."""
    if report is None or not report.chatbots:  # none: nothing was judged, a heading alone reads as broken
        return []
    lines = [f"## {tr('card.fix_first')}", "", tr("card.fix_first_guide"), ""]
    for bot in report.chatbots:
        found = ranked(bot)
        if len(report.chatbots) > 1:
            lines += [f"### {bot.chatbot}", ""]
        if not found:
            lines += [tr("card.no_findings"), ""]
            continue
        shown = min(limit, len(found))
        lines += [*markdown_table(fix_first_table(bot, limit=limit, links=True)), ""]
        if shown < len(found):
            lines += [f"The first {shown} of {len(found)} questions; card.json and card.html have all.", ""]
    return lines


def markdown_table(t: Table) -> list[str]:
    def cell(text: str) -> str:
        # One line per row; "|" would end the cell and "<" could start HTML in a viewer.
        return " ".join(text.replace("|", "\\|").replace("<", "&lt;").split())

    lines = [f"*{cell(phrase(t.caption))}*", ""] if t.caption else []
    # Headings and row labels in the card's language (`ui_label` leaves names as they are,
    # with the pack's gloss after a dimension's or rating's).
    # A cell that holds a value from the run's data (a risk level, a rating) is shown in
    # the pack's words too (`ui_cell`); the records keep the English.
    lines += ["| " + " | ".join(cell(ui_label(h)) for h in t.headers) + " |", "|" + "---|" * len(t.headers)]
    for i, row in enumerate(t.rows):
        cells = [cell(ui_cell(c)) for c in row]
        if i in t.emphasise:
            cells[0] = f"**{cells[0]}**"
        lines.append("| " + " | ".join(cells) + " |")
    if t.note:
        # After a blank line: a line right under a table would be read as one of its rows.
        lines += ["", cell(t.note)]
    return lines


def render_markdown(card: Card, *, max_harmful: int = 10) -> str:
    """card.md: the headline first, then the whole card (every number of card.json except
    the harmful ratings beyond the first `max_harmful` per chatbot; all are in card.json
    and card.html), with the run's details last; in the words of the run's locale pack."""
    with use_strings(card_strings(card)):
        return _render_markdown(card, max_harmful=max_harmful)


def _render_markdown(card: Card, *, max_harmful: int) -> str:
    lines = [
        f"# {run_title(card)}",
        "",
        f"**{tr('card.run_status')}{tr('card.colon')}** {status_text(card)}",
        "",
    ]
    if judged := sample_text(card):
        lines += [f"**{tr('card.judged')}{tr('card.colon')}** {judged}", ""]
    if warning := status_warning(card):
        lines += [f"> **{warning}**", ""]
    if unfinished := unfinished_warning(card):
        lines += [f"> **{unfinished}**", ""]
    if card.offline:
        lines += [f"> **{offline_note(card)}**", ""]
    if excluded := excluded_warning(card):
        lines += [f"> **{excluded}**", ""]
    lines += [f"## {tr('card.results')}", "", tr("card.score_meaning"), "", interval_meaning(card), ""]
    for t in headline_tables(card):
        lines += [*markdown_table(t), ""]
    lines += [tr("card.below"), ""]
    lines += fix_first_markdown(card.fix_first)
    if card.comparisons:
        lines += [f"## {tr('card.comparisons')}", ""]
        for entry in card.comparisons:
            lines += [*markdown_table(comparison_table(entry, card_reasons(card))), ""]
    if not isinstance(card.sequential, msgspec.UnsetType):
        seq = card.sequential
        lines += [
            f"## {tr('col.sequential_gate')}",
            "",
            tr("card.seq_this_run", text=sequential_text(seq)),
            "",
        ]
        lines += [f"![{tr('card.seq_plot_alt')}](plots/{SEQUENCE_PLOT})", ""]
        lines += [*markdown_table(sequential_table(seq)), ""]
    lines += [f"## {tr('card.overview')}", "", *markdown_table(overview_table(card))]
    for bot in card.chatbots:
        lines += _markdown_chatbot(bot, max_harmful=max_harmful, title=group_title(card))
    if card.failures:
        lines += ["", f"## {tr('card.failures')}", "", *markdown_table(failures_table(card.failures))]
    if card.diagnostics:
        lines += ["", f"## {tr('card.diagnostics')}", "", *markdown_table(diagnostics_table(card))]
        lines += ["", *markdown_table(turns_table(card))]
    if card.absent_columns:
        lines += ["", absent_columns_text(card)]
    if card.realism is not None:
        lines += realism_markdown(card)
    lines += ["", f"## {tr('card.how_to_read')}", "", reading_guide(card)]
    lines += [
        "",
        f"## {tr('card.details')}",
        "",
        *(f"- **{phrase(k)}{tr('card.colon')}** {v}" for k, v in about_rows(card)),
    ]
    lines += ["", f"## {tr('card.accounting')}", "", *markdown_table(accounting_table(card))]
    lines += ["", tr("card.reasoning_note")]
    return "\n".join(lines).rstrip("\n") + "\n"


def _markdown_chatbot(bot: ChatbotCard, *, max_harmful: int, title: str) -> list[str]:
    section = bot.section()
    if section is None:
        return []
    name = bot.chatbot
    lines = ["", f"## {name}", ""]
    harmful = bot.harmful
    lines += markdown_table(dimension_table(section))
    for heading, tables in section_tables(bot, title):
        lines += ["", f"### {phrase(heading)}"]
        for t in tables:
            lines += ["", *markdown_table(t)]
    if harmful:
        shown = min(max_harmful, len(harmful))
        lines += [
            "",
            f"### {tr('card.harmful')}",
            "",
            tr("card.harmful_shown", n=len(harmful), shown=shown),
            "",
            *markdown_table(harmful_table(harmful[:shown])),
        ]
    return lines


def realism_markdown(card: Card, *, limit: int = SHOWN_FLAGGED) -> list[str]:
    """card.md's "Simulated-user checks": counts per user-agent, then the first
    `limit` flagged conversations of each, linked to their pages."""
    r = card.realism
    if r is None:
        return []
    lines = ["", f"## {tr('card.realism')}", "", realism_text(card), "", *markdown_table(realism_table(r))]
    for row in r.by_user_agent:
        if not row.flagged_conversations:
            continue
        shown = row.flagged_conversations[:limit]
        lines += ["", f"### Flagged conversations of {row.user_agent}", ""]
        lines += markdown_table(flagged_table(shown, links=True))
        if len(shown) < len(row.flagged_conversations):
            lines += [
                "",
                f"The first {len(shown)} of {len(row.flagged_conversations)}; card.json and card.html have all.",
            ]
    return lines
