"""`[judge] mode = "batch"`: the judge's questions through OpenAI's Batch API, wave by wave,
against a loopback Batch API that keeps the documented rules (tests/fakes/batch.py).

Same ratings as live mode on the same deterministic server, half the judge's price,
expired requests asked again (never a failure of the chatbot), and a run killed with
batches pending resumes by polling them, submitting no request twice."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import pytest

from vera.app import RunOptions, execute_run
from vera.app import scored as score
from vera.clients.batching import split_files
from vera.report.shared._numbers import num
from vera.store import recorded_spend

from .conftest import REFERENCE
from .fakes.batch import AnthropicBatchFake, BatchSweepServer
from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config

BATCH = '[judge]\nmode = "batch"\nbatch_poll_s = 0.02\nbatch_collect_s = 0.05\n'


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("SWEEP_TEST_KEY", KEY)


def jsonl(path: Path) -> list[dict]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


def verdicts(run_dir: Path) -> dict[str, tuple]:
    """Every judgement's answers and ratings, by judgement id."""
    return {
        j["id"]: (
            j["status"],
            [(a["question_id"], a["answer"]) for a in j["answers"]],
            [(r["dimension"], r["rating"]) for r in j["ratings"]],
        )
        for j in jsonl(run_dir / "judgements.jsonl")
    }


def accounting_cells(card_md: str) -> dict[str, dict[str, str]]:
    """card.md's model-calls table: row label -> column header -> cell."""
    lines = card_md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Model calls |"))
    header = [h.strip() for h in lines[start].strip("|").split("|")]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(header[1:], cells[1:], strict=True))
    return rows


def judge_cost(run_dir: Path) -> tuple[float, set[str]]:
    calls = [c for c in jsonl(run_dir / "calls.jsonl") if c["role"] == "judge"]
    return sum(c["cost_usd"] for c in calls), {c.get("tier", "standard") for c in calls}


CARDS: dict[Path, dict] = {}


async def _run(tmp: Path, server: SweepServer, extra: str = "") -> Path:
    cfg = write_sweep_config(tmp, server.base_url, personas=3, seeds="[1]", extra=extra)
    out = tmp / "run"
    outcome = await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))
    CARDS[out] = msgspec.to_builtins(score(outcome).card)
    return out


