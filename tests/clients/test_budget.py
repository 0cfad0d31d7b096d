"""The budget that holds `--max-cost` (vera.clients.budget): every priced call reserves
its worst case before it is sent and settles to what it cost; a call the server refused
is free, a call whose cost is unknown counts at its worst case, and a call that can
never fit is refused without being sent."""

from __future__ import annotations

import asyncio
import socket

import pytest

from vera.clients.base import ChatRequest
from vera.clients.budget import (
    MESSAGE_OVERHEAD_TOKENS,
    REQUEST_OVERHEAD_TOKENS,
    Budget,
    input_bound,
    output_bound,
)
from vera.errors import BudgetReached, CallTimeoutError, ConnectError, ServerError
from vera.records import CallRecord, Message

from ..fakes.protocols import Fail, FakeOpenAI, Reply, Slow
from .conftest import make_profile, open_pool

HELLO = (Message("user", "hello"),)
PRICED = {"price_input_per_mtok": 10.0, "price_output_per_mtok": 20.0}


# -- the budget itself ------------------------------------------------------------------


async def test_a_reservation_waits_for_calls_in_flight_then_is_refused_when_it_can_never_fit():
    budget = Budget(1.0)
    a = await budget.reserve(0.6)
    waiting = asyncio.create_task(budget.reserve(0.6))  # 0.6 + 0.6 > 1: waits for `a`
    await asyncio.sleep(0.01)
    assert not waiting.done() and budget.reserved == pytest.approx(0.6)
    a.settle(0.3)  # cheaper than its worst case: 0.3 spent, 0.6 now fits
    b = await asyncio.wait_for(waiting, 1)
    assert budget.spent == pytest.approx(0.3) and budget.reserved == pytest.approx(0.6)
    with pytest.raises(BudgetReached, match=r"budget reached: \$0.3000 of \$1.00 spent"):
        await budget.reserve(0.8)  # 0.3 spent + 0.8 > 1 whatever settles: never fits
    b.release()
    # Reached is reached: even a call that would fit now is refused, so the run stops.
    with pytest.raises(BudgetReached):
        await budget.reserve(0.01)
    assert budget.spent == pytest.approx(0.3) and budget.reserved == 0


async def test_calls_waiting_to_reserve_are_refused_when_the_budget_is_reached():
    budget = Budget(1.0, spent=0.5)  # spent by earlier sessions of the run
    held = await budget.reserve(0.4)
    waiting = asyncio.create_task(budget.reserve(0.3))
    await asyncio.sleep(0.01)
    with pytest.raises(BudgetReached):
        await budget.reserve(0.6)
    with pytest.raises(BudgetReached):
        await asyncio.wait_for(waiting, 1)
    assert held.unknown() == pytest.approx(0.4)  # a timeout after sending: its worst case
    assert budget.spent == pytest.approx(0.9) and budget.uncertain == pytest.approx(0.4)
    assert "($0.4000 of it at the worst case of calls whose cost is unknown)" in budget.summary()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.01])
def test_a_budget_must_be_a_finite_amount_not_negative(bad):
    with pytest.raises(ValueError, match="not a budget"):
        Budget(bad)


def test_the_worst_case_bounds_input_by_bytes_and_output_by_cap_plus_thinking():
    messages = (Message("system", "é" * 100), Message("user", "hi"))
    # "é" is 2 bytes in UTF-8: a token covers at least one byte.
    assert input_bound(messages, None) == REQUEST_OVERHEAD_TOKENS + 202 + 2 * MESSAGE_OVERHEAD_TOKENS
    assert input_bound(messages, {"type": "object"}) > input_bound(messages, None) + 500
    assert output_bound({"max_tokens": 100}) == 100
    assert output_bound({"max_completion_tokens": 100, "reasoning": {"max_tokens": 50}}) == 150
    assert output_bound({"max_tokens": 4000, "thinking": {"type": "enabled", "budget_tokens": 3000}}) == 7000
    assert output_bound({"generationConfig": {"thinkingConfig": {"thinkingBudget": 8}}}, 10) == 18
    assert output_bound({"temperature": 0}) is None  # nothing caps it
    assert output_bound({}, 2048) == 2048  # the protocol's own default cap (Anthropic)


