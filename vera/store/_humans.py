"""The run's human ratings: `RUN_DIR/human_ratings.jsonl`, one `HumanRating` per line.

The only file of a run directory that people write to after the sweep (through
`vera review` and `vera ratings import`), so it is built to lose nothing: every append
is flushed and fsync'd before it returns (the review page says "saved" only then), lines
are never rewritten, and a rater who rates a conversation again adds a line (the later
one counts, `latest_human_ratings`). A last line cut by a crash mid-write is skipped with
a warning by the reader and moved aside (to `human_ratings.jsonl.torn`) by the next
append, so the appended line starts clean; any other line that does not read is an error
naming its file and line, because a silently dropped rating would bias the calibration.
"""

from __future__ import annotations

import os
import sys
import tempfile
from codecs import BOM_UTF8
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import msgspec

from vera.errors import DataError, StorageError, storage_error
from vera.files import refuse_stray_bom, torn_tail
from vera.inputs import run_strings, tr, use_strings
from vera.records import HumanRating, transcript_sha256
from vera.store._index import RunRecords

HUMAN_RATINGS = "human_ratings.jsonl"
TORN_SUFFIX = ".torn"

if sys.platform != "win32":
    import fcntl

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(HumanRating)


def _print_warning(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def append_human_ratings(run_dir: Path, ratings: Sequence[HumanRating]) -> None:
    """Append ratings to the run's human-ratings file; they are on disk (flushed and
    fsync'd) when this returns. A torn last line left by a crash is first moved to
    `human_ratings.jsonl.torn`, so nothing written is lost and the new lines read."""
    path = Path(run_dir) / HUMAN_RATINGS
    data = b"".join(_encoder.encode(r) + b"\n" for r in ratings)
    try:
        with _appending(path) as f:
            _mend_tail(path)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise storage_error(path, "the human ratings", exc) from None


def check_appendable(run_dir: Path, consequence: str) -> None:
    """Raise a `StorageError` naming the run's human-ratings file, its reason and
    `consequence` (what the user would lose), when ratings cannot be appended to it.

    Checked before the work that ends in an append (a review's first save can come
    minutes after the rater starts; an import reads and checks its whole file first),
    with the mechanisms the append meets, so that root, for whom permission bits do not
    count, is stopped by what would really stop the append (a read-only file system, a
    path through a file) and by nothing else. An existing file is opened for appending,
    as the append opens it, and closed unwritten. When there is none, a file of a name of
    our own is created beside it and removed: creating the ratings file itself would
    leave an empty one behind a review that saves nothing, or an import that fails."""
    path = Path(run_dir) / HUMAN_RATINGS
    try:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        except FileNotFoundError:
            fd, probe = tempfile.mkstemp(dir=run_dir, prefix=f".{HUMAN_RATINGS}.", suffix=".probe")
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise StorageError(f"{storage_error(path, 'the human ratings', exc)}; {consequence}") from None


@contextmanager
def _appending(path: Path) -> Iterator[BinaryIO]:
    """The file open for appending, held under an exclusive lock until closed. Several
    `vera review` servers (raters side by side) and `vera ratings import` may append at
    once; unserialised, one's check for a torn last line read another's line half
    written and moved it aside, losing a rating its page had called saved. (Windows has
    no flock: there appends stay unserialised.)"""
    with open(path, "ab") as f:
        if sys.platform != "win32":
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        yield f


def _mend_tail(path: Path) -> None:
    torn = torn_tail(path, HumanRating)
    if torn is None:
        return
    start, whole = torn
    if whole:  # a complete record that only lacks its newline
        with open(path, "ab") as f:
            f.write(b"\n")
        return
    with open(path, "r+b") as f:
        f.seek(start)
        fragment = f.read()
        with open(path.with_name(path.name + TORN_SUFFIX), "ab") as aside:
            aside.write(fragment + b"\n")
            aside.flush()
            os.fsync(aside.fileno())
        f.truncate(start)
        f.flush()
        os.fsync(f.fileno())


def read_human_ratings(
    run_dir: Path, *, on_warning: Callable[[str], None] | None = None
) -> list[HumanRating]:
    """Every rating in the run's human-ratings file, in file order (none when there is
    no file). A last line cut mid-write is skipped with a warning (to stderr, or to
    `on_warning`); any other line that does not read raises `DataError("file:line")`."""
    return [r for _, r in read_human_ratings_numbered(run_dir, on_warning=on_warning)]


def check_human_dimensions(
    run_dir: Path, ratings: Sequence[tuple[int, HumanRating]], dimensions: set[str]
) -> None:
    """Raise `DataError("file:line")` for the first rating of a dimension the run does
    not have (a misspelt or foreign dimension would otherwise drop out silently)."""
    path = Path(run_dir) / HUMAN_RATINGS
    for number, rating in ratings:
        unknown = sorted(set(rating.ratings) - dimensions)
        if unknown:
            raise DataError(
                f"{path}:{number}",
                f"dimension {unknown[0]!r} is not one of this run's ({', '.join(sorted(dimensions))})",
            )


OTHER_TRANSCRIPTS_OPTION = "--allow-other-transcripts"


def run_fingerprints(records: RunRecords, ids: Iterable[str]) -> dict[str, str]:
    """`transcript_sha256` of each of the run's conversations among `ids` (one not in
    the run has none), read from the run's records as stored."""
    return {
        cid: transcript_sha256(records.read_conversation(cid).turns)
        for cid in dict.fromkeys(ids)
        if cid in records.conversations
    }


def transcript_mismatch(rating: HumanRating, fingerprints: Mapping[str, str]) -> str | None:
    """This run's fingerprint of the rated conversation when the rating names another
    transcript (None: the same one, no fingerprint to check, or not in the run)."""
    ours = fingerprints.get(rating.conversation_id)
    if rating.transcript_sha256 is None or ours is None or rating.transcript_sha256 == ours:
        return None
    return ours


def other_transcript_problem(conversation_id: str, rater: str, theirs: str, ours: str, hint: str) -> str:
    """The one line that refuses a rating made on another transcript than the run's."""
    return (
        f"conversation {conversation_id!r} by {rater!r}: rated a different transcript than this "
        f"run's (sha256 {theirs[:12]}, the run's {ours[:12]}: ratings from another run of the "
        f"same config?); {hint}"
    )


def check_transcripts(
    path: Path,
    ratings: Sequence[tuple[int, HumanRating]],
    records: RunRecords,
    *,
    allow_other: bool = False,
    hint: str = "",
    on_note: Callable[[str], None] | None = None,
) -> None:
    """Check each rating against the transcript of the run's conversation it names.

    A rating whose `transcript_sha256` is not the run's transcript's is a
    `DataError("file:line")` (it judges a conversation no human read in this run),
    unless it was imported knowingly (`other_transcript`) or `allow_other`. Ratings
    without a fingerprint (saved before vera recorded one) pass, with one note that
    they cannot be checked; so do accepted mismatches, with one note."""
    note = on_note or _print_warning
    fingerprints = run_fingerprints(records, (r.conversation_id for _, r in ratings))
    hint = hint or (
        f"move {path.name} aside and add its ratings with `vera ratings import`, which refuses "
        f"them unless {OTHER_TRANSCRIPTS_OPTION} says you know"
    )
    unchecked = accepted = 0
    for number, rating in ratings:
        if rating.conversation_id not in fingerprints:
            continue  # not in the run: the callers say so (or refuse) themselves
        if rating.transcript_sha256 is None:
            unchecked += 1
            continue
        ours = transcript_mismatch(rating, fingerprints)
        if ours is None:
            continue
        if rating.other_transcript or allow_other:
            accepted += 1
            continue
        theirs = rating.transcript_sha256
        raise DataError(
            f"{path}:{number}",
            other_transcript_problem(rating.conversation_id, rating.rater, theirs, ours, hint),
        )
    # In the run's language, as the rest of what a command prints about the run.
    with use_strings(run_strings([records.manifest])):
        if unchecked:
            note(unchecked_note(path, unchecked))
        if accepted:
            note(tr("cli.ratings_other_transcripts", path=path, n=accepted, option=OTHER_TRANSCRIPTS_OPTION))


def unchecked_note(path: Path | str, n: int) -> str:
    """The note, once per file, on ratings that carry no transcript fingerprint."""
    return tr("cli.ratings_unchecked", path=path, n=n)


def read_human_ratings_numbered(
    run_dir: Path, *, on_warning: Callable[[str], None] | None = None
) -> list[tuple[int, HumanRating]]:
    """`read_human_ratings` with each rating's line number in the file."""
    return read_human_ratings_file(Path(run_dir) / HUMAN_RATINGS, on_warning=on_warning)


def read_human_ratings_file(
    path: Path, *, on_warning: Callable[[str], None] | None = None
) -> list[tuple[int, HumanRating]]:
    """The numbered ratings of a human-ratings file anywhere (a run's, or a copy of one
    brought from another machine to `vera ratings import`), read as a run's is: none when
    there is no file, a cut last line skipped with a warning, any other bad line a
    `DataError("file:line")`."""
    out: list[tuple[int, HumanRating]] = []
    number = 0
    try:
        # Inside the try: a path that cannot be read (through a file, a folder of that
        # name) fails here first, and was a traceback.
        torn = torn_tail(path, HumanRating)
        torn_at = torn[0] if torn is not None and not torn[1] else None
        for ref, line in _numbered(path):
            number, (place, text) = ref, line
            try:
                out.append((number, _decoder.decode(text)))
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                if place == torn_at:
                    (on_warning or _print_warning)(
                        f"warning: {path}:{number}: the last line was cut mid-write and is skipped"
                    )
                    continue
                raise DataError(f"{path}:{number}", f"not a human rating: {exc}") from None
    except OSError as exc:
        raise DataError(str(path), f"cannot read: {exc.strerror or exc}") from None
    return out


def _numbered(path: Path) -> list[tuple[int, tuple[int, bytes]]]:
    """(line number, (byte offset, text)) of every non-empty line. A byte-order mark
    at the very start (a file saved by an editor that writes one) is not part of the
    first line; one anywhere else is a `DataError` naming its line (two files joined)."""
    out: list[tuple[int, tuple[int, bytes]]] = []
    if not path.exists():
        return out
    with open(path, "rb") as f:
        data = f.read()
    refuse_stray_bom(data, path)
    offset = 0
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        text = raw.rstrip(b"\r\n").removeprefix(BOM_UTF8 if number == 1 else b"")
        if text.strip():
            out.append((number, (offset, text)))
        offset += len(raw)
    return out


def latest_human_ratings(ratings: Sequence[HumanRating]) -> list[HumanRating]:
    """One rating per (rater, conversation): the last one in file order, which is the
    rater's latest word (earlier ones stay in the file, as the record of a change)."""
    latest: dict[tuple[str, str], HumanRating] = {}
    for r in ratings:
        latest.pop((r.rater, r.conversation_id), None)  # keep the order of the latest
        latest[(r.rater, r.conversation_id)] = r
    return list(latest.values())
