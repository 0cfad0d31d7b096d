"""`vera ratings import`: human ratings made elsewhere become the human ratings of a run.

The file is read as `vera agreement` reads it (the reference clinician file or the long
format, `vera.stats.read_human_ratings`), and its items are matched to the run's
conversations as `vera agreement` matches them (`human_item_id`). A `human_ratings.jsonl`
(a copy of the run made elsewhere, where another rater used `vera review`) is taken line
by line as it is, note, realism and time included. Everything is checked before anything
is written, so a bad file adds nothing to the run.

Conversation ids come from the run's plan, not from its transcripts: another run of the
same config has the same ids and, with real models, other transcripts. So a rating that
carries the fingerprint of the transcript it was made on (`transcript_sha256`: every
`vera review` rating, a CSV's optional column) is checked against this run's transcript,
and a mismatch refused unless `allow_other`. A rating already in the run (the same file
imported twice) is left out and counted, never appended again; a row the file repeats
exactly is counted once, and two that disagree are refused, as `vera agreement` does.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec

from vera.errors import DataError, UserError
from vera.records import HumanRating
from vera.report.calibration._agreement import check_profiles, human_item_id, is_jsonl
from vera.report.shared._runs import read_run
from vera.stats import read_ratings_file
from vera.stats.humans import FINGERPRINT_COLUMN
from vera.store import (
    HUMAN_RATINGS,
    OTHER_TRANSCRIPTS_OPTION,
    append_human_ratings,
    check_appendable,
    open_run,
    other_transcript_problem,
    read_human_ratings_file,
    run_fingerprints,
)
from vera.store import read_human_ratings as read_run_human_ratings

_REFUSED = f"nothing imported; {OTHER_TRANSCRIPTS_OPTION} imports them if you know"


class ImportSummary(msgspec.Struct, kw_only=True):
    """What an import added: ratings (one per rater and conversation), and the rows it
    set aside."""

    file: str
    ratings: int
    conversations: int
    raters: int
    skipped: list[int]  # file lines whose item is no conversation of the run (--skip-unmatched)
    already: int = 0  # ratings the run holds already (left out)
    duplicates: list[int] = []  # CSV rows repeating an earlier row of the file exactly (counted once)
    unchecked: int = 0  # ratings imported without a transcript fingerprint (cannot be checked)
    other_transcripts: int = 0  # ratings of another transcript, imported as allowed


def import_human_ratings(
    run_dir: str | Path,
    ratings_file: str | Path,
    *,
    skip_unmatched: bool = False,
    allow_other_transcripts: bool = False,
) -> ImportSummary:
    """Append the ratings of `ratings_file` to the run's `human_ratings.jsonl`.

    Raises a `DataError` naming file:line for a malformed row or an unknown rating or
    dimension, and a `UserError` naming the first such row when items are no
    conversation of the run (unless `skip_unmatched`). A row repeated exactly is
    counted once (listed in `duplicates`); two rows of one rater for one item and
    dimension that disagree are a `DataError` naming both lines, as `vera agreement`
    refuses them (`vera.stats.read_ratings_file`). A rating whose transcript fingerprint is not this run's transcript's is a
    `DataError` naming its line unless `allow_other_transcripts` (then it is kept,
    marked `other_transcript`)."""
    run = read_run(run_dir)
    dimensions = run.ratings.get_column("dimension").unique(maintain_order=True).to_list()
    if not dimensions:
        raise UserError(f"{run_dir}: no complete judgements: there is nothing to rate beside")
    # Before the file is read and checked: a bad row fixed would otherwise lead only to
    # the news that nothing could have been added anyway.
    check_appendable(Path(run_dir), "nothing imported")
    if is_jsonl(Path(ratings_file)):
        return _import_jsonl(
            Path(run_dir), Path(ratings_file), dimensions, skip_unmatched, allow_other_transcripts
        )
    # Rows repeated exactly are counted once; two that disagree are refused (the
    # reader's rule, which `vera agreement` applies too).
    long, duplicates = read_ratings_file(
        ratings_file, dimensions, with_lines=True, with_fingerprints=True, with_profiles=True
    )
    if long.height == 0:
        raise UserError(f"{ratings_file}: no ratings")
    # A row naming another persona than its conversation's rates another conversation.
    check_profiles(Path(ratings_file), long, Path(run_dir), run.conversations)
    conversations: dict[str, list[str]] = defaultdict(list)
    for cid, head in run.conversations.items():
        conversations[human_item_id(head)].append(cid)
    rows = long.rows(named=True)
    unmatched = [r for r in rows if r["item_id"] not in conversations]
    if unmatched and not skip_unmatched:
        first = unmatched[0]
        items = len({r["item_id"] for r in unmatched})
        raise UserError(
            f"{ratings_file}:{first['line']}: item {first['item_id']!r} is no conversation of run "
            f"{run_dir} ({items} item(s) are not; items match a transcript's 6-hex file-name "
            "prefix or a conversation id); nothing imported; --skip-unmatched imports the rest"
        )
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    source = f"import:{Path(ratings_file).name}"
    records = open_run(run_dir)
    fingerprints = run_fingerprints(
        records, (cid for r in rows if r["item_id"] in conversations for cid in conversations[r["item_id"]])
    )
    # Per (rater, item): its ratings by dimension, the line of its first row, and the
    # transcript fingerprint its rows name.
    open_: dict[tuple[str, str], dict[str, Any]] = {}
    first_line: dict[tuple[str, str], int] = {}
    printed: dict[tuple[str, str], str | None] = {}
    for r in rows:
        if r["item_id"] not in conversations:
            continue
        key = (r["rater"], r["item_id"])
        theirs = r[FINGERPRINT_COLUMN]
        for cid in conversations[r["item_id"]]:
            ours = fingerprints[cid]
            if theirs is not None and theirs != ours and not allow_other_transcripts:
                raise DataError(
                    f"{ratings_file}:{r['line']}",
                    other_transcript_problem(cid, r["rater"], theirs, ours, _REFUSED),
                )
        first_line.setdefault(key, r["line"])
        open_.setdefault(key, {})[r["dimension"]] = r["rating"]
        if theirs is not None:
            printed[key] = theirs
    made = [(first_line[key], key, ratings, printed.get(key)) for key, ratings in open_.items()]
    made.sort(key=lambda m: m[0])
    every = [
        HumanRating(
            conversation_id=cid,
            rater=rater,
            ratings=ratings,
            source=source,
            rated_at=now,
            transcript_sha256=theirs,
            other_transcript=theirs is not None and theirs != fingerprints[cid],
        )
        for _, (rater, item), ratings, theirs in made
        for cid in conversations[item]
    ]
    # A rating the run holds already (its time and source aside: the same file imported
    # again) is left out, as for a human_ratings.jsonl.
    held = {_what(r) for r in read_run_human_ratings(Path(run_dir))}
    out = []
    for rating in every:
        if _what(rating) not in held:
            held.add(_what(rating))
            out.append(rating)
    if out:
        append_human_ratings(Path(run_dir), out)
    return ImportSummary(
        file=str(ratings_file),
        ratings=len(out),
        conversations=len({r.conversation_id for r in out}),
        raters=len({r.rater for r in out}),
        skipped=[r["line"] for r in unmatched],
        already=len(every) - len(out),
        duplicates=duplicates,
        unchecked=sum(r.transcript_sha256 is None for r in out),
        other_transcripts=sum(r.other_transcript for r in out),
    )


def _what(rating: HumanRating) -> bytes:
    """A rating as compared for "already there": everything but when and whence."""
    return msgspec.json.encode(msgspec.structs.replace(rating, rated_at="", source=""))


def _import_jsonl(
    run_dir: Path,
    path: Path,
    dimensions: list[str],
    skip_unmatched: bool,
    allow_other: bool,
) -> ImportSummary:
    """Append the lines of another copy's `human_ratings.jsonl` that this run does not
    hold yet, each as it was saved (rater, note, realism, source and time kept; the
    file's order kept, so a rater's later rating still counts). A line this run already
    has (the same file imported twice) is left out, so importing never doubles a rating.
    A line rating another transcript than this run's is refused unless `allow_other`
    (then it is marked `other_transcript`)."""
    own = run_dir / HUMAN_RATINGS
    if own.exists() and path.exists() and own.samefile(path):
        raise UserError(
            f"{path}: this is the run's own human-ratings file: its ratings are in the run already"
        )
    numbered = read_human_ratings_file(path)
    if not numbered:
        raise UserError(f"{path}: no ratings")
    known = set(dimensions)
    records = open_run(run_dir)
    conversations = records.conversations
    unmatched: list[int] = []
    for line, rating in numbered:
        unknown = sorted(set(rating.ratings) - known)
        if unknown:
            raise DataError(
                f"{path}:{line}",
                f"dimension {unknown[0]!r} is not one of this run's ({', '.join(sorted(known))})",
            )
        if rating.conversation_id not in conversations:
            unmatched.append(line)
    if unmatched and not skip_unmatched:
        first = dict(numbered)[unmatched[0]]
        raise UserError(
            f"{path}:{unmatched[0]}: conversation {first.conversation_id!r} is no conversation of run "
            f"{run_dir} ({len(unmatched)} line(s) are not); nothing imported; --skip-unmatched imports the rest"
        )
    skipped = set(unmatched)
    fingerprints = run_fingerprints(records, (r.conversation_id for _, r in numbered))
    checked: list[HumanRating] = []
    for line, rating in numbered:
        if line in skipped:
            continue
        ours = fingerprints[rating.conversation_id]
        theirs = rating.transcript_sha256
        other = theirs is not None and theirs != ours
        if theirs is not None and other and not allow_other:
            raise DataError(
                f"{path}:{line}",
                other_transcript_problem(rating.conversation_id, rating.rater, theirs, ours, _REFUSED),
            )
        if other != rating.other_transcript:
            rating = msgspec.structs.replace(rating, other_transcript=other)
        checked.append(rating)
    held = {msgspec.json.encode(r) for r in read_run_human_ratings(run_dir)}
    out = [r for r in checked if msgspec.json.encode(r) not in held]
    if out:
        append_human_ratings(run_dir, out)
    return ImportSummary(
        file=str(path),
        ratings=len(out),
        conversations=len({r.conversation_id for r in out}),
        raters=len({r.rater for r in out}),
        skipped=unmatched,
        already=len(numbered) - len(skipped) - len(out),
        unchecked=sum(r.transcript_sha256 is None for r in out),
        other_transcripts=sum(r.other_transcript for r in out),
    )
