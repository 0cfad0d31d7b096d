"""Texts written once: each text as copies of pieces of the texts before it and the new
text between them. The bundle keeps a conversation's call bodies this way (static/bodies.js
reads them back), because each call's request holds the whole conversation so far: written
out in full, a conversation's bodies grow with the square of its turns (a 164 MB run gave
a 1.92 GB bundle); as copies, with the new text of each call only.

One text is a list of ops: a string is written as it is; three whole numbers `k, start,
length` copy `length` characters of text `k` from `start`: an earlier text, or (k being
its own number) the text's own part already written. Places and
lengths count UTF-16 code units, as a JavaScript string does, so the page slices them as
they are; no op splits a character outside the Basic Multilingual Plane, so each string
op is a whole string of characters.

How copies are found (the rsync way, on characters): every text's blocks of BLOCK
characters at BLOCK-aligned places are indexed, a later place taking the block over from an
earlier one; a new text is scanned at every place, and a block found there is extended
both ways as far as the two texts agree. The latest place wins because a call's request
is mostly the previous call's: one copy of it, not one per turn. The text's own blocks
are looked up too (the longer match taken): a call shows each message twice, in the
request's JSON and as text.
"""

from __future__ import annotations

import re

BLOCK = 32
# A shorter match is written as text: three numbers and their commas cost about as much.
MIN_COPY = 12
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")

Op = str | int


def _units(text: str) -> str:
    """`text` with each character outside the BMP as its two surrogates, so that places
    in it count UTF-16 code units (a JavaScript string's)."""
    if text.isascii() or _ASTRAL.search(text) is None:
        return text
    return _ASTRAL.sub(lambda m: _pair(m.group()), text)


def _pair(char: str) -> str:
    code = ord(char) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def _text(units: str) -> str:
    """Code units back to characters (each surrogate pair to its character)."""
    if units.isascii():
        return units
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le")


def _low(units: str, at: int) -> bool:
    """Whether the unit at `at` is the second half of a surrogate pair (a place no op
    may start or end at)."""
    return 0 < at < len(units) and "\udc00" <= units[at] <= "\udfff"


def _agree(a: str, i: int, b: str, j: int) -> int:
    """How many units a[i:] and b[j:] have in common from their start."""
    n = min(len(a) - i, len(b) - j)
    done = 0
    step = 256
    while done < n:
        k = min(step, n - done)
        if a[i + done : i + done + k] == b[j + done : j + done + k]:
            done += k
            step *= 2
            continue
        lo, hi = 0, k  # a[.. lo] agrees, a[.. hi] does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if a[i + done : i + done + mid] == b[j + done : j + done + mid]:
                lo = mid
            else:
                hi = mid
        return done + lo
    return done


class SharedText:
    """The texts of one page, each written as ops (see the module's docstring)."""

    def __init__(self, base: SharedText | None = None) -> None:
        """`base`: texts (another page's) that these may copy from too, numbered before
        them: text k is base's for k < `first`, else encoded[k - first]."""
        self._texts: list[str] = list(base._texts) if base is not None else []  # in code units
        self._index: dict[str, tuple[int, int]] = dict(base._index) if base is not None else {}
        self.first = len(self._texts)
        self.encoded: list[list[Op]] = []

    def add(self, text: str) -> int:
        """Write `text` as ops after the texts before it (base's too); its number."""
        units = _units(text)
        ops = self._ops(units)
        number = len(self._texts)
        self._texts.append(units)
        self.encoded.append(ops)
        index = self._index
        for at in range(0, len(units) - BLOCK + 1, BLOCK):
            index[units[at : at + BLOCK]] = (number, at)
        return number

    def _ops(self, units: str) -> list[Op]:
        ops: list[Op] = []
        n = len(units)
        number = len(self._texts)
        own: dict[str, int] = {}  # this text's own blocks, those wholly before the scan
        owned = 0  # the next of them to index
        pending = 0  # where the text not yet written starts
        i = 0
        while i + BLOCK <= n:
            while owned + BLOCK <= i:
                own[units[owned : owned + BLOCK]] = owned
                owned += BLOCK
            block = units[i : i + BLOCK]
            best: tuple[int, int, int, int] | None = None  # length, start, text, place
            earlier = self._index.get(block)
            if earlier is not None:
                best = self._match(units, i, pending, self._texts[earlier[0]], earlier[0], earlier[1])
            if (j := own.get(block)) is not None:
                # The text's own earlier part (a message in the request's JSON, then as
                # the page shows it): a copy that ends before it starts.
                mine = self._match(units, i, pending, units, number, j, limit=i - j)
                if best is None or mine[0] > best[0]:
                    best = mine
            if best is None or best[0] < MIN_COPY:
                i += 1
                continue
            length, start, k, at = best
            if start > pending:
                ops.append(_text(units[pending:start]))
            ops += [k, at, length]
            i = pending = start + length
        if pending < n:
            ops.append(_text(units[pending:]))
        return ops

    @staticmethod
    def _match(
        units: str, i: int, pending: int, source: str, k: int, j: int, limit: int | None = None
    ) -> tuple[int, int, int, int]:
        """The copy of source[j:] found at units[i:], made as long as the two agree (back
        to `pending` at most, `limit` units long at most): its length, its start in
        `units`, and text `k`'s place it copies from."""
        back = 0
        while back < i - pending and back < j and units[i - back - 1] == source[j - back - 1]:
            back += 1
        start, at = i - back, j - back
        length = back + BLOCK + _agree(units, i + BLOCK, source, j + BLOCK)
        if limit is not None:
            length = min(length, limit)
        if _low(units, start):  # never half a character: the copy starts after it
            start, at, length = start + 1, at + 1, length - 1
        if _low(units, start + length):
            length -= 1
        return length, start, k, at
