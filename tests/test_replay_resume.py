"""A run killed mid-conversation and resumed asks nothing it had paid for again: its
own call bodies answer the resume (vera.clients.replay), and it keeps no cache.sqlite.
The paths that keep a cache (`--cache-dir`, `--no-call-bodies`, a run made before the
bodies answered resumes) and `--no-cache` (re-asks) behave as before.

Every test kills a real `vera run` with SIGKILL against the loopback sweep server, which
counts what it RECEIVED per request body (a seed per job makes each body unique)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from vera.records import Completion
from vera.store import BodyReader

from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config

pytestmark = pytest.mark.slow

SLOW = Faults(latency=0.05)  # the kill lands mid-conversation, after a cache commit
ASK_AHEAD_OFF = '[judge]\nask_ahead = "off"'  # ask-ahead's extra calls depend on timing


def _env() -> dict[str, str]:
    return {**os.environ, "SWEEP_TEST_KEY": KEY}


def _vera(*args: str) -> list[str]:
    return [sys.executable, "-m", "vera", *args]


def _lines(path: Path) -> list[dict]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


def _card(run_dir: Path) -> dict:
    """The card but the run id and the money (a kill pays for work in flight twice)."""
    card = json.loads((run_dir / "card.json").read_text())
    card.pop("run_id")
    card.pop("accounting")
    return card


def _run(cfg: Path, out: Path, *options: str) -> None:
    done = subprocess.run(
        _vera("run", "--config", str(cfg), "--out", str(out), "--quiet", *options),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


def _killed(cfg: Path, out: Path, calls: int, *options: str, cache: Path | None = None) -> None:
    """A run SIGKILLed once its calls.jsonl has `calls` lines (mid-conversation: eight
    conversations run at once, and none has finished that early) and, with `cache`, once
    that cache has committed a reply (it commits every half second)."""
    proc = subprocess.Popen(
        _vera("run", "--config", str(cfg), "--out", str(out), "--quiet", *options),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    end = time.monotonic() + 120
    path = out / "calls.jsonl"
    while proc.poll() is None and time.monotonic() < end:
        ready = path.exists() and len(path.read_bytes().splitlines()) >= calls
        if ready and (cache is None or (cache.exists() and _cache_ids(cache))):
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)


def _resume(out: Path, *options: str) -> None:
    done = subprocess.run(
        _vera("run", "--resume", str(out), "--quiet", *options),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


def _body_ids(run_dir: Path) -> set[str]:
    """The response ids the run's call bodies hold (the fake names every answer)."""
    with BodyReader(run_dir) as reader:
        return {b.response.raw_id for b in reader.all() if b.response is not None and b.response.raw_id}


