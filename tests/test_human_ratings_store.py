"""The run's human-ratings file: appended and fsync'd, read back in order, a cut last
line skipped with a warning (and kept aside), any other bad line a file:line error."""

from __future__ import annotations

import os
import re

import pytest

from vera.errors import DataError
from vera.records import BEST_PRACTICE, HIGH_POTENTIAL_FOR_HARM, HumanRating
from vera.store import HUMAN_RATINGS, append_human_ratings, latest_human_ratings, read_human_ratings


def rating(cid: str, rater: str = "ana", rating: str = BEST_PRACTICE, note: str = "") -> HumanRating:
    return HumanRating(
        conversation_id=cid,
        rater=rater,
        ratings={"Detects Potential Risk": rating},  # type: ignore[dict-item]
        note=note,
        rated_at="2026-12-04T06:00:00Z",
    )


def test_no_file_means_no_ratings(tmp_path):
    assert read_human_ratings(tmp_path) == []


def test_appends_read_back_in_file_order_and_are_fsynced(tmp_path, monkeypatch):
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    append_human_ratings(tmp_path, [rating("c1"), rating("c2", "bo")])
    append_human_ratings(tmp_path, [rating("c1", rating=HIGH_POTENTIAL_FOR_HARM, note="missed it")])
    assert len(synced) == 2
    got = read_human_ratings(tmp_path)
    assert [(r.conversation_id, r.rater) for r in got] == [("c1", "ana"), ("c2", "bo"), ("c1", "ana")]
    assert got[2].ratings == {"Detects Potential Risk": HIGH_POTENTIAL_FOR_HARM}
    assert got[2].note == "missed it" and got[2].source == "review"


def test_the_later_rating_of_a_rater_counts_and_both_stay_in_the_file(tmp_path):
    append_human_ratings(tmp_path, [rating("c1"), rating("c2"), rating("c1", rating=HIGH_POTENTIAL_FOR_HARM)])
    every = read_human_ratings(tmp_path)
    assert len(every) == 3
    latest = latest_human_ratings(every)
    assert [(r.conversation_id, r.ratings["Detects Potential Risk"]) for r in latest] == [
        ("c2", BEST_PRACTICE),
        ("c1", HIGH_POTENTIAL_FOR_HARM),
    ]


def test_a_line_cut_mid_write_is_skipped_with_a_warning_and_kept_aside_on_append(tmp_path):
    append_human_ratings(tmp_path, [rating("c1")])
    path = tmp_path / HUMAN_RATINGS
    with open(path, "ab") as f:
        f.write(b'{"conversation_id": "c2", "rater": "an')  # the crash
    warnings: list[str] = []
    got = read_human_ratings(tmp_path, on_warning=warnings.append)
    assert [r.conversation_id for r in got] == ["c1"]
    assert len(warnings) == 1 and f"{path}:2" in warnings[0] and "cut" in warnings[0]
    append_human_ratings(tmp_path, [rating("c3")])
    assert [r.conversation_id for r in read_human_ratings(tmp_path, on_warning=warnings.append)] == [
        "c1",
        "c3",
    ]
    assert len(warnings) == 1  # the file reads cleanly again
    assert b'"rater": "an' in (tmp_path / (HUMAN_RATINGS + ".torn")).read_bytes()  # nothing lost


def test_the_default_warning_goes_to_stderr(tmp_path, capsys):
    (tmp_path / HUMAN_RATINGS).write_bytes(b'{"conversation_id": "c')
    assert read_human_ratings(tmp_path) == []
    assert "cut mid-write" in capsys.readouterr().err


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path):
    append_human_ratings(tmp_path, [rating("c1")])
    path = tmp_path / HUMAN_RATINGS
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    append_human_ratings(tmp_path, [rating("c2")])
    assert [r.conversation_id for r in read_human_ratings(tmp_path)] == ["c1", "c2"]


@pytest.mark.parametrize(
    "bad",
    [b"not json", b'{"conversation_id": "c9", "rater": "x", "ratings": {"D": "Great"}}'],
)
def test_a_bad_earlier_line_is_an_error_naming_file_and_line(tmp_path, bad):
    append_human_ratings(tmp_path, [rating("c1")])
    path = tmp_path / HUMAN_RATINGS
    with open(path, "ab") as f:
        f.write(bad + b"\n")
    append_human_ratings(tmp_path, [rating("c2")])
    with pytest.raises(DataError) as err:
        read_human_ratings(tmp_path)
    assert str(err.value).startswith(f"{path}:2: ")
    assert "\n" not in str(err.value)


def _append_many(run_dir: str, rater: str, count: int) -> None:
    from pathlib import Path

    for i in range(count):
        append_human_ratings(Path(run_dir), [rating(f"c{i}", rater, note="x" * (7 * i))])


def test_two_raters_saving_at_once_lose_no_rating(tmp_path):
    # Two `vera review` servers (two raters side by side, as docs/viewer.md invites)
    # append to one file. Unserialised, one's check for a torn last line read the
    # other's line half written and moved it to human_ratings.jsonl.torn: a rating
    # the page had called saved was gone from the run (5 of 800 in a trial).
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_append_many, args=(str(tmp_path), who, 300)) for who in ("ana", "bo")]
    for w in writers:
        w.start()
    for w in writers:
        w.join(120)
        assert w.exitcode == 0
    saved = read_human_ratings(tmp_path, on_warning=pytest.fail)
    assert sorted((r.rater, r.conversation_id) for r in saved) == sorted(
        (who, f"c{i}") for who in ("ana", "bo") for i in range(300)
    )
    assert not (tmp_path / (HUMAN_RATINGS + ".torn")).exists()


@pytest.mark.parametrize("how", ["through-a-file", "a-folder"])
def test_a_ratings_file_that_cannot_be_read_is_one_line(tmp_path, how):
    """A human_ratings.jsonl that is a folder, or a link through a file, was a traceback
    from the check for a torn last line, before the reader's own "cannot read"."""
    run = tmp_path / "run"
    run.mkdir()
    if how == "a-folder":
        (run / HUMAN_RATINGS).mkdir()
    else:
        (tmp_path / "a-file").write_text("")
        (run / HUMAN_RATINGS).symlink_to(tmp_path / "a-file" / HUMAN_RATINGS)
    with pytest.raises(DataError, match=rf"^{re.escape(str(run / HUMAN_RATINGS))}: cannot read: "):
        read_human_ratings(run)
