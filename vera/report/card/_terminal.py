"""The card in a terminal: the headline and the breakdowns a reader acts on, pointing to
card.md and card.html for everything else (drawn with vera.report.shared._terminal)."""

from __future__ import annotations

import msgspec
from rich.console import RenderableType

from vera.errors import UserError
from vera.inputs import tr, use_strings
from vera.report.card._schema import Card
from vera.report.card._sequence import sequential_text
from vera.report.card._tables import (
    calibrated_table,
    card_reasons,
    comparison_table,
    diagnostics_table,
    dimension_table,
    failures_table,
    group_score_table,
    headline_tables,
    realism_table,
)
from vera.report.card._text import (
    absent_columns_text,
    card_strings,
    interval_meaning,
    realism_text,
    run_title,
    top_lines,
)
from vera.report.shared._table import Table
from vera.report.shared._terminal import render, rich_table


def headline(card: Card, width: int | None = None) -> str:
    """What `vera run` prints at its end: the status, the offline label, the headline."""
    with use_strings(card_strings(card)):
        return render(_headline_parts(card), width)


def render_card(card: Card, width: int | None = None) -> str:
    """`vera card`: the headline, then the paired comparisons, each chatbot's dimension
    table and the failed work; the rest is in card.md and card.html. In the words of
    the run's locale pack."""
    with use_strings(card_strings(card)):
        return _render_card(card, width)


def _render_card(card: Card, width: int | None) -> str:
    parts: list[RenderableType | str] = list(_headline_parts(card))
    if not isinstance(card.sequential, msgspec.UnsetType):
        parts.append(tr("card.seq_this_run", text=sequential_text(card.sequential)))
    reasons = card_reasons(card)
    for entry in card.comparisons:
        parts.append(rich_table(comparison_table(entry, reasons)))
    for bot in card.chatbots:
        if (section := bot.section()) is not None:
            parts.append(rich_table(compact_dimension_table(dimension_table(section, caption=bot.chatbot))))
            if bot.calibrated is not None:
                # The judge's error, when humans rated some conversations: beside, not instead.
                calibrated = calibrated_table(bot, bot.calibrated)
                calibrated.caption = tr(
                    "card.calibrated_terminal", chatbot=bot.chatbot, caption=calibrated.caption
                )
                parts.append(rich_table(calibrated))
    if card.failures:
        parts.append(rich_table(failures_table(card.failures)))
    if card.diagnostics:
        parts.append(rich_table(diagnostics_table(card)))
    if card.absent_columns:
        parts.append(absent_columns_text(card))
    if card.realism is not None:
        parts.append(rich_table(realism_table(card.realism)))
        parts.append(realism_text(card))
    parts.append(tr("card.terminal_more"))
    return render(parts, width)


def _headline_parts(card: Card) -> list[RenderableType | str]:
    return [
        run_title(card),
        *top_lines(card),
        tr("card.score_meaning"),
        interval_meaning(card),
        *(rich_table(t) for t in headline_tables(card, short=True)),
    ]


def compact_dimension_table(t: Table) -> Table:
    """The dimension table with only the columns a terminal reader needs."""
    keep = [0, 1, 2, 3, 4, 6]
    return Table(
        [t.headers[i] for i in keep],
        [[row[i] for i in keep] for row in t.rows],
        caption=t.caption,
        emphasise=set(t.emphasise),
    )


def by_column_text(card: Card, column: str, width: int | None = None) -> str:
    """`vera card --by COLUMN`: each chatbot's overall score by a persona column (or
    "user-agent") from card.json; a column the card was not scored by is one line
    saying how to score it."""
    if column.lower() in ("user-agent", "user_agent"):
        tables = [
            group_score_table(bot.by_user_agent, "User-agent", caption=bot.chatbot)
            for bot in card.chatbots
            if bot.by_user_agent
        ]
    elif column in card.absent_columns:
        return render([absent_columns_text(card)], width)
    elif column not in card.by_columns:
        raise UserError(
            f"card.json has no breakdown by {column!r} (it has: "
            f"{', '.join(['user-agent', *(c for c in card.by_columns if c not in card.absent_columns)])}); score it with `vera score RUN_DIR --by {column!r}`"
        )
    else:
        tables = [
            group_score_table(groups, column, caption=bot.chatbot)
            for bot in card.chatbots
            if (groups := (bot.by_persona or {}).get(column))
        ]
    return render([rich_table(t) for t in tables], width)
