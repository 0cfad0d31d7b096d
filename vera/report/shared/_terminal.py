"""Tables in a terminal, drawn by rich to fit its width (the card's terminal form is
vera.report.card._terminal).

A terminal is read, not parsed: every table wraps its cells so no line runs past the
terminal's width (at least `MIN_WIDTH` columns, whatever the terminal reports). Nothing here styles the text, so the output
is the same in a pipe, a log file and a terminal.

Widths are display cells, not characters: a Chinese, Japanese or Korean character (East
Asian Wide or Fullwidth) takes two (`cells`, by wcwidth), so a card in Chinese fits 80
columns and its columns line up. Chinese has no spaces between words: a line may break
between any two such characters (never inside one), so they are wrapped one by one
(`units`), a closing mark (，。、)) stays with the character before it and an opening
mark (（“) with the one after it.
"""

from __future__ import annotations

import io
import shutil
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import replace

import wcwidth
from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from vera.inputs import phrase, tr, ui_short, use_strings
from vera.report.shared._table import Table

MIN_WIDTH = 80
# A column whose cells all start like this holds numbers: right-aligned.
_NUMERIC_START = tuple("0123456789-–")
# The widest a column's floor may be: a longer label wraps instead of starving the numbers.
_LABEL_CAP = 26
# Columns are separated by one blank rule position and one (collapsed) padding.
_GAP = 2


# Marks that close a phrase: never the first thing on a line.
_CLOSING = "，。、；：！？）」』》〉】”’,.;:!?)]"
# Marks that open one: never the last thing on a line (they go with what follows).
_OPENING = "（「『《〈【“‘(["


def cells(text: str) -> int:
    """The width of `text` in terminal cells (a wide character counts two)."""
    n = wcwidth.wcswidth(text)
    return n if n >= 0 else len(text)  # a control character: count it as one


def _wide(ch: str) -> bool:
    return wcwidth.wcwidth(ch) == 2


def units(text: str) -> list[str]:
    """The pieces of `text` no line break may split: each word between spaces, except
    that a wide character is a piece of its own (with any opening mark before it and any
    closing mark after it)."""
    out: list[str] = []
    for word in text.split():
        if not any(_wide(ch) for ch in word):
            out.append(word)
            continue
        piece = ""
        for ch in word:
            if piece and (ch in _CLOSING or all(c in _OPENING for c in piece)):
                piece += ch
            elif _wide(ch):
                if piece:
                    out.append(piece)
                piece = ch
            elif piece and _wide_edge(piece.lstrip(_OPENING)):
                out.append(piece)
                piece = ch
            else:
                piece += ch
        if piece:
            out.append(piece)
    return out


def _wide_edge(piece: str) -> bool:
    """Whether `piece` (its opening marks left out) starts or ends with a wide character:
    then a narrow one after it starts a piece of its own."""
    return bool(piece) and (_wide(piece[0]) or _wide(piece[-1]))


def wrap(line: str, width: int, indent: str = "") -> str:
    """`line` wrapped at `width` cells, continuation lines starting with `indent`: at
    spaces, as textwrap does (exactly textwrap for a line without wide characters), and
    between wide characters; a piece wider than the line stays whole on its own line."""
    if not any(_wide(ch) for ch in line):
        return (
            textwrap.fill(
                line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
            )
            or line
        )
    lines: list[str] = []
    current, used = "", 0
    for word in line.split():
        pieces = units(word)
        for k, piece in enumerate(pieces):
            # A space separates words; none goes between the pieces of one word.
            gap = 1 if current and k == 0 else 0
            w = cells(piece)
            if current and used + gap + w > width:
                lines.append(current)
                current, used = indent + piece, cells(indent) + w
            else:
                current += " " * gap + piece
                used += gap + w
    if current:
        lines.append(current)
    return "\n".join(lines)


def terminal_width(width: int | None = None) -> int:
    """The width to draw for: the one given, else the terminal's (COLUMNS when set),
    never below `MIN_WIDTH`."""
    if width is None:
        width = shutil.get_terminal_size((MIN_WIDTH, 24)).columns
    return max(MIN_WIDTH, width)


def rich_table(t: Table, width: int | None = None) -> RenderableType:
    """A card Table for a terminal of `width` columns: a rule under the headers, no outer
    border (so each row starts with its label), cells that wrap at spaces. No word or
    number is ever broken: when the columns cannot all fit with their longest word whole,
    the table is drawn as several narrower tables, each repeating the row labels.
    Headings and row labels are in the active strings' language, or the table's own."""
    if t.words is not None:
        with use_strings(t.words):
            return rich_table(replace(t, words=None), width)
    note = t.note
    t = Table(
        [ui_short(h) for h in t.headers],
        # Every cell, as a value from the run's data (a risk level, a rating) may be one
        # the pack translates; a number or a name is left as it is.
        [[ui_short(c) for c in row] for row in t.rows],
        caption=phrase(t.caption) if t.caption else t.caption,
        emphasise=set(t.emphasise),
    )
    room = terminal_width(width)
    groups = column_groups(t, room)
    if len(groups) == 1:
        drawn = _draw(t, column_widths(t, room), room)
        # The footnote under the table, as in card.md and card.html.
        return Group(drawn, _paragraph(note, room)) if note else drawn
    parts: list[RenderableType] = []
    for k, cols in enumerate(groups):
        part = Table(
            [t.headers[i] for i in cols],
            [[row[i] for i in cols] for row in t.rows],
            caption=(t.caption if k == 0 else tr("card.continued", caption=t.caption or t.headers[0])),
            emphasise=set(t.emphasise),
        )
        if k:
            parts.append(Text(""))
        parts.append(_draw(part, column_widths(part, room), room))
    if note:
        parts.append(_paragraph(note, room))
    return Group(*parts)


