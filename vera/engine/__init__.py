"""The evaluation engine: the plan (deterministic jobs), the sweep on one event loop,
simulating a conversation, and walking the rubric with a judge.

It talks to models only through `vera.clients`' seam and to disk only through
`vera.store`; it knows nothing of cards, terminals or the offline stand-ins.
"""

from vera.engine._inputs import Inputs
from vera.engine._judge import question_prompt
from vera.engine._plan import (
    Shard,
    Sweep,
    arcs,
    batch_refusal,
    check_judges,
    check_plan_size,
    digest,
    flex_refusal,
    judge_slots,
    plan_size,
    plan_sweep,
    role_spec,
    role_specs,
)
from vera.engine._simulate import ConversationJob, turns_from_user_view
from vera.engine._sweep import Stop, SweepResult, judge_conversations, run_sweep

__all__ = [
    "ConversationJob",
    "Inputs",
    "Shard",
    "Stop",
    "Sweep",
    "SweepResult",
    "arcs",
    "batch_refusal",
    "check_judges",
    "check_plan_size",
    "digest",
    "flex_refusal",
    "judge_conversations",
    "judge_slots",
    "plan_size",
    "plan_sweep",
    "question_prompt",
    "role_spec",
    "role_specs",
    "run_sweep",
    "turns_from_user_view",
]
