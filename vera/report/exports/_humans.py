"""`vera export --humans`: the run's human ratings (`vera review`, `vera ratings import`)
as one table, one row per rater × conversation × dimension, with the judge's rating of
the same conversation and dimension beside the human's.

`vera export` wrote the judge's ratings only; a clinician's stayed in
human_ratings.jsonl, one JSON line per save, which a spreadsheet cannot open and which
keeps every change of mind. This table holds what counts: each rater's latest rating of
each conversation (the rule the card's calibration and `vera agreement` use, so its rows
are the ones behind the calibrated score and the confusion matrix). Its ids are the
judge export's (`run_id`, `conversation_id`, `dimension`), so the two tables join.

Nothing in the file is left out silently: a rating of a conversation that is not in the
run, or not judged, is a row with an empty judge rating and a `status` saying which; a
rating made on another transcript than the run's says so in `transcript`.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import polars as pl

from vera.errors import UserError
from vera.report.exports._results import NOT_JUDGED, RATED, _write_whole, spreadsheet_safe
from vera.report.shared._numbers import num
from vera.report.shared._scoring import write_parquet
from vera.store import (
    HUMAN_RATINGS,
    RunRecords,
    latest_human_ratings,
    open_run,
    read_human_ratings,
    run_fingerprints,
)

HUMAN_COLUMNS: dict[str, Any] = {
    "run_id": pl.Utf8,
    "conversation_id": pl.Utf8,
    "chatbot": pl.Utf8,
    "user_agent": pl.Utf8,
    "persona": pl.Utf8,
    "risk": pl.Utf8,
    "seed": pl.Int64,
    "replicate": pl.Int64,
    "rater": pl.Utf8,
    "dimension": pl.Utf8,
    "human_rating": pl.Utf8,
    # One complete judgement's rating; with several judges or instances, each one's in
    # judge and instance order joined with " | ", as `vera export --wide` joins them.
    "judge_rating": pl.Utf8,
    "judgements": pl.Int64,
    "realism": pl.Int64,
    "note": pl.Utf8,
    "rated_at": pl.Utf8,
    "rating_source": pl.Utf8,
    "transcript": pl.Utf8,
    "status": pl.Utf8,
}
NOT_IN_RUN = "not in this run"
NOT_RATED_BY_JUDGE = "dimension not rated by the judge"
# `transcript`: whether the rating was made on the transcript this run holds.
SAME = "same"
OTHER = "other"
UNRECORDED = "not recorded"


@dataclass
class HumanExportSummary:
    rows: int = 0
    raters: int = 0
    conversations: int = 0
    without_judge: int = 0  # rows with no judge rating beside them

    def describe(self, target: str) -> str:
        return (
            f"wrote {num(self.rows)} rows to {target}: the human ratings of {num(self.conversations)} "
            f"conversation(s) by {num(self.raters)} rater(s), each rater's latest, with the judge's "
            "rating beside each"
            + (f"; {num(self.without_judge)} rows without one (see status)" if self.without_judge else "")
        )


def human_rows(records: RunRecords) -> list[dict[str, Any]]:
    """Every row of the table, grouped by rater (in the order each first appears among
    the latest ratings), each rater's conversations in the order of their latest
    rating, dimensions as rated."""
    latest = latest_human_ratings(read_human_ratings(records.root))
    order = {rater: i for i, rater in reversed(list(enumerate(r.rater for r in latest)))}
    latest.sort(key=lambda r: order[r.rater])
    fingerprints = run_fingerprints(records, (r.conversation_id for r in latest))
    seeds = records.manifest.seeds
    judged: dict[str, tuple[int, dict[str, list[str]]]] = {}
    rows: list[dict[str, Any]] = []
    for rating in latest:
        cid = rating.conversation_id
        found = records.conversations.get(cid)
        head = found[0] if found is not None else None
        if head is not None and cid not in judged:
            judged[cid] = _judge_ratings(records, cid)
        n, by_dimension = judged.get(cid, (0, {}))
        ours = fingerprints.get(cid)
        transcript = (
            UNRECORDED
            if rating.transcript_sha256 is None or ours is None
            else SAME
            if rating.transcript_sha256 == ours
            else OTHER
        )
        for dimension, value in rating.ratings.items():
            judge = by_dimension.get(dimension)
            status = (
                NOT_IN_RUN
                if head is None
                else NOT_JUDGED
                if not n
                else NOT_RATED_BY_JUDGE
                if not judge
                else RATED
            )
            rows.append(
                {
                    "run_id": records.manifest.run_id,
                    "conversation_id": cid,
                    "chatbot": head.chatbot if head else None,
                    "user_agent": head.user_agent if head else None,
                    "persona": head.persona if head else None,
                    "risk": head.risk if head else None,
                    "seed": seeds[head.replicate] if head and 0 <= head.replicate < len(seeds) else None,
                    "replicate": head.replicate if head else None,
                    "rater": rating.rater,
                    "dimension": dimension,
                    "human_rating": value,
                    "judge_rating": " | ".join(judge) if judge else None,
                    "judgements": n,
                    "realism": rating.realism,
                    "note": rating.note or None,
                    "rated_at": rating.rated_at,
                    "rating_source": rating.source,
                    "transcript": transcript,
                    "status": status,
                }
            )
    return rows


def _judge_ratings(records: RunRecords, cid: str) -> tuple[int, dict[str, list[str]]]:
    """How many complete judgements the conversation has, and their ratings by dimension
    in judge and instance order."""
    done = sorted(
        (h for h in records.judgements_of(cid) if h.status == "complete"), key=lambda h: (h.judge, h.instance)
    )
    by_dimension: dict[str, list[str]] = {}
    for h in done:
        for r in records.read_judgement(h.id).ratings:
            by_dimension.setdefault(r.dimension, []).append(r.rating)
    return len(done), by_dimension


def export_humans(run_dir: str | Path, *, fmt: str, output: str | Path) -> HumanExportSummary:
    """Write the human-ratings table as csv or parquet to `output` ("-" = stdout, csv
    only); whole or not at all. A run without human ratings is a UserError."""
    records = open_run(run_dir)
    rows = human_rows(records)
    if not rows:
        raise UserError(
            f"{Path(run_dir) / HUMAN_RATINGS}: no human ratings to export "
            "(`vera review` or `vera ratings import` adds them)"
        )
    summary = HumanExportSummary(
        rows=len(rows),
        raters=len({r["rater"] for r in rows}),
        conversations=len({r["conversation_id"] for r in rows}),
        without_judge=sum(r["status"] != RATED for r in rows),
    )
    if fmt == "csv":
        if str(output) == "-":
            _write_csv(rows, sys.stdout)
        else:
            _write_whole(Path(output), lambda f: _write_csv(rows, f))
    elif fmt == "parquet":
        if str(output) == "-":
            raise UserError("--format parquet needs a file (-o FILE), not stdout")
        write_parquet(pl.DataFrame(rows, schema=HUMAN_COLUMNS, orient="row"), Path(output))
    else:
        raise UserError(f"--format {fmt}: expected csv or parquet")
    return summary


def _write_csv(rows: list[dict[str, Any]], f: IO[str]) -> None:
    writer = csv.writer(f, lineterminator="\n")
    writer.writerow(HUMAN_COLUMNS)
    for row in rows:
        writer.writerow(
            "" if v is None else spreadsheet_safe(v) if isinstance(v, str) else v for v in row.values()
        )
