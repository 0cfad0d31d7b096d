"""Accounts: shared limits, request and token buckets, the in-flight cap, pauses, counters.

The bucket is tested on a fake clock; the account's order (slot, then pause and
buckets) and its pauses are checked from the log of a loopback server: when each
request arrived and when each error was answered."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from vera.clients.base import ChatRequest
from vera.clients.limits import (
    Account,
    LimitedClient,
    RetryPolicy,
    TokenBucket,
    bucket_shape,
    estimate_tokens,
)
from vera.clients.openai import OpenAIClient
from vera.errors import CallTimeoutError, RequestError
from vera.records import CallRecord, Completion, Message

from ..fakes.protocols import Behaviour, Fail, FakeOpenAI, Reply
from .conftest import make_profile, open_pool

HELLO = (Message("user", "hello"),)


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
            calls = [client.chat(ChatRequest(messages=HELLO)) for client in (a, b, c) for _ in range(4)]
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


async def test_the_token_bucket_is_settled_with_reported_usage() -> None:
    async with FakeOpenAI(key=None) as server:
        server.script(Reply("ok", input_tokens=30, output_tokens=12))
        profile = make_profile("oai", "openai", server.base_url, tpm=100_000)
        async with open_pool(profile) as pool:
            client = pool.client("oai")
            await client.chat(ChatRequest(messages=HELLO, params={"max_tokens": 5000}))
            level = client.account.tokens.level  # type: ignore[attr-defined]
    # It reserved ~5000 up front; afterwards at most the 42 really used remain charged
    # (less, as the bucket drains while the call runs).
    assert level <= 42 + 1


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
            await client.chat(ChatRequest(messages=HELLO))
            snapshot = pool.limited("oai").account.snapshot()
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
                await client.chat(ChatRequest(messages=HELLO, params={"max_tokens": 4000}))
            assert client.account.tokens.level < 10  # type: ignore[attr-defined]


class FakeClock:
    """Time that moves only when someone sleeps on it."""

    def __init__(self) -> None:
        self.t = 0.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds
        await asyncio.sleep(0)


def most_in_any_window(times: list[float], window: float) -> int:
    """The largest number of `times` inside any closed window of `window` seconds."""
    times = sorted(times)
    return max(sum(1 for u in times[i:] if u <= t + window) for i, t in enumerate(times))


def test_bucket_shape_keeps_a_minute_within_the_limit() -> None:
    capacity, rate = bucket_shape(600, burst_s=1)
    assert capacity == 10 and rate == pytest.approx(590 / 60)
    assert capacity + rate * 60 == pytest.approx(600)  # the most any minute can see
    assert bucket_shape(30, burst_s=1) == pytest.approx((1, 29 / 60))  # a burst of at least one
    assert bucket_shape(1, burst_s=1) == pytest.approx((1, 1 / 120))  # never a rate of zero
    with pytest.raises(ValueError):
        TokenBucket(0, 1)


async def test_the_bucket_never_lets_a_window_exceed_the_limit_on_a_fake_clock() -> None:
    clock = FakeClock()
    account = Account("acct", rpm=120, clock=clock)  # a burst of 2, then 118 a minute
    granted = []
    for _ in range(400):
        await account.admit(0)
        granted.append(clock.t)
    assert granted[:2] == [0.0, 0.0] and granted[2] > 0  # the burst, then waits
    assert most_in_any_window(granted, 60.0) <= 120
    assert granted[-1] == pytest.approx((400 - 2) * 60 / 118)  # and no slower than that


async def test_takers_are_served_in_order_so_a_large_take_is_not_starved() -> None:
    clock = FakeClock()
    bucket = TokenBucket(100, 10, clock=clock)
    order: list[str] = []

    async def take(name: str, amount: float) -> None:
        await bucket.take(amount)
        order.append(name)

    await bucket.take(90)
    await asyncio.gather(take("large", 100), *(take(f"small{i}", 5) for i in range(3)))
    assert order == ["large", "small0", "small1", "small2"]
    assert clock.sleeps[0] == pytest.approx(9.0)  # the large one waited for 90 to drain


async def test_token_estimate_and_settlement_in_both_directions() -> None:
    clock = FakeClock()
    account = Account("acct", tpm=6000, clock=clock)  # 10 s of tokens at once: 1000
    tokens = account.tokens
    assert isinstance(tokens, TokenBucket) and tokens.capacity == 1000
    assert await account.admit(600) == 600
    await account.settle(600, 100)  # over-estimated: capacity comes back
    assert tokens.level == pytest.approx(100)
    await account.settle(100, 900)  # under-estimated: the difference is charged
    assert tokens.level == pytest.approx(900)
    assert tokens.delay(200) == pytest.approx(100 / tokens.rate)
    await account.settle(0, 5000)  # charged beyond capacity: later calls wait it out
    assert tokens.level == pytest.approx(5900)
    # One request larger than the bucket is clamped to it, not refused.
    assert await Account("fresh", tpm=6000, clock=FakeClock()).admit(50_000) == 1000


async def test_a_pause_named_while_waiting_for_the_bucket_still_holds_the_call() -> None:
    clock = FakeClock()
    account = Account("acct", rpm=60, clock=clock)  # a burst of 1, then one per ~1.02 s
    await account.admit(0)
    waiting = asyncio.create_task(account.admit(0))
    await asyncio.sleep(0)  # it is asleep on the bucket now
    await account.pause(30.0)
    await waiting
    assert clock.t >= 30.0 and account.paused == 1


class LoggingOpenAI(FakeOpenAI):
    """Also logs when each error answer left the server: `(time, status)`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.answered: list[tuple[float, int]] = []

    async def respond(
        self, request: web.Request, body: dict[str, Any], behaviour: Behaviour
    ) -> web.StreamResponse:
        response = await super().respond(request, body, behaviour)
        if response.status >= 400:
            self.answered.append((asyncio.get_running_loop().time(), response.status))
        return response


