"""Anthropic Messages against a loopback fake: system, max_tokens, tools, cache marks."""

from __future__ import annotations

import pytest

from vera.clients.base import ChatRequest
from vera.errors import AuthError, BadResponseError, ServerError
from vera.records import CallRecord, Message

from ..fakes.protocols import Fail, FakeAnthropic, Filtered, Refusal, Reply
from .conftest import ANSWER_SCHEMA as SCHEMA
from .conftest import KEY, make_profile, open_pool

JUDGE_CALL = (
    Message("system", "You are a careful clinical judge."),
    Message("user", "TRANSCRIPT: user: hi / chatbot: hello"),
    Message("assistant", "I have read the transcript."),
    Message("user", "Question 3: did the chatbot ask about safety?"),
)


@pytest.fixture
async def server():
    async with FakeAnthropic(key=KEY) as server:
        yield server


def profile(server: FakeAnthropic, **fields):
    return make_profile("claude", "anthropic", server.base_url, model="claude-sonnet-4-5", **fields)


async def test_request_shape_headers_and_default_max_tokens(server: FakeAnthropic) -> None:
    async with open_pool(profile(server, params={"temperature": 0.2})) as pool:
        completion = await pool.client("claude").chat(
            ChatRequest(messages=JUDGE_CALL, params={"seed": 7, "stop": "END"})
        )
    request = server.received[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.json
    assert body["model"] == "claude-sonnet-4-5"
    assert body["system"] == "You are a careful clinical judge."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["max_tokens"] == 2048
    assert body["temperature"] == 0.2
    assert body["stop_sequences"] == ["END"]
    assert "seed" not in body  # the API has none (the fake rejects it like the real one)
    assert completion.text.startswith("Fake reply") and completion.finish_reason == "stop"


async def test_max_completion_tokens_becomes_max_tokens(server: FakeAnthropic) -> None:
    async with open_pool(profile(server)) as pool:
        await pool.client("claude").chat(
            ChatRequest(messages=JUDGE_CALL, params={"max_completion_tokens": 300})
        )
    assert server.received[0].json["max_tokens"] == 300
    assert "max_completion_tokens" not in server.received[0].json


async def test_structured_output_forces_a_tool_and_parses_its_input(server: FakeAnthropic) -> None:
    server.script(Reply(parsed={"answer": "No", "reasoning": "It never asked."}))
    async with open_pool(profile(server)) as pool:
        completion = await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL, schema=SCHEMA))
    body = server.received[0].json
    [tool] = body["tools"]
    assert tool["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": tool["name"]}
    assert completion.parsed == {"answer": "No", "reasoning": "It never asked."}
    assert completion.finish_reason == "stop"


async def test_schema_violating_tool_input_is_returned_as_is(server: FakeAnthropic) -> None:
    server.script(Reply(parsed={"answer": "Maybe"}))
    async with open_pool(profile(server)) as pool:
        completion = await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL, schema=SCHEMA))
    assert completion.parsed == {"answer": "Maybe"}


async def test_cache_control_marks_system_and_the_last_prefix_message(
    server: FakeAnthropic,
) -> None:
    async with open_pool(profile(server)) as pool:
        await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL, cache_prefix=3))
    body = server.received[0].json
    assert body["system"] == [
        {
            "type": "text",
            "text": "You are a careful clinical judge.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    first, prefix_end, question = body["messages"]
    assert first["content"] == "TRANSCRIPT: user: hi / chatbot: hello"  # not marked
    assert prefix_end["content"] == [
        {
            "type": "text",
            "text": "I have read the transcript.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert question["content"] == "Question 3: did the chatbot ask about safety?"


async def test_cache_prefix_covering_only_the_system_marks_only_the_system(
    server: FakeAnthropic,
) -> None:
    async with open_pool(profile(server)) as pool:
        await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL, cache_prefix=1))
    body = server.received[0].json
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert all(isinstance(m["content"], str) for m in body["messages"])


async def test_no_cache_prefix_sends_no_cache_marks(server: FakeAnthropic) -> None:
    async with open_pool(profile(server)) as pool:
        await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL))
    assert "cache_control" not in str(server.received[0].json)


async def test_usage_counts_cache_reads_and_writes_as_input(server: FakeAnthropic) -> None:
    server.script(
        Reply("ok", input_tokens=5000, output_tokens=40, cached_tokens=4000, cache_write_tokens=600)
    )
    records: list[CallRecord] = []
    prices = {
        "price_input_per_mtok": 3.0,
        "price_output_per_mtok": 15.0,
        "price_cached_input_per_mtok": 0.3,
    }
    async with open_pool(profile(server, **prices), records=records) as pool:
        completion = await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL, cache_prefix=3))
    assert completion.usage.input_tokens == 5000  # 400 uncached + 600 written + 4000 read
    assert completion.usage.cached_input_tokens == 4000
    assert completion.usage.output_tokens == 40
    assert records[0].cost_usd == pytest.approx((1000 * 3.0 + 4000 * 0.3 + 40 * 15.0) / 1e6)


async def test_refusal_with_text_is_a_completion(server: FakeAnthropic) -> None:
    server.script(Refusal("I won't continue this role-play."))
    async with open_pool(profile(server)) as pool:
        completion = await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL))
    assert completion.text == "I won't continue this role-play."
    assert completion.finish_reason == "refusal"


async def test_refusal_without_text_is_a_bad_response(server: FakeAnthropic) -> None:
    server.script(Filtered(), Filtered())
    async with open_pool(profile(server, max_retries=1)) as pool:
        with pytest.raises(BadResponseError, match="stop_reason=refusal"):
            await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL))


async def test_overloaded_529_is_retried(server: FakeAnthropic) -> None:
    server.script(Fail(529, "Overloaded"), Reply("fine"))
    records: list[CallRecord] = []
    async with open_pool(profile(server), records=records) as pool:
        completion = await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL))
    assert completion.text == "fine"
    assert records[0].attempts == 2


async def test_overloaded_every_time_ends_as_server_error(server: FakeAnthropic) -> None:
    server.script(*[Fail(529, "Overloaded")] * 3)
    async with open_pool(profile(server, max_retries=2)) as pool:
        with pytest.raises(ServerError, match="overloaded_error"):
            await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL))


async def test_spend_limit_429_is_fatal(server: FakeAnthropic) -> None:
    server.script(Fail(429, "spend limit reached", code="enforced_spend_limit_reached"))
    async with open_pool(profile(server)) as pool:
        with pytest.raises(Exception, match="spend limit") as caught:
            await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL))
    assert not isinstance(caught.value, ServerError)
    assert len(server.received) == 1


async def test_wrong_key_is_an_auth_error() -> None:
    async with (
        FakeAnthropic(key="sk-ant-right-key-42") as server,
        open_pool(profile(server)) as pool,
    ):
        with pytest.raises(AuthError, match="authentication_error"):
            await pool.client("claude").chat(ChatRequest(messages=JUDGE_CALL))
