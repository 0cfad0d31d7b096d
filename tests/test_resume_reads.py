"""A resume skips finished work from the run store's index: a job done and judged before
is counted without its record being read; only a conversation still to be judged is
read back, by its place."""

from __future__ import annotations

from vera.app import RunFacts
from vera.clients.pool import ClientPool
from vera.engine import Inputs, plan_sweep, run_sweep
from vera.inputs._config import load_config
from vera.inputs._profiles import load_profiles
from vera.records import Conversation, Judgement
from vera.standins import StandIns
from vera.store._writer import JUDGEMENTS, RunStore

from .conftest import ROOT


class CountingStore(RunStore):
    """The real store, counting the records it reads back whole."""

    reads = 0

    def read_conversation(self, job_id: str) -> Conversation:
        self.reads += 1
        return super().read_conversation(job_id)

    def read_judgement(self, job_id: str) -> Judgement:
        self.reads += 1
        return super().read_judgement(job_id)


def stand_in_facts(inputs: Inputs, store: RunStore) -> RunFacts:
    # The offline judge looks the conversation up itself; those reads are the stand-in's,
    # not the engine's resume reads that these tests count.
    return RunFacts(inputs, lambda cid: RunStore.read_conversation(store, cid))


async def sweep_once(run_dir, store_type=RunStore):
    cfg = load_config(str(ROOT / "configs" / "offline.toml"))
    cfg.persona_limit = 4
    inputs = Inputs.load(cfg)
    store = store_type(run_dir)
    facts = stand_in_facts(inputs, store)
    async with ClientPool(load_profiles(cfg.path(cfg.providers)), stand_ins=StandIns(facts)) as pool:
        sweep = plan_sweep(inputs, pool)
        facts.plan(sweep.jobs)
        result = await run_sweep(sweep, store, pool, max_concurrency=4)
    store.close()
    return store, result, len(sweep.jobs)


async def test_a_resume_of_finished_work_reads_no_record(tmp_path):
    run = tmp_path / "run"
    _, first, jobs = await sweep_once(run)
    assert first.conversations == jobs == first.judgements > 0
    store, again, _ = await sweep_once(run, CountingStore)
    assert (again.conversations, again.judgements) == (0, 0)
    assert again.conversations_reused == jobs == again.judgements_reused
    assert store.reads == 0


async def test_a_conversation_left_unjudged_is_read_back_by_place_and_judged(tmp_path):
    run = tmp_path / "run"
    _, _, jobs = await sweep_once(run)
    # Lose the last judgement (as if the run had been stopped before it was written).
    path = run / JUDGEMENTS
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))
    store, again, _ = await sweep_once(run, CountingStore)
    assert (again.conversations, again.judgements) == (0, 1)
    assert again.conversations_reused == jobs and again.judgements_reused == jobs - 1
    assert store.reads == 1  # that one conversation, nothing else


async def test_judging_a_run_by_id_reads_each_conversation_only_to_judge_it(tmp_path):
    from vera.engine import judge_conversations

    cfg = load_config(str(ROOT / "configs" / "offline.toml"))
    cfg.persona_limit = 3
    inputs = Inputs.load(cfg)

    async def judge_run() -> tuple[CountingStore, int]:
        store = CountingStore(tmp_path / "run")
        facts = stand_in_facts(inputs, store)
        async with ClientPool(load_profiles(cfg.path(cfg.providers)), stand_ins=StandIns(facts)) as pool:
            sweep = plan_sweep(inputs, pool)
            ids = [cid for cid in store.conversations if store.conversation_done(cid)]
            result = await judge_conversations(sweep, store, pool, ids, max_concurrency=2)
        store.close()
        return store, result.judgements

    store = RunStore(tmp_path / "run")
    facts = stand_in_facts(inputs, store)
    async with ClientPool(load_profiles(cfg.path(cfg.providers)), stand_ins=StandIns(facts)) as pool:
        sweep = plan_sweep(inputs, pool, judge=False)  # simulate only, as `vera simulate` does
        facts.plan(sweep.jobs)
        simulated = await run_sweep(sweep, store, pool, max_concurrency=2)
    store.close()
    first, judged = await judge_run()
    assert judged == simulated.conversations == first.reads > 0
    again, judged = await judge_run()
    assert judged == 0 and again.reads == 0
