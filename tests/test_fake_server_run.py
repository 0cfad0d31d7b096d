"""A full `vera run` with every role on a loopback fake server.

The chatbot under test speaks Anthropic Messages on one server. The user-agent and the
judge are two profiles on one OpenAI-compatible account (same base URL, same key), so
they must share that account's limits. The servers count what they received and the
usage they reported; the run's records must account for every request and every token.
"""

from __future__ import annotations

import asyncio
import json
import re
import zlib
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from click.testing import CliRunner

from vera.cli._main import main
from vera.engine._judge import JUDGE_SCHEMA, render_transcript
from vera.inputs._personas import load_personas
from vera.records import Turn

from .conftest import ROOT, jsonl
from .fakes.protocols import Behaviour, FakeAnthropic, FakeOpenAI, Reply, serve_in_thread
from .fakes.shared import rubric_answer
from .run_config import write_run_config

OPENAI_KEY, OPENAI_ENV = "sk-e2e-shared-0123456789", "VERA_E2E_OPENAI_KEY"
ANTHROPIC_KEY, ANTHROPIC_ENV = "sk-ant-e2e-0123456789", "VERA_E2E_ANTHROPIC_KEY"
SHARED_MAX_IN_FLIGHT = 2
PERSONAS = 3
JUDGE_INSTANCES = 2
PRICES = {  # per million tokens (input, output), by profile
    "bot": (3.0, 15.0),
    "ua": (0.5, 1.5),
    "judge": (2.0, 8.0),
}
ROLE_OF = {"bot": "chatbot", "ua": "user_agent", "judge": "judge"}
END = "<<END>>"
USER_LINES = (
    "dont really know why im here",
    "its been a lot lately. not sleeping much",
    "yeah i guess",
    "maybe. i dont know",
)


class SharedAccount(FakeOpenAI):
    """The user-agent (`fake-user`) and the judge (`fake-judge`) on one account.

    The user-agent says short lines and ends its conversation (with the end marker)
    after 2 lines in the first conversation it sees, 3 in the second, and so on, so
    conversations end at different times and one is judged while others still talk.
    The judge answers with one of the options its question lists."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.by_model: Counter[str] = Counter()
        self.usage: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.busy: Counter[str] = Counter()
        self.roles_overlapped = False
        self._lines_for: dict[str, int] = {}

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()  # aiohttp keeps the body for super().handle
        model = orjson.loads(raw)["model"]
        self.by_model[model] += 1
        self.busy[model] += 1
        if self.busy["fake-user"] and self.busy["fake-judge"]:
            self.roles_overlapped = True
        try:
            # 0-19 ms more, by request: calls that start together finish apart, so the
            # roles interleave on the shared slots instead of taking turns in pairs.
            await asyncio.sleep(zlib.crc32(raw) % 20 / 1000)
            return await super().handle(request)
        finally:
            self.busy[model] -= 1

    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        messages = body["messages"]
        if body["model"] == "fake-judge":
            text = orjson.dumps(rubric_answer(messages)).decode()
        else:
            text = self._user_line(messages)
        out = super().payload(request, body, behaviour, Reply(text=text))
        self.usage[body["model"]].update(
            input=out["usage"]["prompt_tokens"], output=out["usage"]["completion_tokens"]
        )
        return out

    def _user_line(self, messages: list[dict[str, Any]]) -> str:
        system = messages[0]["content"]
        lines = self._lines_for.setdefault(system, 2 + len(self._lines_for))
        said = sum(1 for m in messages if m["role"] == "assistant")
        text = USER_LINES[said % len(USER_LINES)]
        return f"{text}\n{END}" if said + 1 >= lines else text


class Chatbot(FakeAnthropic):
    """The chatbot under test, tallying the usage it reports. Every reply is numbered,
    so no conversation's transcript is contained in another's."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.usage: Counter[str] = Counter()

    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        text = f"[{self.next_id('reply-')}] That sounds hard. What has been weighing on you most?"
        out = super().payload(request, body, behaviour, Reply(text=text))
        u = out["usage"]
        cached = u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
        self.usage.update(input=u["input_tokens"] + cached, output=u["output_tokens"])
        return out