async def test_batch_mode_rates_as_live_mode_does_at_half_the_judge_price(tmp_path):
    with SweepServer() as live_server:
        live = await _run(tmp_path / "live", live_server)
    with BatchSweepServer(polls_to_complete=3) as server:
        batch = await _run(tmp_path / "batch", server, BATCH)
    assert server.violations == []
    assert server.created, "no batch was created"
    assert all(n == 1 for n in server.submitted.values())  # no request in two batches
    assert verdicts(batch) == verdicts(live)
    assert all(v[0] == "complete" for v in verdicts(batch).values())
    # the mode is not a result: the same fingerprint, so either mode resumes the other's run
    fingerprint = [json.loads((d / "manifest.json").read_text())["config_sha256"] for d in (live, batch)]
    assert fingerprint[0] == fingerprint[1]
    # every judge call went through a batch, each at half the live price
    live_cost, live_tiers = judge_cost(live)
    batch_cost, batch_tiers = judge_cost(batch)
    assert live_tiers == {"standard"} and batch_tiers == {"batch"}
    assert batch_cost == pytest.approx(live_cost * 0.5)
    # the card splits the spend by role and tier
    tiers = CARDS[batch]["accounting"]["by_role_tier"]
    assert set(tiers) == {"chatbot/standard", "user_agent/standard", "judge/batch"}
    assert tiers["judge/batch"]["cost_usd"] == pytest.approx(round(batch_cost, 4))
    # ... and says what live mode would have cost: every batched call at its live price
    judge_calls = [c for c in jsonl(batch / "calls.jsonl") if c["role"] == "judge"]
    assert all(c["standard_cost_usd"] == pytest.approx(2 * c["cost_usd"]) for c in judge_calls)
    assert tiers["judge/batch"]["live_cost_usd"] == pytest.approx(round(live_cost, 4), abs=1e-4)
    # a bucket of live calls costs live what it cost, in card.json as in card.md's column
    assert tiers["chatbot/standard"]["live_cost_usd"] == tiers["chatbot/standard"]["cost_usd"]
    total = CARDS[batch]["accounting"]["total"]
    assert total["live_cost_usd"] == pytest.approx(total["cost_usd"] + round(batch_cost, 4), abs=2e-4)
    assert CARDS[live]["accounting"]["total"]["live_cost_usd"] is None
    card_md = (batch / "card.md").read_text()
    said = re.search(r"the same calls would have cost \$([0-9.]+), (\d+) % less", card_md)
    assert said is not None, "the card does not say what live mode would have cost"
    assert float(said[1]) == pytest.approx(total["live_cost_usd"], rel=0.01)
    assert int(said[2]) == round(100 * (1 - total["cost_usd"] / total["live_cost_usd"]))
    assert "Live-mode cost (USD)" in card_md
    assert "would have cost" not in (live / "card.md").read_text()
    # card.md's model-calls table and card.json say the same of every cost
    shown = accounting_cells(card_md)
    acc = CARDS[batch]["accounting"]
    buckets = {f"role: {k}": v for k, v in acc["by_role"].items()}
    buckets |= {f"provider: {k}": v for k, v in acc["by_provider"].items()}
    buckets |= {f"role/tier: {k}": v for k, v in acc["by_role_tier"].items()} | {"Total": acc["total"]}
    assert set(shown) == set(buckets)
    for label, bucket in buckets.items():
        for key, header in (("cost_usd", "Cost (USD)"), ("live_cost_usd", "Live-mode cost (USD)")):
            assert bucket[key] is not None and shown[label][header] == num(bucket[key]), (label, key)
    assert set(CARDS[live]["accounting"]["by_role_tier"]) == {
        "chatbot/standard",
        "user_agent/standard",
        "judge/standard",
    }
    journal = jsonl(batch / "batches.jsonl")
    assert [e["batch_id"] for e in journal if e["event"] == "created"] == [b for b, _ in server.created]
    assert {e["status"] for e in journal if e["event"] == "ended"} == {"completed"}
    # the rubric walk is one question at a time: more than one wave
    assert len(server.created) > 1
    # each batch's life is in the event log: created, then each status a poll found
    events = jsonl(batch / "events.jsonl")
    created = [e["batch_id"] for e in events if e.get("event") == "batch_created"]
    assert created == [b for b, _ in server.created]
    first = [e["status"] for e in events if e.get("event") == "batch_state" and e["batch_id"] == created[0]]
    assert first == ["validating", "in_progress", "completed"]


async def test_the_simulated_user_check_is_batched_with_the_judge(tmp_path):
    with BatchSweepServer(polls_to_complete=1) as server:
        out = await _run(tmp_path / "batch", server, BATCH + "check_users = true\n")
    assert server.violations == []
    judgements = jsonl(out / "judgements.jsonl")
    checks = [j["user_check"] for j in judgements]
    assert checks and all(c["status"] == "complete" and c["checker"] == "fake-judge" for c in checks)
    assert any(c["flags"] for c in checks) and not all(c["flags"] for c in checks)
    # Every judge call, the checks included, went through a batch at the batch tier.
    judge_calls = [c for c in jsonl(out / "calls.jsonl") if c["role"] == "judge"]
    asked = sum(sum(not a["auto"] for a in j["answers"]) + j["unused_questions"] for j in judgements)
    assert len(judge_calls) == asked + len(judgements)
    assert {c["tier"] for c in judge_calls} == {"batch"}
    realism = CARDS[out]["realism"]
    assert realism["checkers"] == ["fake-judge"] and realism["by_user_agent"][0]["by_model"] == len(
        judgements
    )
    flagged = sum(bool(c["flags"]) for c in checks)
    assert realism["by_user_agent"][0]["flagged"] == flagged


