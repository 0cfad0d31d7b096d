"""The application layer: a run session and what runs in it.

`vera run`/`simulate` (`run`), `vera judge` (`judging`), transcript import
(`importing`) and the benchmark harness each open one `RunSession`, which owns
everything a run has open and closes it in order. Options become a run config in one
place (`options.configure`); signals become a stop request (`signals`); the card is
scored after the event loop is done (`result.scored`).
"""

from vera.app._checks import check_config
from vera.app._gate import UNDECIDED_EXIT, GateOptions, GateOutcome, run_gate
from vera.app._gc import sweep_collector
from vera.app._judge_command import judge_run
from vera.app._killed import unfinished_line
from vera.app._merge import merge_runs, unfinished_shards
from vera.app._options import JudgeOptions, RunOptions, configure
from vera.app._plan import Cost, PlanOptions, PlanRecord
from vera.app._plan import plan as plan_comparison
from vera.app._result import RunOutcome, scored
from vera.app._run import Prepared, execute_run, prepare_run
from vera.app._session import RunSession
from vera.app._stand_ins import RunFacts

__all__ = [
    "UNDECIDED_EXIT",
    "Cost",
    "GateOptions",
    "GateOutcome",
    "JudgeOptions",
    "PlanOptions",
    "PlanRecord",
    "Prepared",
    "RunFacts",
    "RunOptions",
    "RunOutcome",
    "RunSession",
    "check_config",
    "configure",
    "execute_run",
    "judge_run",
    "merge_runs",
    "plan_comparison",
    "prepare_run",
    "run_gate",
    "scored",
    "sweep_collector",
    "unfinished_line",
    "unfinished_shards",
]
