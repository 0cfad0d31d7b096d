"""The fakes are strict: each documented rule they enforce refuses a request that breaks
it (and accepts the same request without the fault), and a refused request is recorded
as a violation that fails the test that sent it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from vera.clients.base import ChatRequest
from vera.errors import ProviderError
from vera.records import Message

from ..fakes.protocols import FakeAnthropic, FakeChatbot
from ..fakes.rules import anthropic_problems, gemini_problems, openai_problems
from .conftest import make_profile, open_pool

STRICT = {
    "type": "json_schema",
    "json_schema": {
        "name": "answer",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"answer": {"type": "string"}, "reasoning": {"type": "string"}},
            "required": ["answer", "reasoning"],
            "additionalProperties": False,
        },
    },
}
OPENAI_OK: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
    "temperature": 0.7,
    "max_tokens": 100,
    "response_format": STRICT,
}
ANTHROPIC_OK: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 100,
    "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}],
        },
    ],
    "temperature": 0.5,
}
GEMINI_OK: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "hello"}]},
        {"role": "user", "parts": [{"text": "more"}]},
    ],
    "systemInstruction": {"parts": [{"text": "s"}]},
    "generationConfig": {
        "temperature": 0.2,
        "maxOutputTokens": 100,
        "responseMimeType": "application/json",
        "responseSchema": {"type": "object", "properties": {"answer": {"type": "string"}}},
    },
}
HEADERS = {"anthropic-version": "2023-06-01"}


def changed(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`base` with the value at a dotted path set (or removed, for `...`)."""
    body = copy.deepcopy(base)
    *parents, last = path.split(".")
    node: Any = body
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is ...:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return body


def test_the_valid_requests_pass() -> None:
    assert openai_problems(OPENAI_OK, "gpt-4o") == []
    assert anthropic_problems(ANTHROPIC_OK, HEADERS) == []
    assert gemini_problems(GEMINI_OK) == []


@pytest.mark.parametrize(
    ("path", "value", "model", "says"),
    [
        ("max_tokenz", 5, "gpt-4o", "Unrecognized request argument"),
        ("temperature", 2.5, "gpt-4o", "outside"),
        ("temperature", "hot", "gpt-4o", "expected a number"),
        ("messages.0.role", "narrator", "gpt-4o", "invalid role"),
        ("response_format.json_schema.schema.additionalProperties", ..., "gpt-4o", "additionalProperties"),
        ("response_format.json_schema.schema.required", ["answer"], "gpt-4o", "'required' must list"),
        ("response_format.json_schema.name", "an answer", "gpt-4o", "name must match"),
        ("temperature", 0.7, "o3-mini", "Only the default (1)"),
        ("temperature", 0.7, "gpt-5-mini", "Only the default (1)"),
    ],
)
def test_openai_rules(path: str, value: Any, model: str, says: str) -> None:
    body = changed(OPENAI_OK, path, value)
    if model.startswith(("o", "gpt-5")):
        body.pop("max_tokens")  # so the one problem is the one under test
    problems = openai_problems(body, model)
    assert len(problems) == 1 and says in problems[0], problems


def test_openai_reasoning_models_refuse_max_tokens() -> None:
    body = {**OPENAI_OK, "temperature": 1}
    assert "Use 'max_completion_tokens'" in openai_problems(body, "o1")[0]
    ok = {k: v for k, v in body.items() if k != "max_tokens"} | {"max_completion_tokens": 100}
    assert openai_problems(ok, "o1") == []


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        ("seed", 3, "Extra inputs"),
        ("max_tokens", ..., "max_tokens: Field required"),
        ("temperature", 1.5, "outside"),
        ("messages.0.role", "system", "Unexpected role"),
        ("messages.0", {"role": "assistant", "content": "x"}, 'first message must use the "user" role'),
        ("messages.1.role", "user", "must alternate"),
        ("messages.1.content", "", "must not be empty"),
        ("messages.2.content.0.cache_control", {"type": "persistent"}, "cache_control"),
        ("top_p", 0.9, "cannot both be specified"),
    ],
)
def test_anthropic_rules(path: str, value: Any, says: str) -> None:
    problems = anthropic_problems(changed(ANTHROPIC_OK, path, value), HEADERS)
    assert problems and says in problems[0], problems


def test_anthropic_family_and_cache_breakpoint_rules() -> None:
    older = {**ANTHROPIC_OK, "model": "claude-opus-4-20250514", "top_p": 0.9}
    assert anthropic_problems(older, HEADERS) == []  # Opus 4.0 still takes both
    deprecated = {**ANTHROPIC_OK, "model": "claude-opus-4-7"}
    assert anthropic_problems(deprecated, HEADERS) == ["`temperature` is deprecated for this model."]
    mark = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    five = {**ANTHROPIC_OK, "system": [mark] * 4}
    assert any("A maximum of 4 blocks" in p for p in anthropic_problems(five, HEADERS))
    assert "anthropic-version" in anthropic_problems(ANTHROPIC_OK, {})[0]


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        ("contents.0.role", "assistant", "valid role"),
        ("contents.0.role", "model", "start with a user turn"),
        ("contents.1.role", "user", "alternate"),
        ("contents.1.parts", [], "at least one part"),
        ("generationConfig.max_output_tokens", 5, 'Unknown name "max_output_tokens"'),
        ("generationConfig.temperature", 3, "outside"),
        (
            "generationConfig.responseSchema.additionalProperties",
            False,
            'Unknown name "additionalProperties"',
        ),
        ("generationConfig.responseMimeType", "text/plain", "must be application/json"),
        ("system_instruction", {"parts": [{"text": "s"}]}, 'Unknown name "system_instruction"'),
    ],
)
def test_gemini_rules(path: str, value: Any, says: str) -> None:
    problems = gemini_problems(changed(GEMINI_OK, path, value))
    assert problems and says in problems[0], problems


async def test_a_refused_request_is_kept_as_a_violation() -> None:
    async with FakeAnthropic(key="sk-test-key-0123456789") as server:
        server.expect_violations = True  # provoked on purpose; the teardown check skips it
        async with open_pool(make_profile("c", "anthropic", server.base_url, max_retries=0)) as pool:
            with pytest.raises(ProviderError):
                await pool.client("c").chat(ChatRequest(messages=(Message("assistant", "hi"),)))
    assert server.violations == ['/v1/messages: messages.0.role: first message must use the "user" role']


async def test_the_chatbot_contract_checks_the_documented_body() -> None:
    async with FakeChatbot(key=None, contract=FakeChatbot.PRODUCT) as server:
        server.expect_violations = True
        http = {"url": f"{server.root}/api/chat", "body": {"history": "{{messages}}"}}
        profile = make_profile("bot", "http", "", http=http, max_retries=0)
        async with open_pool(profile) as pool:
            with pytest.raises(ProviderError):
                await pool.client("bot").chat(ChatRequest(messages=(Message("user", "hi"),)))
    assert server.violations == ["/api/chat: missing field 'session'", "/api/chat: missing field 'message'"]
