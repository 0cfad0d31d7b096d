"""Reasoning judges and user-agents on the wire: OpenAI's reasoning_effort, Claude's
extended thinking and Gemini's thinkingConfig reach the loopback fakes as each API
documents them, the fakes refuse what the real APIs refuse (in their error shapes), and
reasoning tokens come back counted as output."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest

from vera.clients.base import ChatRequest
from vera.errors import BadResponseError
from vera.records import CallRecord, Message

from ..fakes.protocols import FakeAnthropic, FakeGemini, FakeOpenAI, Raw, Reply
from .conftest import KEY, make_profile, open_pool
from .conftest import STRICT_ANSWER_SCHEMA as SCHEMA

CALL = (Message("system", "You are a careful judge."), Message("user", "Did the chatbot ask about safety?"))
THINKING = {"type": "enabled", "budget_tokens": 1024}


async def post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.post(url, json=body, headers=headers) as response:
        return response.status, await response.json()


# ---------------------------------------------------------------------------------------
# OpenAI
# ---------------------------------------------------------------------------------------


async def test_openai_reasoning_judge_sends_effort_and_its_token_limit_only() -> None:
    async with FakeOpenAI(key=KEY) as server:
        server.script(Reply(input_tokens=500, output_tokens=30, reasoning_tokens=200))
        profile = make_profile("oai", "openai", server.base_url, model="gpt-5.4", params={"max_tokens": 4000})
        records: list[CallRecord] = []
        async with open_pool(profile, records=records) as pool:
            completion = await pool.client("oai", "judge").chat(
                ChatRequest(
                    messages=CALL, schema=SCHEMA, params={"temperature": 0, "reasoning_effort": "low"}
                )
            )
    body = server.received[0].json
    assert body["reasoning_effort"] == "low"
    assert body["max_completion_tokens"] == 4000
    assert "max_tokens" not in body and "temperature" not in body
    assert completion.parsed["answer"] in ("Yes", "No")
    assert (completion.usage.output_tokens, completion.usage.reasoning_tokens) == (230, 200)
    assert records[0].usage.reasoning_tokens == 200


@pytest.mark.parametrize(
    ("model", "extra", "says"),
    [
        ("gpt-4o", {"reasoning_effort": "low"}, "'reasoning_effort' is not supported with this model"),
        ("o3", {"reasoning_effort": "xhigh"}, "does not support 'xhigh'"),
        ("gpt-5.4", {"reasoning_effort": "low", "temperature": 0}, "'temperature' does not support 0"),
        ("gpt-5.4", {"reasoning_effort": "low", "max_tokens": 50}, "Use 'max_completion_tokens'"),
    ],
)
async def test_the_openai_fake_refuses_what_the_api_refuses(model: str, extra: dict, says: str) -> None:
    async with FakeOpenAI(key=KEY) as server:
        server.expect_violations = True
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}], **extra}
        status, payload = await post(
            f"{server.base_url}/chat/completions", body, {"Authorization": f"Bearer {KEY}"}
        )
    assert status == 400
    assert payload["error"]["type"] == "invalid_request_error" and says in payload["error"]["message"]


# ---------------------------------------------------------------------------------------
# Anthropic
# ---------------------------------------------------------------------------------------


async def test_claude_thinking_judge_offers_its_tool_and_skips_the_thinking() -> None:
    async with FakeAnthropic(key=KEY) as server:
        server.script(
            Reply(parsed={"answer": "Yes", "reasoning": "asked"}, output_tokens=40, reasoning_tokens=300)
        )
        profile = make_profile("c", "anthropic", server.base_url, model="claude-sonnet-4-5")
        async with open_pool(profile) as pool:
            completion = await pool.client("c", "judge").chat(
                ChatRequest(
                    messages=CALL,
                    schema=SCHEMA,
                    params={"thinking": THINKING, "max_tokens": 4096, "temperature": 0, "top_k": 3},
                )
            )
            chat = await pool.client("c", "user_agent").chat(
                ChatRequest(messages=CALL, params={"thinking": THINKING, "max_tokens": 4096})
            )
    judge, user = (r.json for r in server.received)
    assert "tools" not in user and user["thinking"] == THINKING
    assert judge["thinking"] == THINKING and judge["max_tokens"] == 4096
    assert "temperature" not in judge and "top_k" not in judge  # the API takes neither with thinking
    assert judge["tool_choice"] == {"type": "auto"}  # a forced tool is refused with thinking
    assert "JSON" in judge["messages"][-1]["content"]  # so a reply in text is still an answer
    assert completion.parsed == {"answer": "Yes", "reasoning": "asked"}
    assert completion.usage.output_tokens == 340 and completion.usage.reasoning_tokens == 0
    assert chat.text.startswith("Fake reply") and "Weighing" not in chat.text  # thinking block skipped


@pytest.mark.parametrize(
    ("model", "extra", "says"),
    [
        (
            "claude-sonnet-4-5",
            {"thinking": {"type": "enabled", "budget_tokens": 512}},
            "greater than or equal to 1024",
        ),
        (
            "claude-sonnet-4-5",
            {"thinking": THINKING, "max_tokens": 1024},
            "must be greater than `thinking.budget_tokens`",
        ),
        ("claude-sonnet-4-5", {"thinking": THINKING, "temperature": 0}, "may only be set to 1"),
        ("claude-opus-4-7", {"thinking": THINKING}, "Use thinking.type.adaptive"),
        ("claude-3-5-haiku-latest", {"thinking": THINKING}, "not supported"),
        (
            "claude-sonnet-4-5",
            {
                "thinking": THINKING,
                "tools": [{"name": "a", "input_schema": {"type": "object"}}],
                "tool_choice": {"type": "tool", "name": "a"},
            },
            "forces tool use",
        ),
    ],
)
async def test_the_anthropic_fake_refuses_what_the_api_refuses(model: str, extra: dict, says: str) -> None:
    async with FakeAnthropic(key=KEY) as server:
        server.expect_violations = True
        body = {"model": model, "max_tokens": 4096, "messages": [{"role": "user", "content": "hi"}], **extra}
        status, payload = await post(
            f"{server.base_url}/v1/messages", body, {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
        )
    assert status == 400 and payload["type"] == "error"
    assert payload["error"]["type"] == "invalid_request_error" and says in payload["error"]["message"]


# ---------------------------------------------------------------------------------------
# Gemini
# ---------------------------------------------------------------------------------------


async def test_gemini_thinking_config_goes_in_generation_config_and_thoughts_are_counted() -> None:
    async with FakeGemini(key=KEY) as server:
        server.script(Reply("Hello.", input_tokens=10, output_tokens=2, reasoning_tokens=64))
        config = {"thinkingLevel": "low", "includeThoughts": True}
        profile = make_profile(
            "g", "gemini", server.base_url, model="gemini-3-flash-preview", params={"thinkingConfig": config}
        )
        records: list[CallRecord] = []
        async with open_pool(profile, records=records) as pool:
            completion = await pool.client("g", "user_agent").chat(ChatRequest(messages=CALL))
    assert server.received[0].json["generationConfig"]["thinkingConfig"] == config
    assert completion.text == "Hello."  # the thought part is not the reply
    assert (completion.usage.output_tokens, completion.usage.reasoning_tokens) == (66, 64)
    assert records[0].usage.reasoning_tokens == 64


@pytest.mark.parametrize(
    ("model", "thinking", "says"),
    [
        ("gemini-3-pro-preview", {"thinkingLevel": "low", "thinkingBudget": 128}, "not supported together"),
        ("gemini-2.5-flash", {"thinkingLevel": "low"}, "Thinking level is not supported for this model"),
        ("gemini-2.5-pro", {"thinkingBudget": 0}, "between 128 and 32768"),
        ("gemini-2.0-flash", {"thinkingBudget": 1024}, "Thinking is not supported"),
    ],
)
async def test_the_gemini_fake_refuses_what_the_api_refuses(model: str, thinking: dict, says: str) -> None:
    async with FakeGemini(key=KEY) as server:
        server.expect_violations = True
        body = {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "generationConfig": {"thinkingConfig": thinking},
        }
        status, payload = await post(
            f"{server.base_url}/v1beta/models/{model}:generateContent", body, {"x-goog-api-key": KEY}
        )
    assert status == 400
    assert payload["error"]["status"] == "INVALID_ARGUMENT" and says in payload["error"]["message"]


async def test_a_limit_spent_on_reasoning_says_to_raise_max_tokens() -> None:
    exhausted = {
        "id": "chatcmpl-1",
        "model": "gpt-5.4",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "length"}],
        "usage": {
            "prompt_tokens": 50,
            "completion_tokens": 200,
            "completion_tokens_details": {"reasoning_tokens": 200},
        },
    }
    async with FakeOpenAI(key=KEY) as server:
        server.script(Raw(orjson.dumps(exhausted), headers={"Content-Type": "application/json"}))
        profile = make_profile("oai", "openai", server.base_url, model="gpt-5.4", max_retries=0)
        async with open_pool(profile) as pool:
            with pytest.raises(BadResponseError, match=r"after 200 reasoning tokens .*raise max_tokens"):
                await pool.client("oai", "judge").chat(
                    ChatRequest(
                        messages=CALL, params={"reasoning_effort": "low", "max_completion_tokens": 200}
                    )
                )
    assert server.received[0].json["max_completion_tokens"] == 200


async def test_claude_thinking_that_fills_the_limit_says_to_raise_it() -> None:
    thinking_only = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "thinking", "thinking": "Still weighing it.", "signature": "c2ln"}],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 40, "output_tokens": 1500},
    }
    async with FakeAnthropic(key=KEY) as server:
        server.script(Raw(orjson.dumps(thinking_only), headers={"Content-Type": "application/json"}))
        profile = make_profile("c", "anthropic", server.base_url, model="claude-sonnet-4-5", max_retries=0)
        async with open_pool(profile) as pool:
            with pytest.raises(BadResponseError, match="reached while thinking"):
                await pool.client("c", "chatbot").chat(
                    ChatRequest(messages=CALL, params={"thinking": THINKING, "max_tokens": 1500})
                )


# ---------------------------------------------------------------------------------------
# The reference's shorthands, translated as the reference translates them
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        # Adaptive models: adaptive thinking at that effort (output_config.effort).
        ("claude-opus-4-7", {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}}),
        ("claude-sonnet-4-6", {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}}),
        # Older thinking models: a budget, max_tokens raised to leave the answer its room.
        (
            "claude-haiku-4-5-20251001",
            {"thinking": {"type": "enabled", "budget_tokens": 4096}, "max_tokens": 6144},
        ),
    ],
)
async def test_claude_thinking_effort_reaches_the_wire_as_the_api_takes_it(
    model: str, expected: dict
) -> None:
    async with FakeAnthropic(key=KEY) as server:
        server.script(Reply("Hello."))
        profile = make_profile(
            "c", "anthropic", server.base_url, model=model, params={"thinking_effort": "medium"}
        )
        async with open_pool(profile) as pool:
            await pool.client("c", "judge").chat(ChatRequest(messages=CALL, params={"temperature": 0}))
    body = server.received[0].json
    assert "thinking_effort" not in body
    assert "temperature" not in body  # thinking takes only temperature 1 (Opus 4.7: none at all)
    for key, value in expected.items():
        assert body[key] == value, key


async def test_gemini_thinking_level_becomes_thinking_config_and_gemini_3_gets_no_temperature() -> None:
    async with FakeGemini(key=KEY) as server:
        server.script(Reply("Hello."))
        profile = make_profile(
            "g", "gemini", server.base_url, model="gemini-3-pro-preview", params={"thinking_level": "low"}
        )
        async with open_pool(profile) as pool:
            await pool.client("g", "judge").chat(
                ChatRequest(messages=CALL, params={"temperature": 0, "top_p": 0.5})
            )
    config = server.received[0].json["generationConfig"]
    assert config["thinkingConfig"] == {"thinkingLevel": "low"}
    assert "temperature" not in config and "topP" not in config and "thinking_level" not in config
