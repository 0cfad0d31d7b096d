"""How vera shows a number, in one place: every table, card, report and plot label of
vera.report (and the terminal lines of vera.cli) formats its numbers with these.

Card numbers (`num`, `with_ci`) are shown as card.json stores them, with thousands
separators: card.json already holds each number rounded to the precision it is read at.
Agreement coefficients are not rounded where they are computed, so `coefficient` shows
them to three places. A missing value is "–", followed where it can be by why it is
missing (a dimension that was Not Relevant in every conversation must not read like
lost data or an escaped penalty).
"""

from __future__ import annotations

import math
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from vera.inputs import tr

# What carries a number with its interval: one of the card's score records
# (vera.report.card._schema: DimensionScore, Score, SeedScore, Difference,
# CalibratedScore), whose `<key>` and `<key>_ci` are read by name, so that formatting
# a number needs nothing of the card.
Scored: TypeAlias = object


@runtime_checkable
class _Counted(Protocol):
    """A dimension's full numbers (the card's DimensionScore): only they can say why a
    score is undefined."""

    @property
    def n_ratings(self) -> int: ...
    @property
    def n_rated(self) -> int: ...
    @property
    def n_not_relevant(self) -> int: ...


MISSING = "–"
ScoreKey = Literal["score", "pct_bp", "pct_sub", "pct_hph", "pct_conversations_any_hph", "diff"]


def format_number(x: int | float) -> str:
    """A number as card.json stores it, with thousands separators (7,931,682; 71.4;
    0.765)."""
    return format(x, ",")


def num(x: Any) -> str:
    """A card number (or a count) as a cell; None (undefined) as "–", a flag as yes/no."""
    if x is None:
        return MISSING
    if isinstance(x, bool):
        return "yes" if x else "no"
    return format_number(x)


def fixed(x: float, places: int) -> str:
    """A number to a fixed number of decimal places, for values that are not rounded
    where they are computed (durations, plot labels, interval widths)."""
    return f"{x:.{places}f}"


def share(x: float | None) -> str:
    """A percentage to one place with its sign ("12.5%"); None as "–"."""
    return MISSING if x is None else f"{fixed(x, 1)}%"


def coefficient(x: float | None) -> str:
    """An agreement coefficient or proportion to three places; undefined (None or NaN)
    as "–"."""
    return MISSING if x is None or math.isnan(x) else fixed(x, 3)


def coefficient_ci(value: float | None, lo: float | None, hi: float | None) -> str:
    """A coefficient and its interval, "0.765 [0.701, 0.820]"; undefined as "–"."""
    if value is None:
        return MISSING
    return f"{coefficient(value)} [{coefficient(lo)}, {coefficient(hi)}]"


def interval(value: float | None, lo: float | None, hi: float | None) -> str:
    """A card number and its interval, "71.4 [69.5, 73.0]"."""
    return f"{num(value)} [{num(lo)}, {num(hi)}]"


def percent_level(confidence: float) -> str:
    """An interval's confidence as a percentage: 0.95 → "95%", 0.975 → "97.5%"."""
    return f"{format_number(round(confidence * 100, 1)).removesuffix('.0')}%"


def why_missing(stats: Scored | None) -> str:
    """The dash for an undefined number, with the reason it is undefined (only a
    dimension's full numbers can say which)."""
    if stats is None:
        return tr("card.missing_why", dash=MISSING, why=tr("card.not_rated"))
    if isinstance(stats, _Counted):
        if stats.n_rated == 0 and stats.n_ratings:
            why = tr("card.all_not_relevant", n=num(stats.n_not_relevant), of=num(stats.n_ratings))
            return tr("card.missing_why", dash=MISSING, why=why)
        if stats.n_ratings == 0:
            return tr("card.missing_why", dash=MISSING, why=tr("card.no_ratings"))
    return tr("card.missing_why", dash=MISSING, why=tr("card.undefined"))


def with_ci(stats: Scored | None, key: ScoreKey) -> str:
    """A number and its interval, as "71.4 [69.5, 73.0]" (the interval is `<key>_ci`);
    an undefined number as "–" with its reason."""
    value = None if stats is None else getattr(stats, key, None)
    if stats is None or value is None:
        return why_missing(stats)
    ci = getattr(stats, f"{key}_ci")
    return interval(value, ci.lo, ci.hi)
