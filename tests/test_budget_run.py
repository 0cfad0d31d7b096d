"""`--max-cost` holds for a whole run at the default concurrency: it stops at the
budget (exit 3, "stopped: budget reached" on the status line and the card, with the
command that continues), never past it, leaves unfinished work undone (never failed),
and resumes with a larger budget, the spend of earlier sessions counting. NaN,
infinite, negative budgets and priced roles with no output cap are refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from vera.app._session import RunSession
from vera.cli._main import main
from vera.clients.budget import Budget
from vera.engine import SweepResult
from vera.errors import BudgetReached, ConfigError
from vera.inputs import RunConfig
from vera.records import CallRecord
from vera.store import recorded_spend

from .conftest import ROOT
from .fakes.sweep import KEY, SweepServer, write_sweep_config


def vera(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SWEEP_TEST_KEY": KEY}
    return subprocess.run(
        [sys.executable, "-m", "vera", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )


def spent(run_dir: Path) -> float:
    return recorded_spend(run_dir)[0]


def statuses(run_dir: Path) -> list[str]:
    path = run_dir / "conversations.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["status"] for line in lines if line.strip()]


@pytest.mark.slow
def test_a_run_at_default_concurrency_stops_at_the_budget_and_resumes_with_a_larger_one(tmp_path):
    assert RunConfig().max_concurrency >= 64  # the default: every conversation starts at once
    with SweepServer() as server:
        cfg = write_sweep_config(
            tmp_path, server.base_url, personas=10, seeds="[1]", max_concurrency=None,
            prices=(10.0, 20.0), max_tokens=512,
        )  # fmt: skip
        out = tmp_path / "r"
        first = vera("run", "--config", str(cfg), "--out", str(out), "--quiet", "--max-cost", "0.5")
        assert first.returncode == 3, first.stdout + first.stderr
        assert spent(out) <= 0.5
        continues = f"{sys.executable} -m vera run --resume {out} --max-cost 1"
        line = first.stdout.strip().splitlines()[-1]
        assert line.startswith("status: stopped: budget reached — $0.")
        assert "of $0.5000 spent; " in line and line.endswith(f"{continues} (exit code 3)")
        card = json.loads((out / "card.json").read_text())["status"]
        assert card["state"] == "budget" and card["exit_code"] == 3 and continues in card["summary"]
        assert "**Run status:** stopped: budget reached (exit code 3) — " in (out / "card.md").read_text()
        assert "failed" not in statuses(out)  # unfinished work is left undone, never failed

        # The same budget again: what was spent counts (only calls that still fit are made).
        again = vera("run", "--resume", str(out), "--quiet")
        assert again.returncode == 3 and "stopped: budget reached" in again.stdout
        before = spent(out)
        assert before <= 0.5

        more = vera("run", "--resume", str(out), "--quiet", "--max-cost", "1")
        assert more.returncode in (0, 3), more.stdout + more.stderr
        assert before < spent(out) <= 1.0  # one budget for the whole run, over its sessions

        done = vera("run", "--resume", str(out), "--quiet", "--max-cost", "100")
        assert done.returncode == 0, done.stdout + done.stderr
    assert statuses(out).count("complete") == 10 and "failed" not in statuses(out)
    assert json.loads((out / "card.json").read_text())["status"]["state"] == "complete"


def test_a_priced_role_without_an_output_cap_is_refused_with_a_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("SWEEP_TEST_KEY", KEY)
    cfg = write_sweep_config(tmp_path, "http://127.0.0.1:9/v1", personas=1, seeds="[1]")
    result = CliRunner().invoke(main, ["run", "--config", str(cfg), "--quiet", "--max-cost", "1"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: {cfg}: --max-cost: fake-chatbot as chatbot is priced"
    )
    assert "set max_tokens" in lines[0]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("bad", ["nan", "inf", "-1", "-inf", "lots"])
def test_a_budget_that_is_not_a_finite_amount_is_one_line(tmp_path, bad):
    result = CliRunner().invoke(main, ["run", "--max-cost", bad, "--out", str(tmp_path / "r")])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "'--max-cost'" in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "r").exists()


def test_a_config_budget_that_is_not_finite_is_refused():
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ConfigError, match="max_cost_usd must be a finite amount"):
            RunConfig(max_cost_usd=bad).check()


def test_an_unknown_cost_recorded_by_an_earlier_session_counts_at_its_worst_case(tmp_path):
    calls = [
        CallRecord(job_id="a", role="chatbot", provider="p", model="m", account="x", latency_ms=1,
                   status="ok", cost_usd=0.25),
        CallRecord(job_id="b", role="judge", provider="p", model="m", account="x", latency_ms=1,
                   status="error", uncertain_usd=0.5),
    ]  # fmt: skip
    (tmp_path / "calls.jsonl").write_bytes(b"".join(msgspec.json.encode(c) + b"\n" for c in calls))
    assert recorded_spend(tmp_path) == (0.75, 0.5)


async def test_a_budget_stop_names_the_way_on_but_never_hides_a_signal(tmp_path):
    session = RunSession(tmp_path / "r", resume="vera run --resume r", grace_s=0, signals=False)
    session.budget = Budget(1.0, spent=0.9)
    with pytest.raises(BudgetReached):
        await session.budget.reserve(0.2)
    stopped = SweepResult(stopped="budget reached: $0.9000 of $1.00 spent")
    session.budget_stop(stopped)
    assert stopped.stopped == (
        "budget reached: $0.9000 of $1.00 spent; continue with a larger budget (above $1.00; "
        "the spend so far counts): vera run --resume r --max-cost 2"
    )
    interrupted = SweepResult(stopped="interrupted (SIGINT)")
    session.budget_stop(interrupted)
    assert interrupted.stopped == "interrupted (SIGINT)"
