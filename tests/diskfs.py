"""Real read-only folders and full disks for tests, without touching the machine's mounts.

As root, `chmod -w` does not stop writes, so a test that wants a read-only run folder
bind-mounts it read-only, and a test that wants a full disk mounts a small tmpfs. Both
happen inside a private mount namespace (`unshare -m`; `unshare -rm` for a user without
root), so the mounts exist only for the shell script the test runs and vanish with it:
nothing is left mounted if a test fails. Where namespaces are not permitted, the tests
that need them skip.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .conftest import ROOT


@functools.cache
def _unshare() -> list[str] | None:
    """The unshare command that gives a private mount namespace here, or None."""
    if shutil.which("unshare") is None:
        return None
    base = ["unshare", "-m", "--propagation", "private"] if os.geteuid() == 0 else ["unshare", "-rm"]
    with tempfile.TemporaryDirectory() as d:
        probe = subprocess.run(
            [*base, "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {shlex.quote(d)}"],
            capture_output=True,
            timeout=30,
        )
    return base if probe.returncode == 0 else None


needs_mounts = pytest.mark.skipif(
    _unshare() is None, reason="cannot make a private mount namespace here (unshare -m not permitted)"
)


def vera_sh() -> str:
    """The vera entry point as a shell word (this interpreter, `-m vera`)."""
    return f"{shlex.quote(sys.executable)} -m vera"


def in_private_mounts(script: str, *, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run a `sh -e`-less script in its own mount namespace; `$VERA` runs vera."""
    base = _unshare()
    assert base is not None
    env = {**os.environ, "VERA": vera_sh()}
    return subprocess.run(
        [*base, "sh", "-c", script], capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout
    )


def read_only(path: Path) -> str:
    """Shell lines that make `path` read-only for the rest of the script."""
    p = shlex.quote(str(path))
    return f"mount --bind {p} {p} && mount -o remount,bind,ro {p}"


def small_disk(path: Path, size: str) -> str:
    """Shell line that mounts a tmpfs of `size` (e.g. "2m") at `path`."""
    return f"mount -t tmpfs -o size={size} tmpfs {shlex.quote(str(path))}"


def fill(path: Path, leave_kib: int = 0) -> str:
    """Shell lines that fill the disk under `path`, leaving about `leave_kib` KiB free
    (a filler file `path/filler` that `rm` frees)."""
    filler = shlex.quote(str(path / "filler"))
    lines = [f"dd if=/dev/zero of={filler} bs=4k 2>/dev/null"]
    if leave_kib:
        lines.append(f"truncate -s -{leave_kib}K {filler}")
    return "; ".join(lines)
