"""Retries, timeouts and broken connections, through the real client stack."""

from __future__ import annotations

import pytest

from vera.clients.base import ChatRequest
from vera.clients.limits import RetryPolicy
from vera.errors import (
    AuthError,
    CallTimeoutError,
    ConnectError,
    RateLimitError,
    ServerError,
)
from vera.records import CallRecord, Message

from ..fakes.protocols import Fail, FakeOpenAI, Malformed, Reply, Reset, Slow
from .conftest import KEY, make_profile, open_pool

HELLO = (Message("user", "hello"),)


@pytest.fixture
async def server():
    async with FakeOpenAI(key=KEY) as server:
        yield server


def profile(server: FakeOpenAI, **fields):
    return make_profile("oai", "openai", server.base_url, **fields)


async def test_429_with_retry_after_waits_as_asked(server: FakeOpenAI) -> None:
    server.script(Fail(429, "slow down", retry_after="0.25"), Reply("done"))
    records: list[CallRecord] = []
    async with open_pool(profile(server), records=records) as pool:
        client = pool.client("oai")
        completion = await client.chat(ChatRequest(messages=HELLO))
        account = pool.limited("oai").account
    first, second = server.received
    assert second.at - first.at >= 0.25
    assert completion.text == "done"
    [record] = records
    assert (record.status, record.attempts, record.http_429) == ("ok", 2, 1)
    assert (account.retries, account.http_429, account.calls) == (1, 1, 1)


async def test_429_reset_headers_are_honoured_without_retry_after(server: FakeOpenAI) -> None:
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "300ms"}
    server.script(Fail(429, "slow down", headers=headers), Reply("ok"))
    async with open_pool(profile(server)) as pool:
        await pool.client("oai").chat(ChatRequest(messages=HELLO))
    first, second = server.received
    assert second.at - first.at >= 0.3


async def test_429_without_retry_after_backs_off_and_retries(server: FakeOpenAI) -> None:
    server.script(Fail(429, "a"), Fail(429, "b"), Fail(429, "c"), Reply("ok"))
    records: list[CallRecord] = []
    async with open_pool(profile(server), records=records) as pool:
        await pool.client("oai").chat(ChatRequest(messages=HELLO))
    assert len(server.received) == 4
    assert records[0].http_429 == 3 and records[0].attempts == 4


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_server_errors_are_retried(server: FakeOpenAI, status: int) -> None:
    server.script(Fail(status, "upstream trouble"), Reply("ok"))
    async with open_pool(profile(server)) as pool:
        assert (await pool.client("oai").chat(ChatRequest(messages=HELLO))).text == "ok"
    assert len(server.received) == 2


async def test_503_retry_after_is_honoured(server: FakeOpenAI) -> None:
    server.script(Fail(503, "maintenance", retry_after="0.2"), Reply("ok"))
    async with open_pool(profile(server)) as pool:
        await pool.client("oai").chat(ChatRequest(messages=HELLO))
    first, second = server.received
    assert second.at - first.at >= 0.2


async def test_retries_exhausted_raise_and_record_the_error(server: FakeOpenAI) -> None:
    server.script(*[Fail(503, "still down")] * 4)
    records: list[CallRecord] = []
    async with open_pool(profile(server, max_retries=3), records=records) as pool:
        with pytest.raises(ServerError) as caught:
            await pool.client("oai").chat(ChatRequest(messages=HELLO))
    assert caught.value.status == 503
    assert len(server.received) == 4
    [record] = records
    assert record.status == "error" and record.attempts == 4
    assert record.error is not None and "ServerError" in record.error and "still down" in record.error
    assert record.usage.input_tokens == 0 and record.cost_usd == 0


async def test_rate_limited_to_the_end_raises_rate_limit_error(server: FakeOpenAI) -> None:
    server.script(*[Fail(429, "no")] * 3)
    records: list[CallRecord] = []
    async with open_pool(profile(server, max_retries=2), records=records) as pool:
        with pytest.raises(RateLimitError):
            await pool.client("oai").chat(ChatRequest(messages=HELLO))
    assert records[0].http_429 == 3


async def test_fatal_errors_are_not_retried(server: FakeOpenAI) -> None:
    server.script(Fail(403, "model access denied"))
    records: list[CallRecord] = []
    async with open_pool(profile(server), records=records) as pool:
        with pytest.raises(AuthError):
            await pool.client("oai").chat(ChatRequest(messages=HELLO))
    assert len(server.received) == 1
    assert records[0].attempts == 1 and records[0].status == "error"


