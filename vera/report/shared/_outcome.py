"""How a run ended, and the exit code that says so.

A script must be able to trust the exit code, so it is decided by what the run
directory holds at the end, against what was planned:

====  =====================  ==========================================================
code  state                  meaning
====  =====================  ==========================================================
0     complete               all planned work completed (failures within
                             ``--allow-failures``, if it was given, are named)
1     (error)                bad input or options, or a file or folder vera cannot read
                             or write; reported as one ``error:`` line (see vera.cli._main)
2     failed                 the run finished, but more work failed than
                             ``--allow-failures`` allows — or nothing succeeded at all
3     stopped / budget /     stopped early (a fatal provider error such as a bad key),
      waited / incomplete    stopped at the run's budget (``--max-cost``: "stopped:
                             budget reached", with the command that continues with a
                             larger one), stopped after waiting ``--max-wait`` for
                             batches ("stopped: waited for batches"; a resume polls
                             them), or planned work was never run
4     (gate)                 ``vera compare --gate`` and ``vera gate``: WORSE, the
                             candidate is worse than the baseline (an interval of
                             candidate − baseline below −margin)
5     (gate)                 ``vera compare --gate`` and ``vera gate``: UNDECIDED, not
                             settled either way (the fixed gate: not every row NOT
                             WORSE; the sequential gate: out of units, conversations
                             or budget); only NOT WORSE exits 0
130   interrupted            Ctrl-C or SIGTERM
====  =====================  ==========================================================

The same status is on the card (``card.json`` → ``status``, and the top of card.md and
card.html) and on the last line vera prints.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import IntEnum
from typing import Protocol

import msgspec

from vera.errors import BudgetReached, WaitLimitReached
from vera.inputs import active
from vera.records import JudgeSample, RunManifest
from vera.stats.sampling import judging_sample


class ConversationStatus(Protocol):
    """What a status needs of a conversation: a whole record or a scanned head."""

    @property
    def status(self) -> str: ...


class JudgementStatus(Protocol):
    """What a status needs of a judgement: a whole record or a scanned head."""

    @property
    def status(self) -> str: ...

    @property
    def conversation_id(self) -> str: ...

    @property
    def judge(self) -> str: ...

    @property
    def instance(self) -> int: ...


class Exit(IntEnum):
    OK = 0
    ERROR = 1
    FAILED = 2
    STOPPED = 3
    WORSE = 4  # vera compare --gate, vera gate: the candidate failed the release gate
    # vera gate: units, conversations or budget ran out before it settled; vera compare
    # --gate: not every row NOT WORSE (vera.report.compare._gate)
    UNDECIDED = 5
    INTERRUPTED = 130


INTERRUPTED_PREFIX = "interrupted"
# How a sweep's stop reason starts when the run's budget stopped it (vera.clients.budget):
# "budget reached: $X of $Y spent; continue with a larger budget ...: COMMAND".
BUDGET_PREFIX = BudgetReached.PREFIX
# ... and when it waited its --max-wait for batches (vera.clients.batching):
# "waited for batches: 2h of --max-wait 2h; the pending batches stay in ...".
WAITED_PREFIX = WaitLimitReached.PREFIX

_LABELS = {
    "complete": "complete",
    "failed": "finished with failed work",
    "stopped": "stopped early",
    "budget": "stopped: budget reached",
    "waited": "stopped: waited for batches",
    "incomplete": "incomplete",
    "interrupted": "interrupted",
}


def state_label(state: str) -> str:
    """How a run's state reads in the status line and on the card."""
    return _LABELS.get(state, state)


class JudgedSample(msgspec.Struct, frozen=True, gc=False):
    """`vera judge --sample N`: `judged` of the run's `of` complete conversations were
    chosen for judging (the seeded sample, with any judged before it was drawn)."""

    judged: int
    of: int
    seed: int

    def text(self) -> str:
        return f"judged {self.judged} of {self.of} conversations (a seeded sample, seed {self.seed})"


