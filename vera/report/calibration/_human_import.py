"""`vera ratings import`: human ratings made elsewhere become the human ratings of a run.

The file is read as `vera agreement` reads it (the reference clinician file or the long
format, `vera.stats.read_human_ratings`), and its items are matched to the run's
conversations as `vera agreement` matches them (`human_item_id`). Everything is checked
before anything is written, so a bad file adds nothing to the run.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec

from vera.errors import UserError
from vera.records import HumanRating
from vera.report.calibration._agreement import human_item_id
from vera.report.shared._runs import read_run
from vera.stats import read_human_ratings
from vera.store import append_human_ratings


class ImportSummary(msgspec.Struct, kw_only=True):
    """What an import added: ratings (one per rater and conversation, more when a rater
    rated a conversation again), and the rows it set aside or superseded."""

    file: str
    ratings: int
    conversations: int
    raters: int
    repeated: list[int]  # file lines that a later row of the same rater, item, dimension superseded
    skipped: list[int]  # file lines whose item is no conversation of the run (--skip-unmatched)


def import_human_ratings(
    run_dir: str | Path, ratings_file: str | Path, *, skip_unmatched: bool = False
) -> ImportSummary:
    """Append the ratings of `ratings_file` to the run's `human_ratings.jsonl`.

    Raises a `DataError` naming file:line for a malformed row or an unknown rating or
    dimension, and a `UserError` naming the first such row when items are no
    conversation of the run (unless `skip_unmatched`). A rater who rates an item twice
    (in this file) gets two ratings, the later one counting; it carries the earlier
    one's other dimensions, so a long-format correction of one dimension loses none."""
    run = read_run(run_dir)
    dimensions = run.ratings.get_column("dimension").unique(maintain_order=True).to_list()
    if not dimensions:
        raise UserError(f"{run_dir}: no complete judgements: there is nothing to rate beside")
    long = read_human_ratings(ratings_file, dimensions, repeats="keep", with_lines=True)
    if long.height == 0:
        raise UserError(f"{ratings_file}: no ratings")
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
    # Per (rater, item): the ratings being gathered, and those a repeat closed.
    open_: dict[tuple[str, str], dict[str, Any]] = {}
    made: list[tuple[int, tuple[str, str], dict[str, Any]]] = []
    first_line: dict[tuple[str, str], int] = {}
    repeated: list[int] = []
    lines_of: dict[tuple[str, str, str], int] = {}
    for r in rows:
        if r["item_id"] not in conversations:
            continue
        key = (r["rater"], r["item_id"])
        current = open_.setdefault(key, {})
        if r["dimension"] in current:
            repeated.append(lines_of[(*key, r["dimension"])])
            made.append((first_line[key], key, dict(current)))
            first_line[key] = r["line"]
        first_line.setdefault(key, r["line"])
        current[r["dimension"]] = r["rating"]
        lines_of[(*key, r["dimension"])] = r["line"]
    made += [(first_line[key], key, ratings) for key, ratings in open_.items()]
    made.sort(key=lambda m: m[0])
    out = [
        HumanRating(conversation_id=cid, rater=rater, ratings=ratings, source=source, rated_at=now)
        for _, (rater, item), ratings in made
        for cid in conversations[item]
    ]
    append_human_ratings(Path(run_dir), out)
    return ImportSummary(
        file=str(ratings_file),
        ratings=len(out),
        conversations=len({r.conversation_id for r in out}),
        raters=len({r.rater for r in out}),
        repeated=sorted(repeated),
        skipped=[r["line"] for r in unmatched],
    )
