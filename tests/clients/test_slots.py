"""The in-flight cap hands a freed slot to the waiting call with the most calls behind
it, first come among equals; a cancelled waiter never loses or leaks a slot. Checked on
the slots themselves and, through `LimitedClient`, in the order a loopback server
received the requests."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from vera.clients._slots import PrioritySlots
from vera.clients.base import ChatRequest
from vera.clients.limits import Account
from vera.records import Message

from ..fakes.protocols import FakeOpenAI
from .test_limits import limited_client


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_freed_slot_goes_to_the_highest_priority_then_the_first_to_come() -> None:
    slots = PrioritySlots(2)
    served: list[str] = []
    release = asyncio.Event()

    async def call(name: str, priority: int) -> None:
        async with slots.hold(priority):
            served.append(name)
            await release.wait()

    holders = [asyncio.create_task(call(f"h{i}", 0)) for i in range(2)]
    await settle()
    waiting = [("low", 1), ("high-a", 7), ("mid", 3), ("high-b", 7), ("none", 0)]
    tasks = [asyncio.create_task(call(n, p)) for n, p in waiting]
    await settle()
    assert served == ["h0", "h1"] and slots.waiting == 5
    release.set()
    await asyncio.gather(*holders, *tasks)
    assert served[2:] == ["high-a", "high-b", "mid", "low", "none"]
    assert slots.waiting == 0
    # Every slot is free again: two holders at once without waiting.
    await slots.acquire()
    await slots.acquire()
    assert slots.waiting == 0


async def test_a_cancelled_waiter_loses_no_slot() -> None:
    slots = PrioritySlots(1)
    await slots.acquire()
    gone = asyncio.create_task(slots.acquire(9))
    stays = asyncio.create_task(slots.acquire(1))
    await settle()
    gone.cancel()
    await settle()
    slots.release()  # skips the cancelled waiter
    await asyncio.wait_for(stays, 1)
    assert gone.cancelled() and slots.waiting == 0
    slots.release()
    await asyncio.wait_for(slots.acquire(), 1)  # the one slot is free again


async def test_a_waiter_cancelled_as_it_is_handed_the_slot_passes_it_on() -> None:
    slots = PrioritySlots(1)
    await slots.acquire()
    first = asyncio.create_task(slots.acquire(5))
    second = asyncio.create_task(slots.acquire(1))
    await settle()
    slots.release()  # hands the slot to `first` ...
    first.cancel()  # ... which is cancelled before it runs again
    await asyncio.wait_for(second, 1)
    assert first.cancelled() and not second.cancelled()
    slots.release()
    await asyncio.wait_for(slots.acquire(), 1)


def test_releasing_more_than_acquired_is_a_bug_not_a_bigger_cap() -> None:
    slots = PrioritySlots(1)
    with pytest.raises(RuntimeError, match="more often than acquired"):
        slots.release()
    with pytest.raises(ValueError, match="at least 1"):
        PrioritySlots(0)


async def test_the_server_receives_queued_calls_by_priority() -> None:
    async with FakeOpenAI(key=None, latency=0.01, record=True) as server, aiohttp.ClientSession() as session:
        account = Account("acct", max_in_flight=1)
        client = await limited_client(server, session, account)

        def request(name: str, priority: int) -> ChatRequest:
            return ChatRequest(messages=(Message("user", name),), priority=priority)

        # The first takes the only slot at once; the rest queue behind it.
        order = [("first", 0), ("p1", 1), ("p8-a", 8), ("p4", 4), ("p8-b", 8), ("p0", 0)]
        await asyncio.gather(*(client.chat(request(n, p)) for n, p in order))
    sent = [r.json["messages"][-1]["content"] for r in server.received]
    assert sent == ["first", "p8-a", "p8-b", "p4", "p1", "p0"]
    assert server.max_in_flight == 1 and account.in_flight == 0
