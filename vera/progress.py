"""Progress for long runs: a live table on a terminal, periodic lines otherwise.

Per chatbot: conversations done / total (and failed); overall: judgements, calls per
second, retries, 429s, tokens and cost, read from the client pool's accounts.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from vera.records import Conversation, Judgement


class RunProgress:
    """Implements the pipeline's Progress protocol."""

    def __init__(
        self,
        *,
        console: Console | None = None,
        accounts: Callable[[], list[dict[str, Any]]] | None = None,
        every_s: float = 10.0,
    ) -> None:
        self.console = console or Console(stderr=True)
        self.accounts = accounts or (lambda: [])
        self.every_s = every_s
        self.total_conv = 0
        self.total_judge = 0
        self.done: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self.reused = 0
        self.judged = 0
        self.judge_failed = 0
        self.started = time.monotonic()
        self._last_line = 0.0
        self._live: Live | None = None
        self._totals: Counter[str] = Counter()

    def plan(self, per_chatbot: dict[str, int]) -> None:
        self._totals.update(per_chatbot)

    def start(self, total_conversations: int, total_judgements: int) -> None:
        self.total_conv, self.total_judge = total_conversations, total_judgements
        self.started = time.monotonic()
        if self.console.is_terminal:
            self._live = Live(self._table(), console=self.console, refresh_per_second=4, transient=True)
            self._live.start()

    def conversation(self, conv: Conversation, *, cached: bool) -> None:
        self.done[conv.chatbot] += 1
        self.failed[conv.chatbot] += conv.status == "failed"
        self.reused += cached
        self._tick()

    def judgement(self, judgement: Judgement, *, cached: bool) -> None:
        self.judged += 1
        self.judge_failed += judgement.status == "failed"
        self._tick()

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _tick(self) -> None:
        if self._live is not None:
            self._live.update(self._table())
            return
        now = time.monotonic()
        if now - self._last_line >= self.every_s:
            self._last_line = now
            print(self.line(), file=sys.stderr, flush=True)

    def _account_totals(self) -> dict[str, float]:
        t: Counter[str] = Counter()
        for a in self.accounts():
            for k in ("calls", "retries", "http_429", "input_tokens", "output_tokens", "cost_usd"):
                t[k] += a.get(k, 0) or 0
        return t

    def line(self) -> str:
        done = sum(self.done.values())
        t = self._account_totals()
        el = max(1e-9, time.monotonic() - self.started)
        return (
            f"conversations {done}/{self.total_conv} (failed {sum(self.failed.values())}) · "
            f"judgements {self.judged}/{self.total_judge} (failed {self.judge_failed}) · "
            f"{t['calls'] / el:.1f} calls/s · retries {int(t['retries'])} · 429s {int(t['http_429'])} · "
            f"tokens {int(t['input_tokens'] + t['output_tokens'])} · ${t['cost_usd']:.2f}"
        )

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
