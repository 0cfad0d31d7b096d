"""The card and the statistics tables in a terminal, drawn by rich to fit its width.

A terminal is read, not parsed: every table wraps its cells so no line runs past the
terminal's width (at least `MIN_WIDTH` columns, whatever the terminal reports), and the
card's terminal form is the headline and the breakdowns a reader acts on, pointing to
card.md and card.html for everything else. Nothing here styles the text, so the output
is the same in a pipe, a log file and a terminal.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterable, Sequence

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from vera.report._schema import Card
from vera.report._text import (
    SCORE_MEANING,
    Table,
    card_reasons,
    comparison_table,
    dimension_table,
    failures_table,
    headline_tables,
    run_title,
    top_lines,
)

MIN_WIDTH = 80
# A column whose cells all start like this holds numbers: right-aligned.
_NUMERIC_START = tuple("0123456789-–")
# The widest a column's floor may be: a longer label wraps instead of starving the numbers.
_LABEL_CAP = 26
# Columns are separated by one blank rule position and one (collapsed) padding.
_GAP = 2
# A header word longer than this may break (the cells' words never do, while they fit).
_HEADER_WORD = 9


def terminal_width(width: int | None = None) -> int:
    """The width to draw for: the one given, else the terminal's (COLUMNS when set),
    never below `MIN_WIDTH`."""
    if width is None:
        width = shutil.get_terminal_size((MIN_WIDTH, 24)).columns
    return max(MIN_WIDTH, width)


def rich_table(t: Table, width: int | None = None) -> RichTable:
    """A card Table as a rich table: a rule under the headers, no outer border (so each
    row starts with its label), cells that wrap rather than overflow, at most `width`
    columns wide."""
    table = RichTable(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
        title=t.caption,
        title_justify="left",
        title_style=None,
        header_style=None,
        expand=False,
    )
    widths = column_widths(t, terminal_width(width))
    for i, (header, w) in enumerate(zip(t.headers, widths, strict=True)):
        numeric = i > 0 and all(row[i].startswith(_NUMERIC_START) for row in t.rows if row[i])
        table.add_column(header, justify="right" if numeric else "left", overflow="fold", width=w)
    for i, row in enumerate(t.rows):
        table.add_row(*row, style="bold" if i in t.emphasise else None)
    return table


def column_widths(t: Table, width: int) -> list[int]:
    """Column widths that fit `width`: each column as wide as its widest cell when all
    fit; else each keeps room for the longest word of its cells (so no number breaks;
    the row labels keep their whole label, up to a cap, while there is room) and the
    rest is shared in proportion to what each would need; headers wrap first."""
    cols = [[row[i] for row in t.rows] for i in range(len(t.headers))]
    natural = [max([len(h), *map(len, col)]) for h, col in zip(t.headers, cols, strict=True)]

    def longest_word(texts: list[str]) -> int:
        return max((len(w) for c in texts for w in c.split()), default=1)

    body = [max(3, longest_word(col)) for col in cols]
    header = [max(b, min(_HEADER_WORD, longest_word([h]))) for b, h in zip(body, t.headers, strict=True)]
    label = min(_LABEL_CAP, natural[0])
    room = width - _GAP * (len(cols) - 1)
    if sum(natural) <= room:
        return natural
    # The most generous floor that fits: whole row labels and unbroken header words,
    # then whole row labels, then only unbroken cells.
    for floor in ([max(label, header[0]), *header[1:]], [max(label, body[0]), *body[1:]], header, body):
        if sum(floor) <= room:
            spare, want = room - sum(floor), [n - f for n, f in zip(natural, floor, strict=True)]
            extra = [spare * w // max(1, sum(want)) for w in want]
            return [f + e for f, e in zip(floor, extra, strict=True)]
    # Too many columns for the terminal: shrink every floor alike (words will break).
    return [max(3, f * room // sum(body)) for f in body]


def render(parts: Iterable[RenderableType | str], width: int | None = None) -> str:
    """Renderables (and paragraphs) drawn at the width, separated by blank lines."""
    out = io.StringIO()
    console = Console(
        file=out,
        width=terminal_width(width),
        color_system=None,
        force_terminal=False,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
    )
    for k, part in enumerate(parts):
        if k:
            console.print()
        console.print(Text(part) if isinstance(part, str) else part, soft_wrap=False)
    # No trailing spaces: rich pads cells to their column width.
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def text_tables(tables: Sequence[Table], width: int | None = None) -> str:
    """Tables for `vera compare` and `vera agreement`, fitted to the terminal."""
    return render([rich_table(t) for t in tables], width)


def headline(card: Card, width: int | None = None) -> str:
    """What `vera run` prints at its end: the status, the offline label, the headline."""
    return render(_headline_parts(card), width)


def render_card(card: Card, width: int | None = None) -> str:
    """`vera card`: the headline, then the paired comparisons, each chatbot's dimension
    table and the failed work; the rest is in card.md and card.html."""
    parts: list[RenderableType | str] = list(_headline_parts(card))
    reasons = card_reasons(card)
    for entry in card.comparisons:
        parts.append(rich_table(comparison_table(entry, reasons)))
    for bot in card.chatbots:
        if (section := bot.section()) is not None:
            parts.append(rich_table(compact_dimension_table(dimension_table(section, caption=bot.chatbot))))
    if card.failures:
        parts.append(rich_table(failures_table(card.failures)))
    parts.append(
        "By risk level, judge and seed, every harmful rating with the judge's reasoning, and how "
        "the run was made: card.md and card.html in the run directory."
    )
    return render(parts, width)


def _headline_parts(card: Card) -> list[RenderableType | str]:
    return [
        run_title(card),
        *top_lines(card),
        SCORE_MEANING,
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
