"""Which turn of a conversation a judge's reasoning quotes.

A judge that explains a harmful rating usually quotes the chatbot (or the user) in
double quotes. Each quoted passage is looked up in the turns, loosely: case, runs of
white space, typographic quotes and apostrophes are ignored, a passage cut short with an
ellipsis ("I hear you..." or "first part … last part") matches a turn holding every
piece, and very short passages ("ok") are not looked up at all, since they would match
anywhere. Single straight quotes are not read as quotation marks: in English prose they
are mostly apostrophes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from vera.records import Turn

# "…" and “…” (and «…»), at most 2,000 characters, never across another quotation mark.
_QUOTED = re.compile(r'"([^"]{1,2000})"|“([^”“]{1,2000})”|«([^»«]{1,2000})»|‘([^’‘]{1,2000})’')
_ELLIPSIS = re.compile(r"\.{3,}|…|\[\s*\.\.\.\s*\]")
_FOLD = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "“": '"', "”": '"', "\u00a0": " "})
_EDGE = " \t\n.,;:!?'\"()[]-–—"
# A piece shorter than this is too common to say which turn was meant.
MIN_PIECE = 4


class QuoteMatch(msgspec.Struct, frozen=True):
    """A passage quoted in a reasoning and the turns (0-based) that contain it."""

    quote: str
    turns: tuple[int, ...]


def quoted_passages(reasoning: str) -> list[str]:
    """The passages a reasoning puts in quotation marks, long enough to look up."""
    out: list[str] = []
    for m in _QUOTED.finditer(reasoning):
        passage = next(g for g in m.groups() if g is not None).strip()
        if _pieces(passage) and passage not in out:
            out.append(passage)
    return out


class QuoteFinder:
    """Looks up quoted passages in one conversation's turns (folded once, asked often)."""

    __slots__ = ("_folded",)

    def __init__(self, turns: Sequence[Turn]) -> None:
        self._folded = [_fold(t.text) for t in turns]

    def locate(self, reasoning: str) -> list[QuoteMatch]:
        """Every quoted passage of `reasoning` with the turns it was found in (maybe none)."""
        matches = []
        for passage in quoted_passages(reasoning):
            pieces = _pieces(passage)
            hits = tuple(i for i, text in enumerate(self._folded) if _contains_in_order(text, pieces))
            matches.append(QuoteMatch(passage, hits))
        return matches


def locate_quotes(reasoning: str, turns: Sequence[Turn]) -> list[QuoteMatch]:
    """Every quoted passage of `reasoning` with the turns it was found in (possibly none)."""
    return QuoteFinder(turns).locate(reasoning)


def _fold(text: str) -> str:
    return " ".join(text.translate(_FOLD).casefold().split())


def _pieces(passage: str) -> list[str]:
    """The parts of a passage between ellipses, folded and trimmed; [] if all too short."""
    pieces = [_fold(p).strip(_EDGE) for p in _ELLIPSIS.split(passage)]
    pieces = [p for p in pieces if p]
    if not pieces or max(len(p) for p in pieces) < MIN_PIECE:
        return []
    return pieces


def _contains_in_order(text: str, pieces: Sequence[str]) -> bool:
    at = 0
    for piece in pieces:
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True
