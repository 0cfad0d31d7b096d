"""Free-text search over the runs' transcripts and the judges' reasoning.

The list's frames hold heads only; the words are in the records. The first search reads
every conversation and judgement once (by place, one at a time) into one frame of
passages — a turn, an answer's reasoning, a rating's reasoning — with a lower-cased
copy, so each later search is one vectorised substring scan: no regular expression
built from what the user typed, linear in the text, a few tens of milliseconds for
10,000 conversations. Only the page's rows are then searched again in Python for the
snippets to show, so the cost of a page does not grow with the number of hits.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import polars as pl

from vera.inputs import run_strings
from vera.report import rating_anchor, slug
from vera.store import RunRecords

MAX_QUERY = 200  # characters: a search, not a document
SNIPPETS_PER_CONVERSATION = 3
CONTEXT = 60  # characters of context each side of a hit


class _Run(Protocol):
    index: int
    records: RunRecords


def _passages(run: _Run) -> Iterable[tuple[int, str, str, str, str]]:
    """(run, conversation id, where, anchor, text) for every searchable passage of a run."""
    # Where a passage is, in the run's pack's words (the snippets' links name it).
    say = run_strings([run.records.manifest])
    who = {"user": say("page.user"), "chatbot": say("page.chatbot")}
    for conv in run.records.iter_conversations():
        for n, turn in enumerate(conv.turns, start=1):
            where = say("viewer.search_turn", n=n, who=who.get(turn.speaker, turn.speaker))
            yield run.index, conv.id, where, f"turn-{n}", turn.text
    for j in run.records.iter_judgements():
        judge = f"{j.judge} #{j.instance}"
        # The anchors the conversation page gives a walk and a rating.
        walk = f"walk-{slug(j.judge)}-{j.instance}"
        for r in j.ratings:
            if r.reasoning:
                anchor = rating_anchor(j.judge, j.instance, r.dimension)
                where = f"{judge} · {say.label(r.dimension)}"
                yield run.index, j.conversation_id, where, anchor, r.reasoning
        for a in j.answers:
            if a.reasoning:
                where = say("viewer.search_question", judge=judge, question=a.question_id)
                yield run.index, j.conversation_id, where, walk, a.reasoning


class SearchIndex:
    """Every passage of the runs, to search case-insensitively (see the module docstring)."""

    def __init__(self, runs: Sequence[_Run]) -> None:
        cols: dict[str, list[Any]] = {"run": [], "id": [], "where": [], "anchor": [], "text": []}
        for run in runs:
            for k, cid, where, anchor, text in _passages(run):
                cols["run"].append(k)
                cols["id"].append(cid)
                cols["where"].append(where)
                cols["anchor"].append(anchor)
                cols["text"].append(text)
        frame = pl.DataFrame(
            cols,
            schema={"run": pl.Int32, "id": pl.Utf8, "where": pl.Utf8, "anchor": pl.Utf8, "text": pl.Utf8},
        )
        self.passages = frame.with_columns(pl.col("text").str.to_lowercase().alias("lower"))

    def _hits(self, needle: str) -> pl.DataFrame:
        return self.passages.filter(pl.col("lower").str.contains(needle.lower(), literal=True))

    def matching(self, needle: str) -> pl.DataFrame:
        """(run, id) of every conversation with a passage containing `needle`, any case."""
        return self._hits(needle).select("run", "id").unique()

    def snippets(self, needle: str, keys: pl.DataFrame) -> dict[tuple[int, str], dict[str, Any]]:
        """For the conversations in `keys` (run, id): how many passages matched and the
        first few, each cut round its first hit as before / match / after (plain text:
        the page puts each part in with textContent and marks the match)."""
        hits = self._hits(needle).join(keys.select("run", "id"), on=["run", "id"], how="semi")
        pattern = re.compile(re.escape(needle), re.IGNORECASE)
        out: dict[tuple[int, str], dict[str, Any]] = {}
        for run, cid, where, anchor, text in hits.select("run", "id", "where", "anchor", "text").iter_rows():
            entry = out.setdefault((run, cid), {"count": 0, "snippets": []})
            entry["count"] += 1
            if len(entry["snippets"]) >= SNIPPETS_PER_CONVERSATION:
                continue
            m = pattern.search(text)
            if m is None:  # lower-casing changed the length (rare scripts): show the start
                start, end = 0, 0
            else:
                start, end = m.span()
            lo, hi = max(0, start - CONTEXT), min(len(text), end + CONTEXT)
            entry["snippets"].append(
                {
                    "where": where,
                    "anchor": anchor,
                    "before": ("…" if lo > 0 else "") + text[lo:start],
                    "match": text[start:end],
                    "after": text[end:hi] + ("…" if hi < len(text) else ""),
                }
            )
        return out


class LazySearch:
    """The index, built by the first search (most sessions never search) and kept."""

    def __init__(self, runs: Sequence[_Run]) -> None:
        self._runs = runs
        self._index: SearchIndex | None = None
        self._lock = threading.Lock()

    def get(self) -> SearchIndex:
        with self._lock:
            if self._index is None:
                self._index = SearchIndex(self._runs)
            return self._index
