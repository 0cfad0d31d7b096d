"""What a run returns, and its card, scored once the event loop is done."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from vera.engine import SweepResult
from vera.errors import Interrupted, StorageError
from vera.inputs import ENGLISH, Strings
from vera.report import RunStatus, score_run

if TYPE_CHECKING:
    from vera.report import Card


@dataclass
class RunOutcome:
    run_dir: Path
    result: SweepResult
    notes: list[str]
    status: RunStatus | None = None
    resume: str = ""  # the command that continues this run
    card: Card | None = None
    scores: bool = True  # the run judged: it has a card to score
    words: Strings = ENGLISH  # the run's locale pack's words, for its lines when it has no card

    @property
    def exit_code(self) -> int:
        return self.status.exit_code if self.status is not None else 0


class _Failable(Protocol):
    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str | None: ...


# The reasons named on the terminal at most; the card's "Failed work" lists every one.
FAILURE_REASONS = 3


def failure_lines(
    conversations: Iterable[_Failable], judgements: Iterable[_Failable], words: Strings
) -> list[str]:
    """The run's failed work by reason, most common first, one line each.

    The status line only counts what failed; without the reason on the terminal a user
    whose chatbot answered every turn with a 500 (or whose judge's key ran out) has to
    open the card to learn why. Each reason is the error as recorded (already redacted)."""
    reasons: Counter[tuple[str, str]] = Counter()
    for kind, heads in (("conversation", conversations), ("judgement", judgements)):
        for head in heads:
            if head.status == "failed":
                reasons[(kind, head.error or words("cli.failed_no_reason"))] += 1
    lines = [
        words(f"cli.failed_{kind}s", n=n, reason=reason)
        for (kind, reason), n in reasons.most_common(FAILURE_REASONS)
    ]
    if len(reasons) > FAILURE_REASONS:
        lines.append(words("cli.failed_more", n=len(reasons) - FAILURE_REASONS))
    return lines


def scored(outcome: RunOutcome) -> RunOutcome:
    """The outcome with its card, built from the run's files one judgement at a time
    (the run kept none of its records in memory while it went). Called after the
    event loop has finished: scoring is no work for the loop."""
    if not outcome.scores:
        return outcome

    try:
        card = score_run(outcome.run_dir)
    except KeyboardInterrupt:
        # Every record is already on disk (the sweep is over); only the card is missing,
        # and resuming the run writes it without a call.
        raise Interrupted(
            f"interrupted while writing the card; all finished work is saved: {outcome.resume} writes it"
        ) from None
    except StorageError as exc:
        # A full or read-only disk met while writing the card: every record is on disk,
        # as the sweep's own storage errors say; only the card (and its pages) is
        # missing, and the resume writes it without a call.
        raise StorageError(
            f"{exc}; all finished work is saved: make room (or make the folder writable), "
            f"then {outcome.resume} writes the card"
        ) from None
    return replace(outcome, card=card)
