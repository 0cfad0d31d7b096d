"""A session killed outright, and the calls it cannot account for.

A session that is killed (`kill -9`, out of memory, power lost) leaves the calls it had in
flight sent and perhaps billed, with no line in `calls.jsonl`: the resume asks them again
and records only its own. Nothing the run writes says so, unless the session says it is
running. So a session that makes calls writes `session.json` in the run directory before
its first call (`OpenSession`: when it started and what bounds its calls in flight) and
removes it when it closes, however it closes short of being killed: a finished run, a
Ctrl-C or SIGTERM, a second signal, an error. The next session that writes the run holds
the run's lock (one writer at a time), so a `session.json` it finds belongs to no live
process: that session was killed.

What it had in flight is bounded twice, and the smaller bound is recorded
(`KilledSession`, in the manifest's `killed_sessions`):

- by the jobs that may have been under way: each of the `max_concurrency` workers holds
  one arc of conversations; a conversation has one call in flight at a time (the
  simulated user and the chatbot take turns), and a judgement may have several: its
  rubric's independent parts are asked at once, and asking ahead asks a question early
  (`vera.rubric.calls_at_once` bounds them from the rubric's flow, whatever the
  answers and timing: 5 for vera-si, 15 asking ahead, of its 36 questions). A
  conversation under way is one not finished; a judgement under way is an unfinished
  one of a finished conversation (judging starts once the conversation is recorded),
  at most the judgements of the conversations each worker's arc holds, and a worker
  whose arc's judgements are all under way runs no conversation;
- by the accounts' `max_in_flight`, summed (none when an account has no cap; offline
  stand-ins send nothing).

Its cost is bounded where the output is capped, as a cut-off call's is
(`uncertain_usd`): each call at the largest input a call of its role sent in the run (the
resume asks the killed calls again, identically, so their input is among the run's) plus
its output cap, at the highest prices. Where a priced role's output has no cap there is
no bound, and the card says so.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from vera.app._resume import resume_command
from vera.clients.budget import output_bound
from vera.clients.pool import ClientPool
from vera.engine import Sweep, arcs
from vera.files import records
from vera.inputs import RunConfig
from vera.records import AccountLimits, CallRecord, KilledSession, ModelSpec, OpenSession, Role, RunManifest
from vera.rubric import calls_at_once
from vera.store import RunStore, left_open, unfinished

CALLS_FILE = "calls.jsonl"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def accounts_in_flight(limits: Iterable[AccountLimits]) -> int | None:
    """The most calls the accounts let be in flight at once: their caps summed; None when
    an account has no cap. Offline stand-ins have no account here: they send nothing."""
    total = 0
    for account in limits:
        if account.max_in_flight is None:
            return None
        total += account.max_in_flight
    return total


def bound(mark: OpenSession, *, conversations_left: int, judgements_left: int) -> KilledSession:
    """The calls `mark`'s session may have had in flight when it was killed, given what
    the run still lacks: conversations not finished, and judgements not finished of
    finished conversations."""
    workers = max(1, mark.max_concurrency)
    slots = mark.judge_slots
    judgements = min(judgements_left, workers * max(1, mark.arc_sessions) * slots)
    conversations = 0
    if mark.command != "judge":
        # A worker holds one arc: while one of its conversations runs, the judgements of
        # the sessions before it (arc_sessions - 1, times the slots); after the last, the
        # arc's judgements and no conversation. So judgements held leave fewer workers a
        # conversation (a judgement may have more calls in flight than a conversation's
        # one: the most calls is with the most judgements).
        free = workers if not slots else (workers * max(1, mark.arc_sessions) * slots - judgements) // slots
        conversations = min(conversations_left, workers, free)
    per_judgement = mark.judgement_calls or max(1, mark.questions)
    jobs_calls = conversations + judgements * per_judgement
    calls = jobs_calls if mark.max_in_flight is None else min(jobs_calls, mark.max_in_flight)
    return KilledSession(
        started_at=mark.started_at,
        found_at=now(),
        calls=calls,
        conversations=conversations,
        judgements=judgements,
        per_judgement=per_judgement,
        jobs_calls=jobs_calls,
        max_in_flight=mark.max_in_flight,
    )


def worst_usd(
    killed: KilledSession,
    pool: ClientPool,
    uses: list[tuple[ModelSpec, Role]],
    largest: dict[tuple[str, str, str], int],
) -> float | None:
    """The most `killed`'s calls in flight may cost, given the `largest` input tokens a
    call of each (role, provider, model) sent; None when one of them may be of a priced
    role whose output nothing caps (no bound)."""
    by_kind: dict[str, float] = {"conversation": 0.0, "judgement": 0.0}
    for spec, role in uses:
        kind = "judgement" if role == "judge" else "conversation"
        if (killed.judgements if kind == "judgement" else killed.conversations) == 0:
            continue
        client = pool.limited(spec.ref, role)
        out = output_bound(spec.params, client.output_cap)
        if out is None:
            if client.prices.output_per_mtok > 0:
                return None
            out = 0
        worst = client.prices.worst_cost(largest.get((role, spec.provider, spec.model), 0), out)
        by_kind[kind] = max(by_kind[kind], worst)
    # The dearest calls first, as many as each kind may have, up to the bound.
    left, total = killed.calls, 0.0
    counts = {"conversation": killed.conversations, "judgement": killed.judgements * killed.per_judgement}
    for kind in sorted(by_kind, key=by_kind.__getitem__, reverse=True):
        n = min(left, counts[kind])
        total += n * by_kind[kind]
        left -= n
    return round(total, 6)


def open_session(
    command: str, cfg: RunConfig, pool: ClientPool, sweep: Sweep, *, judging: bool
) -> OpenSession:
    """What bounds the calls this session may have in flight, for its mark."""
    slots = len(sweep.slots) if judging else 0
    return OpenSession(
        started_at=now(),
        command=command,
        max_concurrency=cfg.max_concurrency,
        max_in_flight=accounts_in_flight(pool.limits()),
        arc_sessions=max((len(a) for a in arcs(sweep.jobs)), default=1),
        judge_slots=slots,
        questions=len(sweep.inputs.rubric.questions) if slots else 0,
        judgement_calls=calls_at_once(sweep.inputs.rubric, ask_ahead=cfg.judge.asks_ahead()) if slots else 0,
    )


def left_in(
    store: RunStore, sweep: Sweep, conversations: Iterable[str] | None = None, planned: int = 0
) -> tuple[int, int]:
    """What the run still lacks: (conversations of the plan not finished, judgements not
    finished of finished conversations). `vera judge` gives the `conversations` it
    judges and the run's `planned` conversations (a killed `vera run` it continues may
    have had conversations under way); a run, its plan."""
    if conversations is None:
        ids = [j.id for j in sweep.jobs]
        left = sum(1 for cid in ids if not store.conversation_done(cid))
        conversations = (cid for cid in ids if store.conversation_done(cid))
    else:
        left = max(0, planned - sum(1 for cid in store.conversations if store.conversation_done(cid)))
    judged = sum(
        1
        for cid in conversations
        for slot in sweep.slots
        if not store.done_judgement(sweep.judgement_id(cid, slot))
    )
    return left, judged


def found_killed(
    existing: RunManifest, manifest: RunManifest, run_dir: Path, left: Callable[[], tuple[int, int]]
) -> RunManifest:
    """`manifest` (the resume's) with the sessions of the run killed before, and the one
    this resume finds killed now, bounded by what the run still lacks (`left()`: see
    `left_in`), and said once on the terminal."""
    killed = list(existing.killed_sessions or [])
    mark = left_open(run_dir)
    # A resume killed after it recorded the kill and before its own mark replaced the
    # killed session's finds that mark again: it is counted once.
    if mark is not None and all(k.started_at != mark.started_at for k in killed):
        conversations, judgements = left()
        found = bound(mark, conversations_left=conversations, judgements_left=judgements)
        killed.append(found)
        if found.calls:  # (offline stand-ins send nothing: no call to speak of)
            print(f"warning: {run_dir}: {killed_line(found)}", file=sys.stderr, flush=True)
    if not killed:
        return manifest
    return msgspec.structs.replace(manifest, killed_sessions=killed)


def killed_line(k: KilledSession) -> str:
    """The terminal's words for a killed session, once, when the resume finds it."""
    cap = "no cap" if k.max_in_flight is None else f"{k.max_in_flight}"
    return (
        f"the session started {k.started_at} was killed (kill -9, out of memory, power lost): up to "
        f"{k.calls} call(s) it had in flight were sent, may be billed, and are recorded nowhere "
        f"(jobs under way: {k.conversations} conversation(s), {k.judgements} judgement(s) of up to "
        f"{k.per_judgement} call(s) each; the accounts' max_in_flight: {cap}); the card counts them apart"
    )


def priced_kills(
    store: RunStore, pool: ClientPool, manifest: RunManifest, uses: list[tuple[ModelSpec, Role]]
) -> list[KilledSession] | msgspec.UnsetType:
    """The run's killed sessions, each with its worst case once this session has made its
    calls (the killed calls asked again among them)."""
    killed = manifest.killed_sessions
    if not killed or all(k.worst_usd is not msgspec.UNSET for k in killed):
        return killed
    largest = _largest_inputs(store)
    out = []
    for k in killed:
        if k.worst_usd is msgspec.UNSET:
            k = msgspec.structs.replace(k, worst_usd=worst_usd(k, pool, uses, largest))
        out.append(k)
    return out


def unfinished_line(run_dir: str | Path) -> str | None:
    """The one line a command that reads a run (`vera score`, `card`, `view`, `export`)
    prints on stderr when a session of it did not end (vera.store._marks); None: every
    session ended, and the run's records hold every call it made."""
    found = unfinished(run_dir)
    if found is None:
        return None
    what = f"vera {found.command}, started {found.started_at}"
    if found.state == "running":
        return (
            f"note: {run_dir}: this run's last session ({what}) has not ended: another vera process "
            "is still writing the run, and the calls it has in flight are not in these records yet; "
            "read it again once it ends"
        )
    why = (
        "it was killed: kill -9, out of memory, power lost"
        if found.state == "killed"
        else "killed, or still running"
    )
    return (
        f"warning: {run_dir}: this run's last session ({what}) did not end ({why}): calls it had in "
        f"flight were sent, may be billed, and are not in these records; "
        f"`{resume_command(found.command, run_dir)}` finds them and bounds them on the card"
    )


def _largest_inputs(store: RunStore) -> dict[tuple[str, str, str], int]:
    """The largest input tokens a call of each (role, provider, model) sent in the run
    (replies answered from a cache sent nothing)."""
    store.sync()  # the calls held back reach the file first
    largest: dict[tuple[str, str, str], int] = {}
    for c in records(store.root / CALLS_FILE, CallRecord):  # one at a time: a big run's calls are many
        if not c.cached:
            key = (c.role, c.provider, c.model)
            largest[key] = max(largest.get(key, 0), c.usage.input_tokens)
    return largest


class KilledSpend:
    """What the run's budget (`--max-cost`) counts for its killed sessions' calls in
    flight: sent, perhaps billed, and in no record, so at their worst case, as the
    budget counts a cut-off call's (vera.clients.budget). A session priced before
    (`worst_usd`, by the resume that found it) counts at that; one found by this
    session counts at `worst_usd` over the largest inputs seen so far, raised as this
    session's calls show larger ones (its resume asks the killed calls again,
    identically, so once it has, the count is the worst case the card gives). A kill
    whose worst case has no bound (a priced role without an output cap) cannot run
    under a budget: the budget refuses such a role before any call."""

    def __init__(
        self,
        kills: list[KilledSession],
        pool: ClientPool,
        uses: list[tuple[ModelSpec, Role]],
        store: RunStore,
    ) -> None:
        self.pool, self.uses = pool, uses
        self.priced = sum(k.worst_usd for k in kills if isinstance(k.worst_usd, float))
        self.unpriced = [k for k in kills if k.worst_usd is msgspec.UNSET]
        self.largest = _largest_inputs(store) if self.unpriced else {}
        self.counted = self.priced + self._worst()

    def _worst(self) -> float:
        return sum(worst_usd(k, self.pool, self.uses, self.largest) or 0.0 for k in self.unpriced)

    def seen(self, call: CallRecord) -> float:
        """What `call` adds to the count (a larger input than any before of its kind)."""
        if not self.unpriced or call.cached:
            return 0.0
        key = (call.role, call.provider, call.model)
        if call.usage.input_tokens <= self.largest.get(key, 0):
            return 0.0
        self.largest[key] = call.usage.input_tokens
        before, self.counted = self.counted, self.priced + self._worst()
        return max(0.0, self.counted - before)
