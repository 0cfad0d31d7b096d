"""`[user_agent] service_tier = "flex"`: OpenAI's flex tier for the simulated user, at
batch prices, falling back to the standard tier when flex has no capacity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vera.app import RunOptions, execute_run

from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config

FLEX = '[user_agent]\nservice_tier = "flex"\n'


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("SWEEP_TEST_KEY", KEY)


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def _run(tmp: Path, server: SweepServer, extra: str = "") -> Path:
    cfg = write_sweep_config(tmp, server.base_url, personas=3, seeds="[1]", extra=extra)
    out = tmp / "run"
    await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))
    return out


def transcripts(run: Path) -> dict[str, list[str]]:
    return {c["id"]: [t["text"] for t in c["turns"]] for c in jsonl(run / "conversations.jsonl")}


async def test_the_user_agent_at_flex_falls_back_to_standard_and_pays_half_for_flex(tmp_path):
    with SweepServer() as live_server:
        live = await _run(tmp_path / "live", live_server)
    with SweepServer(faults=Faults(flex_unavailable=0.3)) as server:
        flex = await _run(tmp_path / "flex", server, FLEX)
    assert server.injected["flex_unavailable"] > 0
    assert transcripts(flex) == transcripts(live)
    assert all(c["status"] == "complete" for c in jsonl(flex / "conversations.jsonl"))
    calls = jsonl(flex / "calls.jsonl")
    user = [c for c in calls if c["role"] == "user_agent"]
    tiers = [c["tier"] for c in user]
    # every user call asked flex; the refused ones were answered at the standard tier
    assert server.by_tier["flex"] == len(user)
    assert tiers.count("standard") == server.injected["flex_unavailable"] > 0
    for c in user:  # the sweep profiles price input at 1.0 and output at 2.0 per million
        full = (c["usage"]["input_tokens"] + 2 * c["usage"]["output_tokens"]) / 1e6
        assert c["cost_usd"] == pytest.approx(full * (0.5 if c["tier"] == "flex" else 1.0))
        assert c["standard_cost_usd"] == pytest.approx(full)  # what live mode would have cost
    assert {c["tier"] for c in calls if c["role"] != "user_agent"} == {"standard"}
    logged = next(e for e in jsonl(flex / "events.jsonl") if e.get("event") == "batches")
    assert logged["flex_fallbacks"] == server.injected["flex_unavailable"]


async def test_flex_with_retry_retries_at_flex(tmp_path):
    with SweepServer(faults=Faults(flex_unavailable=0.3)) as server:
        extra = "retry_base_delay_s = 0.01\nretry_max_delay_s = 0.02\n" + FLEX + 'flex_fallback = "retry"\n'
        flex = await _run(tmp_path, server, extra)
    # Refused flex calls were asked again at flex; none went to the standard tier. A body
    # refused once is refused every time (the fake decides by the body), so those
    # conversations fail, as an infrastructure failure with the reason.
    user = [c for c in jsonl(flex / "calls.jsonl") if c["role"] == "user_agent"]
    assert {c["tier"] for c in user} == {"flex"}
    assert any(c["attempts"] > 1 and c["status"] == "error" for c in user)  # retried, then failed
    failed = [c for c in jsonl(flex / "conversations.jsonl") if c["status"] == "failed"]
    assert failed and all("resource" in c["error"].lower() or "429" in c["error"] for c in failed)


def test_flex_for_a_model_that_is_not_openai_is_one_line_error(tmp_path):
    cfg = write_sweep_config(tmp_path, "http://127.0.0.1:9/v1", personas=1, seeds="[1]", extra=FLEX)
    cfg.write_text(
        cfg.read_text().replace('user_agents = ["fake-user"]', 'user_agents = ["offline/scripted-user"]')
    )
    done = subprocess.run(
        [sys.executable, "-m", "vera", "run", "--config", str(cfg), "--quiet"],
        env={**os.environ, "SWEEP_TEST_KEY": KEY},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert 'service_tier = "flex"' in done.stderr and "offline" in done.stderr