def _draw(t: Table, widths: list[int], room: int) -> RichTable:
    table = RichTable(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
        title=_paragraph(t.caption, room) if t.caption else None,
        title_justify="left",
        title_style=None,
        header_style=None,
        expand=False,
    )
    for i, (header, w) in enumerate(zip(t.headers, widths, strict=True)):
        numeric = i > 0 and all(row[i].startswith(_NUMERIC_START) for row in t.rows if row[i])
        # "fold" only matters for a single word wider than the whole terminal (a long path).
        table.add_column(header, justify="right" if numeric else "left", overflow="fold", width=w)
    for i, row in enumerate(t.rows):
        table.add_row(*row, style="bold" if i in t.emphasise else None)
    return table


def _paragraph(text: str, room: int) -> Text:
    """Prose (a caption, a legend) wrapped at spaces to the terminal, line by line; a word
    wider than the terminal (a long path) stays whole on a line of its own, so it can
    still be copied, where rich would fold it in two."""
    lines = [wrap(line, room) for line in text.splitlines()]
    return Text("\n".join(lines), overflow="ignore")


def _longest_word(texts: Iterable[str]) -> int:
    return max((cells(w) for c in texts for w in units(c)), default=1)


def _floors(t: Table) -> list[int]:
    """Per column, the narrowest width that breaks no word of its header or cells (a
    short Chinese heading, up to `_SHORT_HEADING` cells, kept whole: 对话, not 对/话)."""
    return [
        max(
            3,
            _longest_word([h, *(row[i] for row in t.rows)]),
            _short_heading(h),
            _wide_floor([h, *(row[i] for row in t.rows)]),
        )
        for i, h in enumerate(t.headers)
    ]


_SHORT_HEADING = 8
# The narrowest a column holding Chinese (Japanese, Korean) text may be, in cells: such
# text may break between any two characters, so without a floor of its own a squeezed
# column shows one character a line (是/有/差/异). Six characters a line reads as words;
# a shorter text keeps its own width.
_WIDE_FLOOR = 12


def _wide_floor(texts: Iterable[str]) -> int:
    return max((min(cells(x), _WIDE_FLOOR) for x in texts if any(_wide(ch) for ch in x)), default=0)


def _short_heading(h: str) -> int:
    w = cells(h)
    return w if w != len(h) and w <= _SHORT_HEADING and " " not in h else 0


def column_groups(t: Table, width: int) -> list[list[int]]:
    """The table's columns in groups that each fit `width` with the row-label column
    first and no word broken: one group when the whole table fits."""
    floors = _floors(t)
    room = width - _GAP * (len(floors) - 1)
    if sum(floors) <= room or len(floors) <= 2:
        return [list(range(len(floors)))]
    groups: list[list[int]] = []
    current = [0]
    used = floors[0]
    for i in range(1, len(floors)):
        if len(current) > 1 and used + _GAP + floors[i] > width:
            groups.append(current)
            current, used = [0], floors[0]
        current.append(i)
        used += _GAP + floors[i]
    groups.append(current)
    return groups


def column_widths(t: Table, width: int) -> list[int]:
    """Column widths that fit `width`: each column as wide as its widest cell when all
    fit; else each keeps room for the longest word of its header and cells (so no word
    or number breaks) and the rest is shared in proportion to what each would need.
    A table whose floors do not fit is split first (`column_groups`)."""
    cols = [[row[i] for row in t.rows] for i in range(len(t.headers))]
    natural = [max([cells(h), *map(cells, col)]) for h, col in zip(t.headers, cols, strict=True)]
    room = width - _GAP * (len(cols) - 1)
    if sum(natural) <= room:
        return natural
    floor = _floors(t)
    # The row labels keep their whole label, up to a cap, while there is room.
    label = max(floor[0], min(_LABEL_CAP, natural[0]))
    if label + sum(floor[1:]) <= room:
        floor = [label, *floor[1:]]
    if sum(floor) > room:
        # Only a single word wider than the terminal gets here (a path, say): it folds.
        return [max(3, f * room // sum(floor)) for f in floor]
    spare, want = room - sum(floor), [n - f for n, f in zip(natural, floor, strict=True)]
    extra = [spare * w // max(1, sum(want)) for w in want]
    return [f + e for f, e in zip(floor, extra, strict=True)]


def fit(text: str, width: int | None = None, *, terminal: bool | None = None) -> str:
    """A status or summary line wrapped at spaces to the terminal's width, continuation
    lines indented; a word (a path) longer than the width stays whole. Only for a
    terminal (standard output a TTY, unless `terminal` says): in a pipe or a log the
    line stays whole, because scripts read vera's last line as the run's status."""
    if terminal is None:
        terminal = sys.stdout.isatty()
    if not terminal:
        return text
    room = terminal_width(width)
    return "\n".join(wrap(line, room, "  ") for line in text.splitlines())


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
        # Everything is already fitted to the width; soft_wrap keeps rich from folding or
        # cropping the one thing that cannot fit, a word wider than the terminal.
        console.print(_paragraph(part, console.width) if isinstance(part, str) else part, soft_wrap=True)
    # No trailing spaces: rich pads cells to their column width.
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def text_tables(tables: Sequence[Table], width: int | None = None) -> str:
    """Tables for `vera compare` and `vera agreement`, fitted to the terminal."""
    return render([rich_table(t) for t in tables], width)