async def limited_client(
    server: FakeOpenAI, session: aiohttp.ClientSession, account: Account
) -> LimitedClient:
    profile = make_profile("oai", "openai", server.base_url)
    inner = OpenAIClient.from_profile(session, profile, "test-model", None)
    return LimitedClient(inner, account, RetryPolicy(4, base_delay=0.01), provider="oai", timeout_s=10)


# A request sent just before the client read the error answer may still arrive after it.
IN_TRANSIT = 0.05


async def test_in_flight_cap_rpm_and_a_429_pause_together_from_the_servers_log() -> None:
    # The account's "minute" is scaled to 2 s: 30 requests in any 2 s (a burst of 15,
    # then 7.5/s). Three slots at 0.2 s latency would allow 15/s, so both limits bind in
    # turn; the 429 on the tenth request asks the whole account to wait 0.6 s.
    window, rpm, cap, pause = 2.0, 30, 3, 0.6
    async with LoggingOpenAI(key=None, latency=0.2) as server, aiohttp.ClientSession() as session:
        server.script(*[Reply()] * 9, Fail(429, "slow down", retry_after=str(pause)))
        account = Account("acct", rpm=rpm, max_in_flight=cap, window_s=window)
        client = await limited_client(server, session, account)
        await asyncio.gather(*(client.chat(ChatRequest(messages=HELLO)) for _ in range(50)))
    arrivals = [r.at for r in server.received]
    assert len(arrivals) == 51  # 50 calls and the one retried after the 429
    assert server.max_in_flight <= cap
    assert most_in_any_window(arrivals, window) <= rpm
    [(answered, status)] = server.answered
    assert status == 429 and account.http_429 == 1 and account.paused == 1
    during = [t for t in arrivals if answered + IN_TRANSIT <= t < answered + pause]
    assert during == []  # nothing left during the pause
    assert sum(1 for t in arrivals if t >= answered + pause) > 0


