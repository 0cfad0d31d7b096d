"""Each model call of a conversation, for its page: tokens, cost and latency, and what
each was sent and answered (the run's call bodies).

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
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

import msgspec

from vera.errors import DataError
from vera.files import RecordRef
from vera.inputs import mask_url, tr
from vera.records import CallBody, CallRecord
from vera.report import exported_call
from vera.store import Gap, conversation_calls_with_bodies, has_bodies

CALLS_FILE = "calls.jsonl"
# The encoder writes a CallRecord's fields in order: the job id comes first.
_JOB = re.compile(rb'\{"job_id":"([^"\\]*)"')
_decode = msgspec.json.Decoder(CallRecord)


class CallIndex:
    """Where each job's call records start in one run's calls.jsonl."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / CALLS_FILE
        self._scanned = 0
        self._lines = 0
        # Each job's calls as (byte offset, line number): the number names a line that
        # does not decode, as every other reader of a record file does.
        self._at: dict[str, list[tuple[int, int]]] = {}
        self._lock = threading.Lock()

    def _catch_up(self) -> None:
        try:
            f = self.path.open("rb")
        except FileNotFoundError:
            return
        except OSError as exc:
            # One line naming the file (the bundle would otherwise take it for a folder
            # it cannot write), in the words every reader of a run's records uses.
            raise DataError(str(self.path), f"cannot read: {exc.strerror or exc}") from None
        with f:
            f.seek(self._scanned)
            offset = self._scanned
            for line in f:
                if not line.endswith(b"\n"):
                    break  # still being written
                self._lines += 1
                m = _JOB.match(line)
                if m is not None:
                    self._at.setdefault(m.group(1).decode(), []).append((offset, self._lines))
                offset += len(line)
            self._scanned = offset

    def calls(self, job_ids: Sequence[str]) -> list[CallRecord]:
        """Every call of these jobs, in the order they were made."""
        return self.calls_and_damage(job_ids)[0]

    def calls_and_damage(self, job_ids: Sequence[str]) -> tuple[list[CallRecord], list[int]]:
        """Every call of these jobs, in the order they were made, and the numbers of
        their lines in calls.jsonl that do not decode (named on the page, not skipped in
        silence)."""
        lines, corrupt = self.lines_and_damage(job_ids)
        return sorted((call for _, call in lines), key=lambda c: c.at), corrupt

    def lines_and_damage(
        self, job_ids: Sequence[str]
    ) -> tuple[list[tuple[RecordRef, CallRecord]], list[int]]:
        """Every call of these jobs with its line's place (offset, length without the
        newline), in file order (what the bodies are paired by), and the numbers of
        their lines that do not decode."""
        with self._lock:
            self._catch_up()
            places = sorted(p for job in job_ids for p in self._at.get(job, ()))
        out: list[tuple[RecordRef, CallRecord]] = []
        corrupt: list[int] = []
        if not places:
            return out, corrupt
        with self.path.open("rb") as f:
            for offset, number in places:
                f.seek(offset)
                line = f.readline().rstrip(b"\r\n")
                try:
                    out.append((RecordRef(offset, len(line)), _decode.decode(line)))
                except (msgspec.DecodeError, msgspec.ValidationError):
                    corrupt.append(number)
        return out, corrupt


def corrupt_html(path: Path, numbers: Sequence[int]) -> str:
    """A warning naming each line of this conversation's calls that is not a record."""
    if not numbers:
        return ""
    lines = ", ".join(str(n) for n in numbers)
    warning = tr("page.calls_damaged", path=str(path), lines=lines)
    return f'<p class="warning" role="alert">{escape(warning, quote=False)}</p>'


@dataclass(frozen=True)
class Job:
    """One job of a conversation and how its calls are named on the page (empty: by
    the call's role, as for the conversation's own job)."""

    id: str
    label: str


# A call's role and a message's role by their display names (keys of vera.inputs._ui).
_ROLES = {"user_agent": "page.calls_user_agent", "chatbot": "page.calls_chatbot"}
_MESSAGE_ROLES = {
    "system": "page.calls_role_system",
    "user": "page.calls_role_user",
    "assistant": "page.calls_role_assistant",
}


def role_name(role: str) -> str:
    """A call's role as the page names it (a role vera does not know, as it is)."""
    return tr(_ROLES[role]) if role in _ROLES else role


def judge_label(judge: str, instance: int) -> str:
    """How a judgement's calls are named on the page."""
    return tr("page.calls_judge", judge=judge, instance=instance)


