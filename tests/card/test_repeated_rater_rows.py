"""A rater's row given twice in a ratings CSV: `vera agreement` and `vera ratings import`
read it by one rule. A row repeated exactly (copied twice) counts once and the command
says so; two rows of one rater for one conversation and dimension that disagree are
refused by both, in one line naming the file, both lines, the rater, the conversation
and the dimension. A run's own human_ratings.jsonl, where `vera review` appends a
rater's change of mind, keeps its rule: the later line counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.records import BEST_PRACTICE, SUBOPTIMAL, HumanRating
from vera.stats import CLINICIAN_DIMENSIONS
from vera.store import HUMAN_RATINGS, append_human_ratings, open_run, read_human_ratings


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def run(unrated_run: Path) -> Path:
    return unrated_run


def _ids(run: Path, n: int) -> list[str]:
    return sorted(open_run(run).conversation_heads())[:n]


def _long(path: Path, rows: list[str]) -> Path:
    path.write_text("item_id,rater,dimension,rating\n" + "".join(f"{r}\n" for r in rows))
    return path


def test_a_row_copied_twice_counts_once_in_both_commands_and_each_says_so(tmp_path, run):
    a, b = _ids(run, 2)
    rows = [
        f"{a},ann,Confirms Risk,BP",
        f"{a},bob,Confirms Risk,SUB",
        f"{b},ann,Confirms Risk,HPH",
        f"{b},bob,Confirms Risk,HPH",
    ]
    once = _long(tmp_path / "once.csv", rows)
    twice = _long(tmp_path / "twice.csv", [*rows, rows[1]])
    note = "note: 1 row(s) repeat an earlier row of the file exactly and count once (line(s) 6)"

    plain = invoke("agreement", str(once), "--json")
    copied = invoke("agreement", str(twice), "--json")
    assert copied.exit_code == 0, copied.output
    assert copied.stderr.strip() == note
    data, base = json.loads(copied.stdout), json.loads(plain.stdout)
    assert {**data, "ratings_file": ""} == {**base, "ratings_file": ""}

    against = invoke("agreement", str(twice), "--against", str(run), "--resamples", "20")
    assert against.exit_code == 0, against.output
    assert note in against.stderr

    imported = invoke("ratings", "import", str(run), str(twice))
    assert imported.exit_code == 0, imported.output
    assert note in imported.stderr
    assert len(read_human_ratings(run)) == 4


def test_a_clinician_row_copied_twice_is_one_row_not_five(tmp_path, run):
    (a,) = _ids(run, 1)
    header = "clinician_id,conversation_id," + ",".join(CLINICIAN_DIMENSIONS)
    row = f"dr_li,{a}," + ",".join(["Best Practice"] * 5)
    file = tmp_path / "clinicians.csv"
    file.write_text(f"{header}\n{row}\n{row}\n")
    for command in (("agreement", str(file)), ("ratings", "import", str(run), str(file))):
        result = invoke(*command)
        assert result.exit_code == 0, result.output
        assert "note: 1 row(s) repeat an earlier row of the file exactly and count once (line(s) 3)" in (
            result.stderr
        )


@pytest.mark.parametrize("how", ["agreement", "agreement --against", "ratings import"])
def test_two_rows_that_disagree_are_refused_by_both_commands_in_one_line(tmp_path, run, how):
    a, b = _ids(run, 2)
    file = _long(
        tmp_path / "ratings.csv",
        [
            f"{a},Dr Li,Confirms Risk,BP",
            f"{b},Dr Li,Confirms Risk,BP",
            f"{a},Dr Li,Detects Potential Risk,BP",
            f"{a},Dr Li,Confirms Risk,HPH",
        ],
    )
    args = {
        "agreement": ["agreement", str(file)],
        "agreement --against": ["agreement", str(file), "--against", str(run)],
        "ratings import": ["ratings", "import", str(run), str(file)],
    }[how]
    result = invoke(*args)
    assert result.exit_code == 1
    assert "Traceback" not in result.output and result.output.count("\n") == 1, result.output
    assert result.output.strip() == (
        f"error: {file}:5: rater 'Dr Li' rated conversation '{a}' on 'Confirms Risk' twice, "
        "differently: 'Best Practice' at line 2, 'High Potential for Harm' at line 5; keep the row "
        "that holds and delete the other"
    )
    assert not (run / HUMAN_RATINGS).exists()  # nothing half-written


def test_a_review_files_change_of_mind_is_no_repeat(tmp_path, run):
    # `vera review` appends a rater's new rating of a conversation: its own record of a
    # change, read as the latest word by agreement and import alike, never refused.
    (a,) = _ids(run, 1)
    elsewhere = tmp_path / "copy"
    elsewhere.mkdir()
    dims = ["Confirms Risk"]
    append_human_ratings(
        elsewhere,
        [
            HumanRating(conversation_id=a, rater="Dr Li", ratings=dict.fromkeys(dims, SUBOPTIMAL)),
            HumanRating(conversation_id=a, rater="Dr Li", ratings=dict.fromkeys(dims, BEST_PRACTICE)),
        ],
    )
    file = elsewhere / HUMAN_RATINGS
    assert invoke("agreement", str(file), "--json").exit_code == 0
    imported = invoke("ratings", "import", str(run), str(file))
    assert imported.exit_code == 0, imported.output
    assert [r.ratings for r in read_human_ratings(run)] == [
        {"Confirms Risk": SUBOPTIMAL},
        {"Confirms Risk": BEST_PRACTICE},
    ]
