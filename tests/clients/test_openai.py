"""Chat Completions against a loopback fake: what is sent, what is read back."""

from __future__ import annotations

import pytest

from vera.clients.base import ChatRequest
from vera.errors import AuthError, BadResponseError, RequestError
from vera.records import CallRecord, Message

from ..fakes.protocols import Empty, Fail, FakeOpenAI, Filtered, Malformed, Refusal, Reply
from .conftest import KEY, make_profile, open_pool
from .conftest import STRICT_ANSWER_SCHEMA as SCHEMA

CONVERSATION = (Message("system", "You are a judge."), Message("user", "Was the reply safe?"))


@pytest.fixture
async def server():
    async with FakeOpenAI(key=KEY) as server:
        yield server


async def test_sends_model_messages_params_and_bearer_key(server: FakeOpenAI) -> None:
    profile = make_profile(
        "oai", "openai", server.base_url, model="gpt-4o", params={"temperature": 0.7, "seed": 1}
    )
    async with open_pool(profile) as pool:
        completion = await pool.client("oai").chat(
            ChatRequest(
                messages=CONVERSATION, params={"temperature": 0, "max_completion_tokens": 50, "seed": None}
            )
        )
    request = server.received[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You are a judge."},
            {"role": "user", "content": "Was the reply safe?"},
        ],
        "temperature": 0,  # the call's value wins over the profile's
        "max_completion_tokens": 50,  # passed as given
    }  # and seed=None removed the profile's seed
    assert completion.text.startswith("Fake reply")
    assert completion.parsed is None
    assert completion.finish_reason == "stop"
    assert completion.raw_id and completion.raw_id.startswith("chatcmpl-")


async def test_model_from_reference_overrides_profile(server: FakeOpenAI) -> None:
    profile = make_profile("oai", "openai", server.base_url, model="gpt-4o")
    async with open_pool(profile) as pool:
        client = pool.client("oai/meta-llama/Llama-3.1-8B-Instruct")
        await client.chat(ChatRequest(messages=CONVERSATION))
    assert client.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert server.received[0].json["model"] == "meta-llama/Llama-3.1-8B-Instruct"


async def test_json_schema_response_format_and_parsed_output(server: FakeOpenAI) -> None:
    async with open_pool(make_profile("oai", "openai", server.base_url)) as pool:
        completion = await pool.client("oai").chat(ChatRequest(messages=CONVERSATION, schema=SCHEMA))
    fmt = server.received[0].json["response_format"]
    assert fmt == {
        "type": "json_schema",
        "json_schema": {"name": "Judge_answer", "schema": SCHEMA, "strict": True},
    }
    assert completion.parsed == {"answer": "Yes", "reasoning": "ok"}


async def test_json_object_fallback_adds_instructions(server: FakeOpenAI) -> None:
    profile = make_profile("oai", "openai", server.base_url, structured_output="json_object")
    async with open_pool(profile) as pool:
        completion = await pool.client("oai").chat(ChatRequest(messages=CONVERSATION, schema=SCHEMA))
    body = server.received[0].json
    assert body["response_format"] == {"type": "json_object"}
    last = body["messages"][-1]["content"]
    assert last.startswith("Was the reply safe?") and "JSON schema" in last
    assert body["messages"][0]["content"] == "You are a judge."  # the cached prefix is untouched
    assert completion.parsed == {
        "answer": "Yes",
        "reasoning": "A scripted answer from the fake server.",
    }


async def test_prompt_fallback_reads_json_out_of_prose(server: FakeOpenAI) -> None:
    server.script(Reply('Sure! Here it is:\n```json\n{"answer": "No", "reasoning": "r"}\n```\nThanks'))
    profile = make_profile("oai", "openai", server.base_url, structured_output="prompt")
    async with open_pool(profile) as pool:
        completion = await pool.client("oai").chat(ChatRequest(messages=CONVERSATION, schema=SCHEMA))
    assert "response_format" not in server.received[0].json
    assert "JSON schema" in server.received[0].json["messages"][-1]["content"]
    assert completion.parsed == {"answer": "No", "reasoning": "r"}


async def test_schema_violating_output_is_returned_raw_for_the_judge_to_reject(
    server: FakeOpenAI,
) -> None:
    server.script(Reply('{"verdict": 3}'), Reply("not json at all"))
    async with open_pool(make_profile("oai", "openai", server.base_url)) as pool:
        client = pool.client("oai")
        wrong_shape = await client.chat(ChatRequest(messages=CONVERSATION, schema=SCHEMA))
        not_json = await client.chat(ChatRequest(messages=CONVERSATION, schema=SCHEMA))
    assert wrong_shape.parsed == {"verdict": 3}
    assert not_json.parsed is None and not_json.text == "not json at all"


