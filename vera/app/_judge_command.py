"""`vera judge`: one entry for its two forms, judging a run vera made and importing
transcripts vera did not make. Kept apart from both so that each imports only the
shared judging steps it ends in, never the other (no import cycle to work around)."""

from __future__ import annotations

from vera.app._importing import import_and_judge
from vera.app._judging import judge_existing
from vera.app._options import JudgeOptions
from vera.app._result import RunOutcome


async def judge_run(opts: JudgeOptions) -> RunOutcome:
    """Judge the run in `opts.run_dir`, or import `opts.transcripts` and judge them."""
    if opts.transcripts:
        return await import_and_judge(opts)
    return await judge_existing(opts)