class RunStatus(msgspec.Struct, kw_only=True):
    state: str  # complete | failed | stopped | budget | waited | incomplete | interrupted
    exit_code: int
    summary: str
    missing_shards: list[str] = msgspec.field(default_factory=list)
    judged_sample: JudgedSample | None = None  # set when `vera judge --sample` chose the conversations

    @property
    def label(self) -> str:
        return state_label(self.state)

    def line(self) -> str:
        """The last line of a command's output."""
        return f"status: {self.label} — {self.summary} (exit code {self.exit_code})"


class _Tally(msgspec.Struct):
    planned: int
    complete: int = 0
    failed: int = 0

    @property
    def not_run(self) -> int:
        return max(0, self.planned - self.complete - self.failed)

    @property
    def failed_share(self) -> float:
        return self.failed / self.planned if self.planned else 0.0


def tally(
    manifest: RunManifest,
    conversations: Mapping[str, ConversationStatus],
    judgements: Mapping[str, JudgementStatus],
    *,
    judging: bool = True,
) -> tuple[_Tally, _Tally]:
    """(conversations, judgements): planned, complete and failed. A judgement is
    planned for every complete conversation and every (judge, instance) of the run."""
    convs = _Tally(planned=max(manifest.jobs_planned, len(conversations)))
    for c in conversations.values():
        convs.complete += c.status == "complete"
        convs.failed += c.status == "failed"
    judges = {j.ref for j in manifest.judges}
    slots = len(judges) * manifest.judge_instances if judging else 0
    judged = _Tally(planned=len(_to_judge(manifest, conversations, judgements)) * slots)
    if slots:
        for j in judgements.values():
            conv = conversations.get(j.conversation_id)
            if (
                conv is None
                or conv.status != "complete"
                or j.judge not in judges
                or j.instance > manifest.judge_instances
            ):
                continue
            judged.complete += j.status == "complete"
            judged.failed += j.status == "failed"
    return convs, judged


def _to_judge(
    manifest: RunManifest,
    conversations: Mapping[str, ConversationStatus],
    judgements: Mapping[str, JudgementStatus],
) -> set[str]:
    """The complete conversations planned for judging: all of them, or with `vera judge
    --sample` the seeded sample and any judged before it was drawn."""
    complete = {cid for cid, c in conversations.items() if c.status == "complete"}
    if not isinstance(sample := manifest.judge_sample, JudgeSample):
        return complete
    judged = {j.conversation_id for j in judgements.values()} & complete
    return set(judging_sample(complete, sample.size, sample.seed)) | judged


def run_status(
    manifest: RunManifest,
    conversations: Mapping[str, ConversationStatus],
    judgements: Mapping[str, JudgementStatus],
    *,
    stopped: str | None,
    allow_failures: float,
    judging: bool = True,
) -> RunStatus:
    """The state of a run from its records, the reason it stopped (if it did) and the
    share of failed work the user accepts."""
    convs, judged = tally(manifest, conversations, judgements, judging=judging)
    done = f"{convs.complete} of {convs.planned} conversations complete, {convs.failed} failed"
    judged_sample = None
    if judging:
        done += f"; {judged.complete} of {judged.planned} judgements complete, {judged.failed} failed"
        if isinstance(sample := manifest.judge_sample, JudgeSample):
            chosen = len(_to_judge(manifest, conversations, judgements))
            judged_sample = JudgedSample(judged=chosen, of=convs.complete, seed=sample.seed)
            done += f"; a sample of {chosen} of {convs.complete} complete conversations judged (seed {sample.seed})"
    status = _run_state(
        convs,
        judged,
        done,
        stopped=stopped,
        allow_failures=allow_failures,
        missing=list(manifest.missing_shards),
    )
    status.judged_sample = judged_sample
    return status


