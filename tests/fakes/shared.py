"""Pieces every fake server shares, the benchmark's standalone one included.

Stdlib only: `benchmarks/fake_server.py` imports this module in a bare subprocess, and
the test fakes import it too, so both answer 429 at the same point and a judge question
gets the same option from either.
"""

from __future__ import annotations

import asyncio
import re
import sys
import zlib
from collections.abc import Coroutine
from typing import Any


class RateBucket:
    """Requests per minute as a continuously refilled bucket of `burst_s` seconds' worth.

    `take(now)` spends one request and returns None, or returns the seconds until one is
    available (what the server puts in Retry-After)."""

    __slots__ = ("_last", "capacity", "level", "rate")

    def __init__(self, rpm: float, burst_s: float = 2.0) -> None:
        self.rate = rpm / 60
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = self.capacity
        self._last: float | None = None

    def take(self, now: float) -> float | None:
        if self._last is not None:
            self.level = min(self.capacity, self.level + (now - self._last) * self.rate)
        self._last = now
        if self.level >= 1:
            self.level -= 1
            return None
        return (1 - self.level) / self.rate


_OPTIONS = re.compile(r"^Options:\s*(.+?)\s*$", re.MULTILINE)


def rubric_answer(messages: list[dict[str, Any]]) -> dict[str, str]:
    """A judge's structured answer to the question in the last user message.

    The choice among the listed options is a checksum of the whole request, so it is the
    same on every run, differs between conversations, and any option can come up."""
    question = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    text = question.get("content") if question else None
    found = _OPTIONS.search(text) if isinstance(text, str) else None
    if found is None:
        return {"reasoning": "No options were listed; answering Yes.", "answer": "Yes"}
    options = [o.strip() for o in found.group(1).split("|") if o.strip()]
    checksum = 0
    for m in messages:
        if isinstance(m.get("content"), str):
            checksum = zlib.crc32(m["content"].encode(), checksum)
    choice = options[checksum % len(options)]
    return {"reasoning": f"A deterministic fake judge chose {choice!r}.", "answer": choice}


def serve_until_interrupted(main: Coroutine[Any, Any, None]) -> None:
    """Run a server's coroutine on uvloop where it exists (as vera itself runs) until
    Ctrl-C or SIGTERM's KeyboardInterrupt, then exit quietly with 0."""
    try:
        import uvloop

        run: Any = uvloop.run
    except ImportError:  # not on Windows
        run = asyncio.run
    try:
        run(main)
    except KeyboardInterrupt:
        sys.exit(0)
