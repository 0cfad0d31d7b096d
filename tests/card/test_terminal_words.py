"""At any terminal width no word or number of a table is broken: a table too wide for
the terminal is drawn as several narrower ones (each repeating the row labels) rather
than folding "Overall", "100.0" or "Krippendorff" across two lines."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.report import Table, fit, render, text_tables
from vera.report.shared._terminal import column_groups

from ..conftest import REFERENCE
from ..helpers import widest_line

WIDTHS = [80, 100, 160]
CLINICIANS = REFERENCE / "human_validation" / "clinician_ratings.csv"


def words(text: str) -> set[str]:
    """The words of terminal output, without the rules drawn under headers and the
    label a split table adds to its continuation."""
    return {w for w in text.split() if set(w) - set("─━-") and w != "(continued)"}


def wide_table(n_columns: int) -> Table:
    headers = ["Chatbot", *(f"Krippendorff's alpha {i} [CI]" for i in range(n_columns))]
    rows = [
        [bot, *(f"100.0 [99.{i}, 100.0]" for i in range(n_columns))]
        for bot in ("offline/best-practice", "offline/risk-ignoring", "openai/gpt-5.4-low-effort")
    ]
    return Table(headers, rows, caption="Overall agreement per dimension")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("n_columns", [1, 3, 6, 12])
def test_no_cell_word_is_split_and_no_line_overflows(width, n_columns):
    t = wide_table(n_columns)
    text = text_tables([t], width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    expected = {
        w for cell in [t.caption or "", *t.headers, *(c for row in t.rows for c in row)] for w in cell.split()
    }
    assert words(text) == expected


def test_a_table_that_fits_is_one_table_and_one_that_does_not_repeats_its_labels():
    assert column_groups(wide_table(1), 80) == [[0, 1]]
    groups = column_groups(wide_table(12), 80)
    assert len(groups) > 1 and all(g[0] == 0 for g in groups)
    assert sorted(i for g in groups for i in g[1:]) == list(range(1, 13))
    text = text_tables([wide_table(12)], width=80)
    assert text.count("offline/best-practice") == len(groups)


def test_a_word_wider_than_the_terminal_stays_whole_on_a_line_of_its_own():
    path = "/a/folder/" + "deep/" * 30 + "clinician_ratings.csv"
    t = Table(
        ["Dimension", "Items"],
        [["Overall", "450"]],
        caption=f"Agreement on 90 items ({path}); Not Relevant counted.",
    )
    text = text_tables([t], width=80)
    assert f"({path});" in text.splitlines()
    assert all(len(line) <= 80 for line in text.splitlines() if len(line.split()) > 1)
    prose = render([f"Ratings read from {path} on 3 raters."], width=80).splitlines()
    assert prose == ["Ratings read from", path, "on 3 raters."]


# In a pipe these stay whole lines, for scripts (checked in terminal form below).
STATUS_LINES = ("run status:", "HTML card:", "gate:")  # gate: vera compare --gate's verdict


def cli_words(args: list[str], width: int) -> tuple[set[str], int]:
    result = CliRunner().invoke(main, args, env={"COLUMNS": str(width)})
    # 5: a release gate that settles neither way (two copies of one run at margin 0).
    assert result.exit_code in (0, 1, 5), result.output
    lines = [line for line in result.output.splitlines() if not line.startswith(STATUS_LINES)]
    # A single word wider than the terminal (the path of a file in a deep folder) can only
    # stand whole on a line of its own; every other line must fit.
    return words("\n".join(lines)), widest_line("\n".join(lines))


@pytest.mark.parametrize("width", WIDTHS)
def test_status_lines_wrap_at_spaces_on_a_terminal_and_stay_whole_in_a_pipe(width):
    line = (
        "run status: stopped: budget reached — 37 of 80 conversations complete, 0 failed; "
        "resume with: vera run --resume runs/2026-12-04T06-35-00-offline-best-practice --max-cost 2"
    )
    wrapped = fit(line, width, terminal=True).splitlines()
    assert len(wrapped) > 1 and all(len(w) <= width for w in wrapped)
    assert " ".join(w.strip() for w in wrapped) == line
    assert fit(line, width, terminal=False) == line


@pytest.mark.parametrize("width", WIDTHS)
def test_card_compare_and_gate_keep_every_word_at_the_terminal_width(offline_run, width):
    for args in (
        ["card", str(offline_run)],
        ["compare", str(offline_run), "--resamples", "200"],
    ):
        wide, _ = cli_words(args, 1000)
        narrow, longest = cli_words(args, width)
        assert longest <= width, args
        # Wrapped prose and split tables move words, they never make new ones.
        assert narrow == wide, (args, sorted(narrow ^ wide)[:10])


@pytest.mark.parametrize("width", WIDTHS)
def test_the_gate_report_keeps_every_word_at_the_terminal_width(offline_run, tmp_path, width):
    other = tmp_path / "again"
    shutil.copytree(offline_run, other)
    args = ["compare", str(offline_run), str(other), "--gate", "--resamples", "200"]
    wide, _ = cli_words(args, 1000)
    narrow, longest = cli_words(args, width)
    assert longest <= width
    assert narrow == wide, sorted(narrow ^ wide)[:10]


@pytest.mark.skipif(not CLINICIANS.exists(), reason="reference data not beside the project")
@pytest.mark.parametrize("width", WIDTHS)
def test_agreement_keeps_every_word_at_the_terminal_width(width):
    args = ["agreement", str(CLINICIANS), "--resamples", "50"]
    wide, _ = cli_words(args, 1000)
    narrow, longest = cli_words(args, width)
    assert longest <= width
    assert narrow == wide, sorted(narrow ^ wide)[:10]
