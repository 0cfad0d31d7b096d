"""The application layer: a run session and what runs in it.

`vera run`/`simulate` (`run`), `vera judge` (`judging`), transcript import
(`importing`) and the benchmark harness each open one `RunSession`, which owns
everything a run has open and closes it in order. Options become a run config in one
place (`options.configure`); signals become a stop request (`signals`); the card is
scored after the event loop is done (`result.scored`).
"""

from vera.app.judging import judge_run
from vera.app.options import JudgeOptions, RunOptions, configure
from vera.app.result import RunOutcome, scored
from vera.app.run import execute_run
from vera.app.session import RunSession

__all__ = [
    "JudgeOptions",
    "RunOptions",
    "RunOutcome",
    "RunSession",
    "configure",
    "execute_run",
    "judge_run",
    "scored",
]
