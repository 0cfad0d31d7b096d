"""The middleware stack (vera.clients.stack): built once per reference and role, in the
documented order recording(cache(limits(provider))), on a real loopback OpenAI fake."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from vera.clients.base import CallContext, ChatRequest
from vera.clients.cache import CachedClient, ResponseCache
from vera.clients.limits import Account, LimitedClient, RetryPolicy, TokenBucket
from vera.clients.meter import METER, CallMeter
from vera.clients.openai import OpenAIClient
from vera.clients.stack import CachingClients, RecordingClient, stack
from vera.errors import ServerError
from vera.inputs._profiles import OFFLINE
from vera.records import CallRecord, Completion, Message, ModelSpec, Usage

from ..fakes.protocols import Fail, FakeOpenAI, Reply
from .conftest import make_profile, open_pool
from .test_limits import FakeClock

REQUEST = ChatRequest(
    messages=(Message("user", "hello"),),
    context=CallContext(role="judge", job_id="job-1", conversation_id="conv-1"),
)


async def test_each_stack_is_built_once_in_the_documented_order(tmp_path: Path) -> None:
    records: list[CallRecord] = []
    cache = ResponseCache(tmp_path / "cache.sqlite")
    async with FakeOpenAI(key=None) as server:
        profile = make_profile("oai", "openai", server.base_url)
        async with open_pool(profile) as pool:
            clients = CachingClients(pool, cache, records.append)
            judge = clients.client("oai", "judge")
            assert clients.client("oai", "judge") is judge
            assert isinstance(judge, RecordingClient)
            assert isinstance(judge.inner, CachedClient)
            assert judge.inner.inner is pool.limited("oai", "judge")
            assert isinstance(pool.limited("oai", "judge").inner, OpenAIClient)
            # Another role is another stack over its own limited client.
            assert clients.client("oai", "chatbot") is not judge
    cache.close()


async def test_offline_stand_ins_are_recorded_but_never_cached(tmp_path: Path) -> None:
    records: list[CallRecord] = []
    cache = ResponseCache(tmp_path / "cache.sqlite")
    async with open_pool(OFFLINE) as pool:
        bot = CachingClients(pool, cache, records.append).client("offline/best-practice")
        assert isinstance(bot, RecordingClient) and isinstance(bot.inner, LimitedClient)
        await bot.chat(ChatRequest(messages=(Message("user", "hi"),)))
    assert [(r.account, r.cached) for r in records] == [("offline", False)]
    assert len(cache) == 0
    cache.close()


async def test_a_cached_reply_skips_the_limits_and_is_recorded_as_cached(tmp_path: Path) -> None:
    records: list[CallRecord] = []
    cache = ResponseCache(tmp_path / "cache.sqlite")
    clock = FakeClock()  # frozen: the buckets never drain, so their level counts takes
    account = Account("api[KEY]", rpm=600, tpm=100_000, clock=clock)
    spec = ModelSpec(ref="oai", provider="oai", protocol="openai", model="test-model")
    async with FakeOpenAI(key=None) as server, aiohttp.ClientSession() as session:
        server.script(Reply("first", input_tokens=10, output_tokens=2))
        inner = OpenAIClient(
            session, name="oai", model="test-model", url=f"{server.base_url}/chat/completions", headers={}
        )
        limited = LimitedClient(inner, account, RetryPolicy(0), provider="oai", timeout_s=10)
        client = stack(limited, spec, role="judge", cache=cache, on_call=records.append)
        first = await client.chat(REQUEST)
        assert isinstance(account.tokens, TokenBucket)
        tokens_after_first = account.tokens.level
        again = await client.chat(REQUEST)
    assert first.text == again.text == "first"
    assert len(server.received) == 1  # the second answer came from the cache
    # The limits saw one call: one request and its tokens taken, one call counted.
    assert isinstance(account.requests, TokenBucket) and account.requests.level == 1.0
    assert account.tokens.level == tokens_after_first
    assert account.calls == 1
    paid, cached = records
    assert (paid.job_id, paid.role, paid.account, paid.attempts, paid.cached) == (
        "job-1",
        "judge",
        "api[KEY]",
        1,
        False,
    )
    assert paid.usage.input_tokens == 10
    assert (cached.job_id, cached.role, cached.account, cached.attempts, cached.cached) == (
        "job-1",
        "judge",
        "cache",
        0,
        True,
    )
    assert cached.usage.input_tokens == 0 and cached.cost_usd == 0.0
    cache.close()


async def test_a_failed_call_is_recorded_once_with_its_attempts(tmp_path: Path) -> None:
    records: list[CallRecord] = []
    cache = ResponseCache(tmp_path / "cache.sqlite")
    async with FakeOpenAI(key=None) as server:
        server.script(Fail(500), Fail(500), Fail(500))
        profile = make_profile("oai", "openai", server.base_url, max_retries=2)
        async with open_pool(profile) as pool:
            client = CachingClients(pool, cache, records.append).client("oai", "judge")
            try:
                await client.chat(REQUEST)
            except ServerError:
                pass
            else:
                raise AssertionError("three 500s in a row should fail the call")
    [record] = records
    assert (record.status, record.attempts, record.cached) == ("error", 3, False)
    assert record.error is not None and "ServerError" in record.error
    assert len(cache) == 0  # a failure is never cached
    cache.close()


class _Settles:
    """The layer below a recorder, reduced to what it owes it: a meter filled in (as
    the limits or the cache fill it) with the values given, and an answer."""

    name = "fake"
    model = "m"

    def __init__(self, **fields: object) -> None:
        self.fields = fields

    async def chat(self, request: ChatRequest) -> Completion:
        meter = METER.get()
        assert meter is not None
        meter.settled = True
        for name, value in self.fields.items():
            setattr(meter, name, value)
        return Completion(text="ok")


async def test_the_call_record_holds_every_field_the_meter_says() -> None:
    """The recorder sets the fields most calls leave at their defaults only when they are
    not (a faster constructor call): every meter field still reaches the record, and a
    record at the defaults encodes to the same line as one given every field."""
    import msgspec

    unusual = {
        "provider": "prov",
        "account": "acct",
        "attempts": 3,
        "http_429": 2,
        "usage": Usage(input_tokens=5, output_tokens=7),
        "cost_usd": 0.25,
        "standard_cost_usd": 0.5,
        "reasoning_cost_usd": 0.125,
        "uncertain_usd": 0.75,
        "cached": True,
        "error": "ServerError: boom",
        "tier": "flex",
        "fallback": "batch",
    }
    cases = [{}, unusual, *({k: v} for k, v in unusual.items())]
    for fields in cases:
        records: list[CallRecord] = []
        client = RecordingClient(_Settles(**fields), records.append, role="chatbot")
        await client.chat(REQUEST)
        (got,) = records
        meter = CallMeter()
        for name, value in fields.items():
            setattr(meter, name, value)
        want = CallRecord(
            job_id="job-1",
            role="judge",
            provider=meter.provider,
            model=meter.model,
            account=meter.account,
            latency_ms=got.latency_ms,
            status="ok" if meter.error is None else "error",
            attempts=meter.attempts,
            usage=meter.usage,
            cost_usd=meter.cost_usd,
            reasoning_cost_usd=meter.reasoning_cost_usd,
            http_429=meter.http_429,
            error=meter.error,
            cached=meter.cached,
            at=got.at,
            uncertain_usd=meter.uncertain_usd,
            tier=meter.tier,
            standard_cost_usd=meter.standard_cost_usd,
            fallback=meter.fallback,
        )
        assert got == want, fields
        assert msgspec.json.encode(got) == msgspec.json.encode(want)
