"""One writer at a time per run directory (vera.store._lock): a second process that
would append to a run another is writing is refused in one line before it reads or
writes anything; the lock goes with the process however it ends."""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.store import RunStore
from vera.store._lock import lock_run, unlock_run
from vera.store._writer import repair_run

from .test_cli import assert_one_line_error, vera

HOLD = (
    "import fcntl, os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


def _run(out: Path, *args: str) -> None:
    r = CliRunner().invoke(main, ["run", "--limit-personas", "4", "--out", str(out), "--quiet", *args])
    assert r.exit_code == 0, r.output


def _holder(run: Path) -> subprocess.Popen[str]:
    """Another process writing `run`, as far as the lock can tell: it holds the lock."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _release(proc: subprocess.Popen[str], sig: int = signal.SIGKILL) -> None:
    """The holder ended the hard way (the kernel lets its lock go), its pipes closed."""
    proc.send_signal(sig)
    proc.communicate()


def _files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def test_a_resume_while_another_process_writes_the_run_is_refused_untouched(tmp_path) -> None:
    # Two writers interleaved their records: both asked the same jobs (paid twice), both
    # stopped on "the file changed since it was scanned", and the call bodies' log read
    # as damaged afterwards.
    run = tmp_path / "run"
    _run(run)
    before = _files(run)
    holder = _holder(run)
    try:
        for args in (["run", "--resume", str(run)], ["score", str(run)]):
            assert_one_line_error(
                vera(*args), f"{run}: another vera process is writing this run", "wait for it"
            )
        assert _files(run) == before
    finally:
        _release(holder)
    # The holder gone (killed: the kernel lets the lock go), the same command goes on.
    r = CliRunner().invoke(main, ["run", "--resume", str(run), "--quiet"])
    assert r.exit_code == 0, r.output


def test_a_merge_of_a_shard_still_being_written_is_refused(tmp_path) -> None:
    # The merge mends a torn last line of each shard: in a shard still being written
    # the last line is not torn, only not finished, and mending it would cut it off.
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for k, shard in enumerate(shards, 1):
        _run(shard, "--shard", f"{k}/2")
    before = _files(shards[1])
    holder = _holder(shards[1])
    try:
        out = tmp_path / "merged"
        assert_one_line_error(
            vera("merge", str(out), *map(str, shards)), f"{shards[1]}: another vera process is writing"
        )
        assert not out.exists() and _files(shards[1]) == before
    finally:
        _release(holder)
    assert vera("merge", str(tmp_path / "merged"), *map(str, shards)).returncode == 0


def test_one_process_takes_its_own_run_again(tmp_path) -> None:
    # `vera run` scores the card at its end with the store still open: the process
    # that holds the run is not refused by itself, and lets it go with its last holder.
    run = tmp_path / "run"
    run.mkdir()
    store = RunStore(run)
    repair_run(run)  # the card's reader, in the same process
    key = lock_run(run)
    unlock_run(key)
    store.close()
    store.close()  # closed twice: let go once
    holder = _holder(run)  # free again: another process takes it at once
    _release(holder)


def test_a_filesystem_without_flock_is_written_unlocked(tmp_path, monkeypatch) -> None:
    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    run = tmp_path / "run"
    _run(run)
    assert (run / "card.md").exists()


@pytest.mark.parametrize("command", ["view", "export"])
def test_readers_take_no_lock(tmp_path, command) -> None:
    # Reading a live run is supported: only writers are held to one at a time.
    run = tmp_path / "run"
    _run(run)
    holder = _holder(run)
    try:
        if command == "export":
            r = CliRunner().invoke(main, ["export", "--calls", str(run), "-o", str(tmp_path / "calls.jsonl")])
            assert r.exit_code == 0, r.output
        else:
            from vera.store import open_run

            assert len(open_run(run).conversations) == 8
    finally:
        _release(holder)
