"""Every protocol in every role: a real `vera run` (simulation, then the judge's walk)
with the chatbot, the simulated user and the judge on strict fake servers, which refuse
and record any request the real API would refuse. Every run must complete with zero
violations and every role must have reached the server of its protocol.

The custom HTTP protocol is a chatbot only: it has no structured output (a judge needs
one) and no system prompt slot of its own (a user-agent needs its persona prompt), so
the profile loader's own docs and the client refuse it in the other roles; its row runs
the OpenAI fake as the user-agent and judge.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from .runs import Run, run_roles

ROLES = ("chatbot", "user_agent", "judge")
PROTOCOLS = ("openai", "azure", "anthropic", "gemini")


def assert_clean(run: Run, roles: dict[str, str], personas: int = 1) -> None:
    assert run.exit_code == 0, run.output
    assert run.violations == []
    conversations = run.jsonl("conversations.jsonl")
    judgements = run.jsonl("judgements.jsonl")
    assert len(conversations) == personas and all(c["status"] == "complete" for c in conversations)
    assert all(len(c["turns"]) >= 3 for c in conversations)
    assert judgements and all(j["status"] == "complete" and j["ratings"] for j in judgements)
    calls = run.jsonl("calls.jsonl")
    assert all(c["status"] == "ok" for c in calls)
    by_role = Counter(c["role"] for c in calls)
    assert set(by_role) == set(ROLES)
    for protocol, server in run.servers.items():
        # each server got exactly the calls of the roles on its protocol
        assert server.requests == sum(by_role[r] for r, p in roles.items() if p == protocol)
    assert_costs_add_up(run)


def assert_costs_add_up(run: Run) -> None:
    """Each record carries its own calls' cost: records, calls.jsonl and the card agree."""
    calls = run.jsonl("calls.jsonl")
    records = [*run.jsonl("conversations.jsonl"), *run.jsonl("judgements.jsonl")]
    by_job: Counter[str] = Counter()
    for c in calls:
        by_job[c["job_id"]] += c["cost_usd"]
    for r in records:
        assert r["cost_usd"] == pytest.approx(by_job[r["id"]])
    total = sum(c["cost_usd"] for c in calls)
    assert total > 0
    assert sum(r["cost_usd"] for r in records) == pytest.approx(total)
    card = json.loads((run.out / "card.json").read_text())
    assert card["accounting"]["total"]["cost_usd"] == pytest.approx(total, abs=1e-4)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_protocol_in_every_role(protocol: str, tmp_path: Path) -> None:
    roles = dict.fromkeys(ROLES, protocol)
    run = run_roles(tmp_path, roles)
    assert_clean(run, roles)


@pytest.mark.parametrize("protocol", ["anthropic", "gemini", "openai"])
def test_protocol_in_every_role_when_the_chatbot_speaks_first(protocol: str, tmp_path: Path) -> None:
    roles = dict.fromkeys(ROLES, protocol)
    run = run_roles(tmp_path, roles, first_speaker="chatbot")
    assert_clean(run, roles)


def test_http_chatbot_with_model_user_agent_and_judge(tmp_path: Path) -> None:
    roles = {"chatbot": "http", "user_agent": "openai", "judge": "openai"}
    run = run_roles(tmp_path, roles)
    assert_clean(run, roles)
    bodies = [r.json for r in run.servers["http"].received]
    conversation = run.jsonl("conversations.jsonl")[0]
    assert {b["session"] for b in bodies} == {conversation["id"]}  # one session per conversation
    assert bodies[-1]["history"][-1]["content"] == bodies[-1]["message"]


@pytest.mark.parametrize(
    ("chatbot", "user_agent", "judge"),
    [("anthropic", "gemini", "openai"), ("gemini", "anthropic", "azure"), ("azure", "openai", "anthropic")],
)
def test_mixed_protocols(chatbot: str, user_agent: str, judge: str, tmp_path: Path) -> None:
    roles = {"chatbot": chatbot, "user_agent": user_agent, "judge": judge}
    run = run_roles(tmp_path, roles)
    assert_clean(run, roles)