# -- one client, one loopback server ----------------------------------------------------


async def test_a_call_settles_to_what_it_cost():
    async with FakeOpenAI(key=None) as server:
        server.script(Reply("ok", input_tokens=1000, output_tokens=100))
        budget = Budget(1.0)
        profile = make_profile("oai", "openai", server.base_url, **PRICED)
        records: list[CallRecord] = []
        async with open_pool(profile, records=records, budget=budget) as pool:
            await pool.client("oai").chat(ChatRequest(messages=HELLO, params={"max_tokens": 500}))
    assert budget.spent == pytest.approx((1000 * 10 + 100 * 20) / 1e6) and budget.reserved == 0
    assert records[0].cost_usd == pytest.approx(budget.spent) and records[0].uncertain_usd == 0


async def test_a_refused_or_unsent_call_is_released_and_a_timeout_counts_at_its_worst_case():
    async with FakeOpenAI(key=None) as server:
        server.script(Fail(503), Slow(2.0))
        budget = Budget(1.0)
        profile = make_profile("oai", "openai", server.base_url, max_retries=0, timeout_s=0.2, **PRICED)
        records: list[CallRecord] = []
        async with open_pool(profile, records=records, budget=budget) as pool:
            client = pool.client("oai")
            request = ChatRequest(messages=HELLO, params={"max_tokens": 500})
            worst = pool.limited("oai").worst_case(request)
            with pytest.raises(ServerError):
                await client.chat(request)
            assert budget.spent == 0 and budget.reserved == 0  # the server said no: free
            with pytest.raises(CallTimeoutError):
                await client.chat(request)  # sent, never answered: it may have been billed
    assert budget.spent == pytest.approx(worst) and budget.uncertain == pytest.approx(worst)
    assert [r.uncertain_usd for r in records] == [0, pytest.approx(worst)]

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    budget = Budget(1.0)
    gone = make_profile("gone", "openai", f"http://127.0.0.1:{port}/v1", max_retries=0, **PRICED)
    async with open_pool(gone, budget=budget) as pool:
        with pytest.raises(ConnectError) as refused:
            await pool.client("gone").chat(ChatRequest(messages=HELLO, params={"max_tokens": 500}))
    assert not refused.value.sent and budget.spent == 0 and budget.reserved == 0


async def test_many_calls_at_once_never_spend_past_the_budget():
    """256 calls at once (the default sweep concurrency), each cheaper than its worst
    case: the server receives only what the budget can pay for, and every call either
    completes or is refused without being sent."""
    async with FakeOpenAI(key=None) as server:
        server.script(*[Reply("ok", input_tokens=50, output_tokens=100, delay=0.01)] * 256)
        budget = Budget(0.02)
        profile = make_profile("oai", "openai", server.base_url, **PRICED)
        async with open_pool(profile, budget=budget) as pool:
            client = pool.client("oai")
            request = ChatRequest(messages=HELLO, params={"max_tokens": 400})
            outcomes = await asyncio.gather(
                *(client.chat(request) for _ in range(256)), return_exceptions=True
            )
    answered = sum(not isinstance(o, BaseException) for o in outcomes)
    refused = sum(isinstance(o, BudgetReached) for o in outcomes)
    assert answered + refused == 256 and refused > 0
    assert server.requests == answered  # a refused call is never sent
    cost = (50 * 10 + 100 * 20) / 1e6
    assert budget.spent == pytest.approx(answered * cost) and budget.spent <= 0.02
    # It stopped because the next worst case no longer fit, not earlier.
    assert budget.spent + pool.limited("oai").worst_case(request) > 0.02