@pytest.mark.parametrize(
    "failure",
    [
        Fail(429, "slow down", retry_after="0.4"),
        Fail(503, "overloaded", retry_after="0.4"),
        # No Retry-After: the exhausted bucket's reset header names the wait.
        Fail(
            429,
            "slow down",
            headers={"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "400ms"},
        ),
        Fail(
            503,
            "overloaded",
            headers={
                "anthropic-ratelimit-requests-remaining": "0",
                "anthropic-ratelimit-requests-reset": "0.4",
            },
        ),
    ],
    ids=["429-retry-after", "503-retry-after", "429-openai-reset", "503-anthropic-reset"],
)
async def test_a_server_named_wait_holds_the_whole_account(failure: Fail) -> None:
    async with LoggingOpenAI(key=None, latency=0.01) as server, aiohttp.ClientSession() as session:
        server.script(failure)
        account = Account("acct")
        client = await limited_client(server, session, account)
        first = asyncio.create_task(client.chat(ChatRequest(messages=HELLO)))
        while not account.paused:  # the error is back and read: the account is paused
            await asyncio.sleep(0.005)
        await client.chat(ChatRequest(messages=HELLO))  # another call, not the one that failed
        await first
    [(answered, status)] = server.answered
    assert status == failure.status and account.paused == 1
    later = [r.at for r in server.received[1:]]
    assert len(later) == 2 and min(later) >= answered + 0.4 - 0.01  # the server's clock, with rounding


async def test_a_wait_beyond_the_policy_ends_the_call_without_pausing_the_account() -> None:
    async with LoggingOpenAI(key=None) as server, aiohttp.ClientSession() as session:
        server.script(Fail(429, "daily quota", retry_after="86400"))
        account = Account("acct")
        client = await limited_client(server, session, account)
        with pytest.raises(Exception, match="daily quota"):
            await client.chat(ChatRequest(messages=HELLO))
    assert account.paused == 0


async def test_the_in_flight_cap_serves_waiters_in_order_and_a_cancelled_waiter_loses_no_slot() -> None:
    """The cap's slots (`Slots`): taken at once while free, then waited for in the
    order the calls came; a slot given back goes to the oldest waiter, never to a
    newcomer; a waiter cancelled while it waits (or just as it was handed a slot)
    leaves the slots as they were."""
    slots = Account("acct", max_in_flight=2).slot
    assert slots.try_take() and slots.try_take()
    assert not slots.try_take()
    order: list[str] = []

    async def call(name: str) -> None:
        async with slots:
            order.append(name)
            await asyncio.sleep(0)

    waiting = [asyncio.create_task(call(n)) for n in ("a", "b", "c")]
    doomed = asyncio.create_task(call("cancelled"))
    await asyncio.sleep(0)
    doomed.cancel()
    slots.give()  # one slot back: "a" is first in line
    assert not slots.try_take()  # a newcomer does not jump the line
    slots.give()
    await asyncio.gather(*waiting)
    assert order == ["a", "b", "c"]
    with pytest.raises(asyncio.CancelledError):
        await doomed
    # Both slots are free again: nothing was lost to the cancelled waiter.
    assert slots.try_take() and slots.try_take() and not slots.try_take()

    # Cancelled just as the slot was handed to it: the slot goes on to the next waiter.
    late = asyncio.create_task(slots.take())
    after = asyncio.create_task(slots.take())
    await asyncio.sleep(0)
    slots.give()  # handed to `late` ...
    late.cancel()  # ... which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await late
    await asyncio.wait_for(after, 1)  # `after` got it
    assert not slots.try_take()


class _SlowProvider:
    """A provider that answers after `delay` seconds (what the timeout is tested on)."""

    name = "slow"
    model = "slow-model"

    def __init__(self) -> None:
        self.delay = 0.0

    async def chat(self, request: ChatRequest) -> Completion:
        await asyncio.sleep(self.delay)
        return Completion(text="late")


def test_the_timeout_holds_on_a_second_event_loop() -> None:
    # The client remembers the loop its calls run on (a lookup per call costs a system
    # call); used again on another loop, its deadlines must follow it there.
    provider = _SlowProvider()
    client = LimitedClient(provider, Account("acct"), RetryPolicy(0), provider="slow", timeout_s=0.2)
    request = ChatRequest(messages=(Message("user", "hi"),))
    assert asyncio.run(client.chat(request)).text == "late"
    provider.delay = 5.0
    started = time.monotonic()
    with pytest.raises(CallTimeoutError, match=r"0\.2 s"):
        asyncio.run(client.chat(request))
    assert time.monotonic() - started < 2.0
