"""The response cache commits in batches: a put is answered at once from the same
connection, reaches other readers at the next commit, and close commits the rest. All of
its SQLite work runs on its own thread, never on the event loop's."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing

import pytest

from vera.clients.cache import KeyFilter, ResponseCache
from vera.errors import StorageError
from vera.records import Completion, Usage


def completion(i: int) -> Completion:
    return Completion(text=f"answer {i}", usage=Usage(input_tokens=i, output_tokens=1))


def rows_seen_by_another_reader(cache: ResponseCache) -> int:
    with closing(sqlite3.connect(cache.path)) as other:
        return other.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


async def test_puts_commit_every_n_entries_and_on_close(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite", commit_every=4, commit_interval_s=3600)
    for i in range(3):
        cache.put(f"k{i}", completion(i))
    assert await cache.get("k1") == completion(1)  # the writer reads its own puts at once
    assert rows_seen_by_another_reader(cache) == 0 and cache.commits == 0
    cache.put("k3", completion(3))
    assert await cache.get("k3") == completion(3)  # the thread has done the fourth put
    assert rows_seen_by_another_reader(cache) == 4 and cache.commits == 1
    cache.put("k4", completion(4))
    cache.put("k0", completion(99))  # the first answer stays
    await cache.aclose()
    reopened = ResponseCache(tmp_path / "cache.sqlite")
    assert len(reopened) == 5 and await reopened.get("k0") == completion(0)
    reopened.close()


async def test_the_sqlite_work_runs_on_the_cache_thread_not_the_loop(tmp_path, monkeypatch):
    cache = ResponseCache(tmp_path / "cache.sqlite", commit_every=2, commit_interval_s=3600)
    threads: set[str] = set()
    for name in ("_get", "_put", "_commit", "_close"):
        real = getattr(ResponseCache, name)

        def spy(self, *args, _real=real):
            threads.add(threading.current_thread().name)
            return _real(self, *args)

        monkeypatch.setattr(ResponseCache, name, spy)
    cache.put("a", completion(1))
    cache.put("b", completion(2))
    assert await cache.get("a") == completion(1)
    await cache.aclose()
    assert threads and all(t.startswith("vera-cache") for t in threads)
    assert threading.current_thread().name not in threads


async def test_a_failed_write_is_raised_by_the_next_call(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with closing(sqlite3.connect(cache.path)) as other:
        other.execute("DROP TABLE responses")
        other.commit()
    cache.put("a", completion(1))  # fails on the thread (no table); nothing waits for it
    with pytest.raises(StorageError, match="cannot write the response cache"):
        cache.close()  # the put's failure, not lost with the thread


async def test_a_closed_cache_says_so(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    await cache.aclose()
    with pytest.raises(StorageError, match="closed"):
        await cache.get("a")
    with pytest.raises(StorageError, match="closed"):
        cache.put("a", completion(1))


async def test_a_key_never_held_is_answered_without_a_lookup_once_the_keys_are_read(tmp_path, monkeypatch):
    path = tmp_path / "cache.sqlite"
    earlier = ResponseCache(path)
    for i in range(50):
        earlier.put(f"old-{i}", completion(i))
    earlier.close()

    looked_up: list[str] = []
    real_get = ResponseCache._get

    def spy(self, key):
        looked_up.append(key)
        return real_get(self, key)

    monkeypatch.setattr(ResponseCache, "_get", spy)
    cache = ResponseCache(path)
    cache.start()
    cache.put("during", completion(98))  # put while the file's keys are being read
    assert cache._loader is not None
    await cache._loader  # the file's keys are in the filter
    assert await cache.get("never-asked") is None
    assert looked_up == [] and cache.filtered == 1
    # Keys from the file, put while it was read, and put now are read on the thread.
    assert await cache.get("old-7") == completion(7)
    assert await cache.get("during") == completion(98)
    cache.put("new", completion(99))
    assert await cache.get("new") == completion(99)
    assert looked_up == ["old-7", "during", "new"] and cache.hits == 3
    await cache.aclose()


async def test_surely_absent_answers_only_what_get_would_answer_without_a_lookup(tmp_path):
    """The client asks `surely_absent` before `get` to spare a coroutine per call: it
    may say so only where `get` would say None at once, and must leave a failed write
    to `get` to raise."""
    cache = ResponseCache(tmp_path / "cache.sqlite")
    cache.put("held", completion(1))
    assert not cache.surely_absent("never")  # the filter is not loaded yet
    cache.start()
    assert cache._loader is not None
    await cache._loader
    assert cache.surely_absent("never") and cache.filtered == 1
    assert not cache.surely_absent("held") and cache.filtered == 1
    cache._error = StorageError("disk full")
    assert not cache.surely_absent("never")
    with pytest.raises(StorageError, match="disk full"):
        await cache.get("never")
    await cache.aclose()
    assert not cache.surely_absent("never")  # closed: `get` says so


@pytest.fixture
def batches(monkeypatch) -> list[int]:
    """The size of each batch of puts the thread writes, in order (ResponseCache._put, spied on)."""
    sizes: list[int] = []
    real_put = ResponseCache._put

    def spy(self, entries):
        sizes.append(len(entries))
        return real_put(self, entries)

    monkeypatch.setattr(ResponseCache, "_put", spy)
    return sizes


async def test_puts_of_one_turn_of_the_loop_reach_the_thread_together(tmp_path, batches):
    cache = ResponseCache(tmp_path / "cache.sqlite", commit_every=1000, commit_interval_s=3600, hand_over_s=0)
    for i in range(5):
        cache.put(f"k{i}", completion(i))
    assert await cache.get("k4") == completion(4)  # a lookup hands queued puts over first
    for i in range(5, 8):
        cache.put(f"k{i}", completion(i))
    await asyncio.sleep(0)  # the next turn of the loop hands them over
    assert cache._queued == []
    assert await cache.get("k7") == completion(7)
    assert batches == [5, 3]
    await cache.aclose()
    reopened = ResponseCache(tmp_path / "cache.sqlite")
    assert len(reopened) == 8
    reopened.close()


async def test_puts_wait_on_the_loop_for_the_hand_over_time_or_a_full_batch(tmp_path, batches):
    cache = ResponseCache(tmp_path / "cache.sqlite", hand_over_s=0.05, hand_over_every=10)
    for i in range(3):
        cache.put(f"k{i}", completion(i))
        await asyncio.sleep(0)
    assert len(cache._queued) == 3  # turns of the loop went by: still waiting
    await asyncio.sleep(0.1)
    assert cache._queued == [] and batches == [3]
    for i in range(3, 13):
        cache.put(f"k{i}", completion(i))
    assert cache._queued == []  # a full batch goes at once
    cache._in_thread[-1][0].result()
    assert batches == [3, 10]
    cache.put("k13", completion(13))
    assert await cache.get("k13") == completion(13)  # a lookup takes what waits along
    assert batches == [3, 10, 1]
    await cache.aclose()


async def test_an_entry_is_committed_about_the_commit_interval_after_its_put(tmp_path):
    """Waiting on the loop before the thread must not make an entry wait longer to be
    durable (a kill -9 loses what is not committed): the thread commits that much
    sooner."""
    cache = ResponseCache(tmp_path / "cache.sqlite", commit_interval_s=0.3, hand_over_s=0.1)
    cache.start()
    await asyncio.sleep(0.35)  # the committer has ticked once, with nothing to commit
    cache.put("k", completion(1))
    for _ in range(60):
        await asyncio.sleep(0.01)
        if rows_seen_by_another_reader(cache):
            break
    assert rows_seen_by_another_reader(cache) == 1
    await cache.aclose()


def test_the_key_filter_never_forgets_a_key_and_seldom_claims_one():
    keys = KeyFilter()
    held = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(100_000)]
    for k in held:
        keys.add(k)
    assert all(keys.may_hold(k) for k in held)
    others = [hashlib.sha256(f"other {i}".encode()).hexdigest() for i in range(100_000)]
    assert sum(keys.may_hold(k) for k in others) <= 5  # ~0 expected at this load


@pytest.fixture
def held_writes(monkeypatch) -> Iterator[threading.Event]:
    """The cache's thread writes nothing until the returned event is set."""
    gate = threading.Event()
    real_put = ResponseCache._put

    def held(self, entries):
        # Long enough for a loaded machine (CI saw 2,000 tasks take over 5 s to put
        # their answers, and the thread then wrote 40 of them): the bound only keeps
        # a failing test from hanging.
        gate.wait(120)
        return real_put(self, entries)

    monkeypatch.setattr(ResponseCache, "_put", held)
    yield gate
    gate.set()  # a test that failed before letting the thread go does not hold it


