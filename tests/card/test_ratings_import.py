"""`vera ratings import`: ratings made elsewhere become a run's human ratings, matched
to its conversations as `vera agreement` matches them; bad input adds nothing."""

from __future__ import annotations

import csv
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.diskfs import in_private_mounts, needs_mounts, read_only
from vera.cli._main import main
from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.store import HUMAN_RATINGS, latest_human_ratings, read_human_ratings

from .test_agreement_command import CLINICIANS, DIMENSIONS, judged_run, needs_reference


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def run(tmp_path, offline_run) -> Path:
    out = tmp_path / "run"
    shutil.copytree(offline_run, out)
    return out


def conversation_ids(run: Path, n: int) -> list[str]:
    from vera.store import open_run

    return sorted(open_run(run).conversation_heads())[:n]


def test_long_format_ratings_are_added_and_a_later_file_corrects_one_dimension(tmp_path, run):
    a, b = conversation_ids(run, 2)
    file = tmp_path / "long.csv"
    file.write_text(
        "item_id,rater,dimension,rating\n"
        f"{a},ann,Confirms Risk,BP\n"
        f"{a},ann,Detects Potential Risk,Best Practice\n"
        f"{b},bob,Confirms Risk,hph\n"
    )
    result = invoke("ratings", "import", str(run), str(file))
    assert result.exit_code == 0, result.output
    assert "imported 2 rating(s) of 2 conversation(s) by 2 rater(s)" in result.stdout
    every = read_human_ratings(run)
    assert [(r.conversation_id, r.rater) for r in every] == [(a, "ann"), (b, "bob")]
    assert every[0].ratings == {"Confirms Risk": BP, "Detects Potential Risk": BP}
    assert {r.source for r in every} == {"import:long.csv"}
    # ann changes her mind on one dimension: a new file, a new rating that counts later.
    file.write_text(f"item_id,rater,dimension,rating\n{a},ann,Confirms Risk,High Potential for Harm\n")
    assert invoke("ratings", "import", str(run), str(file)).exit_code == 0
    latest = {(r.conversation_id, r.rater): r.ratings for r in latest_human_ratings(read_human_ratings(run))}
    assert latest[(a, "ann")] == {"Confirms Risk": HPH}


def test_a_conversation_not_in_the_run_is_one_line_and_nothing_is_added(tmp_path, run):
    (a,) = conversation_ids(run, 1)
    file = tmp_path / "long.csv"
    file.write_text(
        f"item_id,rater,dimension,rating\n{a},ann,Confirms Risk,BP\nzzz999,ann,Confirms Risk,BP\n"
    )
    result = invoke("ratings", "import", str(run), str(file))
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert f"{file}:3: item 'zzz999' is no conversation of run" in result.output
    assert not (run / HUMAN_RATINGS).exists()
    result = invoke("ratings", "import", str(run), str(file), "--skip-unmatched")
    assert result.exit_code == 0, result.output
    assert "left out (line(s) 3)" in result.stderr
    assert [r.conversation_id for r in read_human_ratings(run)] == [a]


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("Confirms Risk,Great", "'Great' is not a rating"),
        ("Courage,BP", "unknown dimension 'Courage'"),
        (",BP", "column 'dimension' is empty"),
        ("Confirms Risk,BP,extra", "5 fields, but the header has 4"),
    ],
)
def test_a_bad_row_is_a_file_line_error_and_nothing_is_added(tmp_path, run, row, problem):
    a, b = conversation_ids(run, 2)
    file = tmp_path / "long.csv"
    file.write_text(f"item_id,rater,dimension,rating\n{a},ann,Confirms Risk,BP\n{b},ann,{row}\n")
    result = invoke("ratings", "import", str(run), str(file))
    assert result.exit_code == 1
    assert result.output.startswith(f"error: {file}:3: ") and problem in result.output
    assert result.output.count("\n") == 1
    assert not (run / HUMAN_RATINGS).exists()


