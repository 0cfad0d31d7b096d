"""A byte-order mark anywhere but at the very start of a file people export from a
spreadsheet (two exports joined into one) is one line naming the file and line, in
every reader of ratings, rubric and persona files; one at the very start is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.errors import DataError
from vera.files import read_tsv_text
from vera.records import BEST_PRACTICE, HumanRating
from vera.store import HUMAN_RATINGS, append_human_ratings, open_run, read_human_ratings

BOM = "\ufeff"
SAYS = "a byte-order mark in the middle of the file: were two files joined? Remove it"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def run(unrated_run: Path) -> Path:
    return unrated_run


def _ids(run: Path) -> list[str]:
    return sorted(open_run(run).conversation_heads())[:2]


def _joined_csv(path: Path, a: str, b: str) -> Path:
    # Two spreadsheet exports (each starting with its mark), the second without a header.
    first = f"{BOM}rater,item_id,dimension,rating\nDr Li,{a},Confirms Risk,BP\nDr Wu,{a},Confirms Risk,BP\n"
    second = f"{BOM}Dr Li,{b},Confirms Risk,HPH\nDr Wu,{b},Confirms Risk,SUB\n"
    path.write_text(first + second, encoding="utf-8")
    return path


@pytest.mark.parametrize("how", ["agreement", "ratings import"])
def test_two_exported_csvs_joined_are_refused_naming_the_line(tmp_path, run, how):
    a, b = _ids(run)
    file = _joined_csv(tmp_path / "joined.csv", a, b)
    args = ["agreement", str(file)] if how == "agreement" else ["ratings", "import", str(run), str(file)]
    result = invoke(*args)
    assert result.exit_code == 1, result.output
    assert result.output == f"error: {file}:4: {SAYS}\n"
    assert not (run / HUMAN_RATINGS).exists()


def test_a_mark_at_the_very_start_of_a_csv_is_the_files_own(tmp_path, run):
    a, _ = _ids(run)
    file = tmp_path / "one.csv"
    file.write_text(f"{BOM}rater,item_id,dimension,rating\nDr Li,{a},Confirms Risk,BP\n", encoding="utf-8")
    result = invoke("ratings", "import", str(run), str(file))
    assert result.exit_code == 0, result.output
    assert [r.rater for r in read_human_ratings(run)] == ["Dr Li"]


def test_two_review_files_joined_are_refused_and_one_with_a_leading_mark_reads(tmp_path, run):
    copies = []
    for i, cid in enumerate(_ids(run)):
        copy = tmp_path / f"copy{i}"
        copy.mkdir()
        append_human_ratings(
            copy,
            [HumanRating(conversation_id=cid, rater="Dr Li", ratings={"Confirms Risk": BEST_PRACTICE})],
        )
        copies.append((copy / HUMAN_RATINGS).read_bytes())
    lead = tmp_path / "lead.jsonl"
    lead.write_bytes(b"\xef\xbb\xbf" + copies[0])  # an editor that writes a mark first
    assert invoke("ratings", "import", str(run), str(lead)).exit_code == 0
    assert [r.rater for r in read_human_ratings(run)] == ["Dr Li"]
    joined = tmp_path / "joined.jsonl"
    joined.write_bytes(b"\xef\xbb\xbf" + copies[0] + b"\xef\xbb\xbf" + copies[1])
    for args in (["agreement", str(joined)], ["ratings", "import", str(run), str(joined)]):
        result = invoke(*args)
        assert result.exit_code == 1, result.output
        assert result.output == f"error: {joined}:2: {SAYS}\n"
    assert len(read_human_ratings(run)) == 1


def test_a_rubric_or_persona_tsv_with_a_mark_inside_is_refused(tmp_path):
    tsv = tmp_path / "personas.tsv"
    tsv.write_text(f"{BOM}name\tage\nLena\t30\n{BOM}Maya\t41\n", encoding="utf-8")
    with pytest.raises(DataError) as error:
        read_tsv_text(tsv, "personas")
    assert str(error.value) == f"{tsv}:3: {SAYS}"
    tsv.write_text(f"{BOM}name\tage\nLena\t30\n", encoding="utf-8")
    assert read_tsv_text(tsv, "personas")[1] == "name\tage\nLena\t30\n"
