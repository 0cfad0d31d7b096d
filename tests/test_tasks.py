"""Structured concurrency: a failing task's siblings are cancelled and awaited before the
failure propagates, and it propagates as itself."""

from __future__ import annotations

import asyncio

import pytest

from vera.engine._tasks import run_together
from vera.errors import StorageError


async def test_a_failure_cancels_and_awaits_its_siblings_then_propagates_as_itself() -> None:
    events: list[str] = []
    started = asyncio.Event()

    async def sibling() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(0)  # cleanup that needs the loop still runs to the end
            events.append("sibling cleaned up")
            raise

    async def failing() -> None:
        await started.wait()
        raise StorageError("disk full")

    with pytest.raises(StorageError, match="disk full"):
        await run_together([sibling(), failing()])
    # gather would have returned with the sibling still pending
    assert events == ["sibling cleaned up"]
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


async def test_all_succeed() -> None:
    done: list[int] = []

    async def one(i: int) -> None:
        await asyncio.sleep(0)
        done.append(i)

    await run_together(one(i) for i in range(5))
    assert sorted(done) == [0, 1, 2, 3, 4]


async def test_cancelling_the_caller_cancels_the_group() -> None:
    cancelled: list[bool] = []

    async def forever() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    task = asyncio.create_task(run_together([forever(), forever()]))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == [True, True]
