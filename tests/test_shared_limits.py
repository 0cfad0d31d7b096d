"""Shards that share one account through Redis (`--limits-url`).

A real `redis-server` on a free loopback port, started here. Three `vera run --shard k/3`
processes talk to one fake OpenAI server that enforces R requests a minute the way
providers do (a continuously refilled bucket, answering 429 when it is empty). Together
they must meet no 429 and use at least 90 % of R over the time they were busy, computed
from the server's own log.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner

from vera.cli._main import main
from vera.clients.limits import Account
from vera.clients.shared_limits import RedisLimits, account_key

from .fakes.protocols import FakeOpenAI, serve_in_thread
from .run_config import write_run_config

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
KEY, KEY_ENV = "sk-shared-account-0123456789", "VERA_SHARED_TEST_KEY"
RPM = 1200  # the server's limit: 20 requests a second
SHARDS = 3
PERSONAS = 24
TURNS = 12  # messages per conversation, 6 of them the chatbot's: 144 calls, about 7 s at the limit


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not os.path.exists(REDIS_SERVER):
        if os.environ.get("VERA_REDIS_TESTS") == "required":
            pytest.fail(f"VERA_REDIS_TESTS=required but {REDIS_SERVER} is missing")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    proc = start_redis(tmp_path_factory.mktemp("redis"), port)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def start_redis(folder: Path, port: int, *options: str) -> subprocess.Popen[bytes]:
    """A redis-server on 127.0.0.1:`port`, accepting connections."""
    proc = subprocess.Popen(
        [
            REDIS_SERVER,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            *options,
        ],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(200):  # up to 10 s for it to accept connections
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.05)
    proc.terminate()
    pytest.fail("redis-server did not start")


@pytest.mark.slow
async def test_two_processes_draw_on_one_bucket_and_one_pause(redis_url: str) -> None:
    one, two = RedisLimits(redis_url), RedisLimits(redis_url)
    await one.open()
    await two.open()
    try:
        # Two "processes" on one account of 5 requests at once, refilled at one per 200 s.
        buckets = [
            shared.for_account("http://bucket.test/v1", "KEY_A")[0]("requests", 5, 0.005)
            for shared in (one, two)
        ]
        for bucket in buckets * 2 + buckets[:1]:
            await asyncio.wait_for(bucket.take(1), 5)  # five takes, none waits
        namespace = account_key("http://bucket.test/v1", "KEY_A")
        wait = float(
            await one.run("bucket", [f"{namespace}:requests", f"{namespace}:pause"], [5, 0.005, 1, "take"])
        )
        assert wait > 100  # the sixth would wait for the slow refill, in either process
        await buckets[1].adjust(-2)  # two given back (an over-estimate settled)
        await asyncio.wait_for(buckets[0].take(2), 5)
        made = [
            Account("acct", shared_pause=shared.for_account("http://bucket.test/v1", "KEY_A")[1])
            for shared in (one, two)
        ]
        # A pause named in one process holds the other.
        await made[0].pause(30.0)
        _, pause = two.for_account("http://bucket.test/v1", "KEY_A")
        assert 25 < await pause.remaining() <= 30
        # Another account is untouched.
        fresh = Account(
            "other", rpm=10, window_s=1000.0, buckets=two.for_account("http://other.test", "K")[0]
        )
        await asyncio.wait_for(fresh.admit(0), 5)
    finally:
        await one.close()
        await two.close()


def test_an_unreachable_redis_is_one_error_line_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "run"
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    result = CliRunner().invoke(main, ["run", "--out", str(out), "--limits-url", url, "--quiet"])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert (
        len(lines) == 1 and lines[0].startswith("error: --limits-url") and "Redis does not answer" in lines[0]
    )
    assert "Traceback" not in result.output and not out.exists()


def test_a_password_in_the_url_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["run", "--out", str(tmp_path / "run"), "--limits-url", "redis://:hunter2@127.0.0.1:1/0"]
    )
    assert result.exit_code == 1 and "VERA_REDIS_PASSWORD" in result.output
    assert "hunter2" not in result.output


def write_setup(tmp: Path, base_url: str) -> Path:
    providers = tmp / "providers"
    providers.mkdir()
    # Each shard would take 1/3 of this by default; with --limits-url they share all of it.
    (providers / "bot.toml").write_text(
        f'protocol = "openai"\nbase_url = "{base_url}"\nmodel = "fake-bot"\n'
        f'api_key_env = "{KEY_ENV}"\nrpm = {RPM}\nmax_in_flight = 8\ntimeout_s = 10\nmax_retries = 0\n'
    )
    return write_run_config(
        tmp / "run.toml",
        providers=providers,
        runs_dir=tmp / "runs",
        chatbots=["bot"],
        seeds=[1],
        max_concurrency=8,
        persona_limit=PERSONAS,
        cache=False,
        conversation={"max_turns": TURNS, "min_turns": TURNS},
        stats={"resamples": 50},
    )


@pytest.mark.slow
def test_three_shards_share_one_account_through_redis(tmp_path: Path, redis_url: str) -> None:
    server = FakeOpenAI(key=KEY, latency=0.01, rpm=RPM, burst_s=2.0)
    env = {**os.environ, KEY_ENV: KEY}
    with serve_in_thread(server):
        config = write_setup(tmp_path, server.base_url)
        procs = [
            subprocess.Popen(
                [
                    *(sys.executable, "-m", "vera", "run", "--config", str(config)),
                    *("--out", str(tmp_path / f"shard{k}"), "--shard", f"{k}/{SHARDS}"),
                    *("--limits-url", redis_url, "--quiet"),
                ],
                env=env,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for k in range(1, SHARDS + 1)
        ]
        outputs = [p.communicate(timeout=120)[0] for p in procs]
    for p, output in zip(procs, outputs, strict=True):
        assert p.returncode == 0, output
    assert server.rate_limited == 0  # not one 429
    arrivals = sorted(r.at for r in server.received)
    assert len(arrivals) == PERSONAS * TURNS // 2
    busy = arrivals[-1] - arrivals[0]
    allowed = RPM / 60 * busy + 2.0 * RPM / 60  # the refill over the busy span, plus the server's burst
    used = len(arrivals) / (RPM / 60 * busy)
    assert len(arrivals) <= allowed
    print(f"{len(arrivals)} requests in {busy:.2f} s: {used:.1%} of the limit")
    assert used >= 0.90, f"{len(arrivals)} requests in {busy:.2f} s: {used:.0%} of the limit"
    keys = [k.decode() if isinstance(k, bytes) else k for k in redis.Redis.from_url(redis_url).keys("*")]
    assert keys and all(k.startswith("vera:limits:") and KEY not in k and KEY_ENV not in k for k in keys)
    for k in range(1, SHARDS + 1):
        manifest = json.loads((tmp_path / f"shard{k}" / "manifest.json").read_text())
        [limits] = [a for a in manifest["limits"] if a["rpm"]]
        assert limits["shared"] == "redis" and limits["rpm"] == RPM and limits["share"] == f"1/{SHARDS}"
        assert limits["max_in_flight"] == 8 // SHARDS  # the in-flight cap stays per process
        calls = (tmp_path / f"shard{k}" / "calls.jsonl").read_text()
        assert '"http_429":0' in calls.replace(" ", "") and '"http_429":1' not in calls.replace(" ", "")


@pytest.mark.slow
def test_a_malformed_url_is_one_error_line_and_leaves_no_folder(tmp_path: Path) -> None:
    # redis-py parses the URL only when it connects: a port that is not a number was a
    # traceback after the run directory had been made (and left empty).
    from .test_cli import assert_one_line_error, vera

    out = tmp_path / "run"
    for url in (
        "redis://127.0.0.1:notaport/0",
        "redis://127.0.0.1:99999/0",
        "redis://[::1/0",
        "redis://h:1/db",
    ):
        assert_one_line_error(vera("run", "--out", str(out), "--limits-url", url, "--quiet"), "--limits-url")
        assert not out.exists(), url


@pytest.mark.slow
def test_redis_lost_mid_run_stops_the_run_and_fails_nothing(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A lost limiter is infrastructure, not the chatbot: the run stops as on a fatal
    # error (exit code 3, a status and a card that say why, the resume command), every
    # conversation cut short left undone for the resume, none failed.
    from vera.clients import shared_limits

    monkeypatch.setattr(shared_limits, "_OUTAGE_S", 0.5)
    monkeypatch.setenv(KEY_ENV, KEY)
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    redis_proc = start_redis(tmp_path, port)
    server = FakeOpenAI(key=KEY, latency=0.02)
    out = tmp_path / "run"
    try:
        with serve_in_thread(server):
            config = write_setup(tmp_path, server.base_url)

            def lose_redis() -> None:
                while len(server.received) < 60:  # of 144: some conversations done, some not
                    time.sleep(0.005)
                redis_proc.terminate()

            threading.Thread(target=lose_redis, daemon=True).start()
            args = ["run", "--config", str(config), "--out", str(out), "--limits-url", url, "--quiet"]
            result = CliRunner().invoke(main, args)
            assert result.exit_code == 3, result.output
            lines = result.output.strip().splitlines()
            assert (
                lines[-1].startswith("status: stopped early — Redis at ") and "stopped answering" in lines[-1]
            )
            assert any(line.startswith("to continue this run: ") for line in lines), result.output
            card = json.loads((out / "card.json").read_text())
            assert card["status"]["state"] == "stopped" and card["status"]["exit_code"] == 3
            assert json.loads((out / "manifest.json").read_text())["stopped"].startswith("Redis at ")
            statuses = [
                json.loads(line)["status"] for line in (out / "conversations.jsonl").read_text().splitlines()
            ]
            assert "failed" not in statuses and 0 < len(statuses) < PERSONAS
            assert card["counts"]["conversations_complete"] == len(statuses)
            # Redis back: the same command finishes the run, every conversation once.
            redis_proc.wait(10)
            redis_proc = start_redis(tmp_path, port)
            again = CliRunner().invoke(main, args)
            assert again.exit_code == 0, again.output
    finally:
        redis_proc.terminate()
        redis_proc.wait(10)
    ids = [json.loads(line)["id"] for line in (out / "conversations.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == PERSONAS


@pytest.mark.slow
def test_a_redis_that_wants_a_password_says_so(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "Redis does not answer (HELLO must be called with the client already
    # authenticated ...)": it did answer; it wanted the password.
    port = free_port()
    proc = start_redis(tmp_path, port, "--requirepass", "made-up-password")
    url = f"redis://127.0.0.1:{port}/0"
    out = tmp_path / "run"
    try:
        for password, says in (
            (None, "set VERA_REDIS_PASSWORD"),
            ("wrong", "refused the password in VERA_REDIS_PASSWORD"),
        ):
            if password is None:
                monkeypatch.delenv("VERA_REDIS_PASSWORD", raising=False)
            else:
                monkeypatch.setenv("VERA_REDIS_PASSWORD", password)
            result = CliRunner().invoke(main, ["run", "--out", str(out), "--limits-url", url, "--quiet"])
            assert result.exit_code == 1, result.output
            [line] = [x for x in result.output.splitlines() if x.strip()]
            assert line.startswith(f"error: --limits-url {url}: Redis ") and says in line, line
            assert "does not answer" not in line and "wrong" not in line and not out.exists()
    finally:
        proc.terminate()
        proc.wait(10)
