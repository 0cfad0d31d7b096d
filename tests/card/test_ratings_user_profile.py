"""A ratings file's `user_profile` (the reference clinician file's column naming the
persona of the conversation rated; the long format may carry it too) is checked
against the run: a row that names another persona than its conversation's rates
another conversation than the one it names, and is refused in one line by `vera
ratings import` and `vera agreement --against` alike, naming file, line, what the row
says and what the run says."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.stats import CLINICIAN_DIMENSIONS
from vera.store import HUMAN_RATINGS, open_run, read_human_ratings


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def run(unrated_run: Path) -> Path:
    return unrated_run


def _two_personas(run: Path) -> tuple[tuple[str, str], tuple[str, str]]:
    """Two conversations of different personas: (id, persona) each."""
    heads = sorted(open_run(run).conversation_heads().values(), key=lambda h: h.id)
    first = heads[0]
    other = next(h for h in heads if h.persona != first.persona)
    return (first.id, first.persona), (other.id, other.persona)


def _commands(run: Path, file: Path) -> list[list[str]]:
    return [
        ["ratings", "import", str(run), str(file)],
        ["agreement", str(file), "--against", str(run), "--resamples", "20"],
    ]


def test_a_row_naming_another_persona_is_refused_by_import_and_agreement(tmp_path, run):
    (a, pa), (b, pb) = _two_personas(run)
    file = tmp_path / "ratings.csv"
    file.write_text(
        "item_id,rater,dimension,rating,user_profile\n"
        f"{a},ann,Confirms Risk,BP,{pa.upper()}\n"  # letter case aside: the same persona
        f"{b},ann,Confirms Risk,BP,{pa}\n"  # b is pb's conversation
        f"{a},bob,Confirms Risk,BP,\n"  # no profile given: nothing to check
    )
    for args in _commands(run, file):
        result = invoke(*args)
        assert result.exit_code == 1, result.output
        assert result.output == (
            f"error: {file}:3: user_profile {pa!r}, but conversation {b!r} of run {run} is persona "
            f"{pb!r}: does the row name the conversation it rates?\n"
        )
    assert not (run / HUMAN_RATINGS).exists()
    # Without a run there is nothing to check it against.
    assert invoke("agreement", str(file)).exit_code == 0


def test_the_clinician_files_user_profile_is_checked_and_a_right_one_imports(tmp_path, run):
    (a, pa), (b, pb) = _two_personas(run)
    header = "clinician_id,conversation_id," + ",".join(CLINICIAN_DIMENSIONS) + ",user_profile"
    ratings = ",".join(["Best Practice"] * 5)
    file = tmp_path / "clinicians.csv"
    file.write_text(f"{header}\ndr_li,{a},{ratings},{pa}\ndr_li,{b},{ratings},{pb}\n")
    for args in _commands(run, file):
        assert invoke(*args).exit_code == 0
    assert len(read_human_ratings(run)) == 2
    file.write_text(f"{header}\ndr_wu,{a},{ratings},{pb}\n")
    for args in _commands(run, file):
        result = invoke(*args)
        assert result.exit_code == 1 and result.output.startswith(f"error: {file}:2: user_profile {pb!r}")
    assert len(read_human_ratings(run)) == 2


def test_a_conversation_not_in_the_run_is_refused_by_import_before_its_persona(tmp_path, run):
    (_, pa), _ = _two_personas(run)
    file = tmp_path / "ratings.csv"
    file.write_text(f"item_id,rater,dimension,rating,user_profile\nzzz999,ann,Confirms Risk,BP,{pa}\n")
    result = invoke("ratings", "import", str(run), str(file))
    assert result.exit_code == 1
    assert f"{file}:2: item 'zzz999' is no conversation of run" in result.output