async def test_slow_response_past_the_timeout_is_retried_then_fails(server: FakeOpenAI) -> None:
    server.script(Slow(1.0), Slow(1.0))
    records: list[CallRecord] = []
    async with open_pool(profile(server, timeout_s=0.1, max_retries=1), records=records) as pool:
        with pytest.raises(CallTimeoutError, match=r"0\.1 s"):
            await pool.client("oai").chat(ChatRequest(messages=HELLO))
        # Did not wait for the slow server: the call gave up before the server answered
        # either request (a count, not a stopwatch).
        assert server.completed == 0
    assert len(server.received) == 2
    assert records[0].attempts == 2


async def test_slow_then_fast_succeeds(server: FakeOpenAI) -> None:
    server.script(Slow(1.0), Reply("quick"))
    async with open_pool(profile(server, timeout_s=0.1)) as pool:
        assert (await pool.client("oai").chat(ChatRequest(messages=HELLO))).text == "quick"


async def test_connection_reset_mid_response_is_a_retried_connect_error(server: FakeOpenAI) -> None:
    server.script(Reset(), Reply("after reset"))
    async with open_pool(profile(server)) as pool:
        assert (await pool.client("oai").chat(ChatRequest(messages=HELLO))).text == "after reset"
    server.script(Reset(), Reset())
    async with open_pool(profile(server, max_retries=1)) as pool:
        with pytest.raises(ConnectError):
            await pool.client("oai").chat(ChatRequest(messages=HELLO))


async def test_connection_refused_is_a_connect_error() -> None:
    async with FakeOpenAI(key=KEY) as server:
        base_url = server.base_url
    records: list[CallRecord] = []
    async with open_pool(make_profile("gone", "openai", base_url, max_retries=1), records=records) as pool:
        with pytest.raises(ConnectError):
            await pool.client("gone").chat(ChatRequest(messages=HELLO))
    assert records[0].attempts == 2


async def test_malformed_json_is_retried(server: FakeOpenAI) -> None:
    server.script(Malformed(), Reply("good"))
    async with open_pool(profile(server)) as pool:
        assert (await pool.client("oai").chat(ChatRequest(messages=HELLO))).text == "good"


def test_full_jitter_stays_under_the_exponential_ceiling() -> None:
    policy = RetryPolicy(10, base_delay=1.0, max_delay=8.0)
    error = ServerError("p", "x", status=500)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        waits = [policy.wait(attempt, error) for _ in range(200)]
        assert all(w is not None and 0 <= w <= ceiling for w in waits)
        assert max(w for w in waits if w is not None) > ceiling / 2  # jitter spreads out


def test_policy_gives_up_on_fatal_errors_and_after_max_retries() -> None:
    policy = RetryPolicy(2, base_delay=0.1)
    assert policy.wait(1, AuthError("p", "bad key", status=401)) is None
    assert policy.wait(2, ServerError("p", "x")) is not None
    assert policy.wait(3, ServerError("p", "x")) is None


def test_policy_honours_and_caps_the_servers_wait() -> None:
    policy = RetryPolicy(3, base_delay=0.1, max_retry_after=60, jitter=False)
    assert policy.wait(1, RateLimitError("p", "x", retry_after=12.0)) == 12.0
    assert policy.wait(1, RateLimitError("p", "x", retry_after=3600.0)) is None  # daily quota


async def test_only_a_connection_never_made_is_announced_as_cannot_connect(server: FakeOpenAI) -> None:
    # The run prints the account's first connect error at once as "warning: cannot
    # connect to HOST: ...". A server that accepted the connection and then closed it
    # (a crash mid-request) was announced so too, sending a team to check a server that
    # was up; it is retried like a 500, and named on the card.
    server.script(Reset(), Reset())
    async with open_pool(profile(server, max_retries=1)) as pool:
        with pytest.raises(ConnectError):
            await pool.client("oai").chat(ChatRequest(messages=HELLO))
        assert [a.connect_error for a in pool.accounts] == [""]
    async with FakeOpenAI(key=KEY) as gone:
        base_url = gone.base_url
    async with open_pool(make_profile("gone", "openai", base_url, max_retries=0)) as pool:
        with pytest.raises(ConnectError):
            await pool.client("gone").chat(ChatRequest(messages=HELLO))
        [account] = pool.accounts
        assert "Cannot connect to host" in account.connect_error