def write_setup(tmp: Path, shared: SharedAccount, chatbot: Chatbot) -> Path:
    providers = tmp / "providers"
    providers.mkdir()
    for name, model in (("ua", "fake-user"), ("judge", "fake-judge")):
        (providers / f"{name}.toml").write_text(
            f'protocol = "openai"\nbase_url = "{shared.base_url}"\nmodel = "{model}"\n'
            f'api_key_env = "{OPENAI_ENV}"\nmax_in_flight = {SHARED_MAX_IN_FLIGHT}\ntimeout_s = 10\n'
            f"price_input_per_mtok = {PRICES[name][0]}\nprice_output_per_mtok = {PRICES[name][1]}\n"
        )
    (providers / "bot.toml").write_text(
        f'protocol = "anthropic"\nbase_url = "{chatbot.base_url}"\nmodel = "claude-fake"\n'
        f'api_key_env = "{ANTHROPIC_ENV}"\nmax_in_flight = 8\ntimeout_s = 10\n'
        f"price_input_per_mtok = {PRICES['bot'][0]}\nprice_output_per_mtok = {PRICES['bot'][1]}\n"
        "[params]\nmax_tokens = 300\n"
    )
    config = write_run_config(
        tmp / "run.toml",
        providers=providers,
        runs_dir=tmp / "runs",
        chatbots=["bot"],
        user_agents=["ua"],
        judges=["judge"],
        seeds=[1],
        max_concurrency=3,
        conversation={"max_turns": 10, "min_turns": 2},
        # Two judge instances walk each conversation at once: with the user-agent still
        # talking in other conversations, the two roles ask for more than the cap.
        judge={"instances": JUDGE_INSTANCES},
        stats={"resamples": 200},
    )
    return config


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("fake-run")
    shared = SharedAccount(key=OPENAI_KEY, latency=0.01)
    chatbot = Chatbot(key=ANTHROPIC_KEY, latency=0.01)
    with pytest.MonkeyPatch.context() as env, serve_in_thread(shared, chatbot):
        env.setenv(OPENAI_ENV, OPENAI_KEY)
        env.setenv(ANTHROPIC_ENV, ANTHROPIC_KEY)
        config = write_setup(tmp, shared, chatbot)
        out = tmp / "run"
        result = CliRunner().invoke(
            main,
            ["run", "--config", str(config), "--out", str(out), "--limit-personas", str(PERSONAS), "--quiet"],
        )
    return {"result": result, "out": out, "shared": shared, "chatbot": chatbot}


def test_the_run_completes_with_a_card(run: dict[str, Any]) -> None:
    assert run["result"].exit_code == 0, run["result"].output
    out = run["out"]
    assert (out / "card.json").is_file() and (out / "card.md").is_file()
    conversations = jsonl(out / "conversations.jsonl")
    judgements = jsonl(out / "judgements.jsonl")
    assert len(conversations) == PERSONAS and all(c["status"] == "complete" for c in conversations)
    assert {c["ended_by"] for c in conversations} == {"end_marker"}
    assert len(judgements) == PERSONAS * JUDGE_INSTANCES
    assert all(j["status"] == "complete" for j in judgements)
    assert all(j["ratings"] for j in judgements)


def test_the_call_log_accounts_for_every_request_each_server_received(run: dict[str, Any]) -> None:
    calls = jsonl(run["out"] / "calls.jsonl")
    assert all(c["status"] == "ok" and c["attempts"] == 1 and not c["cached"] for c in calls)
    per_role = Counter(c["role"] for c in calls)
    assert per_role["chatbot"] == run["chatbot"].requests
    assert per_role["user_agent"] == run["shared"].by_model["fake-user"]
    assert per_role["judge"] == run["shared"].by_model["fake-judge"]
    assert run["shared"].requests == per_role["user_agent"] + per_role["judge"]
    assert Counter(c["provider"] for c in calls) == {
        "bot": per_role["chatbot"],
        "ua": per_role["user_agent"],
        "judge": per_role["judge"],
    }


