"""The stop signal: SIGINT/SIGTERM turned into a stop request, then a cancellation.

The first signal asks the sweep to launch no new work (its `Stop`, which gives calls in
flight `grace_s` to finish); a second one cancels the work at once. Neither skips
cleanup: the run session closes the store, cache and event log after the work ends
however it ended, so a run stopped either way can be resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from vera.engine import Stop
from vera.inputs import ENGLISH, Strings

T = TypeVar("T")

SIGNALS = ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM"))


class StopSignal:
    """A run's stop request and the handlers that set it."""

    def __init__(self, grace_s: float, resume: str) -> None:
        self.stop = Stop(grace_s=grace_s)
        self.resume = resume  # the command to continue, for the session's own messages
        self.forced = False  # a second signal cancelled the work
        self._work: asyncio.Task[Any] | None = None
        # The run's locale pack's words (set with its progress line): the handler runs on
        # the event loop, outside any `use_strings` block.
        self.strings: Strings = ENGLISH

    def _signal(self, name: str) -> None:
        if self.stop.reason is None:
            print(
                "\n" + self.strings("cli.stopping", signal=name, grace=f"{self.stop.grace_s:.0f}"),
                file=sys.stderr,
                flush=True,
            )
            self.stop.request(f"interrupted ({name})")
            return
        if self.forced or self._work is None:
            return  # already cancelling, or closing: cleanup runs to its end
        self.forced = True
        # Without the command to continue: the run's last line gives it once the work is
        # cancelled and closed (it used to be said here and again there).
        print("\n" + self.strings("cli.exiting"), file=sys.stderr, flush=True)
        self._work.cancel()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        added = []
        for sig, name in SIGNALS:
            try:
                loop.add_signal_handler(sig, self._signal, name)
                added.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                # Off the main thread (ValueError: signals are the main thread's), or on
                # Windows: the run goes on, stoppable only by its caller.
                pass
        try:
            yield
        finally:
            for sig in added:
                loop.remove_signal_handler(sig)

    async def run(self, work: Coroutine[Any, Any, T]) -> T | None:
        """Run `work` as the task a second signal cancels; None when that happened."""
        task = asyncio.ensure_future(work)
        self._work = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not self.forced or (current is not None and current.cancelling()):
                raise  # we were cancelled ourselves: not the second signal
            return None
        finally:
            self._work = None
