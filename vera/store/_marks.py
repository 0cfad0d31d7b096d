"""The mark of a session that writes a run and makes calls (`session.json`), and what a
reader makes of one it finds.

A session writes its mark before its first call and removes it when it ends, however it
ends short of being killed outright (vera.app._killed, which bounds a killed session's
calls in flight when the run is resumed). So a mark in a run means its session did not
end: it was killed, or it is still running. Until a resume finds it, every record of the
run reads as if it held every call made, and it does not: the calls in flight at the kill
were sent and may be billed. A reader says so (`unfinished`), telling the two apart by
the run's lock (vera.store._lock: a live writer holds it), without taking it from one.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Literal

import msgspec

from vera.records import OpenSession, UnfinishedSession
from vera.store._lock import held_elsewhere
from vera.store._writer import atomic_write

SESSION_FILE = "session.json"

# The run directories whose mark this process wrote and has not removed: a mark of its
# own is a session still running here (the card a run scores at its end), not one to
# warn of.
_OURS: set[Path] = set()


def _key(run_dir: Path) -> Path:
    with contextlib.suppress(OSError):
        return run_dir.resolve()
    return run_dir.absolute()


def mark_open(run_dir: Path, session: OpenSession) -> None:
    """Say that a session is running (before its first call)."""
    atomic_write(run_dir / SESSION_FILE, msgspec.json.encode(session) + b"\n", what="the open session's mark")
    _OURS.add(_key(run_dir))


def mark_closed(run_dir: Path) -> None:
    """The session ended (not killed): nothing to bound."""
    _OURS.discard(_key(run_dir))
    (run_dir / SESSION_FILE).unlink(missing_ok=True)


def left_open(run_dir: Path) -> OpenSession | None:
    """The mark of a session that never closed. A mark that does not read (torn by the
    kill itself, which the atomic write makes unlikely) is none: there is nothing to
    bound it with."""
    path = run_dir / SESSION_FILE
    with contextlib.suppress(OSError, msgspec.DecodeError, msgspec.ValidationError):
        return msgspec.json.decode(path.read_bytes(), type=OpenSession)
    return None


def unfinished(run_dir: str | Path) -> UnfinishedSession | None:
    """The session of `run_dir` that did not end, as a reader finds it now; None when
    every session ended, when the mark is this process's own, and when the session
    could have had no call in flight (offline stand-ins send nothing, as the resume's
    bound says)."""
    root = Path(run_dir)
    if _key(root) in _OURS:
        return None
    mark = left_open(root)
    if mark is None or mark.max_in_flight == 0:
        return None
    elsewhere = held_elsewhere(root)
    state: Literal["killed", "running", "unknown"] = (
        "unknown" if elsewhere is None else "running" if elsewhere else "killed"
    )
    return UnfinishedSession(started_at=mark.started_at, command=mark.command, state=state)
