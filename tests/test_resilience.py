"""Nothing lost, nothing twice, same seed same result: fault injection, SIGKILL and
resume, graceful stop, budget, reproducibility, sharding."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from vera.app import RunOptions, execute_run
from vera.app import scored as score
from vera.cli._main import main
from vera.store import BodyReader

from .conftest import ROOT
from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config
from .test_call_bodies import assert_one_body_per_call


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("SWEEP_TEST_KEY", KEY)


def jsonl(path: Path) -> list[dict]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


def card_without_volatile(run_dir: Path) -> dict:
    """The card minus what legitimately differs between two runs of one sweep: the run
    id (the directory name) and the money actually spent (which includes work in flight
    when a run was killed)."""
    card = json.loads((run_dir / "card.json").read_text())
    card.pop("run_id")
    card.pop("accounting")
    return card


def vera_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "vera", *args]


async def test_fault_injection_every_job_completes_or_fails_with_a_reason_never_twice(tmp_path):
    faults = Faults(
        rate_429=0.10,
        rate_5xx=0.05,
        rate_timeout=0.02,
        rate_malformed=0.01,
        rate_empty=0.01,
        timeout_delay=0.4,
        seed=11,
        fail_user_for="Mateus",
        fail_judge_for="Ethan",
    )
    with SweepServer(faults=faults) as server:
        cfg = write_sweep_config(
            tmp_path,
            server.base_url,
            personas=6,
            seeds="[1, 2]",
            max_retries=2,
            timeout_s=0.2,
            extra="retry_base_delay_s = 0.01\nretry_max_delay_s = 0.05",
        )
        out = tmp_path / "run"
        outcome = await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))
    assert set(server.injected) == {"429", "5xx", "timeout", "malformed", "empty"}, server.injected
    convs = jsonl(out / "conversations.jsonl")
    planned = json.loads((out / "manifest.json").read_text())["jobs_planned"]
    assert planned == 12
    last = {c["id"]: c for c in convs}
    assert len(last) == planned  # every job is accounted for
    complete_ids = [c["id"] for c in convs if c["status"] == "complete"]
    assert len(complete_ids) == len(set(complete_ids))  # never recorded complete twice
    for c in last.values():
        assert c["status"] in ("complete", "failed")
        if c["status"] == "failed":
            assert c["error"] and ("Error" in c["error"])
    judgements = jsonl(out / "judgements.jsonl")
    jdone = [j["id"] for j in judgements if j["status"] == "complete"]
    assert len(jdone) == len(set(jdone))
    judged = {j["conversation_id"] for j in judgements}
    assert judged == {i for i, c in last.items() if c["status"] == "complete"}
    for j in judgements:
        if j["status"] == "failed":
            assert j["error"]
    card = msgspec.to_builtins(score(outcome).card)
    assert card["counts"]["conversations_failed"] == sum(c["status"] == "failed" for c in last.values())
    assert card["counts"]["judgements_failed"] == sum(
        j["status"] == "failed" for j in {j["id"]: j for j in judgements}.values()
    )
    failed_personas = {c["persona"] for c in last.values() if c["status"] == "failed"}
    assert "Mateus" in failed_personas  # every attempt failed: recorded as failed, with the reason
    assert "503" in next(c["error"] for c in last.values() if c["persona"] == "Mateus")
    failed_about = {last[j["conversation_id"]]["persona"] for j in judgements if j["status"] == "failed"}
    assert "Ethan" in failed_about
    # failed work is kept out of the scores: only complete judgements of complete conversations count
    scored = {j["conversation_id"] for j in judgements if j["status"] == "complete"}
    assert sum(b.get("n_conversations", 0) for b in card["chatbots"]) == len(scored)
    calls = jsonl(out / "calls.jsonl")
    assert sum(c["http_429"] for c in calls) >= 1 and any(c["attempts"] > 1 for c in calls)


def recorded_response_ids(run_dir: Path) -> set[str]:
    """The answers the run kept: its call bodies answer a resume (vera.clients.replay);
    a default run keeps no cache.sqlite."""
    assert not (run_dir / "cache.sqlite").exists()
    with BodyReader(run_dir) as reader:
        ids = {b.response.raw_id for b in reader.all() if b.response is not None}
    return {i for i in ids if i}


def _wait_for_lines(path: Path, n: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        if proc.poll() is not None:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {n} lines")


@pytest.mark.slow
def test_sigkill_at_several_points_then_resume_gives_the_uninterrupted_card(tmp_path):
    env = {**os.environ, "SWEEP_TEST_KEY": KEY}
    with SweepServer() as reference_server:
        cfg_a = write_sweep_config(tmp_path / "a", reference_server.base_url, personas=6)
        subprocess.run(
            vera_cmd("run", "--config", str(cfg_a), "--out", str(tmp_path / "A"), "--quiet"),
            check=True,
            env=env,
            capture_output=True,
            timeout=300,
        )
    with SweepServer() as server:
        cfg_b = write_sweep_config(tmp_path / "b", server.base_url, personas=6)
        out = tmp_path / "B"
        kills = unfolded = 0
        for calls_before_kill in (5, 60, 150):
            proc = subprocess.Popen(
                vera_cmd("run", "--config", str(cfg_b), "--out", str(out), "--quiet"),
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            _wait_for_lines(out / "calls.jsonl", calls_before_kill, proc)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait(30)
            # Killed: the call bodies are left without their closing index (the next run
            # goes on after their last whole record).
            unfolded += not (out / "call_bodies.vlog").read_bytes().endswith(b"VBINDEX\n")
        assert kills >= 2 and unfolded >= 1
        done = subprocess.run(
            vera_cmd("run", "--config", str(cfg_b), "--resume", str(out), "--quiet"),
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        recorded = recorded_response_ids(out)
        for key, ids in server.responses.items():
            # a request may be repeated only if its earlier answers were never recorded
            assert not set(ids[:-1]) & recorded, f"recorded work requested again: {key[:12]}"
    assert card_without_volatile(tmp_path / "A") == card_without_volatile(out)
    convs = jsonl(out / "conversations.jsonl")
    assert len([c for c in convs if c["status"] == "complete"]) == len({c["id"] for c in convs}) == 12
    # Every call in calls.jsonl has its body, once, the bodies closed with their index.
    assert_one_body_per_call(out)
    assert (out / "call_bodies.vlog").read_bytes().endswith(b"VBINDEX\n")


@pytest.mark.slow
def test_interrupt_stops_gracefully_and_resume_finishes(tmp_path):
    env = {**os.environ, "SWEEP_TEST_KEY": KEY}
    with SweepServer(faults=Faults(latency=0.03)) as server:
        cfg = write_sweep_config(
            tmp_path, server.base_url, personas=8, max_concurrency=2, extra="grace_s = 5"
        )
        out = tmp_path / "run"
        proc = subprocess.Popen(
            vera_cmd("run", "--config", str(cfg), "--out", str(out), "--quiet"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_for_lines(out / "conversations.jsonl", 1, proc)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stderr
        assert "no new work will start" in stderr and f"vera run --resume {out}" in stderr + stdout
        partial = {c["id"] for c in jsonl(out / "conversations.jsonl") if c["status"] == "complete"}
        assert 1 <= len(partial) < 16
        done = subprocess.run(
            vera_cmd("run", "--config", str(cfg), "--resume", str(out), "--quiet"),
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    final = {c["id"] for c in jsonl(out / "conversations.jsonl") if c["status"] == "complete"}
    assert partial <= final and len(final) == 16


async def test_budget_stops_before_the_limit_leaving_work_undone_not_failed(tmp_path):
    with SweepServer() as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=10, max_concurrency=2, max_tokens=512)
        out = tmp_path / "run"
        outcome = await execute_run(
            RunOptions(config_path=str(cfg), out=str(out), progress=False, max_cost=0.05)
        )
    assert outcome.result.stopped and outcome.result.stopped.startswith("budget reached: $0.0")
    spent = sum(c["cost_usd"] + c["uncertain_usd"] for c in jsonl(out / "calls.jsonl"))
    convs = jsonl(out / "conversations.jsonl")
    assert 0 < len(convs) < 20 and all(c["status"] == "complete" for c in convs)
    assert spent <= 0.05  # nothing is sent whose worst case would pass the budget
    assert outcome.status is not None and outcome.status.state == "budget" and outcome.exit_code == 3
    assert "--max-cost 0.1" in outcome.status.summary


def offline(*args: str) -> None:
    r = CliRunner().invoke(
        main, ["run", "--config", str(ROOT / "configs" / "offline.toml"), "--quiet", *args]
    )
    assert r.exit_code == 0, r.output


def test_same_seeds_same_card_different_seeds_differ(tmp_path):
    offline("--out", str(tmp_path / "a"), "--seeds", "1,2", "--limit-personas", "20")
    offline("--out", str(tmp_path / "b"), "--seeds", "1,2", "--limit-personas", "20")
    offline("--out", str(tmp_path / "c"), "--seeds", "3,4", "--limit-personas", "20")
    a, b, c = (json.loads((tmp_path / x / "card.json").read_text()) for x in "abc")
    for card in (a, b, c):
        card.pop("run_id")
    assert a == b
    assert a != c
    conv_a = sorted(
        x["turns"] == y["turns"]
        for x, y in zip(
            jsonl(tmp_path / "a" / "conversations.jsonl"),
            jsonl(tmp_path / "b" / "conversations.jsonl"),
            strict=True,
        )
    )
    assert all(conv_a)


def test_shards_merge_into_the_unsharded_card(tmp_path):
    offline("--out", str(tmp_path / "whole"), "--limit-personas", "12")
    offline("--out", str(tmp_path / "s1"), "--limit-personas", "12", "--shard", "1/2")
    offline("--out", str(tmp_path / "s2"), "--limit-personas", "12", "--shard", "2/2")
    n1 = len(jsonl(tmp_path / "s1" / "conversations.jsonl"))
    n2 = len(jsonl(tmp_path / "s2" / "conversations.jsonl"))
    assert n1 + n2 == 24 and n1 and n2
    r = CliRunner().invoke(
        main, ["merge", str(tmp_path / "merged"), str(tmp_path / "s1"), str(tmp_path / "s2")]
    )
    assert r.exit_code == 0, r.output
    whole = json.loads((tmp_path / "whole" / "card.json").read_text())
    merged = json.loads((tmp_path / "merged" / "card.json").read_text())
    for card in (whole, merged):
        card.pop("run_id")
    assert whole == merged
    offline("--out", str(tmp_path / "seed9"), "--limit-personas", "12", "--shard", "2/2", "--seed", "9")
    bad = CliRunner().invoke(
        main, ["merge", str(tmp_path / "bad"), str(tmp_path / "s1"), str(tmp_path / "seed9")]
    )
    assert bad.exit_code == 1 and "not a shard of the same sweep" in bad.output