def _run_state(
    convs: _Tally,
    judged: _Tally,
    done: str,
    *,
    stopped: str | None,
    allow_failures: float,
    missing: list[str],
) -> RunStatus:
    """The state, exit code and summary of a run whose work is tallied in `convs` and
    `judged` (`done` says it in words)."""
    if missing:
        done = f"partial sweep, shard(s) {', '.join(missing)} missing; " + done
    not_run = convs.not_run + judged.not_run
    if not not_run and not missing and not convs.failed and not judged.failed:
        # The stop came when nothing was left to start, and what was in flight finished
        # in its grace period: the run is whole, and its state says so. (With failed
        # work, the stop's reason, such as a rejected key, is what explains it.)
        stopped = None
    if stopped and stopped.startswith(INTERRUPTED_PREFIX):
        how = stopped.removeprefix(INTERRUPTED_PREFIX).strip()
        how = how[1:].replace(")", "", 1) if how.startswith("(") else how  # "(SIGINT); ..." -> "SIGINT; ..."
        return _status("interrupted", f"by {how}; {done}", missing)
    if stopped and stopped.startswith(BUDGET_PREFIX):
        # What was spent, what is done, then how to go on (the command last).
        spent, _, on = stopped.removeprefix(BUDGET_PREFIX).partition("; ")
        return _status("budget", "; ".join(p for p in (spent, done, on) if p), missing)
    if stopped and stopped.startswith(WAITED_PREFIX):
        waited, _, where = stopped.removeprefix(WAITED_PREFIX).partition("; ")
        return _status("waited", "; ".join(p for p in (f"waited {waited}", done, where) if p), missing)
    if stopped:
        return _status("stopped", f"{stopped}; {done}", missing)
    if not_run:
        return _status("incomplete", f"{not_run} planned job(s) not run yet; {done}", missing)
    if convs.planned and convs.complete == 0:
        return _status("failed", f"no conversation completed; {done}", missing)
    if judged.planned and judged.complete == 0:
        return _status("failed", f"no judgement completed; {done}", missing)
    share = max(convs.failed_share, judged.failed_share)
    if convs.failed or judged.failed:
        allowed = f"{share:.1%} failed, --allow-failures {allow_failures:g}"
        if share > allow_failures:
            return _status("failed", f"{done} ({allowed})", missing)
        return _status("complete", f"{done} (within {allowed})", missing)
    return _status("complete", done, missing)


_CODES = {
    "complete": Exit.OK,
    "failed": Exit.FAILED,
    "stopped": Exit.STOPPED,
    "budget": Exit.STOPPED,
    "waited": Exit.STOPPED,
    "incomplete": Exit.STOPPED,
    "interrupted": Exit.INTERRUPTED,
}


def _status(state: str, summary: str, missing: list[str]) -> RunStatus:
    return RunStatus(state=state, exit_code=int(_CODES[state]), summary=summary, missing_shards=missing)


_SUMMARY_PART = re.compile(r"(\d+) of (\d+) (conversations|judgements) complete, (\d+) failed")
_BY_SIGNAL = re.compile(r"by (SIG[A-Z]+)")
_NOT_RUN = re.compile(r"(\d+) planned job\(s\) not run yet")
_PARTIAL = re.compile(r"partial sweep, shard\(s\) (.+) missing")  # `vera merge --allow-partial`
_NONE_DONE = {
    "no conversation completed": "card.summary_no_conversation",
    "no judgement completed": "card.summary_no_judgement",
    "cancelled at once by a second signal": "card.summary_forced",  # vera.app._run.FORCED
}


def summary_words(summary: str) -> str:
    """A run's status summary (as recorded, in English) in the active language: each
    "; "-separated part vera writes in a known form is translated, any other part (a
    stop's reason, a command) stays as recorded. English: the summary itself."""
    words = active()
    if words.english:
        return summary
    parts = []
    for part in summary.split("; "):
        m = _SUMMARY_PART.fullmatch(part)
        if m:
            key = "card.summary_conversations" if m[3] == "conversations" else "card.summary_judgements"
            part = words(key, complete=m[1], planned=m[2], failed=m[4])
        elif m := _BY_SIGNAL.fullmatch(part):
            part = words("card.summary_by_signal", signal=m[1])
        elif m := _NOT_RUN.fullmatch(part):
            part = words("card.summary_not_run", n=m[1])
        elif m := _PARTIAL.fullmatch(part):
            part = words("card.summary_partial", shards=m[1])
        elif part in _NONE_DONE:
            part = words(_NONE_DONE[part])
        parts.append(part)
    return words("card.summary_sep").join(parts)
