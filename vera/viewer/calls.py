"""Each model call of a conversation, for its page: tokens, cost and latency.

calls.jsonl holds one CallRecord per call, keyed by job: a conversation's calls (the
user-agent's and the chatbot's) carry the conversation's id, a judgement's calls the
judgement's id. A large run has hundreds of thousands of calls, so the viewer keeps
only where each job's lines start, read the first time a page asks, and reads the few
lines of one page by place. The index grows from where it stopped, so the calls of a
run still going show up without a restart; a line not finished yet is left for later.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

import msgspec

from vera.records import CallRecord

CALLS_FILE = "calls.jsonl"
# The encoder writes a CallRecord's fields in order: the job id comes first.
_JOB = re.compile(rb'\{"job_id":"([^"\\]*)"')
_decode = msgspec.json.Decoder(CallRecord)


class CallIndex:
    """Where each job's call records start in one run's calls.jsonl."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / CALLS_FILE
        self._scanned = 0
        self._at: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    def _catch_up(self) -> None:
        try:
            f = self.path.open("rb")
        except FileNotFoundError:
            return
        with f:
            f.seek(self._scanned)
            offset = self._scanned
            for line in f:
                if not line.endswith(b"\n"):
                    break  # still being written
                m = _JOB.match(line)
                if m is not None:
                    self._at.setdefault(m.group(1).decode(), []).append(offset)
                offset += len(line)
            self._scanned = offset

    def calls(self, job_ids: Sequence[str]) -> list[CallRecord]:
        """Every call of these jobs, in the order they were made."""
        with self._lock:
            self._catch_up()
            places = sorted(o for job in job_ids for o in self._at.get(job, ()))
        out: list[CallRecord] = []
        if not places:
            return out
        with self.path.open("rb") as f:
            for offset in places:
                f.seek(offset)
                try:
                    out.append(_decode.decode(f.readline()))
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue  # not a call to show; the card's scan of calls.jsonl names it
        return sorted(out, key=lambda c: c.at)


@dataclass(frozen=True)
class Job:
    """One job of a conversation and how its calls are named on the page (empty: by
    the call's role, as for the conversation's own job)."""

    id: str
    label: str


_ROLES = {"user_agent": "user-agent", "chatbot": "chatbot", "judge": "judge"}


def _tokens(n: int) -> str:
    return f"{n:,}"


def _latency(ms: float) -> str:
    if ms < 10:  # an offline or cached call: a rounded "0 ms" would hide it
        return f"{ms:.1f} ms"
    return f"{ms:,.0f} ms" if ms < 1000 else f"{ms / 1000:,.1f} s"


def _cost(usd: float) -> str:
    return "$0" if usd == 0 else f"${usd:,.4f}"


def calls_html(jobs: Sequence[Job], index: CallIndex) -> str:
    """The page's "Model calls" section: one row per call, then the totals."""
    label = {j.id: j.label for j in jobs}
    calls = index.calls([j.id for j in jobs])
    head = '<section id="calls" class="calls"><h2>Model calls</h2>'
    if not calls:
        return (
            head
            + "<p>No call is recorded for this conversation (imported, or its calls.jsonl is gone).</p></section>"
        )
    rows = []
    for n, c in enumerate(calls, start=1):
        u = c.usage
        detail = []
        if u.cached_input_tokens:
            detail.append(f"{_tokens(u.cached_input_tokens)} cached")
        if u.reasoning_tokens:
            detail.append(f"{_tokens(u.reasoning_tokens)} reasoning")
        notes = []
        if c.cached:
            notes.append("from the response cache")
        if c.attempts > 1:
            notes.append(f"{c.attempts} attempts")
        if c.http_429:
            notes.append(f"{c.http_429}× rate-limited")
        if c.status != "ok":
            notes.append(f"failed: {c.error or 'no reason recorded'}")
        rows.append(
            f'<tr class="{"failed" if c.status != "ok" else ""}"><td>{n}</td>'
            f"<td>{escape(label.get(c.job_id) or _ROLES.get(c.role, c.role))}</td>"
            f"<td>{escape(c.provider)}/{escape(c.model)}</td>"
            f'<td class="num">{_tokens(u.input_tokens)}</td>'
            f'<td class="num">{_tokens(u.output_tokens)}</td>'
            f'<td class="num">{_cost(c.cost_usd)}</td>'
            f'<td class="num">{_latency(c.latency_ms)}</td>'
            f"<td>{escape('; '.join(detail + notes))}</td></tr>"
        )
    total_in = sum(c.usage.input_tokens for c in calls)
    total_out = sum(c.usage.output_tokens for c in calls)
    total_cost = sum(c.cost_usd for c in calls)
    total_ms = sum(c.latency_ms for c in calls)
    return (
        head + f"<p>{len(calls)} call(s), {_tokens(total_in + total_out)} tokens, {_cost(total_cost)}, "
        f"{_latency(total_ms)} waiting for models in all. Latency is each call's own, retries included.</p>"
        '<div class="scroll"><table class="ratings calls"><thead><tr>'
        '<th>#</th><th>Role</th><th>Model</th><th class="num">Input tokens</th>'
        '<th class="num">Output tokens</th><th class="num">Cost</th><th class="num">Latency</th><th>Notes</th>'
        "</tr></thead><tbody>"
        + "".join(rows)
        + f'</tbody><tfoot><tr><th colspan="3">Total</th><td class="num">{_tokens(total_in)}</td>'
        f'<td class="num">{_tokens(total_out)}</td><td class="num">{_cost(total_cost)}</td>'
        f'<td class="num">{_latency(total_ms)}</td><td></td></tr></tfoot></table></div></section>'
    )
