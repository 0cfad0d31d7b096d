"""The response cache commits in batches: a put is answered at once from the same
connection, reaches other readers at the next commit, and close commits the rest."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing

from vera.clients.cache import ResponseCache
from vera.records import Completion, Usage


def completion(i: int) -> Completion:
    return Completion(text=f"answer {i}", usage=Usage(input_tokens=i, output_tokens=1))


def rows_seen_by_another_reader(cache: ResponseCache) -> int:
    with closing(sqlite3.connect(cache.path)) as other:
        return other.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


def test_puts_commit_every_n_entries_and_on_close(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite", commit_every=4, commit_interval_s=3600)
    for i in range(3):
        cache.put(f"k{i}", completion(i))
    assert cache.get("k1") == completion(1)  # the writer reads its own puts at once
    assert rows_seen_by_another_reader(cache) == 0 and cache.commits == 0
    cache.put("k3", completion(3))
    assert rows_seen_by_another_reader(cache) == 4 and cache.commits == 1
    cache.put("k4", completion(4))
    cache.put("k0", completion(99))  # the first answer stays
    cache.close()
    reopened = ResponseCache(tmp_path / "cache.sqlite")
    assert len(reopened) == 5 and reopened.get("k0") == completion(0)
    reopened.close()


async def test_a_quiet_cache_commits_on_its_timer(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite", commit_every=1000, commit_interval_s=0.01)
    cache.start()
    cache._last_commit = float("inf")  # so the put itself does not commit
    cache.put("k", completion(1))
    assert cache.commits == 0
    cache._last_commit = 0.0
    while cache.commits == 0:  # the timer commits without another put
        await asyncio.sleep(0.01)
    assert rows_seen_by_another_reader(cache) == 1
    cache.close()
