"""Structured concurrency for the sweep: run coroutines as one group.

`asyncio.gather` lets the first failure out while the other coroutines keep running (and
are later cancelled without being awaited, or destroyed while pending). A TaskGroup
cancels the siblings and waits for them before anything propagates; this wrapper then
re-raises the first failure as itself, so callers keep catching `StorageError` or
`UserError` rather than an ExceptionGroup.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any


def first_exception(group: BaseExceptionGroup[BaseException]) -> BaseException:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


async def run_together(coros: Iterable[Coroutine[Any, Any, Any]]) -> None:
    """Run `coros` concurrently; if one fails, cancel and await the rest, then raise the
    failure."""
    try:
        async with asyncio.TaskGroup() as group:
            for coro in coros:
                group.create_task(coro)
    except BaseExceptionGroup as failed:
        raise first_exception(failed) from None
