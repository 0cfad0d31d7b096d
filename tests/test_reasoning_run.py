"""A run whose three roles reason, each on its own protocol: a GPT-5 judge at low
effort, a Gemini 2.5 user-agent with a thinking budget, a Claude chatbot with extended
thinking. Every request is as the APIs document (the strict fakes refused none), and
the card counts and prices the reasoning per role, in card.json, card.md and card.html."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from .clients.runs import run_roles
from .fakes.answering import THINKING_TOKENS

REASONING = """
[judge.params]
reasoning_effort = "low"
temperature = 0
[user_agent.params]
thinkingConfig = {thinkingBudget = 1024}
[chatbot.params]
thinking = {type = "enabled", budget_tokens = 1024}
max_tokens = 4096
"""


def test_reasoning_in_every_role_is_sent_as_documented_and_on_the_card(tmp_path: Path) -> None:
    run = run_roles(
        tmp_path,
        {"chatbot": "anthropic", "user_agent": "gemini", "judge": "openai"},
        models={"judge": "gpt-5.4"},
        personas=2,
        config_extra=REASONING,
    )
    assert run.exit_code == 0, run.output
    assert run.violations == []
    judge_bodies = [r.json for r in run.servers["openai"].received]
    assert judge_bodies and all(
        b["reasoning_effort"] == "low" and "temperature" not in b for b in judge_bodies
    )
    user_bodies = [r.json for r in run.servers["gemini"].received]
    assert all(b["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 1024} for b in user_bodies)
    bot_bodies = [r.json for r in run.servers["anthropic"].received]
    assert all(b["thinking"]["budget_tokens"] == 1024 and "temperature" not in b for b in bot_bodies)

    calls = run.jsonl("calls.jsonl")
    per_role: dict[str, list[dict]] = defaultdict(list)
    for call in calls:
        per_role[call["role"]].append(call)
    # OpenAI and Gemini report the thinking apart; Anthropic only inside the output
    assert all(c["usage"]["reasoning_tokens"] == THINKING_TOKENS for c in per_role["judge"])
    assert all(c["usage"]["reasoning_tokens"] == THINKING_TOKENS for c in per_role["user_agent"])
    assert all(c["usage"]["reasoning_tokens"] == 0 for c in per_role["chatbot"])
    assert all(c["usage"]["output_tokens"] > THINKING_TOKENS for c in calls)

    card = json.loads((run.out / "card.json").read_text())
    by_role = card["accounting"]["by_role"]
    for role in ("judge", "user_agent"):
        n = len(per_role[role])
        assert by_role[role]["reasoning_tokens"] == n * THINKING_TOKENS
        assert by_role[role]["reasoning_cost_usd"] == pytest.approx(n * THINKING_TOKENS * 4.0 / 1e6, abs=1e-4)
        assert by_role[role]["reasoning_cost_usd"] < by_role[role]["cost_usd"]
    assert by_role["chatbot"]["reasoning_tokens"] == 0
    total = card["accounting"]["total"]
    assert (
        total["reasoning_tokens"]
        == by_role["judge"]["reasoning_tokens"] + by_role["user_agent"]["reasoning_tokens"]
    )

    markdown = (run.out / "card.md").read_text()
    header = next(line for line in markdown.splitlines() if line.startswith("| Model calls"))
    assert "| Reasoning tokens |" in header and "| Reasoning cost (USD) |" in header
    assert f"of it for {total['reasoning_tokens']:,} reasoning tokens" in markdown  # the run's details
    judge_row = next(line for line in markdown.splitlines() if line.startswith("| role: judge"))
    assert f"| {by_role['judge']['reasoning_tokens']:,} |" in judge_row
    html = (run.out / "card.html").read_text()
    assert '<th scope="col">Reasoning tokens</th>' in html and "priced as output" in html
