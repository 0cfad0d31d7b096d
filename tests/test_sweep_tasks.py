"""The tasks a sweep starts: a conversation that ends starts a task to judge it only when
the sweep has judges (a `vera simulate` or `vera bench` sweep has none, and such a task
would judge nothing: a task, a task group and two coroutines per conversation)."""

from __future__ import annotations

import asyncio
from collections import Counter

from vera.clients.pool import ClientPool
from vera.engine import Inputs, plan_sweep, run_sweep
from vera.inputs._config import load_config
from vera.inputs._profiles import load_profiles
from vera.standins import StandIns
from vera.store._writer import RunStore

from .conftest import ROOT
from .test_resume_reads import stand_in_facts


async def _sweep(run_dir, *, judge: bool) -> tuple[Counter[str], int, int]:
    """The coroutines the sweep's tasks ran (by name), its conversations and judgements."""
    started: Counter[str] = Counter()
    loop = asyncio.get_running_loop()

    def factory(loop: asyncio.AbstractEventLoop, coro, **kw):
        started[getattr(coro, "__qualname__", type(coro).__name__)] += 1
        return asyncio.Task(coro, loop=loop, **kw)

    cfg = load_config(str(ROOT / "configs" / "offline.toml"))
    cfg.persona_limit = 3
    inputs = Inputs.load(cfg)
    store = RunStore(run_dir)
    facts = stand_in_facts(inputs, store)
    async with ClientPool(load_profiles(cfg.path(cfg.providers)), stand_ins=StandIns(facts)) as pool:
        sweep = plan_sweep(inputs, pool, judge=judge)
        facts.plan(sweep.jobs)
        loop.set_task_factory(factory)
        try:
            result = await run_sweep(sweep, store, pool, max_concurrency=2)
        finally:
            loop.set_task_factory(None)
    store.close()
    return started, result.conversations, result.judgements


async def test_a_sweep_without_judges_starts_no_judging_task(tmp_path):
    started, conversations, judgements = await _sweep(tmp_path / "simulated", judge=False)
    assert conversations > 0 and judgements == 0
    assert started["Judging.conversation"] == 0

    started, conversations, judgements = await _sweep(tmp_path / "judged", judge=True)
    assert conversations > 0 and judgements > 0
    assert started["Judging.conversation"] == conversations
