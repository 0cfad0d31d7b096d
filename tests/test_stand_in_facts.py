"""The call context carries only what real protocol clients read; the offline stand-ins
learn the rest from the run's facts, and the user-agent's view reads back exactly."""

from __future__ import annotations

import tracemalloc
from typing import Literal

import msgspec
import pytest

from vera.app import RunFacts
from vera.clients.base import CallContext
from vera.engine import Inputs
from vera.engine._simulate import (
    ConversationJob,
    simulate_conversation,
    turns_from_user_view,
    user_view,
)
from vera.inputs._config import load_config
from vera.records import Turn

from .clients.conftest import make_profile, open_pool
from .conftest import ROOT
from .fakes.protocols import FakeChatbot


def test_call_context_has_only_the_fields_real_clients_read() -> None:
    names = {f.name for f in msgspec.structs.fields(CallContext)}
    # The session place is read by the custom HTTP client (its arc placeholders).
    assert names == {"role", "job_id", "conversation_id", "arc_id", "session", "session_index"}


def inputs(**conversation: object) -> Inputs:
    cfg = load_config(str(ROOT / "configs" / "offline.toml"))
    for key, value in conversation.items():
        setattr(cfg.conversation, key, value)
    return Inputs.load(cfg)


@pytest.mark.parametrize("first", ["user", "chatbot"])
@pytest.mark.parametrize("position", ["after", "before"])
def test_the_user_agents_view_reads_back_to_the_turns(first: str, position: str) -> None:
    prompts = msgspec.structs.replace(inputs().user_prompts, reminder_position=position)
    lines = ["hi", "Hello. How are you?", "", "not great\n\nreally", "I hear you."]
    speakers: list[Literal["user", "chatbot"]] = (
        ["user", "chatbot"] if first == "user" else ["chatbot", "user"]
    )
    for n in range(len(lines) + 1):
        turns = [Turn(speakers[i % 2], text) for i, text in enumerate(lines[:n])]
        if (turns[-1].speaker if turns else first) != "chatbot" and turns:
            continue  # the user-agent is asked only after the chatbot (or to open)
        if not turns and first == "chatbot":
            continue
        view = user_view(turns, "REMEMBER: stay in character", prompts)
        back = turns_from_user_view(view, "REMEMBER: stay in character", prompts, first)  # type: ignore[arg-type]
        assert back == turns


async def test_a_protocol_chatbot_is_sent_no_persona_seed_or_rubric(monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole conversation with the scripted user against a custom HTTP chatbot on a
    loopback server: every request it received holds the conversation and the session
    id, and nothing of the persona's fields, the seed or the rubric."""
    run = inputs(max_turns=8, min_turns=4)
    persona = run.personas.personas[7]
    job = ConversationJob(
        id="conv-7", chatbot="bot", user_agent="offline", persona=persona, seed=987654, replicate=0
    )
    facts = RunFacts(run, lambda cid: pytest.fail("nothing is judged here"))
    facts.plan([job])
    monkeypatch.setenv("STAND_IN_TEST_TOKEN", "token-for-the-loopback-bot")
    async with FakeChatbot(key="token-for-the-loopback-bot") as server:
        bot = make_profile(
            "bot",
            "http",
            "",
            http={
                "url": f"{server.root}/api/chat",
                "response_path": "reply.text",
                "headers": {"Authorization": "Bearer ${STAND_IN_TEST_TOKEN}"},
                "body": {"messages": "{{messages}}", "session": "{{session_id}}"},
            },
        )
        async with open_pool(bot) as pool:
            from vera.standins import make_offline_client

            conv = await simulate_conversation(
                job,
                chatbot=pool.client("bot"),
                user_agent=make_offline_client("scripted-user", facts=facts),
                prompts=run.user_prompts,
                settings=run.settings(),
            )
    assert conv.status == "complete" and server.received
    for request in server.received:
        assert set(request.json) == {"messages", "session"}
        assert request.json["session"] == "conv-7"
        sent = msgspec.json.encode(request.json).decode() + repr(request.headers) + repr(request.query)
        assert "987654" not in sent and run.rubric.key not in sent and persona.name not in sent
        said = {t.text for t in conv.turns}
        assert all(m["content"] in said for m in request.json["messages"])


def test_the_plan_costs_nothing_per_conversation_until_a_stand_in_asks() -> None:
    run = inputs()
    persona = run.personas.personas[0]
    jobs = [
        ConversationJob(id=f"conv-{i}", chatbot="bot", user_agent="ua", persona=persona, seed=i, replicate=0)
        for i in range(20_000)
    ]
    facts = RunFacts(run, lambda cid: pytest.fail("nothing is judged here"))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        facts.plan(jobs)  # a run whose models are all real: no stand-in ever asks
        planned = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert planned < 10_000  # bytes, for 20,000 planned conversations
    # A stand-in asking gets the conversation's persona and seed.
    asked = facts.conversation("conv-12345")
    assert asked is not None and asked.seed == 12345 and asked.persona is persona
    assert facts.conversation("not-planned") is None