def _w(key: str) -> str:
    """A fixed label of the section in the run's pack's words, as HTML (quotes left as
    they are, so an English page keeps its bytes)."""
    return escape(tr(key), quote=False)


def _tokens(n: int) -> str:
    return f"{n:,}"


def _latency(ms: float) -> str:
    if ms < 10:  # an offline or cached call: a rounded "0 ms" would hide it
        return tr("page.calls_ms", n=f"{ms:.1f}")
    return tr("page.calls_ms", n=f"{ms:,.0f}") if ms < 1000 else tr("page.calls_s", n=f"{ms / 1000:,.1f}")


def _cost(usd: float) -> str:
    return "$0" if usd == 0 else f"${usd:,.4f}"


def calls_html(
    jobs: Sequence[Job],
    calls: Sequence[CallRecord],
    *,
    linked: Collection[tuple[str, float]] = (),
    ahead: Mapping[tuple[str, float], str] | None = None,
) -> str:
    """The page's "Model calls" section: one row per call, then the totals; a call in
    `linked` ((job id, time) of the calls whose body is on the page) links to its body,
    the others (a merged shard that kept none) are plain numbers, not dead links. A call
    in `ahead` (→ its question) was a judge question asked ahead that the walk did not
    reach: its row says so, else a reader counts more judge calls than questions."""
    ahead = ahead or {}
    label = {j.id: j.label for j in jobs}
    head = f'<section id="calls" class="calls"><h2>{_w("page.calls")}</h2>'
    if not calls:
        return head + f"<p>{_w('page.calls_none')}</p></section>"
    rows = []
    for n, c in enumerate(calls, start=1):
        u = c.usage
        detail = []
        if u.cached_input_tokens:
            detail.append(tr("page.calls_cached", n=_tokens(u.cached_input_tokens)))
        if u.reasoning_tokens:
            detail.append(tr("page.calls_reasoning", n=_tokens(u.reasoning_tokens)))
        notes = []
        if c.cached:
            notes.append(tr("page.calls_from_cache"))
        if c.attempts > 1:
            notes.append(tr("page.calls_attempts", n=c.attempts))
        if c.http_429:
            notes.append(tr("page.calls_rate_limited", n=c.http_429))
        if c.status != "ok":
            notes.append(tr("page.calls_failed", error=c.error or tr("page.calls_no_reason")))
        if c.uncertain_usd:  # sent, and perhaps billed: "$0" alone would say it was free
            notes.append(tr("page.calls_uncertain", cost=_cost(c.uncertain_usd)))
        if c.unbounded_attempts:  # nor could a worst case be said
            notes.append(tr("page.calls_unbounded"))
        if (question := ahead.get((c.job_id, c.at))) is not None:
            notes.append(tr("page.calls_ahead", question=question))
        number = f'<a href="#call-{n}">{n}</a>' if (c.job_id, c.at) in linked else str(n)
        rows.append(
            f'<tr class="{"failed" if c.status != "ok" else ""}"><td>{number}</td>'
            f"<td>{escape(label.get(c.job_id) or role_name(c.role))}</td>"
            f"<td>{escape(c.provider)}/{escape(c.model)}</td>"
            f'<td class="num">{_tokens(u.input_tokens)}</td>'
            f'<td class="num">{_tokens(u.output_tokens)}</td>'
            f'<td class="num">{_cost(c.cost_usd)}</td>'
            f'<td class="num">{_latency(c.latency_ms)}</td>'
            f"<td>{escape(tr('page.calls_sep').join(detail + notes))}</td></tr>"
        )
    total_in = sum(c.usage.input_tokens for c in calls)
    total_out = sum(c.usage.output_tokens for c in calls)
    total_cost = sum(c.cost_usd for c in calls)
    total_ms = sum(c.latency_ms for c in calls)
    # A reply replayed on a resume (or from a shared cache) is a row, but no call: the
    # card counts it apart, and so does the page, or its count and the card's disagree.
    replayed = sum(c.cached for c in calls)
    summary = tr(
        "page.calls_summary",
        n=len(calls) - replayed,
        tokens=_tokens(total_in + total_out),
        cost=_cost(total_cost),
        latency=_latency(total_ms),
    )
    if replayed:
        summary += tr("page.calls_replayed_total", n=replayed)
    if unknown := sum(c.uncertain_usd for c in calls):
        summary += tr("page.calls_uncertain_total", cost=_cost(unknown))
    if unbounded := sum(1 for c in calls if c.unbounded_attempts):
        summary += tr("page.calls_unbounded_total", n=unbounded)
    return (
        head + f"<p>{escape(summary, quote=False)}</p>"
        '<div class="scroll"><table class="ratings calls"><thead><tr>'
        f"<th>#</th><th>{_w('page.calls_role')}</th><th>{_w('page.calls_model')}</th>"
        f'<th class="num">{_w("col.input_tokens")}</th><th class="num">{_w("col.output_tokens")}</th>'
        f'<th class="num">{_w("page.calls_cost")}</th><th class="num">{_w("page.calls_latency")}</th>'
        f"<th>{_w('page.calls_notes')}</th>"
        "</tr></thead><tbody>"
        + "".join(rows)
        + f'</tbody><tfoot><tr><th colspan="3">{_w("col.total")}</th><td class="num">{_tokens(total_in)}</td>'
        f'<td class="num">{_tokens(total_out)}</td><td class="num">{_cost(total_cost)}</td>'
        f'<td class="num">{_latency(total_ms)}</td><td></td></tr></tfoot></table></div></section>'
    )