def test_tokens_and_cost_match_the_servers_usage_times_the_profile_prices(run: dict[str, Any]) -> None:
    calls = jsonl(run["out"] / "calls.jsonl")
    reported = {
        "bot": run["chatbot"].usage,
        "ua": run["shared"].usage["fake-user"],
        "judge": run["shared"].usage["fake-judge"],
    }
    accounting = json.loads((run["out"] / "card.json").read_text())["accounting"]
    for provider, usage in reported.items():
        mine = [c for c in calls if c["provider"] == provider]
        assert sum(c["usage"]["input_tokens"] for c in mine) == usage["input"] > 0
        assert sum(c["usage"]["output_tokens"] for c in mine) == usage["output"] > 0
        price_in, price_out = PRICES[provider]
        cost = (usage["input"] * price_in + usage["output"] * price_out) / 1_000_000
        assert sum(c["cost_usd"] for c in mine) == pytest.approx(cost)
        for bucket in (accounting["by_provider"][provider], accounting["by_role"][ROLE_OF[provider]]):
            assert bucket["calls"] == len(mine)
            assert bucket["input_tokens"] == usage["input"]
            assert bucket["output_tokens"] == usage["output"]
            assert bucket["cost_usd"] == pytest.approx(cost, abs=1e-4)
    total = sum((u["input"] * PRICES[p][0] + u["output"] * PRICES[p][1]) / 1e6 for p, u in reported.items())
    assert accounting["total"]["cost_usd"] == pytest.approx(total, abs=1e-4)


def test_the_two_roles_on_one_account_share_its_in_flight_cap(run: dict[str, Any]) -> None:
    shared = run["shared"]
    # Both roles were busy at the shared server at once, yet the server never had more
    # calls in flight than the one account allows: the cap was shared, not per role.
    assert shared.roles_overlapped
    assert shared.max_in_flight == SHARED_MAX_IN_FLIGHT
    accounts = {c["role"]: c["account"] for c in jsonl(run["out"] / "calls.jsonl")}
    assert accounts["user_agent"] == accounts["judge"] != accounts["chatbot"]


def test_the_judge_gets_the_transcript_in_its_system_message_and_a_schema(run: dict[str, Any]) -> None:
    requests = [r.json for r in run["shared"].received if r.json["model"] == "fake-judge"]
    transcripts = {
        c["id"]: render_transcript([Turn(t["speaker"], t["text"]) for t in c["turns"]])
        for c in jsonl(run["out"] / "conversations.jsonl")
    }
    judged = set()
    for body in requests:
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == JUDGE_SCHEMA
        system, *_, question = body["messages"]
        assert system["role"] == "system" and question["role"] == "user"
        assert re.search(r"^Options: .+\|", question["content"], re.MULTILINE)
        matching = [cid for cid, text in transcripts.items() if text in system["content"]]
        assert len(matching) == 1
        judged.update(matching)
    assert judged == set(transcripts)


def test_the_chatbot_never_sees_the_persona_or_the_user_agent_instructions(run: dict[str, Any]) -> None:
    personas = load_personas(ROOT / "personas" / "vera-personas.tsv").personas[:PERSONAS]
    received = run["chatbot"].received
    assert received and all(r.headers["x-api-key"] == ANTHROPIC_KEY for r in received)
    for request in received:
        assert "system" not in request.json
        sent = orjson.dumps(request.json["messages"]).decode()
        assert END not in sent and "Reminder:" not in sent and "WHO YOU ARE" not in sent
        for persona in personas:
            assert persona.name not in sent
            assert persona.fields["Final Seed Phrase"] not in sent
    user_agent_requests = [r for r in run["shared"].received if r.json["model"] == "fake-user"]
    assert all(r.headers["authorization"] == f"Bearer {OPENAI_KEY}" for r in user_agent_requests)
    assert all("WHO YOU ARE" in r.json["messages"][0]["content"] for r in user_agent_requests)