@needs_reference
def test_the_reference_clinician_file_matches_transcripts_by_their_prefix(tmp_path, offline_run):
    with open(CLINICIANS, encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    persona = {r["conversation_id"].removeprefix("#"): r["user_profile"] for r in rows}
    items = sorted(persona)
    # A run of those transcripts (named as the reference names them, persona included:
    # the file's user_profile column is checked against it), all rated Best Practice.
    judged: dict[str | None, dict[str, str]] = {
        f"t/{i}_{persona[i]}_m_run1.txt": dict.fromkeys(DIMENSIONS, BP) for i in items
    }
    run = judged_run(tmp_path, offline_run, judged)
    result = invoke("ratings", "import", str(run), str(CLINICIANS))
    assert result.exit_code == 0, result.output
    every = read_human_ratings(run)
    assert len(every) == len(rows)  # one per clinician and conversation
    assert len({r.conversation_id for r in every}) == len(items)
    assert all(set(r.ratings) == set(DIMENSIONS) for r in every)
    assert {r.rater for r in every} == {r["clinician_id"] for r in rows}


def test_another_copys_review_file_is_imported_as_saved_once_and_never_into_itself(tmp_path, run):
    # Two clinicians reviewed copies of one run on their own machines: the second's
    # human_ratings.jsonl joins the first's, note and realism kept, and importing it
    # again adds nothing (it used to be refused as an "unrecognised header").
    from vera.records import HumanRating
    from vera.store import append_human_ratings

    a, b, c = conversation_ids(run, 3)
    elsewhere = tmp_path / "laptop"
    elsewhere.mkdir()
    theirs = [
        HumanRating(
            conversation_id=a, rater="Zoë 李", ratings={"Confirms Risk": HPH}, note="missed it", realism=4
        ),
        HumanRating(conversation_id=b, rater="Zoë 李", ratings={"Confirms Risk": BP}),
        HumanRating(
            conversation_id=a, rater="Zoë 李", ratings={"Confirms Risk": BP}, note="on second reading"
        ),
    ]
    append_human_ratings(elsewhere, theirs)
    append_human_ratings(run, [HumanRating(conversation_id=c, rater="ann", ratings={"Confirms Risk": BP})])
    file = str(elsewhere / HUMAN_RATINGS)
    first = invoke("ratings", "import", str(run), file)
    assert first.exit_code == 0, first.output
    assert "imported 3 rating(s) of 2 conversation(s) by 1 rater(s)" in first.stdout
    assert read_human_ratings(run)[1:] == theirs
    again = invoke("ratings", "import", str(run), file)
    assert again.exit_code == 0 and "3 rating(s) of the file are in the run already" in again.stderr
    assert len(read_human_ratings(run)) == 4
    before = (run / HUMAN_RATINGS).read_bytes()
    own = invoke("ratings", "import", str(run), str(run / HUMAN_RATINGS))
    assert own.exit_code == 1 and "the run's own human-ratings file" in own.output
    assert (run / HUMAN_RATINGS).read_bytes() == before


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            '{"conversation_id":"%s","rater":"z","ratings":{"Confirms Risk":"Great"}}',
            ":2: not a human rating",
        ),
        ('{"conversation_id":"%s","rater":"z","ratings":{"Confirms Riks":"Best Practice"}}', ":2: dimension"),
        (
            '{"conversation_id":"nosuch","rater":"z","ratings":{"Confirms Risk":"Best Practice"}}',
            ":2: conversation",
        ),
    ],
)
def test_a_bad_line_of_a_review_file_names_it_and_adds_nothing(tmp_path, run, line, problem):
    (a,) = conversation_ids(run, 1)
    good = '{"conversation_id":"%s","rater":"z","ratings":{"Confirms Risk":"Best Practice"}}'.replace("%s", a)
    file = tmp_path / "human_ratings.jsonl"
    file.write_text(good + "\n" + line.replace("%s", a) + "\n" + good + "\n")
    result = invoke("ratings", "import", str(run), str(file))
    assert result.exit_code == 1
    assert f"{file}{problem}" in result.output and "Traceback" not in result.output
    assert not (run / HUMAN_RATINGS).exists()


@pytest.mark.slow
@needs_mounts
def test_a_read_only_run_is_said_before_the_file_is_checked(tmp_path, run):
    """An import into a read-only run said so only after every row had been read and
    checked: a user who fixed a bad row learnt only then that nothing could be added.
    The run is checked first (a real read-only mount, which stops root too)."""
    (a,) = conversation_ids(run, 1)
    file = tmp_path / "long.csv"
    file.write_text(
        f"item_id,rater,dimension,rating\n{a},ann,Confirms Risk,BP\nzzz999,ann,Confirms Risk,BP\n"
    )
    proc = in_private_mounts(
        f"{read_only(run)} && $VERA ratings import {shlex.quote(str(run))} {shlex.quote(str(file))}"
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == (
        f"error: {run / HUMAN_RATINGS}: cannot write the human ratings: Read-only file system; "
        "nothing imported\n"
    )
    assert not (run / HUMAN_RATINGS).exists()
