"""Outputs that cannot overwrite evidence: the one check every command that writes a file
the user named (`vera export -o`, `vera compare --json/--html`, `vera report improvements
--out`, `vera agreement --confusion-csv`, `vera rubric render -o`) makes before writing.

A run directory's records (the manifest, every `.jsonl` file, the frames, the card and
its plots and pages) are written by the run itself (`vera run`, `judge`, `score`,
`card`) and by nothing else: an export written over `manifest.json` would leave a run
that cannot be resumed or scored, and the evidence behind its numbers gone. Nor may a
command write over a file it reads. Paths are compared resolved, so neither a symlink
nor `..` gets around the check; the refusal names both paths as the user typed them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from vera.errors import UserError
from vera.store._writer import MANIFEST, WHAT

# A run's own folders: plots/ (the card's figures) and conversations/ (its pages).
_RECORD_FOLDERS = {"plots": "a plot of the score card", "conversations": "a conversation page of the card"}
_FRAMES = ("ratings.parquet", "answers.parquet")
# Every JSONL file (records, calls, events, human ratings, the batch journal) and the
# response cache with SQLite's side files (and the call bodies' logs, both formats).
_RECORD_SUFFIXES = (".jsonl", ".sqlite", ".sqlite-wal", ".sqlite-shm", ".sqlite-log", ".vlog")
# `vera export --calls`'s default file, beside the records: an export (written again by
# each export, read by nothing of the run's), though it is JSON lines like a record.
CALLS_EXPORT = "calls_full.jsonl"


class OverwriteRefused(UserError):
    """An output path names a run's record or one of the command's own inputs."""


def _resolved(path: str | Path) -> Path:
    # strict=False: the output usually does not exist yet; its folder's links still resolve.
    return Path(os.path.abspath(Path(path).expanduser())).resolve()


def _is_run_dir(folder: Path) -> bool:
    """A folder holding a run's manifest (not, say, a VERA-MH 2.0 target's manifest.json)."""
    try:
        return b'"run_id"' in (folder / MANIFEST).read_bytes()
    except OSError:
        return False


def record_kind(path: Path, run_dir: Path) -> str | None:
    """What `path` (resolved) is among `run_dir`'s (resolved) records, or None when it
    is not one (an export beside the records, such as results.csv, is not)."""
    try:
        parts = path.relative_to(run_dir).parts
    except ValueError:
        return None
    if not parts:
        return "the run directory itself"
    if len(parts) > 1:
        return _RECORD_FOLDERS.get(parts[0])
    name = parts[0]
    if name == CALLS_EXPORT:
        return None
    if name in WHAT:
        return WHAT[name]
    if name == MANIFEST or name in _FRAMES or name.endswith(_RECORD_SUFFIXES) or name.startswith("card."):
        return f"a record of the run ({name})"
    return None


def _owner(resolved: Path) -> tuple[Path, int] | None:
    """The run directory `resolved` would be a record of, found on disk (a folder holding
    a manifest.json at most two levels up), for runs the command was not given; with how
    many levels up it is."""
    for up, folder in enumerate((resolved, resolved.parent, resolved.parent.parent)):
        if _is_run_dir(folder):
            return folder, up
    return None


def check_output(
    output: str | Path | None,
    flag: str,
    *,
    runs: Iterable[str | Path] = (),
    inputs: Iterable[tuple[str | Path, str]] = (),
) -> None:
    """Refuse, as one line naming both paths, to write `output` (given with `flag`) over
    a record of a run directory (one of `runs`, which the command reads, or any other
    folder that holds a run) or over one of `inputs` ((path, what it is) the command
    reads). `None` and "-" (stdout) pass."""
    if output is None or str(output) == "-":
        return
    target = _resolved(output)
    shown = f"{flag} {output}"
    for path, what in inputs:
        source = _resolved(path)
        if target == source or _same_file(target, source):
            raise OverwriteRefused(
                f"{shown} is {path}, the {what} this command reads: write the output to another file"
            )
    given = [(Path(r), _resolved(r)) for r in runs]
    for typed, root in given:
        kind = record_kind(target, root)
        if kind is not None:
            raise _refuse_record(shown, kind, typed)
    found = _owner(target)
    if found is not None and (kind := record_kind(target, found[0])) is not None:
        typed = Path(output)
        for _ in range(found[1]):
            typed = typed.parent
        raise _refuse_record(shown, kind, typed)


def _refuse_record(shown: str, kind: str, run_dir: Path) -> OverwriteRefused:
    return OverwriteRefused(
        f"{shown} would overwrite {kind} of the run in {run_dir} (only the run itself writes "
        "its records): write the output outside the run's records"
    )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
