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
    tag = json.loads((run.out / "manifest.json").read_text())["session_tag"]
    # One session per conversation: its id, with the run's tag (test_http_sessions.py).
    assert {b["session"] for b in bodies} == {f"{conversation['id']}-{tag}"}
    assert bodies[-1]["history"][-1]["content"] == bodies[-1]["message"]


@pytest.mark.parametrize(
    ("chatbot", "user_agent", "judge"),
    [("anthropic", "gemini", "openai"), ("gemini", "anthropic", "azure"), ("azure", "openai", "anthropic")],
)
def test_mixed_protocols(chatbot: str, user_agent: str, judge: str, tmp_path: Path) -> None:
    roles = {"chatbot": chatbot, "user_agent": user_agent, "judge": judge}
    run = run_roles(tmp_path, roles)
    assert_clean(run, roles)


OLD_STYLE_PROFILE = "[params]\ntemperature = 0.7\nmax_tokens = 300\n"


def sent_by_role(run: Run, protocol: str) -> dict[str, list[dict]]:
    """The request bodies one server received, by the role that sent them (a judge asks
    for structured output; the user-agent sends its persona prompt as the system prompt)."""
    out: dict[str, list[dict]] = {"judge": [], "user_agent": [], "chatbot": []}
    for r in run.servers[protocol].received:
        body = r.json
        if body.get("response_format") or body.get("tools"):
            out["judge"].append(body)
        elif body["messages"][0]["role"] == "system" or body.get("system"):
            out["user_agent"].append(body)
        else:
            out["chatbot"].append(body)
    return out


def test_each_role_samples_as_the_run_config_says_and_the_manifest_records_it(tmp_path: Path) -> None:
    roles = dict.fromkeys(ROLES, "openai")
    run = run_roles(tmp_path, roles, profile_extra=OLD_STYLE_PROFILE)
    assert_clean(run, roles)
    sent = sent_by_role(run, "openai")
    # the judge does not inherit the profile's 0.7: it judges at 0; the simulated user
    # keeps 0.7; the chatbot is tested as deployed, with its profile's parameters
    assert {b["temperature"] for b in sent["judge"]} == {0}
    assert {b["temperature"] for b in sent["user_agent"]} == {0.7}
    assert {b["temperature"] for b in sent["chatbot"]} == {0.7}
    manifest = json.loads((run.out / "manifest.json").read_text())
    assert manifest["judges"][0]["params"] == {"temperature": 0, "max_tokens": 300}
    assert manifest["user_agents"][0]["params"] == {"temperature": 0.7, "max_tokens": 300}
    assert manifest["chatbots"][0]["params"] == {"temperature": 0.7, "max_tokens": 300}
    card = json.loads((run.out / "card.json").read_text())
    assert card["models"]["params"]["judge"] == {"judge-openai": {"temperature": 0, "max_tokens": 300}}
    assert "judge judge-openai: max_tokens 300, temperature 0" in (run.out / "card.md").read_text()


def test_role_params_from_the_run_config(tmp_path: Path) -> None:
    roles = dict.fromkeys(ROLES, "gemini")
    config = "[judge.params]\ntemperature = 0.1\n[user_agent.params]\ntemperature = 1.1\n[chatbot.params]\ntop_p = 0.5\n"
    run = run_roles(tmp_path, roles, config_extra=config)
    assert_clean(run, roles)
    configs = [r.json.get("generationConfig", {}) for r in run.servers["gemini"].received]
    temperatures = {c.get("temperature") for c in configs}
    assert temperatures == {0.1, 1.1, None}
    assert {c.get("topP") for c in configs} == {0.5, None}


def test_families_that_refuse_a_parameter_are_not_sent_it(tmp_path: Path) -> None:
    # Profiles written the old way (temperature 0.7 and max_tokens for everyone) over
    # models that refuse them: nothing refused is sent. What the config or a profile
    # asked for and cannot be sent is said once (a role default the model refuses is
    # simply not sent: the defaults apply where the model allows them).
    roles = {"chatbot": "anthropic", "user_agent": "gemini", "judge": "openai"}
    models = {"chatbot": "claude-opus-4-7", "judge": "gpt-5-mini"}
    run = run_roles(
        tmp_path,
        roles,
        models=models,
        profile_extra=OLD_STYLE_PROFILE,
        config_extra="[judge.params]\ntemperature = 0\n",
    )
    assert_clean(run, roles)
    judge = [r.json for r in run.servers["openai"].received]
    assert judge and all("temperature" not in b and b["max_completion_tokens"] == 300 for b in judge)
    bot = [r.json for r in run.servers["anthropic"].received]
    assert bot and all("temperature" not in b and b["max_tokens"] == 300 for b in bot)
    manifest = json.loads((run.out / "manifest.json").read_text())
    assert manifest["judges"][0]["params"] == {"max_completion_tokens": 300}
    assert manifest["chatbots"][0]["params"] == {"max_tokens": 300}
    assert manifest["user_agents"][0]["params"] == {"temperature": 0.7, "max_tokens": 300}
    assert run.stderr.count("warning: judge judge-openai (gpt-5-mini): not sending temperature") == 1
    assert (
        run.stderr.count("warning: chatbot chatbot-anthropic (claude-opus-4-7): not sending temperature") == 1
    )
    assert "user-agent" not in run.stderr


def test_openai_prompt_cache_key_one_per_conversation_and_role(tmp_path: Path) -> None:
    roles = dict.fromkeys(ROLES, "openai")
    run = run_roles(tmp_path, roles, personas=2, profile_extra="prompt_cache_key = true\n")
    assert_clean(run, roles, personas=2)
    conversations = {c["id"] for c in run.jsonl("conversations.jsonl")}
    keys: dict[str, set[str]] = {}
    for role, bodies in sent_by_role(run, "openai").items():
        for body in bodies:
            keys.setdefault(role, set()).add(body["prompt_cache_key"])
    for role in ROLES:
        assert keys[role] == {f"vera-{role}-{c}" for c in conversations}


def test_no_prompt_cache_key_where_the_server_is_not_openais(tmp_path: Path) -> None:
    # A loopback (or any OpenAI-compatible) server is not sent the parameter unless the
    # profile asks: such servers may refuse unknown parameters.
    roles = dict.fromkeys(ROLES, "openai")
    run = run_roles(tmp_path, roles)
    assert_clean(run, roles)
    assert all("prompt_cache_key" not in r.json for r in run.servers["openai"].received)
