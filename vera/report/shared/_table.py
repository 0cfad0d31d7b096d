"""The one shape every table of vera.report is built in: display strings, rendered as
Markdown (`vera.report.card._markdown`), HTML (`vera.report.card._html`) or a terminal table
(`vera.report.shared._terminal`).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from vera.inputs import Strings, tr


@dataclass
class Table:
    """A table of display strings; the first column labels the rows."""

    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    caption: str | None = None
    emphasise: set[int] = field(default_factory=set)  # rows to show in bold (Overall)
    # A footnote under the table: what its headers leave out to stay plain (how the
    # intervals of a column were computed), in card.md, card.html and the terminal.
    note: str | None = None
    # The language the terminal draws it in ("(continued)", headings it translates), when
    # not the one active where it is drawn: a table built in a run's pack's words and
    # printed by a command that sets none (`vera agreement --users`).
    words: Strings | None = None


def agreement_headers(who: str) -> list[str]:
    """The columns of an agreement table (judges on the card, human raters in `vera
    agreement`): `who` names the last, the count of raters."""
    return [
        "Dimension",
        "Krippendorff's alpha",
        "Gwet's AC1",
        "Percent agreement",
        "Mean Cohen's kappa",
        "Unanimous",
        "Items",
        "Ratings",
        who,
    ]


def scroll_box(label: str) -> str:
    """The opening tag of the box a wide table scrolls in, never the page: a labelled
    region (keyboard users can scroll it) that says it scrolls (the card's stylesheet
    adds a visible hint on a phone)."""
    name = tr("card.scroll_label", label=label)
    return f'<div class="scroll" role="region" tabindex="0" aria-label="{html.escape(name)}">'
