"""Asking ahead at the end of a sweep, end to end against a loopback server: it starts
only once no job is left to start, changes no answer or rating, never asks a question
twice, and every question it asked that no walk reached is counted on the judgement,
in the call log and on the card."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from vera.engine._sweep import Stop, SweepResult, _workers
from vera.inputs._config import JudgeConfig, RunConfig
from vera.records import Message

from .conftest import ROOT
from .fakes.sweep import KEY, SweepServer, write_sweep_config


class ChainJudge(SweepServer):
    """A judge that finds risk (D1, D2 Yes) and then answers No down every chain, except
    a Yes at S4 and at B3: those chains end there, one question before the way the
    walk would most likely go on."""

    def reply(self, model: str, messages: list[Message], key: str) -> str:
        if model != "judge":
            return super().reply(model, messages, key)
        prompt = messages[-1].content
        qid = next(q for q in ("D1", "D2", "S4", "B3", "") if prompt.startswith(f"Question {q} (") or not q)
        options = [o.strip() for o in prompt.split("Options: ", 1)[1].splitlines()[0].split("|")]
        answer = "Yes" if qid else ("No" if "No" in options else options[0])
        return orjson.dumps({"reasoning": "a chain judge", "answer": answer}).decode()


def run_sweep(tmp: Path, ask_ahead: str, *options: str) -> tuple[Path, ChainJudge]:
    with ChainJudge() as server:
        cfg = write_sweep_config(
            tmp, server.base_url, personas=4, max_concurrency=2, extra=f'[judge]\nask_ahead = "{ask_ahead}"'
        )
        out = tmp / "run"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "vera",
                "run",
                "--config",
                str(cfg),
                "--out",
                str(out),
                "--quiet",
                *options,
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "SWEEP_TEST_KEY": KEY},
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, server


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


@pytest.mark.slow
def test_asking_ahead_changes_calls_at_the_end_and_nothing_else(tmp_path: Path) -> None:
    early, early_server = run_sweep(tmp_path / "tail", "tail")
    plain, plain_server = run_sweep(tmp_path / "off", "off")

    # The same judgements: ids, answers, ratings (only the usage and the count differ).
    def judged(run: Path) -> dict[str, Any]:
        return {j["id"]: (j["answers"], j["ratings"], j["status"]) for j in jsonl(run / "judgements.jsonl")}

    assert judged(early) == judged(plain)
    assert all(j.get("unused_questions", 0) == 0 for j in jsonl(plain / "judgements.jsonl"))

    # 8 conversations, 2 workers: a worker takes a job after its last one is judged, so
    # the first 6 were judged before the last job was taken, and asked nothing ahead;
    # the last job's judging is all in the tail, where its S and B chains asked ahead.
    written = jsonl(early / "judgements.jsonl")
    assert len(written) == 8
    assert [j.get("unused_questions", 0) for j in written[:6]] == [0] * 6
    unused = sum(j.get("unused_questions", 0) for j in written)
    assert written[-1].get("unused_questions", 0) > 0

    # Nothing asked twice; every question asked ahead and not reached reached the server
    # once and is a call in the log; the card counts them.
    assert early_server.duplicates() == {}
    assert early_server.by_role["judge"] == plain_server.by_role["judge"] + unused
    judge_calls = sum(c["role"] == "judge" for c in jsonl(early / "calls.jsonl"))
    assert judge_calls == early_server.by_role["judge"]
    card = json.loads((early / "card.json").read_text())
    assert card["accounting"]["unused_judge_questions"] == unused
    assert "judge questions asked ahead and not needed" in (early / "card.md").read_text()
    assert card["chatbots"] == json.loads((plain / "card.json").read_text())["chatbots"]


async def test_the_tail_begins_when_the_last_job_is_taken() -> None:
    seen: list[tuple[int, bool]] = []
    tail = {"reached": False}

    async def work(item: int) -> None:
        seen.append((item, tail["reached"]))

    def last() -> None:
        tail["reached"] = True

    await _workers(2, list(range(5)), work, SweepResult(), Stop(), on_last=last)
    assert sorted(seen) == [(0, False), (1, False), (2, False), (3, False), (4, True)]


def test_asking_ahead_leaves_the_results_fingerprint_alone() -> None:
    # It changes which calls are made, never an answer: a run resumed with it turned
    # off (or made before it existed) is the same run.
    assert RunConfig().fingerprint() == RunConfig(judge=JudgeConfig(ask_ahead="off")).fingerprint()
    assert RunConfig().fingerprint() != RunConfig(judge=JudgeConfig(max_attempts=5)).fingerprint()


def test_asking_ahead_is_on_live_and_off_in_batch_mode_unless_chosen() -> None:
    # In batch mode there is no latency to buy with it, only unused questions to pay for.
    assert JudgeConfig().asks_ahead() and JudgeConfig(ask_ahead="auto", mode="live").asks_ahead()
    assert not JudgeConfig(mode="batch").asks_ahead()
    assert JudgeConfig(mode="batch", ask_ahead="tail").asks_ahead()
    assert not JudgeConfig(mode="live", ask_ahead="off").asks_ahead()


@pytest.mark.slow
def test_a_question_asked_ahead_and_answered_by_the_cache_is_not_counted_as_paid(tmp_path: Path) -> None:
    # The same sweep twice on one shared cache: the rerun's judge questions, asked ahead
    # or not, are answered by the cache, so none of its unused questions cost anything;
    # only one the first run never asked would reach the server (and be counted).
    cache = tmp_path / "cache"
    first, _ = run_sweep(tmp_path / "first", "tail", "--cache-dir", str(cache))
    assert sum(j.get("unused_questions", 0) for j in jsonl(first / "judgements.jsonl")) > 0
    rerun, rerun_server = run_sweep(tmp_path / "rerun", "tail", "--cache-dir", str(cache))

    unused = sum(j.get("unused_questions", 0) for j in jsonl(rerun / "judgements.jsonl"))
    sent = rerun_server.by_role["judge"]
    assert unused == sent  # every unused question counted reached the server, and no other
    judge_calls = [c for c in jsonl(rerun / "calls.jsonl") if c["role"] == "judge"]
    assert sum(not c.get("cached", False) for c in judge_calls) == sent
    card = json.loads((rerun / "card.json").read_text())
    assert card["accounting"]["unused_judge_questions"] == unused
    if not unused:
        assert "asked ahead and not needed" not in (rerun / "card.md").read_text()
