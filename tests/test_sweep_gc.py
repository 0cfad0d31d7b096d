"""The collector is set for a sweep by the process that runs one (vera's commands), and
restored after; library code (the client pool) leaves process-wide settings alone."""

from __future__ import annotations

import gc

from click.testing import CliRunner

from vera.app._gc import YOUNG_THRESHOLD, sweep_collector
from vera.cli._main import main
from vera.clients.pool import ClientPool


def test_the_sweep_setting_freezes_the_heap_and_is_restored() -> None:
    before = gc.get_threshold()
    with sweep_collector():
        young, *older = gc.get_threshold()
        assert young >= YOUNG_THRESHOLD and older == list(before[1:])
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_collector_switched_off_stays_off() -> None:
    before = gc.get_threshold()
    gc.set_threshold(0)
    try:
        with sweep_collector():
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)


async def test_a_client_pool_leaves_the_collector_alone() -> None:
    before = gc.get_threshold()
    async with ClientPool({}):
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() == 0


def test_a_vera_command_runs_under_the_sweep_setting_and_restores_it(tmp_path, monkeypatch) -> None:
    seen: list[tuple[int, int]] = []
    import vera.app
    import vera.cli._main

    real = vera.app.execute_run

    async def spy(*args, **kwargs):
        seen.append((gc.get_threshold()[0], gc.get_freeze_count()))
        return await real(*args, **kwargs)

    monkeypatch.setattr(vera.cli._main, "execute_run", spy)
    before = gc.get_threshold()
    r = CliRunner().invoke(main, ["run", "--limit-personas", "1", "--out", str(tmp_path / "run"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert seen and seen[0][0] >= YOUNG_THRESHOLD and seen[0][1] > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