async def test_puts_wait_for_room_when_the_thread_falls_behind(tmp_path, held_writes):
    # The thread is held up; `room` lets no more than `max_backlog` entries pile up.
    gate = held_writes
    cache = ResponseCache(tmp_path / "cache.sqlite", max_backlog=3)
    most = 0

    async def writer() -> None:
        nonlocal most
        for i in range(10):
            cache.put(f"k{i}", completion(i))
            await cache.room()
            most = max(most, cache.backlog())

    task = asyncio.create_task(writer())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not task.done() and cache.backlog() == 4  # waiting: one more than allowed
    gate.set()
    await asyncio.wait_for(task, 5)
    assert most <= 3
    await cache.aclose()
    reopened = ResponseCache(tmp_path / "cache.sqlite")
    assert len(reopened) == 10
    reopened.close()


async def test_thousands_waiting_for_room_share_one_wake_up(tmp_path, monkeypatch, held_writes):
    # 2,000 conversations answered at once against a held-up thread: each waits, and
    # is woken once when the backlog is down to half the bound, not once per batch
    # (counted as the awaits inside `room`, which waits on a shielded shared future).
    gate = held_writes
    waits = 0
    real_shield = asyncio.shield

    def counting_shield(arg):
        nonlocal waits
        waits += 1
        return real_shield(arg)

    monkeypatch.setattr(asyncio, "shield", counting_shield)
    cache = ResponseCache(tmp_path / "cache.sqlite", max_backlog=100)

    async def conversation(i: int) -> None:
        for _ in range(i % 50):  # answers arriving over 50 turns of the loop: 50 batches
            await asyncio.sleep(0)
        cache.put(f"k{i}", completion(i))
        await cache.room()

    tasks = [asyncio.create_task(conversation(i)) for i in range(2000)]
    for _ in range(60):
        await asyncio.sleep(0)
    assert cache.backlog() == 2000  # every answer put, none written, all waiting
    gate.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert 0 < waits <= 2 * 2000
    await cache.aclose()
    reopened = ResponseCache(tmp_path / "cache.sqlite")
    assert len(reopened) == 2000
    reopened.close()


