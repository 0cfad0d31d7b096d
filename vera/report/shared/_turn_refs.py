"""One turn numbering everywhere: the transcript numbers every turn (1 · User, 2 ·
Chatbot, ...), while a judge, which reads the transcript unnumbered, counts by speaker
("chatbot message 2", "the user's third message"). The judge's words are kept as
written (they are the record); each such reference is followed by a link to the turn
it means, in the transcript's numbering: "chatbot message 2 (turn 4)"."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from vera.records import Turn

_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
_SPEAKER = r"(?P<who>chatbot|assistant|bot|user)(?:'s)?"
_KIND = r"(?:message|reply|response|turn|answer)"
# "chatbot message 2", "user turn #3", "assistant reply no. 4"; "the chatbot's second message".
_BY_NUMBER = re.compile(rf"\b{_SPEAKER}\s+{_KIND}\s*(?:#|no\.?\s*)?(?P<n>\d{{1,3}})\b", re.IGNORECASE)
_BY_ORDINAL = re.compile(rf"\b{_SPEAKER}\s+(?P<ord>{'|'.join(_ORDINALS)})\s+{_KIND}\b", re.IGNORECASE)


def turn_number(turns: Sequence[Turn], speaker: str, k: int) -> int | None:
    """The transcript's number (1-based) of the speaker's k-th turn, or None."""
    seen = 0
    for n, t in enumerate(turns, start=1):
        if t.speaker == speaker:
            seen += 1
            if seen == k:
                return n
    return None


def _speaker(word: str) -> str:
    return "user" if word.lower() == "user" else "chatbot"


def turn_refs_html(text: str, turns: Sequence[Turn]) -> str:
    """`text` escaped, each by-speaker reference followed by a link to its turn."""
    marks: list[tuple[int, int]] = []  # (end of the reference, turn number)
    for m in _BY_NUMBER.finditer(text):
        n = turn_number(turns, _speaker(m["who"]), int(m["n"]))
        if n is not None:
            marks.append((m.end(), n))
    for m in _BY_ORDINAL.finditer(text):
        n = turn_number(turns, _speaker(m["who"]), _ORDINALS[m["ord"].lower()])
        if n is not None:
            marks.append((m.end(), n))
    out, at = [], 0
    for end, n in sorted(marks):
        out.append(escape(text[at:end]))
        out.append(f' (<a class="turn-ref" href="#turn-{n}">turn {n}</a>)')
        at = end
    out.append(escape(text[at:]))
    return "".join(out)