async def test_expired_requests_go_to_the_next_wave_and_are_never_a_failure(tmp_path):
    with SweepServer() as live_server:
        live = await _run(tmp_path / "live", live_server)
    with BatchSweepServer(polls_to_complete=1, expire_rate=0.3) as server:
        batch = await _run(tmp_path / "batch", server, BATCH)
    assert server.expired, "nothing expired: the test proves nothing"
    assert server.violations == []
    assert verdicts(batch) == verdicts(live)
    # an expired request is submitted again once, in a later batch, and answered there
    assert all(server.submitted[cid] == 2 for cid in server.expired)
    journal = jsonl(batch / "batches.jsonl")
    assert "expired" in {e["status"] for e in journal if e["event"] == "ended"}
    # counted in the event log
    logged = [e for e in jsonl(batch / "events.jsonl") if e.get("event") == "batches"]
    assert len(logged) == 1 and logged[0]["requeued"] == len(server.expired) and logged[0]["live"] == 0


async def test_batches_failed_for_a_reason_that_passes_requeue_then_go_live_with_the_same_ratings(
    tmp_path, capsys
):
    with SweepServer() as live_server:
        live = await _run(tmp_path / "live", live_server)
    # Every batch fails validation as Azure's do when the enqueued tokens are used up:
    # `token_limit_exceeded` on every line, which a later batch may get past.
    with BatchSweepServer(
        polls_to_complete=1, fail_batches=10**6, fail_code="token_limit_exceeded"
    ) as server:
        batch = await _run(tmp_path / "batch", server, BATCH)
    assert server.violations == []
    assert verdicts(batch) == verdicts(live)
    assert all(v[0] == "complete" for v in verdicts(batch).values())
    logged = next(e for e in jsonl(batch / "events.jsonl") if e.get("event") == "batches")
    assert logged["live"] > 0 and logged["requeued"] == 2 * logged["live"]
    assert logged["failed"] == len(server.batches) and logged["refused"] == 0
    # the provider's reason, in the event log and on the console, for every failed batch
    failed = [e for e in jsonl(batch / "events.jsonl") if e.get("event") == "batch_failed"]
    assert [e["batch_id"] for e in failed] == list(server.batches)
    assert all(
        e["level"] == "warning" and "token_limit_exceeded" in e["reason"] and e["resent"] for e in failed
    )
    assert "failed: token_limit_exceeded: refused: token_limit_exceeded" in capsys.readouterr().err
    # each request that went live is one live call, standing in for a batched one, counted on the card
    judge = [c for c in jsonl(batch / "calls.jsonl") if c["role"] == "judge"]
    assert {c["tier"] for c in judge} == {"standard"} and all(c["fallback"] == "batch" for c in judge)
    assert CARDS[batch]["accounting"]["by_role"]["judge"]["fallbacks"] == len(judge) == logged["live"]
    assert "asked at the standard tier when flex or a batch gave no answer" in (batch / "card.md").read_text()


async def test_a_batch_refused_as_it_is_is_not_sent_again_and_stops_the_run_with_the_reason(tmp_path, capsys):
    # The server takes one request per file: a batch of more fails validation with
    # `too_many_tasks`, and would fail again as it is, so none is sent again.
    with BatchSweepServer(polls_to_complete=1, max_requests=1) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=3, seeds="[1]", extra=BATCH)
        out = tmp_path / "run"
        outcome = await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))
    assert any("over 1" in v for v in server.violations)
    assert outcome.exit_code == 3
    assert len(server.refused) == len(set(server.refused)), "a refused request was sent again"
    assert not [c for c in jsonl(out / "calls.jsonl") if c["role"] == "judge" and c["tier"] == "standard"]
    failed = [e for e in jsonl(out / "events.jsonl") if e.get("event") == "batch_failed"]
    assert failed and not failed[0]["resent"] and "too_many_tasks" in failed[0]["reason"]
    assert "too_many_tasks" in capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text())
    assert "too_many_tasks" in manifest["stopped"]


def test_a_wave_is_cut_into_files_within_the_request_and_size_limits():
    lines = {f"id{i}": b"x" * 9 for i in range(7)}  # 10 bytes a line with its newline
    assert split_files(lines, 3, 1000) == [["id0", "id1", "id2"], ["id3", "id4", "id5"], ["id6"]]
    assert split_files(lines, 100, 25) == [["id0", "id1"], ["id2", "id3"], ["id4", "id5"], ["id6"]]
    assert split_files({"big": b"x" * 50}, 10, 25) == [["big"]]