def _key(**changes: object) -> str:
    from vera.clients.base import CallContext
    from vera.clients.cache import request_key
    from vera.records import Message, ModelSpec

    args: dict[str, object] = {
        "spec": ModelSpec(ref="bot", provider="openai", protocol="openai", model="gpt-4o-mini"),
        "messages": [Message("system", "Be kind."), Message("user", "Hello, my week was long.")],
        "params": {"temperature": 0.7, "max_tokens": 512},
        "schema": None,
        "context": CallContext(role="chatbot", job_id="conv-1", conversation_id="conv-1"),
        "reask": 0,
    }
    args.update(changes)
    return request_key(**args)  # type: ignore[arg-type]


def test_the_request_key_is_what_cache_files_already_hold():
    """Cache files written by earlier versions are looked up with the same keys, so a
    resumed run replays what it paid for: the key of a fixed request is pinned (the key
    was not shared with the call bodies' hashes, issue 31, to keep it so)."""
    assert _key() == "ba11a43f48d05c91f6e23eef720198c1bcd28dce90300d46b93c231eedd264c8"
    assert _key() == _key(
        params={"max_tokens": 512, "temperature": 0.7}
    )  # the order of params is not part of it


def test_the_request_key_changes_with_anything_that_changes_the_answer():
    from vera.clients.base import CallContext
    from vera.records import Message

    keys = {
        _key(),
        _key(params={"temperature": 0.2, "max_tokens": 512}),
        _key(schema={"type": "object"}),
        _key(reask=1),
        _key(messages=[Message("system", "Be kind."), Message("user", "Hello, my week was short.")]),
        _key(context=CallContext(role="chatbot", job_id="conv-2", conversation_id="conv-2")),
        _key(context=CallContext(role="user_agent", job_id="conv-1", conversation_id="conv-1")),
    }
    assert len(keys) == 7


