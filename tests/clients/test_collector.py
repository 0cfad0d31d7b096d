"""While a client pool is open the garbage collector is set for a sweep; the settings
come back when the last open pool closes."""

from __future__ import annotations

import gc

from vera.clients.pool import ClientPool


async def test_an_open_pool_freezes_the_heap_and_raises_the_young_threshold() -> None:
    before = gc.get_threshold()
    async with ClientPool({}):
        young, *older = gc.get_threshold()
        assert young >= 50_000 and older == list(before[1:])
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


async def test_settings_are_restored_only_when_the_last_of_several_pools_closes() -> None:
    before = gc.get_threshold()
    outer = await ClientPool({}).__aenter__()
    async with ClientPool({}):
        pass
    assert gc.get_threshold() != before  # the outer pool is still open
    await outer.close()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


async def test_a_collector_switched_off_stays_off() -> None:
    before = gc.get_threshold()
    gc.set_threshold(0)
    try:
        async with ClientPool({}):
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)
