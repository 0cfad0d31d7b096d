"""`vera run` does its work on uvloop, as the installed command does, and the card it
writes there is the one the standard asyncio loop writes for the same seeds."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from vera.cli._main import main

from .conftest import ROOT

uvloop = pytest.importorskip("uvloop")  # a dependency everywhere but Windows

ARGS = (
    *("--config", str(ROOT / "configs" / "offline.toml"), "--seeds", "1,2"),
    *("--limit-personas", "3", "--providers", "offline/best-practice", "--quiet"),
)


def run(out: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["run", *ARGS, "--out", str(out)])
    assert result.exit_code == 0, result.output
    card = json.loads((out / "card.json").read_text())
    for volatile in ("run_id", "accounting"):  # a fresh id; wall time and CPU
        card.pop(volatile)
    return card


def test_a_run_on_uvloop_gives_the_card_of_a_run_on_asyncio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Wrap uvloop's own entry point (not vera's code) to see which loop the run's work
    # is awaited on: the wrapper runs inside the loop uvloop.run creates.
    loops: list[type[asyncio.AbstractEventLoop]] = []
    real_run = uvloop.run

    def watched_run(coro: Coroutine[Any, Any, Any], **kwargs: Any) -> Any:
        async def watched() -> Any:
            loops.append(type(asyncio.get_running_loop()))
            return await coro

        return real_run(watched(), **kwargs)

    monkeypatch.setattr(uvloop, "run", watched_run)
    on_uvloop = run(tmp_path / "uvloop")
    assert loops == [uvloop.Loop]
    conversations = (tmp_path / "uvloop" / "conversations.jsonl").read_text().splitlines()
    assert len(conversations) == 3 * 2  # every persona on every seed

    # Without uvloop (as on Windows) the CLI falls back to asyncio.run.
    monkeypatch.setitem(sys.modules, "uvloop", None)
    on_asyncio = run(tmp_path / "asyncio")
    assert loops == [uvloop.Loop]  # uvloop was not used this time
    assert on_uvloop == on_asyncio