def test_the_key_chain_gives_request_key_s_bytes_along_any_history():
    """`KeyChain` hashes only what a job's request adds to its last one; its keys must
    be `request_key`'s exactly (caches written before keep answering), whether the
    history grows, the last message changes (the user-agent's reminder), a request
    re-asks, branches back, restarts, or another job or role comes in between."""
    import random

    from vera.clients.base import CallContext
    from vera.clients.cache import KeyChain, request_key
    from vera.records import Message, ModelSpec

    spec = ModelSpec(
        ref="bot",
        provider="openai",
        protocol="openai",
        model="gpt-4o-mini",
        params={"seed": 3, "b": 1e16, "a": "é"},
    )
    other = ModelSpec(ref="other", provider="azure", protocol="openai", model='m"1', params={})
    rnd = random.Random(7)
    texts = ["Hi.", 'She said "no".', "line\nbreak", "é ü 你好", "", "x" * 2000]
    contexts = [
        CallContext(role="user_agent", job_id="conv-1", conversation_id="conv-1"),
        CallContext(role="chatbot", job_id="conv-1", conversation_id="conv-1"),
        CallContext(role="chatbot", job_id="conv-2", conversation_id="conv-2"),
        None,
    ]
    histories: dict[int, list[Message]] = {i: [Message("system", f"sys {i}")] for i in range(len(contexts))}
    for limit in (1024, 1):
        chain = KeyChain(limit=limit)
        for _ in range(600):
            i = rnd.randrange(len(contexts))
            history = histories[i]
            move = rnd.random()
            if move < 0.6:
                history.append(Message(rnd.choice(["user", "assistant"]), rnd.choice(texts)))
            elif move < 0.7 and len(history) > 1:
                del history[rnd.randrange(1, len(history)) :]  # branch back
            elif move < 0.75:
                history[:] = []  # restart (and an empty request)
            last = [Message("user", rnd.choice(texts) + " (reminder)")] if rnd.random() < 0.5 else []
            messages = tuple(history + last)
            args = (
                rnd.choice([spec, spec, other]),
                messages,
                rnd.choice([None, {"temperature": 0.7, "max_tokens": 64}]),
                rnd.choice([None, {"type": "object", "b": 1, "a": [2]}]),
                contexts[i],
                rnd.choice([0, 0, 1]),
            )
            assert chain.key(*args) == request_key(*args)
            if rnd.random() < 0.2:  # the same request asked again
                assert chain.key(*args) == request_key(*args)
        assert len(chain._chains) <= limit


_WRITER = """
import asyncio, os, signal, sys
from vera.clients.cache import ResponseCache
from vera.records import Completion, Usage

async def main(path, name):
    cache = ResponseCache(path)  # commits every 0.5 s, as a run's does
    cache.start()
    for i in range(200):
        cache.put(f"{name}-{i}", Completion(text=f"{name} {i}", usage=Usage(input_tokens=i, output_tokens=1)))
        cache.put(f"shared-{i}", Completion(text=f"{name} shared {i}"))
        await asyncio.sleep(0.004)
    cache.commit()  # what a commit made durable survives the kill
    for i in range(200, 400):
        cache.put(f"{name}-{i}", Completion(text=f"{name} {i}"))
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)  # handed to the thread, written, not committed
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@pytest.mark.slow
def test_two_processes_share_a_cache_and_a_kill_9_loses_only_what_was_not_committed(tmp_path):
    """`--cache-dir` lets several runs share one file: two writers killed outright
    mid-run leave a sound file holding at least what each committed (a key both wrote
    keeps one answer, the first committed), and a cache reopened on it answers from it
    and knows the rest is absent."""
    import subprocess
    import sys

    import msgspec

    path = tmp_path / "cache.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), name]) for name in ("a", "b")]
    for proc in procs:
        assert proc.wait(timeout=60) == -9
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        keys = {k for (k,) in db.execute("SELECT key FROM responses")}
        shared = dict(db.execute("SELECT key, value FROM responses WHERE key LIKE 'shared-%'"))
    committed = {f"{n}-{i}" for n in "ab" for i in range(200)} | {f"shared-{i}" for i in range(200)}
    assert committed <= keys <= committed | {f"{n}-{i}" for n in "ab" for i in range(200, 400)}
    for key, value in shared.items():
        assert msgspec.json.decode(value, type=Completion).text in {
            f"a shared {key[7:]}",
            f"b shared {key[7:]}",
        }

    async def reopen() -> None:
        cache = ResponseCache(path)
        cache.start()
        assert cache._loader is not None
        await cache._loader
        for name in "ab":
            answer = Completion(text=f"{name} 199", usage=Usage(input_tokens=199, output_tokens=1))
            assert await cache.get(f"{name}-199") == answer
            if f"{name}-399" not in keys:
                assert cache.surely_absent(f"{name}-399")  # lost with the kill: asked again
        await cache.aclose()

    asyncio.run(reopen())