# ---------------------------------------------------------------------------------------
# What each call was sent and answered (the run's call bodies, vera.store)
# ---------------------------------------------------------------------------------------


class BodyIndex:
    """One run's call bodies, read a conversation at a time (None when the run keeps
    none: made with --no-call-bodies, or before vera kept them). Opened for each page
    (a few hundred microseconds), so a page of a run still going sees its newest calls."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    def conversation(
        self, conversation_id: str, lines: Sequence[tuple[RecordRef, CallRecord]]
    ) -> tuple[list[CallBody] | None, dict[tuple[str, float], Gap]]:
        """The bodies of the conversation's calls (`lines`: its calls' lines in
        calls.jsonl, in file order), each paired with its line as `vera export --calls`
        pairs them (a line added, removed or edited loses its own body, never shows
        another call's), and the calls whose body a damaged bodies' file lost, by (job
        id, time): a damaged record costs the page the calls it held, not the page."""
        if not has_bodies(self.run_dir):
            return None, {}
        bodies: list[CallBody] = []
        lost: dict[tuple[str, float], Gap] = {}
        for call, found in conversation_calls_with_bodies(self.run_dir, conversation_id, lines):
            if isinstance(found, Gap):
                lost[(call.job_id, call.at)] = found
            elif found is not None:
                bodies.append(found)
        return bodies, lost


def damage_words(gaps: Collection[Gap]) -> str:
    """What damage cost the bodies named (`vera.store.Gap`), as the page says it: each
    file once, with its damaged records."""
    by_path: dict[Path, set[int | None]] = {}
    for gap in gaps:
        by_path.setdefault(gap.path, set()).add(gap.number)
    said = []
    for path, numbers in by_path.items():
        records = sorted(n for n in numbers if n is not None)
        if None in numbers:
            said.append(f"{path} cannot be read")
        if records:
            plural = "s" if len(records) > 1 else ""
            said.append(f"{path} is damaged (record{plural} {', '.join(map(str, records))})")
    return "; ".join(said)


_json = msgspec.json.Encoder(order="sorted")


def _pretty(value: object) -> str:
    return msgspec.json.format(_json.encode(value), indent=2).decode()


def _copy(target: str, what: str) -> str:
    """A copy button; `what` is its whole accessible name, in the page's words."""
    return (
        f'<button type="button" class="copy" data-copy="{target}" aria-label="{escape(what)}">'
        f"{_w('viewer.copy')}</button>"
    )


# The finish reasons most replies end with, by their display names (others as recorded).
_FINISH = {"stop": "page.calls_finish_stop", "length": "page.calls_finish_length"}


def _finish(reason: str) -> str:
    return tr(_FINISH[reason]) if reason in _FINISH else reason


def _message_role(role: str) -> str:
    return tr(_MESSAGE_ROLES[role]) if role in _MESSAGE_ROLES else role


# Given a call's body as HTML (all but its summary line), what stands in its place on the
# page: the bundle's, which writes the body to a file of its own (vera.viewer.bundle), and
# the server's (BodyNumbers), which serves them from /runs/<k>/bodies/<id>.js.
Later = Callable[[str], str]


def wait_html(number: int) -> str:
    """What stands on the page for body `number` of its bodies' file: static/bodies.js puts
    the body there when its call is first opened."""
    return f'<div class="call-wait" data-body="{number}"></div>'


class BodyNumbers:
    """The server's `Later`: each body a number on the page, in the order they are written
    (the bodies' file, built again on request by the same code, numbers them the same)."""

    def __init__(self) -> None:
        self.count = 0

    def later(self, markup: str) -> str:
        number = self.count
        self.count += 1
        return wait_html(number)


def body_html(n: int, body: CallBody, label: str, *, ahead: bool = False, later: Later | None = None) -> str:
    """One call's exact input and output, collapsed: the messages as sent (system
    first), the parameters and schema; the reply's text, structured answer, finish
    reason and usage. Each side has a copy button (the input as JSON, the reply's text).
    With `later`, the summary line only, and what `later` puts in place of the rest."""
    c = body.call
    anchor = f"call-{n}"
    r = body.response
    failed = tr("page.calls_failed", error=c.error or tr("page.calls_no_reason"))
    outcome = (
        tr("page.calls_chars_back", n=f"{len(r.text):,}")
        if r is not None
        else tr("page.calls_no_answer", why=failed if c.status != "ok" else tr("page.calls_no_answer_none"))
    )
    summary = tr(
        "page.calls_call",
        n=n,
        label=label,
        # An http chatbot is named by its profile alone (model = profile): not "bot/bot".
        model=c.provider if c.model == c.provider else f"{c.provider}/{c.model}",
        messages=len(body.messages),
        outcome=outcome,
    ) + (tr("page.calls_cache_note") if c.cached else "")
    if ahead:  # a judge question the walk did not reach: why it is not beside the walk
        summary += tr("page.calls_ahead_note", question=body.question_id)
    request = exported_call(body)["request"]
    head = f'<details class="call-body" id="{anchor}"><summary>{escape(summary, quote=False)}</summary>'
    parts = [
        '<div class="call-io"><div class="call-in">',
        f"<h4>{_w('page.calls_input')} {_copy(anchor + '-in', tr('page.calls_copy_input', n=n))}</h4>",
        f'<template id="{anchor}-in">{escape(_pretty(request))}</template>',
    ]
    if (w := body.wire) is not None:
        # What a team's own chatbot received (its template rendered): the body as sent,
        # not reformatted, so it reads byte for byte as the service got it; the URL's
        # credential parameters masked again (a run recorded before they were). First,
        # and the conversation below it said to be vera's: a product that keeps the
        # history itself is sent the newest message only, not the turns listed below.
        # Each attempt sent the same request: a product that keeps the history by
        # session id got this turn as many times (docs/protocols.md).
        sent = (
            _w("page.calls_wire")
            if c.attempts < 2
            else escape(tr("page.calls_wire_times", n=c.attempts), quote=False)
        )
        parts.append(
            f'<div class="msg wire"><div class="who">{sent}</div>'
            f'<pre class="wire-line">{escape(w.method)} {escape(mask_url(w.url))}</pre>'
            f'<pre class="wire-body">{escape(w.body)}</pre></div>'
            f'<p class="wire-note">{_w("page.calls_wire_history")}</p>'
        )
    for m in body.messages:
        parts.append(
            f'<div class="msg"><div class="who">{escape(_message_role(m.role))}</div><pre>{escape(m.content)}</pre></div>'
        )
    if body.params:
        parts.append(
            f'<div class="msg"><div class="who">{_w("page.calls_parameters")}</div><pre>{escape(_pretty(body.params))}</pre></div>'
        )
    if body.schema is not None:
        parts.append(
            f'<details class="schema"><summary>{_w("page.calls_schema")}</summary>'
            f"<pre>{escape(_pretty(body.schema))}</pre></details>"
        )
    parts.append('</div><div class="call-out">')
    if r is None:
        parts.append(f"<h4>{_w('page.calls_output')}</h4><p>{escape(outcome[:1].upper() + outcome[1:])}.</p>")
    else:
        parts.append(
            f"<h4>{_w('page.calls_output')} {_copy(anchor + '-out', tr('page.calls_copy_reply', n=n))}</h4>"
        )
        parts.append(f'<pre id="{anchor}-out">{escape(r.text)}</pre>')
        if r.parsed is not None:
            parts.append(
                f'<div class="msg"><div class="who">{_w("page.calls_structured")}</div><pre>{escape(_pretty(r.parsed))}</pre></div>'
            )
        u = r.usage
        usage = tr(
            "page.calls_usage",
            reason=_finish(r.finish_reason),
            input=_tokens(u.input_tokens),
            cached=_tokens(u.cached_input_tokens),
            output=_tokens(u.output_tokens),
        )
        if u.reasoning_tokens:
            usage += tr("page.calls_usage_reasoning", n=_tokens(u.reasoning_tokens))
        parts.append(f'<p class="muted">{escape(usage, quote=False)}</p>')
    parts.append("</div></div>")
    inner = "".join(parts)
    return head + (later(inner) if later is not None else inner) + "</details>"


@dataclass(frozen=True)
class CallBodiesHtml:
    """A page's call bodies: the conversation's own (after the calls table) and the
    judge's, by (judgement id, question id), for the walk to show beside each question."""

    appendix: str
    by_question: dict[tuple[str, str], str]


def bodies_html(
    jobs: Sequence[Job],
    bodies: list[CallBody] | None,
    numbers: dict[tuple[str, float], int],
    why_none: str,
    answered: set[tuple[str, str]],
    lost: Mapping[tuple[str, float], Gap] | None = None,
    ahead: Mapping[tuple[str, float], str] | None = None,
    later: Later | None = None,
) -> CallBodiesHtml:
    """The bodies of a page's calls, numbered as the calls table numbers them. A judge
    call goes beside its question when the walk shows that question (`answered`:
    (judgement id, question id)); the rest (asked ahead and not reached) stay here.
    `later`: as body_html's."""
    head = f'<section id="call-bodies" class="calls"><h2>{_w("page.calls_bodies")}</h2>'
    if bodies is None:
        return CallBodiesHtml(head + f"<p>{escape(why_none)}.</p></section>", {})
    label = {j.id: j.label for j in jobs}
    ahead = ahead or {}
    own: list[str] = []
    by_question: dict[tuple[str, str], list[str]] = {}
    for body in bodies:
        c = body.call
        n = numbers.get((c.job_id, c.at), 0)
        html = body_html(
            n, body, label.get(c.job_id) or role_name(c.role), ahead=(c.job_id, c.at) in ahead, later=later
        )
        if (c.job_id, body.question_id) in answered:
            by_question.setdefault((c.job_id, body.question_id), []).append(html)
        else:
            own.append(html)
    questions = {
        key: f'<div class="question-calls"><div class="muted">{_w("page.calls_question")}</div>{"".join(v)}</div>'
        for key, v in by_question.items()
    }
    text = f"<p>{_w('page.calls_bodies_intro')}</p>"
    # Calls without a body are named, not silently absent: those a damaged file lost,
    # with the damage; the others (a merged shard that kept none, or a line of
    # calls.jsonl changed after the run wrote it, which no body matches).
    lost = lost or {}
    have = {(b.call.job_id, b.call.at) for b in bodies}
    damaged = sorted(n for key, n in numbers.items() if key not in have and key in lost)
    missing = sorted(n for key, n in numbers.items() if key not in have and key not in lost)
    notes = []
    if damaged:
        calls = ", ".join(str(n) for n in damaged)
        notes.append(tr("page.calls_body_damaged", calls=calls, damage=damage_words(lost.values())))
    if missing:
        notes.append(tr("page.calls_no_body", calls=", ".join(str(n) for n in missing)))
    if notes:
        text += f'<p class="muted" id="calls-no-body">{escape(" ".join(notes), quote=False)}</p>'
    return CallBodiesHtml(head + text + "".join(own) + "</section>", questions)


def asked_ahead(
    bodies: Sequence[CallBody] | None, answered: Collection[tuple[str, str]], complete: Collection[str]
) -> dict[tuple[str, float], str]:
    """The judge calls that asked a question ahead which the walk then did not reach, by
    (job id, time) → question id: answered calls of a complete judgement (`complete`:
    their ids) whose question is not among its walk's (`answered`: (judgement id,
    question id)). Their cost is in the judgement's (`unused_questions` counts them);
    only the bodies know which question a call asked, so a run without bodies names
    none."""
    if not bodies:
        return {}
    return {
        (b.call.job_id, b.call.at): b.question_id
        for b in bodies
        if b.question_id
        and b.call.job_id in complete
        and b.call.status == "ok"
        and (b.call.job_id, b.question_id) not in answered
    }


def call_numbers(calls: Sequence[CallRecord]) -> dict[tuple[str, float], int]:
    """(job id, time) -> the call's number in the calls table."""
    return {(c.job_id, c.at): n for n, c in enumerate(calls, start=1)}
