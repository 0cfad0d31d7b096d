"""The progress display: a finished job bumps running totals; the table is drawn, and the
accounts summed, by a refresher on the event loop, not once per finished job."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
from typing import Literal

import pytest
from rich.console import Console

from vera.app._progress import RunProgress
from vera.records import Conversation, Judgement

from .conftest import ROOT


def conv(i: int, status: Literal["complete", "failed"] = "complete") -> Conversation:
    return Conversation(
        id=f"c{i}", chatbot="bot-a" if i % 2 else "bot-b", user_agent="u", persona="P", risk="Low",
        seed=i, turns=[], status=status,
    )  # fmt: skip


async def test_finished_jobs_update_totals_and_the_table_is_drawn_at_a_fixed_rate() -> None:
    reads = 0

    def accounts() -> list[dict]:
        nonlocal reads
        reads += 1
        return [{"calls": 10, "cost_usd": 0.5}, {"calls": 5, "http_429": 1}]

    out = io.StringIO()
    progress = RunProgress(
        console=Console(file=out, force_terminal=True, width=200), accounts=accounts, refresh_per_second=50
    )
    progress.plan({"bot-a": 500, "bot-b": 500})
    progress.start(1000, 1000)
    drawn_at_start, read_at_start = progress.redraws, reads
    for i in range(1000):  # no await: the loop cannot refresh in between
        progress.conversation(conv(i, "failed" if i % 100 == 0 else "complete"), cached=False)
        progress.judgement(
            Judgement(id=f"j{i}", conversation_id=f"c{i}", judge="J", instance=1, status="complete",
                      answers=[], ratings=[]),
            cached=False,
        )  # fmt: skip
    assert progress.redraws == drawn_at_start and reads == read_at_start  # 2,000 finished jobs, no redraw
    assert (progress.done_total, progress.failed_total, progress.judged) == (1000, 10, 1000)
    while progress.redraws == drawn_at_start:  # the refresher draws on its own schedule
        await asyncio.sleep(0.01)
    assert (
        reads - read_at_start == progress.redraws - drawn_at_start
    )  # the accounts are summed per redraw only
    line = progress.line()
    assert "conversations 1000/1000 (failed 10)" in line and "429s 1" in line and "$0.50" in line
    progress.stop()
    assert progress._refresher is None


def test_without_an_event_loop_a_line_is_printed_at_most_every_interval(capsys) -> None:
    progress = RunProgress(console=Console(file=io.StringIO()), every_s=3600)
    progress.start(10, 0)
    for i in range(10):
        progress.conversation(conv(i), cached=False)
    assert progress.redraws == 1  # the first one; the next is an hour away
    assert "conversations 1/10" in capsys.readouterr().err
    progress.stop()
    # The last line shows the final counts, not those of the last interval.
    assert progress.redraws == 2
    assert "conversations 10/10 (failed 0)" in capsys.readouterr().err


def test_the_final_line_is_not_repeated_when_nothing_changed_since(capsys) -> None:
    progress = RunProgress(console=Console(file=io.StringIO()), every_s=3600)
    progress.start(1, 0)
    progress.conversation(conv(0), cached=False)
    progress.stop()
    assert progress.redraws == 1
    assert capsys.readouterr().err.count("conversations 1/1") == 1


@pytest.mark.slow
def test_a_ci_log_gets_plain_progress_lines_even_with_force_color(tmp_path) -> None:
    """A CI step (no TTY, CI=true, FORCE_COLOR=1 as many workflows set for coloured logs):
    rich took the pipe for a terminal and drew its live table into the log, four frames a
    second of cursor moves and carriage returns. The log gets plain progress lines."""
    env = {**os.environ, "CI": "true", "FORCE_COLOR": "1"}
    env.pop("NO_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "vera", "run", "--providers", "offline/best-practice", "--out", str(tmp_path / "r")],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stderr + proc.stdout and "\r" not in proc.stderr + proc.stdout
    lines = proc.stderr.splitlines()
    assert lines and all(line.startswith("conversations ") for line in lines), lines
    assert lines[-1].startswith("conversations 100/100 (failed 0) · judgements 100/100 (failed 0)")
    assert proc.stdout.splitlines()[-1].startswith("status: complete — ")