async def test_the_fake_refuses_files_that_break_the_batch_rules():
    with BatchSweepServer() as server:
        headers = {"Authorization": f"Bearer {KEY}"}

        def line(cid: str, model: str) -> bytes:
            body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
            return json.dumps(
                {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body}
            ).encode()

        async with aiohttp.ClientSession() as http:

            async def status_of(content: bytes, endpoint: str = "/v1/chat/completions") -> str:
                form = aiohttp.FormData()
                form.add_field("purpose", "batch")
                form.add_field("file", content, filename="in.jsonl")
                async with http.post(f"{server.base_url}/files", data=form, headers=headers) as r:
                    file_id = (await r.json())["id"]
                create = {"input_file_id": file_id, "endpoint": endpoint, "completion_window": "24h"}
                async with http.post(f"{server.base_url}/batches", json=create, headers=headers) as r:
                    batch_id = (await r.json())["id"]
                async with http.get(f"{server.base_url}/batches/{batch_id}", headers=headers) as r:
                    return (await r.json())["status"]

            assert await status_of(line("a", "judge") + b"\n" + line("b", "judge")) == "validating"
            assert await status_of(line("a", "judge") + b"\n" + line("a", "judge")) == "failed"
            assert await status_of(line("a", "judge") + b"\n" + line("b", "user")) == "failed"
            assert await status_of(line("a", "judge"), endpoint="/v1/embeddings") == "failed"
    assert any("duplicate custom_id" in v for v in server.violations)
    assert any("more than one model" in v for v in server.violations)


def test_batch_mode_for_a_judge_without_a_batch_api_is_one_line_error(tmp_path):
    cfg = write_sweep_config(tmp_path, "http://127.0.0.1:9/v1", personas=1, seeds="[1]", extra=BATCH)
    text = cfg.read_text().replace('judges = ["fake-judge"]', 'judges = ["offline/lexical-judge"]')
    cfg.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "vera", "run", "--config", str(cfg), "--quiet"],
        env={**os.environ, "SWEEP_TEST_KEY": KEY},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert 'mode = "batch"' in done.stderr and "offline" in done.stderr