def _cache_ids(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        values = [v for (v,) in db.execute("SELECT value FROM responses")]
    return {i for v in values if (i := msgspec.json.decode(v, type=Completion).raw_id)}


def _asked_again(server: SweepServer, before: Counter[str], recorded: set[str]) -> list[str]:
    """The request bodies whose answer the run had recorded before the resume and that
    the server received again after it (counted per body)."""
    return [
        key
        for key, ids in server.responses.items()
        if set(ids[: before[key]]) & recorded and server.requests[key] > before[key]
    ]


def _ok_calls(run_dir: Path) -> tuple[int, int]:
    """(calls that answered and were paid, replies replayed) in calls.jsonl."""
    calls = _lines(run_dir / "calls.jsonl")
    paid = sum(c["status"] == "ok" and not c["cached"] for c in calls)
    return paid, sum(c["cached"] for c in calls)


def test_a_killed_run_resumes_from_its_bodies_asking_nothing_twice(tmp_path: Path) -> None:
    with SweepServer() as reference:
        cfg_a = write_sweep_config(tmp_path / "a", reference.base_url, personas=6, extra=ASK_AHEAD_OFF)
        _run(cfg_a, tmp_path / "A")
    assert not (tmp_path / "A" / "cache.sqlite").exists()  # a new run keeps no second copy
    with SweepServer(faults=SLOW) as server:
        cfg_b = write_sweep_config(tmp_path / "b", server.base_url, personas=6, extra=ASK_AHEAD_OFF)
        out = tmp_path / "B"
        _killed(cfg_b, out, 40)
        assert not (out / "cache.sqlite").exists()
        recorded = _body_ids(out)
        assert recorded
        before = Counter(server.requests)
        _resume(out)
        assert _asked_again(server, before, recorded) == []
    assert not (out / "cache.sqlite").exists()
    paid, replayed = _ok_calls(out)
    assert replayed > 0  # the interrupted conversations were rebuilt from the bodies
    assert (paid, _card(out)) == (_ok_calls(tmp_path / "A")[0], _card(tmp_path / "A"))
    # The card counts the replays apart, as nothing: not calls, not tokens, not money.
    totals = [
        json.loads((run / "card.json").read_text())["accounting"]["total"] for run in (out, tmp_path / "A")
    ]
    assert totals[0].pop("replayed") == replayed and totals[1].pop("replayed") is None
    assert totals[0] == totals[1] and totals[0]["calls"] == paid
    # Without a shared cache the card's settings gain no key (card.json keeps its bytes).
    assert "shared_cache" not in json.loads((out / "card.json").read_text())["settings"]
    assert "replies replayed on resume" in (out / "card.md").read_text()
    # Each record carries what its job cost over every session, as the uninterrupted
    # run's does (the replies paid for before the kill included), and the records add up
    # to calls.jsonl.
    for name in ("conversations.jsonl", "judgements.jsonl"):
        cost = {r["id"]: r["cost_usd"] for r in _lines(tmp_path / "A" / name)}
        assert {r["id"]: r["cost_usd"] for r in _lines(out / name)} == pytest.approx(cost), name
    records = sum(r["cost_usd"] for n in ("conversations", "judgements") for r in _lines(out / f"{n}.jsonl"))
    assert records == pytest.approx(sum(c["cost_usd"] for c in _lines(out / "calls.jsonl")))


def test_a_run_without_bodies_resumes_from_its_cache_sqlite(tmp_path: Path) -> None:
    with SweepServer(faults=SLOW) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=6, extra=ASK_AHEAD_OFF)
        out = tmp_path / "run"
        _killed(cfg, out, 40, "--no-call-bodies", cache=out / "cache.sqlite")
        _resume(out)  # the run's manifest keeps --no-call-bodies
        assert not (out / "call_bodies.vlog").exists()
        recorded = _cache_ids(out / "cache.sqlite")
        assert _ok_calls(out)[1] > 0
        assert all(not set(ids[:-1]) & recorded for ids in server.responses.values())


def test_a_shared_cache_dir_is_the_cache_it_was(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    with SweepServer(faults=SLOW) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=6, extra=ASK_AHEAD_OFF)
        out = tmp_path / "run"
        _killed(cfg, out, 40, "--cache-dir", str(shared), cache=shared / "cache.sqlite")
        _resume(out, "--cache-dir", str(shared))
        assert (shared / "cache.sqlite").exists() and not (out / "cache.sqlite").exists()
        recorded = _cache_ids(shared / "cache.sqlite")
        assert _ok_calls(out)[1] > 0
        assert all(not set(ids[:-1]) & recorded for ids in server.responses.values())


def test_a_fresh_run_on_a_shared_cache_dir_does_not_say_it_resumed(tmp_path: Path) -> None:
    """A second run on the first one's --cache-dir is answered from that cache without a
    resume: its card said "replies replayed on resume", of a run never resumed."""
    shared = tmp_path / "shared"
    with SweepServer() as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=2, seeds="[1]", extra=ASK_AHEAD_OFF)
        _run(cfg, tmp_path / "first", "--cache-dir", str(shared))
        asked = sum(server.requests.values())
        _run(cfg, tmp_path / "second", "--cache-dir", str(shared))
        assert sum(server.requests.values()) == asked  # every reply came from the cache
    paid, replayed = _ok_calls(tmp_path / "second")
    assert paid == 0 and replayed > 0
    md = (tmp_path / "second" / "card.md").read_text()
    assert f"{replayed} replies replayed from the shared response cache (--cache-dir) or on resume" in md
    assert "Replayed from the shared cache or on resume (not calls)" in md
    assert "Replayed on resume" not in md and "replies replayed on resume" not in md
    card = json.loads((tmp_path / "second" / "card.json").read_text())
    assert card["settings"]["shared_cache"] is True


