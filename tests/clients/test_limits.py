"""Accounts: shared limits, request and token buckets, the in-flight cap, counters."""

from __future__ import annotations

import asyncio

import pytest

from vera.errors import RequestError
from vera.limits import Account, estimate_tokens
from vera.records import CallRecord, Message

from .conftest import make_profile, open_pool
from .fakes import Fail, FakeOpenAI, Reply

HELLO = [Message("user", "hello")]


async def test_profiles_on_one_account_share_its_limiter_and_cap() -> None:
    async with FakeOpenAI(key=None, latency=0.05) as server:
        judge = make_profile("judge", "openai", server.base_url, model="big", max_in_flight=3, rpm=6000)
        agent = make_profile("agent", "openai", server.base_url, model="small", max_in_flight=2)
        async with open_pool(judge, agent) as pool:
            a = pool.client("judge", "judge")
            b = pool.client("agent", "user_agent")
            c = pool.client("judge/other-model", "judge")
            assert a.account is b.account is c.account  # type: ignore[attr-defined]
            account = a.account  # type: ignore[attr-defined]
            assert account.requests is not None  # the judge's rpm applies to the agent too
            calls = [client.chat(HELLO) for client in (a, b, c) for _ in range(4)]
            await asyncio.gather(*calls)
    assert server.max_in_flight == 2  # the strictest cap of the two profiles, shared
    assert account.calls == 12 and account.in_flight == 0
    assert len(pool.accounts) == 1


async def test_different_keys_are_different_accounts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTHER_KEY", "sk-another-key-987654321")
    async with FakeOpenAI(key=None) as server:
        one = make_profile("one", "openai", server.base_url, max_in_flight=1)
        two = make_profile("two", "openai", server.base_url, api_key_env="OTHER_KEY")
        async with open_pool(one, two) as pool:
            assert pool.client("one").account is not pool.client("two").account  # type: ignore[attr-defined]
            labels = sorted(a.label for a in pool.accounts)
        host = server.base_url.split("/")[2]
    assert labels == [f"{host}[OTHER_KEY]", f"{host}[VERA_TEST_KEY]"]


async def test_requests_per_minute_are_spread_over_time() -> None:
    # 1200 rpm = 20 per second, with at most one second's worth at once.
    async with FakeOpenAI(key=None) as server:
        profile = make_profile("oai", "openai", server.base_url, rpm=1200)
        async with open_pool(profile) as pool:
            client = pool.client("oai")
            await asyncio.gather(*(client.chat(HELLO) for _ in range(40)))
    arrivals = sorted(r.at for r in server.received)
    start = arrivals[0]
    early = sum(1 for t in arrivals if t - start < 0.5)
    assert 20 <= early <= 32  # the burst, then ~10 more in half a second, not all 40
    assert arrivals[-1] - start >= 0.9  # the last 20 needed about a second


async def test_the_token_bucket_is_settled_with_reported_usage() -> None:
    async with FakeOpenAI(key=None) as server:
        server.script(Reply("ok", input_tokens=30, output_tokens=12))
        profile = make_profile("oai", "openai", server.base_url, tpm=100_000)
        async with open_pool(profile) as pool:
            client = pool.client("oai")
            await client.chat(HELLO, params={"max_tokens": 5000})
            level = client.account.tokens.level  # type: ignore[attr-defined]
    # It reserved ~5000 up front; afterwards at most the 42 really used remain charged
    # (less, as the bucket drains while the call runs).
    assert level <= 42 + 1


async def test_token_estimate_and_settlement_in_both_directions() -> None:
    account = Account("acct", tpm=1000)
    reserved = await account.admit(600)
    assert reserved == 600
    account.settle(reserved, 100)  # over-estimated: capacity comes back
    assert account.tokens is not None and account.tokens.level == pytest.approx(100, abs=1)
    account.settle(100, 900)  # under-estimated: the difference is charged
    assert account.tokens.level == pytest.approx(900, abs=1)
    assert not account.tokens.has_capacity(200)
    # One request larger than a minute's tokens is clamped to the bucket, not refused.
    assert await Account("fresh", tpm=1000).admit(50_000) == 1000


async def test_estimate_counts_request_characters_and_max_output() -> None:
    messages = [Message("system", "x" * 400), Message("user", "y" * 400)]
    assert estimate_tokens(messages, {"max_tokens": 100}) == 200 + 8 + 100
    assert estimate_tokens(messages, None, default_output=50) == 200 + 8 + 50


async def test_counters_for_the_progress_display() -> None:
    records: list[CallRecord] = []
    async with FakeOpenAI(key=None) as server:
        server.script(Reply("a", input_tokens=10, output_tokens=2, cached_tokens=4))
        profile = make_profile("oai", "openai", server.base_url, price_input_per_mtok=1.0)
        async with open_pool(profile, records=records) as pool:
            client = pool.client("oai")
            await client.chat(HELLO)
            snapshot = client.account.snapshot()  # type: ignore[attr-defined]
    assert snapshot["calls"] == 1 and snapshot["in_flight"] == 0
    assert (
        snapshot["input_tokens"],
        snapshot["output_tokens"],
        snapshot["cached_input_tokens"],
    ) == (
        10,
        2,
        4,
    )
    assert snapshot["cost_usd"] == pytest.approx(records[0].cost_usd)


async def test_a_refused_attempt_gives_its_tokens_back() -> None:
    async with FakeOpenAI(key=None) as server:
        server.script(Fail(400, "bad request"))
        profile = make_profile("oai", "openai", server.base_url, tpm=600_000)
        async with open_pool(profile) as pool:
            client = pool.client("oai")
            with pytest.raises(RequestError):
                await client.chat(HELLO, params={"max_tokens": 4000})
            assert client.account.tokens.level < 10  # type: ignore[attr-defined]


async def test_a_429_that_names_a_wait_holds_the_whole_account() -> None:
    async with FakeOpenAI(key=None) as server:
        server.script(Fail(429, "slow down", retry_after="0.3"))
        async with open_pool(make_profile("oai", "openai", server.base_url)) as pool:
            client = pool.client("oai")
            first = asyncio.create_task(client.chat(HELLO))
            while not server.received:
                await asyncio.sleep(0.005)
            await asyncio.sleep(0.05)  # the 429 is back: the account is paused
            await client.chat(HELLO)
            await first
    arrivals = [r.at for r in server.received]
    assert len(arrivals) == 3
    assert min(arrivals[1:]) - arrivals[0] >= 0.3  # neither call went before the wait
