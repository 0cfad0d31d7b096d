"""`[user_agent] service_tier = "flex"`: OpenAI's flex tier for the simulated user, at
batch prices, falling back to the standard tier when flex has no capacity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config
from .sweep_runs import FLEX, jsonl, sweep_run

pytestmark = pytest.mark.usefixtures("sweep_key")


def transcripts(run: Path) -> dict[str, list[str]]:
    return {c["id"]: [t["text"] for t in c["turns"]] for c in jsonl(run / "conversations.jsonl")}


async def test_the_user_agent_at_flex_falls_back_to_standard_and_pays_half_for_flex(tmp_path):
    with SweepServer() as live_server:
        live = await sweep_run(tmp_path / "live", live_server)
    with SweepServer(faults=Faults(flex_unavailable=0.3)) as server:
        flex = await sweep_run(tmp_path / "flex", server, FLEX)
    assert server.injected["flex_unavailable"] > 0
    assert transcripts(flex) == transcripts(live)
    assert all(c["status"] == "complete" for c in jsonl(flex / "conversations.jsonl"))
    calls = jsonl(flex / "calls.jsonl")
    user = [c for c in calls if c["role"] == "user_agent"]
    tiers = [c["tier"] for c in user]
    # every user call asked flex, and each is in the call log: the refused ones as
    # failed flex calls (429, nothing billed), followed by the standard call that
    # answered them, marked as a fallback from flex
    refused = [c for c in user if c["tier"] == "flex" and c["status"] == "error"]
    fell_back = [c for c in user if c["fallback"] == "flex"]
    assert server.by_tier["flex"] == tiers.count("flex")
    assert (
        len(refused) == len(fell_back) == tiers.count("standard") == server.injected["flex_unavailable"] > 0
    )
    assert all(c["http_429"] == 1 and c["cost_usd"] == 0 for c in refused)
    assert all(c["tier"] == "standard" and c["status"] == "ok" for c in fell_back)
    card = json.loads((flex / "card.json").read_text())
    assert card["accounting"]["by_role"]["user_agent"]["fallbacks"] == len(fell_back)
    assert card["accounting"]["by_role_tier"]["user_agent/standard"]["fallbacks"] == len(fell_back)
    for c in user:  # the sweep profiles price input at 1.0 and output at 2.0 per million
        full = (c["usage"]["input_tokens"] + 2 * c["usage"]["output_tokens"]) / 1e6
        assert c["cost_usd"] == pytest.approx(full * (0.5 if c["tier"] == "flex" else 1.0))
        assert c["standard_cost_usd"] == pytest.approx(full)  # what live mode would have cost
    assert {c["tier"] for c in calls if c["role"] != "user_agent"} == {"standard"}
    logged = next(e for e in jsonl(flex / "events.jsonl") if e.get("event") == "batches")
    assert logged["flex_fallbacks"] == server.injected["flex_unavailable"]


async def test_a_model_without_a_flex_tier_falls_back_on_its_400_and_asks_standard_from_then_on(tmp_path):
    with SweepServer() as live_server:
        live = await sweep_run(tmp_path / "live", live_server)
    with SweepServer(faults=Faults(flex_unsupported=True)) as server:
        flex = await sweep_run(tmp_path / "flex", server, FLEX)
    assert transcripts(flex) == transcripts(live)
    assert all(c["status"] == "complete" for c in jsonl(flex / "conversations.jsonl"))
    user = [c for c in jsonl(flex / "calls.jsonl") if c["role"] == "user_agent"]
    # the 400 said the model has no flex tier: not asked at flex again (the three
    # conversations' first calls went out together, before the first refusal came back)
    assert 1 <= server.injected["flex_unsupported"] == server.by_tier["flex"] <= 3
    refused = [c for c in user if c["tier"] == "flex"]
    assert len(refused) == server.by_tier["flex"]
    assert all(c["status"] == "error" and "Flex processing is not available" in c["error"] for c in refused)
    standard = [c for c in user if c["tier"] == "standard"]
    assert standard and all(c["fallback"] == "flex" for c in standard)
    card = json.loads((flex / "card.json").read_text())
    assert card["accounting"]["by_role"]["user_agent"]["fallbacks"] == len(standard)


async def test_flex_with_retry_retries_at_flex(tmp_path):
    with SweepServer(faults=Faults(flex_unavailable=0.3)) as server:
        extra = "retry_base_delay_s = 0.01\nretry_max_delay_s = 0.02\n" + FLEX + 'flex_fallback = "retry"\n'
        flex = await sweep_run(tmp_path, server, extra)
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


@pytest.mark.parametrize(
    ("model", "refused"), [("gpt-4o-mini", True), ("o4-mini", False), ("gpt-5-2025-08-07", False)]
)
def test_flex_on_a_model_openai_does_not_list_for_it_is_refused_before_the_run(tmp_path, model, refused):
    """OpenAI's pricing page lists the models it sells at flex (docs/batch.md#flex):
    `vera validate config` and `vera run` refuse any other on OpenAI's own API, in one
    line, before a call is made; a listed model (or a dated snapshot of one) passes."""
    cfg = write_sweep_config(tmp_path, "http://127.0.0.1:9/v1", personas=1, seeds="[1]", extra=FLEX)
    user = tmp_path / "providers" / "fake-user.toml"
    user.write_text(
        user.read_text()
        .replace('base_url = "http://127.0.0.1:9/v1"', 'base_url = "https://api.openai.com/v1"')
        .replace('model = "user"', f'model = "{model}"')
    )
    env = {**os.environ, "SWEEP_TEST_KEY": KEY}
    checked = subprocess.run(
        [sys.executable, "-m", "vera", "validate", "config", str(cfg)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if not refused:
        assert checked.returncode == 0, checked.stdout + checked.stderr
        return
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vera",
            "run",
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "run"),
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    for result in (checked, done):
        text = result.stdout + result.stderr
        assert result.returncode == 1 and "Traceback" not in text
        assert f"OpenAI does not list '{model}' for the flex tier" in text and "docs/batch.md#flex" in text
    assert not (tmp_path / "run").exists()
