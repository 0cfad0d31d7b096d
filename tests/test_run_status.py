"""A run's state from its records and why its session stopped: a stop that left planned
work undone is what the state says; one that came when nothing was left to start (the
work in flight finished in its grace period) leaves a whole run, and the state says that."""

from __future__ import annotations

from typing import Any

import msgspec

from vera.records import ModelSpec, RunManifest
from vera.report.shared._outcome import run_status
from vera.store import ConversationHead, JudgementHead

VERSION = {"name": "x", "version": "1", "path": "x", "sha256": "0" * 64}


def manifest(planned: int, **fields: Any) -> RunManifest:
    return msgspec.convert(
        {
            "vera_version": "0",
            "run_id": "r",
            **{k: VERSION for k in ("rubric", "personas", "user_prompts", "judge_prompts")},
            "config_sha256": "0",
            "config": {},
            "chatbots": [],
            "user_agents": [],
            "judges": [
                msgspec.to_builtins(ModelSpec(ref="judge", provider="p", protocol="openai", model="m"))
            ],
            "judge_instances": 1,
            "seeds": [1],
            "offline": False,
            "created_at": "",
            "updated_at": "",
            "jobs_planned": planned,
            **fields,
        },
        RunManifest,
    )


def records(done: int, judged: int) -> tuple[dict[str, ConversationHead], dict[str, JudgementHead]]:
    convs = {
        f"c{i}": ConversationHead(
            id=f"c{i}", chatbot="b", user_agent="u", persona="p", risk="None", seed=1, replicate=1
        )
        for i in range(done)
    }
    judgements = {
        f"j{i}": JudgementHead(
            id=f"j{i}", conversation_id=f"c{i}", judge="judge", instance=1, status="complete"
        )
        for i in range(judged)
    }
    return convs, judgements


def test_an_interrupt_that_left_work_undone_is_interrupted() -> None:
    convs, judgements = records(3, 2)
    status = run_status(manifest(4), convs, judgements, stopped="interrupted (SIGINT)", allow_failures=0)
    assert (status.state, status.exit_code) == ("interrupted", 130)
    assert status.summary.startswith("by SIGINT; 3 of 4 conversations complete")


def test_a_stop_when_nothing_was_left_to_do_leaves_a_complete_run() -> None:
    convs, judgements = records(4, 4)
    for stopped in ("interrupted (SIGINT)", "budget reached: $1.00 of $1.00 spent; continue: vera run"):
        status = run_status(manifest(4), convs, judgements, stopped=stopped, allow_failures=0)
        assert (status.state, status.exit_code) == ("complete", 0), stopped
        assert (
            status.summary == "4 of 4 conversations complete, 0 failed; 4 of 4 judgements complete, 0 failed"
        )


def test_a_fatal_error_that_failed_every_job_keeps_its_reason() -> None:
    convs, _ = records(0, 0)
    failed = {
        f"c{i}": ConversationHead(
            id=f"c{i}", chatbot="b", user_agent="u", persona="p", risk="None", seed=1, status="failed"
        )
        for i in range(4)
    }
    status = run_status(manifest(4), convs | failed, {}, stopped="[bot] HTTP 401", allow_failures=0)
    assert (status.state, status.exit_code) == ("stopped", 3)
    assert status.summary.startswith("[bot] HTTP 401; 0 of 4 conversations complete, 4 failed")


def test_a_budget_stop_with_judgements_missing_says_budget_reached_and_how_to_go_on() -> None:
    convs, judgements = records(4, 3)
    stopped = "budget reached: $0.98 of $1.00 spent; continue with a larger budget: vera run --resume r --max-cost 2"
    status = run_status(manifest(4), convs, judgements, stopped=stopped, allow_failures=0)
    assert (status.state, status.exit_code) == ("budget", 3)
    assert status.line() == (
        "status: stopped: budget reached — $0.98 of $1.00 spent; 4 of 4 conversations complete, 0 failed; "
        "3 of 4 judgements complete, 0 failed; continue with a larger budget: vera run --resume r "
        "--max-cost 2 (exit code 3)"
    )


def test_a_partial_merge_stays_partial_even_with_nothing_left_in_its_shards() -> None:
    convs, judgements = records(2, 2)
    status = run_status(
        manifest(2, missing_shards=["2/2"]),
        convs,
        judgements,
        stopped="interrupted (SIGINT)",
        allow_failures=0,
    )
    assert status.state == "interrupted" and status.missing_shards == ["2/2"]


def test_a_stop_after_max_wait_says_it_waited_for_batches_and_where_they_are() -> None:
    convs, judgements = records(4, 1)
    stopped = "waited for batches: 2h of --max-wait 2h; the pending batches stay in batches.jsonl, a resume polls them"
    status = run_status(manifest(4), convs, judgements, stopped=stopped, allow_failures=0)
    assert (status.state, status.exit_code) == ("waited", 3)
    assert status.line() == (
        "status: stopped: waited for batches — waited 2h of --max-wait 2h; 4 of 4 conversations complete, "
        "0 failed; 1 of 4 judgements complete, 0 failed; the pending batches stay in batches.jsonl, "
        "a resume polls them (exit code 3)"
    )
    # a wait that ended as the last batch came back leaves a whole run
    done = run_status(manifest(4), *records(4, 4), stopped=stopped, allow_failures=0)
    assert (done.state, done.exit_code) == ("complete", 0)
