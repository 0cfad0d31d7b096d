"""One writer at a time per run directory.

Two processes appending to one run (a `vera run --resume` started while the run is still
going, in another terminal or by a CI retry; a `vera merge` mending a shard that is
still being written) interleave their records: both ask the same jobs and pay twice,
and the call bodies' log of one lands in the middle of the other's, which then reads as
damaged. A writer of a run directory (`RunStore`, and the repair of a torn last line
that readers ask for) holds an exclusive `flock` on the directory itself, taken without
waiting: a second writer is refused in one line before it reads or writes anything.

- The lock is on the directory, so no file is added to the run, and the kernel lets
  it go when the process ends, however it ends (kill -9 included): nothing stale to
  clean up.
- Within one process the lock is taken once per directory and counted, so a command
  that opens a run it already writes (the card scored at the end of `vera run`) is
  not refused by itself.
- A filesystem without `flock` (some network mounts) is written as before, unlocked.
- Readers (`vera view`, `export`, `compare`) take no lock: reading a live run is
  supported. One that must tell a live writer from a killed one (a `session.json` left
  in the run: vera.store._marks) asks `held_elsewhere`, which looks without waiting and
  lets go at once; a writer starting in that instant waits the look out (`lock_run`
  tries again for a moment before it refuses), so a reader never refuses a writer.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from vera.errors import UserError


class RunInUse(UserError):
    """Another process is writing the run directory."""


# (device, inode) of a locked directory -> [its descriptor, how many holders here].
_HELD: dict[tuple[int, int], list[int]] = {}

# How long a writer tries again for a lock that is held: a reader's look
# (`held_elsewhere`) holds it for microseconds; a writer holds it for its whole session.
_CONTENDED_S = 0.25


def lock_run(root: Path) -> tuple[int, int] | None:
    """Take the run directory `root` for writing; the key to give `unlock_run` (None:
    not locked, where the directory or the filesystem cannot be locked). Raises
    `RunInUse` when another process holds it."""
    try:
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None  # the writer's own first write says why, with the path
    st = os.fstat(fd)
    key = (st.st_dev, st.st_ino)
    held = _HELD.get(key)
    if held is not None:
        os.close(fd)
        held[1] += 1
        return key
    try:
        _take(fd, fcntl.LOCK_EX)
    except BlockingIOError:
        os.close(fd)
        raise RunInUse(
            f"{root}: another vera process is writing this run (a run, resume, judge, score or "
            "merge of it is still going); wait for it to end, or stop it, then try again"
        ) from None
    except OSError:
        os.close(fd)
        return None  # no flock on this filesystem: written unlocked, as before
    _HELD[key] = [fd, 1]
    return key


def _take(fd: int, kind: int) -> None:
    """flock `fd` without waiting on a writer: tried again for `_CONTENDED_S`, as a
    reader's look lets go at once; BlockingIOError when it is still held then."""
    end = time.monotonic() + _CONTENDED_S
    while True:
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= end:
                raise
            time.sleep(0.01)


def held_elsewhere(root: Path) -> bool | None:
    """Whether another process writes the run directory `root` now (holds its lock);
    None where that cannot be told (no such directory, a filesystem without `flock`).
    The look takes a shared lock without waiting and lets it go at once: a live
    writer's lock is never taken nor waited for."""
    try:
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) in _HELD:
            return False  # this process writes it: no other can
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def unlock_run(key: tuple[int, int] | None) -> None:
    """Let go of what `lock_run` took (the last holder in the process frees it)."""
    held = _HELD.get(key) if key is not None else None
    if held is None:
        return
    held[1] -= 1
    if held[1] == 0:
        del _HELD[key]  # type: ignore[arg-type]
        os.close(held[0])


@contextlib.contextmanager
def run_locked(root: Path) -> Iterator[None]:
    """`root` held for writing while the block runs."""
    key = lock_run(root)
    try:
        yield
    finally:
        unlock_run(key)
