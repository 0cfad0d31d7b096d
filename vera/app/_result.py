"""What a run returns, and its card, scored once the event loop is done."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

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
