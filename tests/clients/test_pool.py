"""The client pool: references, caching, specs, missing keys, the offline protocol."""

from __future__ import annotations

import pytest

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


class _StubStandIns:
    """Stand-ins the pool is given: it builds offline models only through them."""

    def __init__(self) -> None:
        self.made: list[tuple[str, str]] = []

    def client(self, model: str, name: str) -> ChatClient:
        self.made.append((model, name))
        return _StubOffline(model, name)

    def rubric_refusal(self, model: str, rubric_key: str) -> str | None:
        return f"{model} refuses {rubric_key}"


async def test_offline_protocol_asks_the_stand_ins_and_still_records() -> None:
    stand_ins = _StubStandIns()
    made = stand_ins.made
    records: list[CallRecord] = []
    async with open_pool(OFFLINE, records=records, stand_ins=stand_ins) as pool:
        assert pool.rubric_refusal("offline/lexical-judge", "x") == "lexical-judge refuses x"
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


async def test_a_pool_without_stand_ins_builds_no_offline_model() -> None:
    async with open_pool(OFFLINE, stand_ins=None) as pool:
        assert pool.rubric_refusal("offline/lexical-judge", "x") is None
        with pytest.raises(ConfigError, match="offline models need the stand-ins"):
            pool.client("offline/best-practice")


# A call of 1M input tokens, 400k of them read from the prompt cache (Anthropic: 100k
# written to it), and 100k output tokens.
CACHED = Usage(input_tokens=1_000_000, output_tokens=100_000, cached_input_tokens=400_000)
WRITTEN = Usage(
    input_tokens=1_000_000, output_tokens=100_000, cached_input_tokens=400_000, cache_write_tokens=100_000
)


def test_batch_prices_stack_the_cache_discount_where_the_provider_does() -> None:
    from vera.clients.pool import CachePrices, tier_prices

    live = CachePrices(2.0, 8.0, 0.5)
    # OpenAI and Anthropic: every rate halves, cache reads included
    stacked = tier_prices(live, 0.5)
    assert stacked.cost(CACHED) == pytest.approx(live.cost(CACHED) / 2)
    assert stacked.cost(CACHED) == pytest.approx((600_000 * 1.0 + 400_000 * 0.25 + 100_000 * 4.0) / 1e6)
    # Anthropic's cache writes too
    anthropic = CachePrices(2.0, 8.0, 0.2, cache_write_per_mtok=2.5)
    assert tier_prices(anthropic, 0.5).cost(WRITTEN) == pytest.approx(anthropic.cost(WRITTEN) / 2)
    # Gemini: a cache hit keeps the cache rate, the rest halves
    gemini = tier_prices(live, 0.5, 1.0)
    assert gemini.cost(CACHED) == pytest.approx((600_000 * 1.0 + 400_000 * 0.5 + 100_000 * 4.0) / 1e6)
    # no cached price: cached input is input, billed at its live input rate on Gemini
    plain = tier_prices(CachePrices(2.0, 8.0), 0.5, 1.0)
    assert plain.cost(CACHED) == pytest.approx((600_000 * 1.0 + 400_000 * 2.0 + 100_000 * 4.0) / 1e6)
    # ... and the worst case a budget reserves covers the dearest input token
    assert plain.max_input_per_mtok() == 2.0


def test_the_gemini_profile_keeps_cache_hits_at_the_cache_rate_in_batches() -> None:
    from pathlib import Path

    from vera.inputs import load_profiles

    profiles = load_profiles(Path(__file__).resolve().parents[2] / "providers")
    gemini = profiles["gemini"]
    assert (gemini.batch_price_factor, gemini.batch_cached_input_factor) == (0.5, 1.0)
    assert profiles["openai"].batch_cached_input_factor is None
    assert profiles["anthropic"].batch_cached_input_factor is None
