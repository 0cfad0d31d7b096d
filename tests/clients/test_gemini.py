"""Gemini generateContent against a loopback fake."""

from __future__ import annotations

import orjson
import pytest

from vera.clients.base import ChatRequest
from vera.errors import AuthError, BadResponseError
from vera.records import CallRecord, Message

from ..fakes.protocols import Fail, FakeGemini, Filtered, Raw, Refusal, Reply
from .conftest import ANSWER_SCHEMA as SCHEMA
from .conftest import KEY, make_profile, open_pool

CHAT = (
    Message("system", "You are a supportive assistant."),
    Message("user", "i haven't slept in days"),
    Message("assistant", "That sounds exhausting. What's been keeping you up?"),
    Message("user", "just thoughts"),
)


@pytest.fixture
async def server():
    async with FakeGemini(key=KEY) as server:
        yield server


def profile(server: FakeGemini, **fields):
    return make_profile("gem", "gemini", server.base_url, model="gemini-2.5-flash", **fields)


async def test_request_shape_key_header_and_generation_config(server: FakeGemini) -> None:
    async with open_pool(profile(server, params={"temperature": 0.4, "seed": 3})) as pool:
        completion = await pool.client("gem").chat(
            ChatRequest(messages=CHAT, params={"max_tokens": 256, "top_p": 0.9, "stop": ["END"]})
        )
    request = server.received[0]
    assert request.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert request.headers["x-goog-api-key"] == KEY
    assert request.query == {}  # the key never travels in the URL
    body = request.json
    assert body["systemInstruction"] == {"parts": [{"text": "You are a supportive assistant."}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][1]["parts"] == [{"text": "That sounds exhausting. What's been keeping you up?"}]
    assert body["generationConfig"] == {
        "temperature": 0.4,
        "seed": 3,
        "maxOutputTokens": 256,
        "topP": 0.9,
        "stopSequences": ["END"],
    }
    assert completion.text.startswith("Fake reply")
    assert completion.model == "gemini-2.5-flash"


async def test_models_prefix_is_accepted_in_the_model_id(server: FakeGemini) -> None:
    async with open_pool(profile(server)) as pool:
        await pool.client("gem/models/gemini-2.0-flash").chat(ChatRequest(messages=CHAT))
    assert server.received[0].path == "/v1beta/models/gemini-2.0-flash:generateContent"


async def test_structured_output_uses_response_json_schema(server: FakeGemini) -> None:
    async with open_pool(profile(server)) as pool:
        completion = await pool.client("gem").chat(ChatRequest(messages=CHAT, schema=SCHEMA))
    config = server.received[0].json["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == SCHEMA
    assert completion.parsed == {"answer": "Yes", "reasoning": "ok"}


async def test_response_schema_field_is_selectable_per_profile(server: FakeGemini) -> None:
    gemini = {"schema_field": "responseSchema"}
    async with open_pool(profile(server, gemini=gemini)) as pool:
        await pool.client("gem").chat(ChatRequest(messages=CHAT, schema=SCHEMA))
    config = server.received[0].json["generationConfig"]
    assert config["responseSchema"] == SCHEMA and "responseJsonSchema" not in config


async def test_response_schema_gets_only_the_openapi_subset(server: FakeGemini) -> None:
    # The judge's schema closes its object (additionalProperties), which responseSchema
    # does not know: sent there, the strict fake (like the real API) would refuse it.
    from vera.engine._judge import JUDGE_SCHEMA

    async with open_pool(profile(server, gemini={"schema_field": "responseSchema"})) as pool:
        await pool.client("gem").chat(ChatRequest(messages=CHAT, schema=JUDGE_SCHEMA))
    sent = server.received[0].json["generationConfig"]["responseSchema"]
    assert "additionalProperties" not in sent
    assert sent["required"] == JUDGE_SCHEMA["required"] and set(sent["properties"]) == {"answer", "reasoning"}


async def test_safety_settings_are_sent(server: FakeGemini) -> None:
    settings = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "threshold": "BLOCK_ONLY_HIGH"}]
    async with open_pool(profile(server, gemini={"safety_settings": settings})) as pool:
        await pool.client("gem").chat(ChatRequest(messages=CHAT))
    assert server.received[0].json["safetySettings"] == settings


async def test_usage_with_cached_content_tokens(server: FakeGemini) -> None:
    server.script(Reply("ok", input_tokens=3000, output_tokens=20, cached_tokens=2048))
    async with open_pool(profile(server)) as pool:
        completion = await pool.client("gem").chat(ChatRequest(messages=CHAT))
    assert completion.usage.input_tokens == 3000
    assert completion.usage.cached_input_tokens == 2048
    assert completion.usage.output_tokens == 20


async def test_blocked_prompt_is_a_bad_response_naming_the_reason(server: FakeGemini) -> None:
    server.script(Filtered(prompt=True), Filtered(prompt=True))
    records: list[CallRecord] = []
    async with open_pool(profile(server, max_retries=1), records=records) as pool:
        with pytest.raises(BadResponseError, match="blockReason=SAFETY"):
            await pool.client("gem").chat(ChatRequest(messages=CHAT))
    assert "blockReason=SAFETY" in (records[0].error or "")


async def test_candidate_without_text_names_its_finish_reason(server: FakeGemini) -> None:
    server.script(Filtered(), Filtered())
    async with open_pool(profile(server, max_retries=1)) as pool:
        with pytest.raises(BadResponseError, match="finishReason=SAFETY"):
            await pool.client("gem").chat(ChatRequest(messages=CHAT))


async def test_refusal_in_words_is_a_normal_completion(server: FakeGemini) -> None:
    server.script(Refusal("I'm not able to help with that, but a crisis line can."))
    async with open_pool(profile(server)) as pool:
        completion = await pool.client("gem").chat(ChatRequest(messages=CHAT))
    assert completion.text.startswith("I'm not able to help")
    assert completion.finish_reason == "stop"


async def test_retry_info_in_the_body_is_honoured(server: FakeGemini) -> None:
    server.script(Fail(429, "Resource has been exhausted", retry_after="0.2"), Reply("ok"))
    records: list[CallRecord] = []
    async with open_pool(profile(server), records=records) as pool:
        await pool.client("gem").chat(ChatRequest(messages=CHAT))
    first, second = server.received
    assert second.at - first.at >= 0.2
    assert records[0].http_429 == 1 and records[0].attempts == 2


async def test_invalid_key_400_is_an_auth_error() -> None:
    async with (
        FakeGemini(key="AIza-the-right-one-000000000000") as server,
        open_pool(profile(server)) as pool,
    ):
        with pytest.raises(AuthError, match="API key not valid"):
            await pool.client("gem").chat(ChatRequest(messages=CHAT))
    assert len(server.received) == 1


async def test_thought_parts_are_not_part_of_the_reply(server: FakeGemini) -> None:
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "Let me think...", "thought": True}, {"text": "Hello."}],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 2,
            "thoughtsTokenCount": 30,
        },
    }
    server.script(Raw(orjson.dumps(body), headers={"Content-Type": "application/json"}))
    async with open_pool(profile(server)) as pool:
        completion = await pool.client("gem").chat(ChatRequest(messages=CHAT))
    assert completion.text == "Hello."
    assert completion.usage.output_tokens == 32  # thinking is billed as output
    assert completion.usage.reasoning_tokens == 30
