"""No output option overwrites a run's records or a command's own input (issue 27, item
1): every example of the issue's "Damage" bullet is refused in one line naming both
paths, and the run afterwards is byte for byte what it was, resumes and scores. A run
from a later manifest schema or another vera version is read, never continued."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import msgspec
import pytest

from vera import __version__
from vera.store import check_output, manifest_notes

from .conftest import ROOT
from .door import invoke, refused, snapshot
from .door import run as run  # the fixture
from .door import runs as runs  # the fixture


def still_whole(run: Path, before: dict[str, bytes]) -> None:
    """The run is as it was, and `run --resume` and `score` still work on it."""
    assert snapshot(run) == before
    resumed = invoke(["run", "--resume", str(run), "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    assert "0 new" in resumed.output
    scored = invoke(["score", str(run)])
    assert scored.exit_code == 0, scored.output
    assert "incomplete" not in scored.output


@pytest.mark.parametrize("record", ["manifest.json", "judgements.jsonl", "card.json"])
def test_export_over_a_record_of_its_run_is_refused(run, record) -> None:
    before = snapshot(run)
    target = run / record
    line = refused(invoke(["export", str(run), "-o", str(target)]), f"-o {target}", str(run))
    assert "only the run itself writes its records" in line
    still_whole(run, before)


@pytest.mark.parametrize(("flag", "record"), [("--json", "manifest.json"), ("--html", "conversations.jsonl")])
def test_compare_output_over_a_record_of_a_compared_run_is_refused(run, runs, flag, record) -> None:
    before = snapshot(run)
    target = run / record
    refused(invoke(["compare", str(runs["run2"]), str(run), flag, str(target)]), f"{flag} {target}", str(run))
    still_whole(run, before)


def test_the_improvement_report_over_the_card_is_refused(run) -> None:
    before = snapshot(run)
    target = run / "card.json"
    refused(invoke(["report", "improvements", str(run), "--out", str(target)]), f"--out {target}")
    still_whole(run, before)


def test_the_confusion_csv_over_its_own_ratings_file_is_refused(run, tmp_path) -> None:
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("item_id,rater,dimension,rating\naaaaaa,ann,Confirms Risk,BP\n")
    kept = ratings.read_bytes()
    args = ["agreement", str(ratings), "--against", str(run), "--confusion-csv", str(ratings)]
    line = refused(invoke(args), f"--confusion-csv {ratings}", "ratings file")
    assert line.count(str(ratings)) == 2  # both paths named
    assert ratings.read_bytes() == kept


def test_the_confusion_csv_over_the_runs_call_log_is_refused(run, tmp_path) -> None:
    before = snapshot(run)
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("item_id,rater,dimension,rating\naaaaaa,ann,Confirms Risk,BP\n")
    target = run / "calls.jsonl"
    refused(invoke(["agreement", str(ratings), "--against", str(run), "--confusion-csv", str(target)]))
    still_whole(run, before)


def test_a_rubric_rendered_over_itself_is_refused(tmp_path) -> None:
    rubric = tmp_path / "rubric.tsv"
    shutil.copy(ROOT / "rubrics" / "vera-si.tsv", rubric)
    kept = rubric.read_bytes()
    line = refused(invoke(["rubric", "render", str(rubric), "-o", str(rubric)]), f"-o {rubric}", "the rubric")
    assert line.count(str(rubric)) == 2
    assert rubric.read_bytes() == kept


def test_neither_a_symlink_nor_dotdot_gets_around_it(run, tmp_path) -> None:
    before = snapshot(run)
    link = tmp_path / "alias"
    link.symlink_to(run)
    refused(invoke(["export", str(run), "-o", str(link / "manifest.json")]), f"-o {link / 'manifest.json'}")
    dotted = run / "plots" / ".." / "judgements.jsonl"
    refused(invoke(["export", str(run), "-o", str(dotted)]), f"-o {dotted}")
    pointer = tmp_path / "results.csv"
    pointer.symlink_to(run / "conversations.jsonl")
    refused(invoke(["export", str(run), "-o", str(pointer)]))
    still_whole(run, before)


def test_a_record_of_a_run_the_command_was_not_given_is_refused_too(run, runs) -> None:
    before = snapshot(run)
    target = run / "calls.jsonl"
    refused(invoke(["export", str(runs["run2"]), "-o", str(target)]), f"-o {target}")
    refused(invoke(["export", str(runs["run2"]), "-o", str(run / "plots" / "scores.png")]))
    assert snapshot(run) == before


def test_an_export_beside_the_records_is_written(run) -> None:
    result = invoke(["export", str(run), "-o", str(run / "mine.csv")])
    assert result.exit_code == 0, result.output
    assert (run / "mine.csv").read_text().startswith("run_id")
    result = invoke(["export", str(run)])  # the default, results.csv in the run
    assert result.exit_code == 0, result.output


def test_the_guard_passes_stdout_and_unrelated_files(tmp_path) -> None:
    check_output(None, "-o")
    check_output("-", "-o", runs=[tmp_path])
    check_output(
        tmp_path / "out.csv", "-o", runs=[tmp_path / "elsewhere"], inputs=[(tmp_path / "in.csv", "x")]
    )


def _rewrite_manifest(run: Path, **changes: object) -> bytes:
    path = run / "manifest.json"
    data = msgspec.json.decode(path.read_bytes())
    data.update(changes)
    raw = msgspec.json.encode(data)
    path.write_bytes(raw)
    return raw


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"schema_version": 999, "provenance": {"x": 1}}, "manifest schema 999 is newer"),
        ({"vera_version": "9.9.9"}, f"made by vera 9.9.9 and this is vera {__version__}"),
    ],
)
def test_a_run_of_a_later_schema_or_another_version_is_not_continued(run, changes, fragment) -> None:
    kept = _rewrite_manifest(run, **changes)
    before = snapshot(run)
    refused(invoke(["run", "--resume", str(run), "--quiet"]), str(run / "manifest.json"), fragment)
    refused(invoke(["judge", str(run), "--quiet"]), fragment)
    assert snapshot(run) == before
    assert (run / "manifest.json").read_bytes() == kept


def test_a_later_schema_is_read_for_the_card_and_says_what_it_does_not_know(run) -> None:
    _rewrite_manifest(run, schema_version=999, provenance={"x": 1})
    notes = manifest_notes(run)
    assert len(notes) == 1 and "schema 999" in notes[0] and "provenance" in notes[0]
    shown = invoke(["card", str(run)])
    assert shown.exit_code == 0, shown.output
    assert "provenance" in shown.stderr
    exported = invoke(["export", str(run), "-o", "-"])
    assert exported.exit_code == 0


def test_a_hardlink_to_an_input_is_the_input(tmp_path) -> None:
    rubric = tmp_path / "rubric.tsv"
    shutil.copy(ROOT / "rubrics" / "vera-si.tsv", rubric)
    twin = tmp_path / "twin.tsv"
    os.link(rubric, twin)
    refused(invoke(["rubric", "render", str(rubric), "-o", str(twin)]), "the rubric")


def test_a_folder_with_a_target_manifest_is_not_a_run(run, tmp_path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "manifest.json").write_text('{"name": "a VERA-MH 2.0 target"}\n')
    result = invoke(["export", str(run), "-o", str(target / "rows.csv")])
    assert result.exit_code == 0, result.output
    refused(invoke(["export", str(run), "-o", str(run / "events.jsonl")]), "events.jsonl")
