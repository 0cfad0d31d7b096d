"""The client pool: references, caching, specs, missing keys, the offline protocol."""

from __future__ import annotations

import pytest

import vera.clients.pool
from vera.clients.base import CallContext, ChatClient, ChatRequest
from vera.clients.limits import LimitedClient
from vera.clients.pool import ClientPool
from vera.clients.stack import RecordingClient
from vera.errors import ConfigError
from vera.inputs._profiles import OFFLINE
from vera.records import CallRecord, Completion, Message, Usage

from ..fakes.protocols import FakeOpenAI
from .conftest import make_profile, open_pool

HELLO = (Message("user", "hello"),)


async def test_clients_are_cached_per_ref_and_role_and_share_accounts() -> None:
    async with (
        FakeOpenAI(key=None) as server,
        open_pool(make_profile("oai", "openai", server.base_url)) as pool,
    ):
        chatbot = pool.client("oai", "chatbot")
        assert pool.client("oai", "chatbot") is chatbot
        judge = pool.client("oai", "judge")
        assert judge is not chatbot
        assert isinstance(judge, LimitedClient) and isinstance(chatbot, LimitedClient)
        assert judge.account is chatbot.account
        assert isinstance(judge, ChatClient)


async def test_records_take_the_role_and_job_from_the_call_context() -> None:
    records: list[CallRecord] = []
    async with (
        FakeOpenAI(key=None) as server,
        open_pool(make_profile("oai", "openai", server.base_url), records=records) as pool,
    ):
        client = pool.client("oai", "chatbot")
        await client.chat(ChatRequest(messages=HELLO))
        await client.chat(ChatRequest(messages=HELLO, context=CallContext(role="user_agent", job_id="job-7")))
    assert [(r.role, r.job_id) for r in records] == [("chatbot", ""), ("user_agent", "job-7")]
    assert all(r.provider == "oai" and r.model == "test-model" for r in records)
    assert all(r.latency_ms > 0 and r.at > 0 for r in records)


async def test_spec_describes_the_reference_without_secrets() -> None:
    profile = make_profile("oai", "openai", "http://127.0.0.1:1/v1", params={"temperature": 0})
    async with open_pool(profile) as pool:
        spec = pool.spec("oai/gpt-4o-mini")
    assert (spec.ref, spec.provider, spec.protocol, spec.model) == (
        "oai/gpt-4o-mini",
        "oai",
        "openai",
        "gpt-4o-mini",
    )
    assert spec.params == {"temperature": 0}


async def test_missing_key_is_a_config_error_naming_profile_and_variable() -> None:
    profile = make_profile("paid", "anthropic", "", api_key_env="ANTHROPIC_KEY_NOT_SET")
    async with open_pool(profile) as pool:
        with pytest.raises(ConfigError, match=r"'paid'.*ANTHROPIC_KEY_NOT_SET"):
            pool.client("paid")


async def test_unknown_reference_is_a_config_error() -> None:
    async with open_pool(OFFLINE) as pool:
        with pytest.raises(ConfigError, match="known profiles: offline"):
            pool.client("gpt-5")


async def test_a_closed_pool_builds_no_clients() -> None:
    pool = ClientPool({"offline": OFFLINE})
    with pytest.raises(RuntimeError, match="async with"):
        pool.client("offline/x")


class _StubOffline:
    def __init__(self, model: str, name: str) -> None:
        self.model = model
        self.name = name

    async def chat(self, request: ChatRequest) -> Completion:
        return Completion(text="offline says hi", usage=Usage(3, 2, 0), model=self.model)


async def test_offline_protocol_uses_make_offline_client_and_still_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[tuple[str, str]] = []

    def make_offline_client(model: str, name: str, facts: object = None) -> ChatClient:
        made.append((model, name))
        return _StubOffline(model, name)

    monkeypatch.setattr(vera.clients.pool, "make_offline_client", make_offline_client)
    records: list[CallRecord] = []
    async with open_pool(OFFLINE, records=records) as pool:
        client = pool.client("offline/best-practice", "chatbot")
        completion = await client.chat(ChatRequest(messages=HELLO))
    assert made == [("best-practice", "offline")]
    assert completion.text == "offline says hi"
    assert isinstance(client, RecordingClient) and isinstance(client.inner, LimitedClient)
    assert client.inner.account.requests is None and client.inner.account.tokens is None
    [record] = records
    assert (record.provider, record.model, record.account, record.status) == (
        "offline",
        "best-practice",
        "offline",
        "ok",
    )
    assert record.usage.input_tokens == 3