def test_no_cache_replays_nothing(tmp_path: Path) -> None:
    with SweepServer(faults=SLOW) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=6, extra=ASK_AHEAD_OFF)
        out = tmp_path / "run"
        _killed(cfg, out, 40)
        recorded = _body_ids(out)
        before = Counter(server.requests)
        _resume(out, "--no-cache")
        assert _ok_calls(out)[1] == 0  # nothing replayed
        assert _asked_again(server, before, recorded)  # the interrupted work was asked again
    assert not (out / "cache.sqlite").exists()


def test_a_run_made_before_keeps_resuming_from_its_cache_sqlite(tmp_path: Path) -> None:
    """A run of an earlier vera: its replies in cache.sqlite and no call bodies (this
    vera's resume keeps bodies from here on, and still reads the cache)."""
    with SweepServer(faults=SLOW) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=6, extra=ASK_AHEAD_OFF)
        out = tmp_path / "run"
        _killed(cfg, out, 40, "--no-call-bodies", cache=out / "cache.sqlite")
        manifest = json.loads((out / "manifest.json").read_text())
        del manifest["config"]["call_bodies"]  # as an earlier vera wrote it: bodies kept
        (out / "manifest.json").write_text(json.dumps(manifest))
        recorded = _cache_ids(out / "cache.sqlite")
        assert recorded
        before = Counter(server.requests)
        _resume(out)
        assert (out / "call_bodies.vlog").exists()  # the resume kept its bodies
        assert _asked_again(server, before, recorded) == []
        assert _ok_calls(out)[1] > 0


def test_vera_judge_stopped_mid_judgement_resumes_from_its_bodies(tmp_path: Path) -> None:
    with SweepServer(faults=SLOW) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=6, extra=ASK_AHEAD_OFF)
        out = tmp_path / "run"
        done = subprocess.run(
            _vera("simulate", "--config", str(cfg), "--out", str(out), "--quiet"),
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        simulated = len(_lines(out / "calls.jsonl"))
        # The first wave of questions is answered and every later one held: a walk of two
        # questions is over in two waves, which a loaded machine's polling could miss
        # (the judge then finished before the signals and nothing was left to replay).
        server.faults = Faults(latency=0.05, hold_judge_after=8)
        proc = subprocess.Popen(
            _vera("judge", str(out), "--quiet"),
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        end = time.monotonic() + 120
        # The first wave of questions answered (eight walks at once, in step), the second
        # held: two Ctrl-Cs cancel it at once, every walk cut off after its first answer.
        # (A SIGKILL lands as often after the walks' records as before them.)
        while proc.poll() is None and time.monotonic() < end:
            if len((out / "calls.jsonl").read_bytes().splitlines()) >= simulated + 8:
                break
            time.sleep(0.005)
        assert proc.poll() is None, "the judging finished before it could be stopped"
        proc.send_signal(signal.SIGINT)
        time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
        stopped = _lines(out / "judgements.jsonl") if (out / "judgements.jsonl").exists() else []
        assert sum(j["status"] == "complete" for j in stopped) < 12, "the judging ended before the signals"
        recorded = _body_ids(out)
        assert recorded
        server.faults = SLOW  # the resume's answers come as the first wave's did
        before = Counter(server.requests)
        again = subprocess.run(
            _vera("judge", str(out), "--quiet"), env=_env(), capture_output=True, text=True, timeout=300
        )
        assert again.returncode == 0, again.stderr
        assert _asked_again(server, before, recorded) == []
    assert not (out / "cache.sqlite").exists()
    judged = _lines(out / "judgements.jsonl")
    assert len({j["id"] for j in judged if j["status"] == "complete"}) == 12
    assert _ok_calls(out)[1] > 0  # the judgements cut off were rebuilt from the bodies
