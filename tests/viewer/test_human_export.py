"""`vera export --humans`: the run's human ratings as a table, one row per rater ×
conversation × dimension (each rater's latest), with the judge's rating beside each and
the judge export's ids, so the two join."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import polars as pl
import pytest

from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.records import HumanRating
from vera.report.exports._humans import HUMAN_COLUMNS
from vera.store import append_human_ratings, open_run
from vera.viewer.review import ReviewSession

from .conftest import MARKUP_ID, SECOND_JUDGE, invoke_vera


def read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture
def rated_run(viewer_run, tmp_path) -> Path:
    """The rich run (a conversation judged by two judges), rated as users rate it: two
    raters through the review's own save, one of them changing her mind, a rating
    imported from elsewhere with no fingerprint, and one of a conversation this run does
    not have (a file copied from another run)."""
    run = tmp_path / "run"
    shutil.copytree(viewer_run, run)
    return run


async def _review(run: Path, rater: str, n: int, rating: str, note: str = "") -> list[str]:
    review = ReviewSession.open(run, rater, size=n)
    for cid in review.order[:n]:
        body = {"conversation_id": cid, "ratings": dict.fromkeys(review.dimensions, rating), "note": note}
        await review.save(review.check_rating(body))
    return review.order[:n]


async def test_each_raters_latest_rating_is_a_row_beside_the_judges(rated_run):
    ann = await _review(rated_run, "ann", 3, HPH, note="=SUM(A1)")
    bob = await _review(rated_run, "bob", 2, BP)
    dimensions = list(ReviewSession.open(rated_run, "x", size=1).dimensions)
    # ann changes her mind on her first conversation (a file imported later: a new line),
    # cy's ratings come from elsewhere, one of a conversation this run does not have.
    append_human_ratings(
        rated_run,
        [
            HumanRating(
                conversation_id=ann[0],
                rater="ann",
                ratings=dict.fromkeys(dimensions, BP),
                source="import:x.csv",
            ),
            HumanRating(
                conversation_id=MARKUP_ID, rater="cy", ratings={dimensions[0]: BP}, source="import:x.csv"
            ),
            HumanRating(
                conversation_id="ffffffffffffffff",
                rater="cy",
                ratings={dimensions[0]: BP},
                source="import:x.csv",
            ),
        ],
    )
    result = invoke_vera("export", str(rated_run), "--humans", "-o", "-")
    assert result.exit_code == 0, result.output
    rows = read_csv(result.stdout)
    assert list(rows[0]) == list(HUMAN_COLUMNS)
    # One row per rater × conversation × dimension: ann's first conversation once.
    keys = [(r["rater"], r["conversation_id"], r["dimension"]) for r in rows]
    assert len(keys) == len(set(keys)) == 3 * 5 + 2 * 5 + 1 + 1
    assert [r["rater"] for r in rows][:15] == ["ann"] * 15  # raters in order of first rating
    mine = {(r["conversation_id"], r["dimension"]): r for r in rows if r["rater"] == "ann"}
    assert {mine[(ann[0], d)]["human_rating"] for d in dimensions} == {BP}  # her latest
    assert {mine[(ann[0], d)]["rating_source"] for d in dimensions} == {"import:x.csv"}
    assert {mine[(ann[1], d)]["human_rating"] for d in dimensions} == {HPH}
    assert mine[(ann[1], dimensions[0])]["note"] == "'=SUM(A1)"  # safe in a spreadsheet
    assert mine[(ann[1], dimensions[0])]["transcript"] == "same"
    # Beside each: the judge's rating of that conversation and dimension, from its records.
    records = open_run(rated_run)
    for r in rows:
        if r["status"] != "complete":
            continue
        judged = sorted(
            (h for h in records.judgements_of(r["conversation_id"]) if h.status == "complete"),
            key=lambda h: (h.judge, h.instance),
        )
        expected = [
            x.rating
            for h in judged
            for x in records.read_judgement(h.id).ratings
            if x.dimension == r["dimension"]
        ]
        assert r["judge_rating"] == " | ".join(expected) and r["judgements"] == str(len(judged)), r
        assert r["chatbot"] == records.conversations[r["conversation_id"]][0].chatbot
    # Two judges' ratings of the markup conversation, joined as `vera export --wide` joins them.
    (markup,) = [r for r in rows if r["conversation_id"] == MARKUP_ID]
    assert markup["judgements"] == "2" and " | " in markup["judge_rating"]
    assert any(h.judge == SECOND_JUDGE for h in records.judgements_of(MARKUP_ID))
    assert markup["transcript"] == "not recorded"
    # A conversation the run does not have is a row, said so, nothing beside it.
    (foreign,) = [r for r in rows if r["conversation_id"] == "ffffffffffffffff"]
    assert foreign["status"] == "not in this run" and foreign["judge_rating"] == foreign["chatbot"] == ""
    assert set(bob) <= {r["conversation_id"] for r in rows if r["rater"] == "bob"}


async def test_the_table_joins_the_judge_export_and_writes_parquet(rated_run, tmp_path):
    await _review(rated_run, "ann", 4, HPH)
    out = tmp_path / "humans.parquet"
    result = invoke_vera("export", str(rated_run), "--humans", "--format", "parquet", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(
        f"wrote 20 rows to {out}: the human ratings of 4 conversation(s) by 1 rater(s)"
    )
    humans = pl.read_parquet(out)
    assert humans.schema == pl.Schema(HUMAN_COLUMNS)
    assert (
        invoke_vera(
            "export", str(rated_run), "--format", "parquet", "-o", str(tmp_path / "r.parquet")
        ).exit_code
        == 0
    )
    judge = pl.read_parquet(tmp_path / "r.parquet").filter(pl.col("status") == "complete")
    joined = humans.join(judge, on=["run_id", "conversation_id", "dimension"], how="inner")
    assert joined.height == humans.height  # one judge, one instance: each row meets its rating
    assert joined.filter(pl.col("judge_rating") != pl.col("rating")).height == 0
    # The default file is beside the records, not over them.
    assert invoke_vera("export", str(rated_run), "--humans").exit_code == 0
    assert (rated_run / "human_ratings.csv").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [],
            "human_ratings.jsonl: no human ratings to export (`vera review` or `vera ratings import` adds them)",
        ),
        (["--wide"], "--humans writes a table of its own"),
        (["--calls"], "--humans writes a table of its own"),
        (["--format", "reference"], "--humans writes a table of its own"),
        (["--format", "parquet", "-o", "-"], "--format parquet needs a file"),
        (["-o", "RUN/human_ratings.jsonl"], "would overwrite a record"),
    ],
)
def test_a_mistake_is_one_line(offline_run, tmp_path, args, message):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    if args != []:
        (cid,) = list(open_run(run).conversations)[:1]
        append_human_ratings(
            run, [HumanRating(conversation_id=cid, rater="ann", ratings={"Confirms Risk": BP})]
        )
    before = (run / "human_ratings.jsonl").read_bytes() if args else None
    result = invoke_vera("export", str(run), "--humans", *[a.replace("RUN", str(run)) for a in args])
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr
    if before is not None:
        assert (run / "human_ratings.jsonl").read_bytes() == before