def kill_while_a_batch_is_pending(cmd: list[str], env: dict[str, str], server: Any, out: Path) -> None:
    """Start `cmd` (a `vera run`), SIGKILL it once the server has been polled for its
    first batch, and check the run's journal holds that batch as pending, none ended."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 120
    # Polled means journaled: the client writes the journal before its first poll.
    while not (server.created and server.polls[server.created[0][0]] >= 1):
        assert proc.poll() is None, "the run ended before a batch was pending"
        assert time.monotonic() < end, "no batch was ever created"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    pending = [e for e in jsonl(out / "batches.jsonl") if e["event"] == "created"]
    assert pending and not [e for e in jsonl(out / "batches.jsonl") if e["event"] == "ended"]


@pytest.mark.slow
def test_killed_with_batches_pending_resumes_by_polling_and_submits_nothing_twice(tmp_path):
    env = {**os.environ, "SWEEP_TEST_KEY": KEY}
    with BatchSweepServer(polls_to_complete=10**9) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=3, seeds="[1]", extra=BATCH)
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "vera", "run", "--config", str(cfg), "--out", str(out), "--quiet"]
        kill_while_a_batch_is_pending(cmd, env, server, out)
        before = len(server.created)
        server.polls_to_complete = 1
        done = subprocess.run(
            [sys.executable, "-m", "vera", "run", "--config", str(cfg), "--resume", str(out), "--quiet"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    assert server.violations == []
    # one submission per request: the pending batches were polled, not submitted again
    assert all(n == 1 for n in server.submitted.values()), server.submitted.most_common(3)
    assert len(server.created) > before
    final = verdicts(out)
    assert final and all(v[0] == "complete" for v in final.values())


def test_anthropic_message_batches_rate_as_live_messages_do(tmp_path, monkeypatch):
    from .clients import runs

    roles = dict.fromkeys(("chatbot", "user_agent", "judge"), "anthropic")
    (tmp_path / "live").mkdir()
    (tmp_path / "batch").mkdir()
    live = runs.run_roles(tmp_path / "live", roles, personas=3, max_turns=4)
    assert live.exit_code == 0, live.output
    monkeypatch.setattr(runs, "make_server", lambda protocol: AnthropicBatchFake(key=runs.KEY))
    batch = runs.run_roles(tmp_path / "batch", roles, personas=3, max_turns=4, config_extra=BATCH)
    assert batch.exit_code == 0, batch.output + batch.stderr
    server = batch.servers["anthropic"]
    assert isinstance(server, AnthropicBatchFake)
    assert server.violations == []
    assert server.created and all(n == 1 for n in server.submitted.values())
    assert verdicts(batch.out) == verdicts(live.out)
    judge_calls = [c for c in batch.jsonl("calls.jsonl") if c["role"] == "judge"]
    assert judge_calls and {c["tier"] for c in judge_calls} == {"batch"}
    # no judge question went live: every live Messages request was the chatbot's or the user's
    live_requests = [r for r in server.received if r.path == "/v1/messages"]
    assert not any(r.json.get("tools") for r in live_requests)


def test_a_budget_holds_each_batched_request_before_it_is_submitted(tmp_path):
    env = {**os.environ, "SWEEP_TEST_KEY": KEY}

    def vera(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "vera", *args], capture_output=True, text=True, env=env, timeout=300
        )

    with BatchSweepServer(polls_to_complete=1) as server:
        cfg = write_sweep_config(
            tmp_path,
            server.base_url,
            personas=4,
            seeds="[1]",
            extra=BATCH,
            prices=(10.0, 20.0),
            max_tokens=512,
        )
        out = tmp_path / "r"
        first = vera("run", "--config", str(cfg), "--out", str(out), "--quiet", "--max-cost", "0.5")
        assert first.returncode == 3, first.stdout + first.stderr
        assert "budget reached" in first.stdout
        assert recorded_spend(out)[0] <= 0.5
        # the budget ran out while the judge's questions were going out in batches
        assert "batch" in {c["tier"] for c in jsonl(out / "calls.jsonl") if c["role"] == "judge"}
        assert "failed" not in {j["status"] for j in jsonl(out / "judgements.jsonl")}
        done = vera("run", "--resume", str(out), "--quiet", "--max-cost", "100")
        assert done.returncode == 0, done.stdout + done.stderr
    assert server.violations == [] and all(n == 1 for n in server.submitted.values())
    assert all(v[0] == "complete" for v in verdicts(out).values()) and len(verdicts(out)) == 4


def test_batch_summary_names_pending_states_with_their_requests_then_ended_ones():
    from vera.clients.batching import BatchView, batch_summary

    pending = [
        BatchView(status="finalizing", requests=7),
        BatchView(status="in_progress", requests=300),
        BatchView(status="in_progress", requests=40),
    ]
    assert batch_summary(pending, {"completed": 3, "expired": 1}) == (
        "batches: 2 in progress (340 requests), 1 finalizing (7 requests), 3 completed, 1 expired"
    )
    assert batch_summary([], {}) == ""


async def test_the_progress_line_shows_each_batch_state_as_polls_find_it(tmp_path, monkeypatch, capsys):
    from vera.app import _progress, _session

    class EveryTick(_progress.RunProgress):  # a line on every refresh, many refreshes a second
        def __init__(self, **kwargs):
            super().__init__(every_s=0.0, refresh_per_second=200, **kwargs)

    monkeypatch.setattr(_session, "RunProgress", EveryTick)
    with BatchSweepServer(polls_to_complete=6) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=3, seeds="[1]", extra=BATCH)
        await execute_run(RunOptions(config_path=str(cfg), out=str(tmp_path / "run"), progress=True))
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("conversations ")]
    states = {part for line in lines for part in line.split(" · ") if part.startswith("batches: ")}
    assert any("in progress (" in s and "requests)" in s for s in states), states
    assert any("validating (" in s for s in states), states
    # the last line counts every batch the run created, all completed
    assert lines[-1].endswith(f"batches: {len(server.created)} completed"), lines[-1]


def test_max_wait_stops_as_resumable_and_the_resume_polls_the_same_batches(tmp_path):
    env = {**os.environ, "SWEEP_TEST_KEY": KEY}

    def vera(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "vera", *args], capture_output=True, text=True, env=env, timeout=300
        )

    with BatchSweepServer(polls_to_complete=1) as whole_server:
        cfg = write_sweep_config(
            tmp_path / "whole", whole_server.base_url, personas=3, seeds="[1]", extra=BATCH
        )
        whole = tmp_path / "whole" / "run"
        assert vera("run", "--config", str(cfg), "--out", str(whole), "--quiet").returncode == 0
    # Each batch completes only after 40 polls (0.8 s at 0.02 s a poll): 0.3 s of waiting stops the run.
    with BatchSweepServer(polls_to_complete=40) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=3, seeds="[1]", extra=BATCH)
        out = tmp_path / "run"
        first = vera("run", "--config", str(cfg), "--out", str(out), "--quiet", "--max-wait", "0.3")
        assert first.returncode == 3, first.stdout + first.stderr
        assert "Traceback" not in first.stderr
        assert "status: stopped: waited for batches — waited " in first.stdout, first.stdout
        assert " of --max-wait 0.3s; " in first.stdout and "a resume polls them" in first.stdout
        card = json.loads((out / "card.json").read_text())
        assert card["status"]["state"] == "waited" and card["status"]["exit_code"] == 3
        assert f"run --resume {out}" in first.stdout + first.stderr, first.stdout + first.stderr
        # nothing was failed, nothing counted as the chatbot's: the judgements are undone
        assert "failed" not in {j["status"] for j in jsonl(out / "judgements.jsonl")}
        pending = [e for e in jsonl(out / "batches.jsonl") if e["event"] == "created"]
        assert pending and not [e for e in jsonl(out / "batches.jsonl") if e["event"] == "ended"]
        before = len(server.created)
        done = vera("run", "--resume", str(out), "--quiet")
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(server.created) > before  # the later waves
    assert server.violations == []
    # one submission per request: the batches pending at the stop were polled, not resubmitted
    assert all(n == 1 for n in server.submitted.values()), server.submitted.most_common(3)
    assert verdicts(out) == verdicts(whole) and len(verdicts(out)) == 3
    # the same card as the uninterrupted run, spend included (only the fake's port differs)
    cards = [json.loads((d / "card.json").read_text()) for d in (out, whole)]
    for card in cards:
        del card["accounting"]["limits"]
    assert cards[0] == cards[1]


@pytest.mark.parametrize("bad", ["soon", "0", "-5m", "5d", "m"])
def test_a_bad_max_wait_is_one_line_error(tmp_path, bad):
    done = subprocess.run(
        [sys.executable, "-m", "vera", "judge", str(tmp_path), "--max-wait", bad],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--max-wait" in done.stderr, done.stderr


def test_durations_read_as_people_write_them():
    from vera.cli._main import DURATION
    from vera.clients.batching import duration

    assert [duration(s) for s in (0.3, 45, 5400, 7200, 0)] == ["0.3s", "45s", "1h30m", "2h", "0s"]
    assert [DURATION.convert(v, None, None) for v in ("90m", "2h", "45s", "1h30m", "600", "0.5")] == [
        5400.0, 7200.0, 45.0, 5400.0, 600.0, 0.5,
    ]  # fmt: skip


def test_bench_judge_batch_prints_the_judge_money_live_and_in_batch_and_the_ratio(tmp_path):
    figures = tmp_path / "bench.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vera",
            "bench",
            "--judge",
            "--batch",
            "--conversations",
            "6",
            "--json",
            str(figures),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    fig = json.loads(figures.read_text())
    live, batch = fig["live"], fig["batch"]
    # the same conversations judged, every judge call at the batch tier, within the fake's rules
    assert live["judged_conversations"] == batch["judged_conversations"] == 6
    assert live["judge_calls"] == batch["judge_calls"] and batch["judge_tiers"] == ["batch"]
    assert live["batches"] == 0 and batch["batches"] > 1 and batch["violations"] == []
    assert fig["judge_ratio"] == pytest.approx(0.5) and fig["judge_ratio"] <= 0.5 + 1e-9
    assert fig["run_ratio"] < 1
    assert "judge $ per judged conversation" in done.stdout and "0.50x" in done.stdout
    assert "wall time (s)" in done.stdout
    # beside them, the reference tool's judge (its rubric and prompts) on the same transcripts
    ref = fig.get("reference")
    if not (REFERENCE / "data" / "question_prompt.txt").exists():
        assert ref is None and "reference tool's judge" not in done.stdout
        return
    assert ref is not None and "reference tool's judge" in done.stdout
    assert ref["live"]["judged_conversations"] == ref["batch"]["judged_conversations"] == 6
    assert ref["live"]["judge_calls"] == ref["batch"]["judge_calls"] > 0
    assert ref["batch"]["judge_tiers"] == ["batch"] and ref["batch"]["violations"] == []
    vs = fig["vs_reference"]
    ref_live = ref["live"]["judge_usd_per_judged"]
    assert vs["vera_live"] == pytest.approx(live["judge_usd_per_judged"] / ref_live)
    assert vs["vera_batch"] == pytest.approx(batch["judge_usd_per_judged"] / ref_live)
    assert vs["reference_batch"] == pytest.approx(0.5)


def test_bench_batch_without_judge_is_one_line_error():
    done = subprocess.run(
        [sys.executable, "-m", "vera", "bench", "--batch"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr and "--judge" in done.stderr


def test_bench_batch_with_a_folder_that_is_not_the_reference_data_is_one_line_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "vera", "bench", "--judge", "--batch", "--reference-data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"--reference-data {tmp_path}: no rubric.tsv" in done.stderr


async def test_replies_a_resume_replays_from_the_cache_are_not_counted_as_calls(tmp_path):
    """A conversation cut off by a failure is run again on resume, its first turns
    answered from the run's call bodies: those replays cost nothing and are no calls. The
    card counts them apart (`replayed`), and its calls are exactly the requests the
    server received."""
    with SweepServer(faults=Faults(rate_5xx=0.08, seed=3)) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=3, seeds="[1]", max_retries=0)
        out = tmp_path / "run"
        await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))
        assert any(c["status"] == "failed" for c in jsonl(out / "conversations.jsonl")), "nothing failed"
        server.faults.rate_5xx = 0.0
        card = score(await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))).card
    assert card is not None
    calls = jsonl(out / "calls.jsonl")
    replayed = [c for c in calls if c["cached"]]
    assert replayed, "no reply was replayed: the test proves nothing"
    total = card.accounting.total
    assert total.replayed == len(replayed)
    assert total.calls == len(calls) - len(replayed) == sum(server.requests.values())
    assert "replayed on resume" in (out / "card.md").read_text()


def test_bench_money_prints_the_whole_bill_beside_the_reference_pattern(tmp_path):
    """`vera bench --money`: the same conversations and rubric walks, vera's cheapest
    settings against the reference tool's request pattern, on both providers' fakes.
    The judge in batches pays half of the reference's live judge for the same
    questions, and no role pays more than the reference's."""
    figures = tmp_path / "money.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vera",
            "bench",
            "--money",
            "--conversations",
            "3",
            "--turns",
            "8",
            "--json",
            str(figures),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "openai (" in done.stdout and "anthropic (" in done.stdout
    fig = json.loads(figures.read_text())
    for protocol, p in fig["providers"].items():
        assert p["judged"]["vera"] == p["judged"]["reference"] == 3, protocol
        rows = p["per_judged_conversation"]
        assert all(row["ratio"] is not None and row["ratio"] <= 1.01 for row in rows.values()), (
            protocol,
            rows,
        )
        assert rows["total"]["vera"] == pytest.approx(
            sum(rows[r]["vera"] for r in ("chatbot", "user_agent", "judge"))
        )
    openai = fig["providers"]["openai"]
    assert openai["per_judged_conversation"]["judge"]["ratio"] == pytest.approx(0.5, abs=0.01)
    assert "judge/batch" in openai["vera_tiers"] and "user_agent/flex" in openai["vera_tiers"]
