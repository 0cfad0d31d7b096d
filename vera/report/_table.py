"""The one shape every table of vera.report is built in: display strings, rendered as
Markdown (`vera.report._markdown`), HTML (`vera.report._html`) or a terminal table
(`vera.report._terminal`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Table:
    """A table of display strings; the first column labels the rows."""

    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    caption: str | None = None
    emphasise: set[int] = field(default_factory=set)  # rows to show in bold (Overall)


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