async def test_a_priced_model_needs_an_output_cap_unless_its_protocol_always_sends_one():
    budget = Budget(1.0)
    openai = make_profile("oai", "openai", "http://127.0.0.1:9/v1", **PRICED)
    anthropic = make_profile("claude", "anthropic", "http://127.0.0.1:9", **PRICED)
    free = make_profile("free", "openai", "http://127.0.0.1:9/v1")
    async with open_pool(openai, anthropic, free, budget=budget) as pool:
        problem = pool.budget_problem("oai", "judge", {"temperature": 0})
        assert problem is not None and "oai as judge" in problem and "set max_tokens" in problem
        assert pool.budget_problem("oai", "judge", {"max_tokens": 100}) is None
        assert pool.budget_problem("claude", "chatbot", {}) is None  # the API's required max_tokens
        assert pool.budget_problem("free", "chatbot", {}) is None  # unpriced: nothing to reserve
        # Anthropic's default cap and a thinking budget are both in the worst case.
        request = ChatRequest(messages=HELLO, params={"thinking": {"type": "enabled", "budget_tokens": 1000}})
        worst = pool.limited("claude", "chatbot").worst_case(request)
        assert worst == pytest.approx(((64 + 5 + 16) * 10 + (2048 + 1000) * 20) / 1e6)
    async with open_pool(openai) as pool:
        assert pool.budget_problem("oai", "judge", {}) is None  # no budget, no worst case needed


async def test_a_call_cut_off_by_the_run_stopping_is_recorded_at_its_worst_case():
    """A second Ctrl-C, the grace period's end: a call sent and unanswered may be billed,
    so it is a call on record (failed, saying why) and counts at its worst case; one cut
    off between its attempts keeps what they may have cost; one never sent is no call."""
    async with FakeOpenAI(key=None) as server:
        server.script(Slow(30.0), Fail(503, retry_after="30"), Slow(30.0))
        budget = Budget(1.0)
        profile = make_profile("oai", "openai", server.base_url, max_retries=1, max_in_flight=2, **PRICED)
        records: list[CallRecord] = []
        async with open_pool(profile, records=records, budget=budget) as pool:
            client = pool.client("oai")
            request = ChatRequest(messages=HELLO, params={"max_tokens": 500})
            worst = pool.limited("oai").worst_case(request)
            in_flight = asyncio.create_task(client.chat(request))
            waiting = asyncio.create_task(client.chat(request))  # its 503 names a 30 s wait
            while len(server.received) < 2:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)  # the 503 answered: its call waits to try again
            unsent = asyncio.create_task(client.chat(request))  # both slots taken: it waits
            await asyncio.sleep(0.05)
            for task in (in_flight, waiting, unsent):
                task.cancel()
            for task in (in_flight, waiting, unsent):
                with pytest.raises(asyncio.CancelledError):
                    await task
    assert len(server.received) == 2
    by_error = sorted((r.error or "", r.status, r.uncertain_usd, r.cost_usd) for r in records)
    assert by_error == [
        ("CallCancelledError: [oai] the run stopped between its attempts; it may be billed", "error", 0, 0),
        (
            "CallCancelledError: [oai] the run stopped while the call was in flight; it may be billed",
            "error",
            pytest.approx(worst),
            0,
        ),
    ]
    assert budget.spent == pytest.approx(worst) and budget.reserved == 0


async def test_without_a_budget_a_call_of_unknown_cost_is_still_recorded_at_its_worst_case():
    """What a provider may bill for a call sent and never answered does not depend on
    whether the run has a budget: calls.jsonl (and so the card) says it either way."""
    async with FakeOpenAI(key=None) as server:
        server.script(Fail(503), Slow(2.0))
        profile = make_profile("oai", "openai", server.base_url, max_retries=0, timeout_s=0.2, **PRICED)
        records: list[CallRecord] = []
        async with open_pool(profile, records=records) as pool:
            client = pool.client("oai")
            request = ChatRequest(messages=HELLO, params={"max_tokens": 500})
            worst = pool.limited("oai").worst_case(request)
            with pytest.raises(ServerError):
                await client.chat(request)  # refused: nothing to bill
            with pytest.raises(CallTimeoutError):
                await client.chat(request)  # sent, never answered
    assert worst > 0 and [r.uncertain_usd for r in records] == [0, pytest.approx(worst)]