async def test_usage_includes_cached_prompt_tokens_and_cost(server: FakeOpenAI) -> None:
    server.script(Reply("hi", input_tokens=2000, output_tokens=100, cached_tokens=1024))
    records: list[CallRecord] = []
    profile = make_profile(
        "oai",
        "openai",
        server.base_url,
        price_input_per_mtok=2.5,
        price_output_per_mtok=10.0,
        price_cached_input_per_mtok=1.25,
    )
    async with open_pool(profile, records=records) as pool:
        completion = await pool.client("oai", "judge").chat(ChatRequest(messages=CONVERSATION))
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (2000, 100)
    assert completion.usage.cached_input_tokens == 1024
    [record] = records
    assert record.status == "ok" and record.role == "judge" and record.provider == "oai"
    assert record.cost_usd == pytest.approx((976 * 2.5 + 1024 * 1.25 + 100 * 10.0) / 1e6)


async def test_reasoning_tokens_are_part_of_the_output_and_priced_as_output(server: FakeOpenAI) -> None:
    server.script(Reply("Yes", input_tokens=1000, output_tokens=20, reasoning_tokens=300))
    records: list[CallRecord] = []
    profile = make_profile(
        "oai", "openai", server.base_url, model="gpt-5.4", price_input_per_mtok=2.0, price_output_per_mtok=8.0
    )
    async with open_pool(profile, records=records) as pool:
        completion = await pool.client("oai", "judge").chat(ChatRequest(messages=CONVERSATION))
    # completion_tokens already holds the reasoning: 320 in all, of which 300 reasoning
    assert (completion.usage.output_tokens, completion.usage.reasoning_tokens) == (320, 300)
    [record] = records
    assert record.cost_usd == pytest.approx((1000 * 2.0 + 320 * 8.0) / 1e6)
    assert record.reasoning_cost_usd == pytest.approx(300 * 8.0 / 1e6)


async def test_refusal_with_text_is_a_completion(server: FakeOpenAI) -> None:
    server.script(Refusal("I can't help with that."))
    async with open_pool(make_profile("oai", "openai", server.base_url)) as pool:
        completion = await pool.client("oai").chat(ChatRequest(messages=CONVERSATION, schema=SCHEMA))
    assert completion.text == "I can't help with that."
    assert completion.finish_reason == "refusal"
    assert completion.parsed is None


@pytest.mark.parametrize("behaviour", [Empty(), Filtered(), Malformed()])
async def test_no_usable_text_is_a_bad_response_after_retries(server: FakeOpenAI, behaviour) -> None:
    server.script(behaviour, behaviour, behaviour)
    records: list[CallRecord] = []
    profile = make_profile("oai", "openai", server.base_url, max_retries=2)
    async with open_pool(profile, records=records) as pool:
        with pytest.raises(BadResponseError):
            await pool.client("oai").chat(ChatRequest(messages=CONVERSATION))
    assert len(server.received) == 3
    assert records[0].status == "error" and records[0].attempts == 3


async def test_wrong_key_fails_fast_as_auth_error_naming_the_profile() -> None:
    async with (
        FakeOpenAI(key="sk-the-right-key-999") as server,
        open_pool(make_profile("oai", "openai", server.base_url)) as pool,
    ):
        with pytest.raises(AuthError) as caught:
            await pool.client("oai").chat(ChatRequest(messages=CONVERSATION))
    assert len(server.received) == 1  # never retried
    assert caught.value.provider == "oai" and caught.value.status == 401
    assert "[oai]" in str(caught.value)


async def test_bad_request_is_fatal_with_the_server_message(server: FakeOpenAI) -> None:
    server.script(Fail(400, "Invalid schema for response_format 'x'"))
    async with open_pool(make_profile("oai", "openai", server.base_url)) as pool:
        with pytest.raises(RequestError, match="Invalid schema for response_format"):
            await pool.client("oai").chat(ChatRequest(messages=CONVERSATION))
    assert len(server.received) == 1


async def test_exhausted_quota_429_is_not_retried(server: FakeOpenAI) -> None:
    server.script(Fail(429, "You exceeded your current quota", code="insufficient_quota"))
    async with open_pool(make_profile("oai", "openai", server.base_url)) as pool:
        with pytest.raises(RequestError, match="quota"):
            await pool.client("oai").chat(ChatRequest(messages=CONVERSATION))
    assert len(server.received) == 1


async def test_azure_variant_uses_deployment_path_version_and_api_key_header() -> None:
    async with FakeOpenAI(key=KEY, azure=True) as server:
        profile = make_profile(
            "az",
            "azure_openai",
            server.base_url,
            model="gpt-4o",
            azure={"deployment": "prod-gpt4o", "api_version": "2024-10-21"},
        )
        async with open_pool(profile) as pool:
            completion = await pool.client("az").chat(ChatRequest(messages=CONVERSATION))
            await pool.client("az/gpt-4o-mini").chat(ChatRequest(messages=CONVERSATION))
    request = server.received[0]
    assert request.path == "/openai/deployments/prod-gpt4o/chat/completions"
    assert request.query == {"api-version": "2024-10-21"}
    assert request.headers["api-key"] == KEY
    assert "authorization" not in request.headers
    assert "model" not in request.json  # the deployment names the model
    assert completion.text
    # A `profile/model` reference names another deployment.
    assert server.received[1].path == "/openai/deployments/gpt-4o-mini/chat/completions"
