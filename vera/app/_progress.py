"""Progress for long runs: a live table on a terminal, periodic lines otherwise.

Per chatbot: conversations done / total (and failed); overall: judgements, calls per
second, retries, 429s, tokens and cost, read from the client pool's accounts; with the
judge in batch mode, its batches by state ("batches: 2 in progress (340 requests), 1
finalizing, 3 completed"), read from the batching clients.

The first failure to connect to each account is printed at once as one line ("warning:
cannot connect to api.example.com[KEY]: ...; retrying"), while the retries go on: a run
whose every call is refused would otherwise say why only on its card.

A finished job only bumps a few running totals. The table is drawn, and the accounts
summed, at a fixed rate (`refresh_per_second`) by a task on the event loop, never per
finished job: at thousands of jobs a second, a redraw per job would cost more than the
work it reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from vera.inputs import ENGLISH, Strings, ui_strings
from vera.records import Conversation, Judgement, LocaleInfo, RunManifest
from vera.store import ConversationHead, JudgementHead

_ACCOUNT_KEYS = ("calls", "retries", "http_429", "input_tokens", "output_tokens", "cost_usd")


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class RunProgress:
    """Implements the pipeline's Progress protocol."""

    def __init__(
        self,
        *,
        console: Console | None = None,
        accounts: Callable[[], list[dict[str, Any]]] | None = None,
        batches: Callable[[], str] | None = None,
        connect_errors: Callable[[], list[tuple[str, str]]] | None = None,
        every_s: float = 10.0,
        refresh_per_second: float = 4.0,
        strings: Strings = ENGLISH,
    ) -> None:
        # The run's locale pack's words (English without one): the progress line is
        # drawn on the event loop, outside any `use_strings` block, so it is held here.
        self.strings = strings
        self.console = console or Console(stderr=True)
        # The live table only on a real terminal. FORCE_COLOR (which CI workflows set for
        # coloured logs) makes rich take a pipe for a terminal, and the table redrawn four
        # times a second then fills a CI log with cursor moves and carriage returns; a
        # log gets a plain line every `every_s` instead. A console handed in (tests) is
        # taken at its word.
        self._draws_live = (
            self.console.is_terminal
            if console is not None
            else self.console.is_interactive and _isatty(sys.stderr)
        )
        self.accounts = accounts or (lambda: [])
        self.batches = batches or (lambda: "")
        # (account, its first failure to connect) of every account that has one.
        self.connect_errors = connect_errors or (lambda: [])
        self.every_s = every_s
        self.refresh_per_second = refresh_per_second
        self.total_conv = 0
        self.total_judge = 0
        self.done: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        # Running totals, so a line never re-sums the per-chatbot counters.
        self.done_total = 0
        self.failed_total = 0
        self.reused = 0
        self.judged = 0
        self.judge_failed = 0
        self.redraws = 0  # how often the table or a line was drawn (tests count them)
        self.started = time.monotonic()
        self._last_line = -math.inf  # the first tick prints a line
        self._last_counts: tuple[int, ...] | None = None  # the counts of the last printed line
        self._live: Live | None = None
        self._refresher: asyncio.Task[None] | None = None
        self._totals: Counter[str] = Counter()
        self._announced: set[str] = set()  # accounts whose connection failure was printed

    def plan(self, per_chatbot: dict[str, int]) -> None:
        self._totals.update(per_chatbot)

    def start(self, total_conversations: int, total_judgements: int) -> None:
        self.total_conv, self.total_judge = total_conversations, total_judgements
        self.started = time.monotonic()
        if self._draws_live:
            # Drawn only when refreshed (below), not by rich's own thread: the accounts
            # are read on the event loop that updates them.
            self._live = Live(self._table(), console=self.console, auto_refresh=False, transient=True)
            self._live.start()
        with contextlib.suppress(RuntimeError):  # no running loop: lines on each tick instead
            self._refresher = asyncio.get_running_loop().create_task(self._refresh_forever())

    def conversation(self, conv: Conversation | ConversationHead, *, cached: bool) -> None:
        failed = conv.status == "failed"
        self.done[conv.chatbot] += 1
        self.done_total += 1
        if failed:
            self.failed[conv.chatbot] += 1
            self.failed_total += 1
        self.reused += cached
        if self._refresher is None:
            self._tick()

    def judgement(self, judgement: Judgement | JudgementHead, *, cached: bool) -> None:
        self.judged += 1
        self.judge_failed += judgement.status == "failed"
        if self._refresher is None:
            self._tick()

    def stop(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            self._refresher = None
        if self._live is not None:
            self._live.stop()
            self._live = None
        elif self._last_counts is not None and self._last_counts != self._counts():
            # Lines are printed at most every `every_s`: without this, a log's last progress
            # line would show the counts of up to `every_s` before the end ("judgements 0/80").
            self._print_line()

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(1 / self.refresh_per_second)
            self._tick()

    def _tick(self) -> None:
        self._announce_connect_errors()
        if self._live is not None:
            self.redraws += 1
            self._live.update(self._table(), refresh=True)
            return
        now = time.monotonic()
        if now - self._last_line >= self.every_s:
            self._last_line = now
            self._print_line()

    def _announce_connect_errors(self) -> None:
        for account, error in self.connect_errors():
            if account in self._announced:
                continue
            self._announced.add(account)
            line = f"warning: cannot connect to {account}: {error}; retrying"
            if self._live is not None:
                self._live.console.print(line, markup=False, highlight=False, soft_wrap=True)
            else:
                print(line, file=sys.stderr, flush=True)

    def _counts(self) -> tuple[int, ...]:
        return (self.done_total, self.failed_total, self.judged, self.judge_failed)

    def _print_line(self) -> None:
        self.redraws += 1
        self._last_counts = self._counts()
        print(self.line(), file=sys.stderr, flush=True)

    def _account_totals(self) -> dict[str, float]:
        t: dict[str, float] = dict.fromkeys(_ACCOUNT_KEYS, 0.0)
        for a in self.accounts():
            for k in _ACCOUNT_KEYS:
                t[k] += a.get(k, 0) or 0
        return t

    def line(self) -> str:
        t = self._account_totals()
        el = max(1e-9, time.monotonic() - self.started)
        return self.strings(
            "cli.progress",
            done=self.done_total,
            total=self.total_conv,
            failed=self.failed_total,
            judged=self.judged,
            judgements=self.total_judge,
            judge_failed=self.judge_failed,
            rate=f"{t['calls'] / el:.1f}",
            retries=int(t["retries"]),
            throttled=int(t["http_429"]),
            tokens=int(t["input_tokens"] + t["output_tokens"]),
            cost=f"${t['cost_usd']:.2f}",
        ) + (f" · {batches}" if (batches := self.batches()) else "")

    def _table(self) -> Table:
        table = Table(title="vera run", expand=False)
        for col in ("chatbot", "conversations", "failed"):
            table.add_column(col)
        for bot in sorted(set(self._totals) | set(self.done)):
            total = self._totals.get(bot, 0)
            table.add_row(
                bot, f"{self.done[bot]}/{total}" if total else str(self.done[bot]), str(self.failed[bot])
            )
        table.caption = self.line()
        return table


def run_strings(manifest: RunManifest) -> Strings:
    """The words of the locale pack `manifest`'s run used; English without one."""
    x = manifest.locale
    return ui_strings(x.tag, x.path) if isinstance(x, LocaleInfo) else ENGLISH
