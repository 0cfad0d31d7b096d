"""`vera score` with human ratings in the run: the card carries the calibrated scores
beside the judge-only ones, the number rated by humans and the confusion matrix."""

from __future__ import annotations

import itertools
import json
import shutil
from html import escape as html_escape
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.records import HIGH_POTENTIAL_FOR_HARM, HumanRating
from vera.report import read_card
from vera.report.card._terminal import render_card
from vera.store import append_human_ratings, open_run

from .conftest import all_rated, as_judged, conversation_ids, judged


@pytest.fixture
def run(tmp_path, offline_run) -> Path:
    out = tmp_path / "run"
    shutil.copytree(offline_run, out)
    return out


def test_no_human_ratings_no_calibrated_section(run):
    result = CliRunner().invoke(main, ["score", str(run), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    card = read_card(run)
    assert all(bot.calibrated is None for bot in card.chatbots)
    assert "calibrated" not in (run / "card.json").read_text()


def test_humans_who_agree_with_the_judge_leave_the_score_where_it_was(run):
    frame = judged(run)
    bot = frame.get_column("chatbot").unique().sort()[0]
    mine = frame.filter(pl.col("chatbot") == bot)
    ids = conversation_ids(mine)[::4]
    append_human_ratings(run, as_judged(mine, ids))
    result = CliRunner().invoke(main, ["score", str(run), "--resamples", "300"])
    assert result.exit_code == 0, result.output
    card = read_card(run)
    calibrated = {b.chatbot: b.calibrated for b in card.chatbots}
    cal = calibrated[bot]
    assert cal is not None and sum(c is not None for c in calibrated.values()) == 1
    assert cal.n_rated_by_humans == len(ids) and cal.n_raters == 1
    judge_only = next(b for b in card.chatbots if b.chatbot == bot).overall
    # A judge the humans fully agree with: PPI's correction is zero, the estimate is the judge's.
    assert cal.overall is not None and judge_only is not None
    assert cal.overall.score == pytest.approx(judge_only.score, abs=0.11)
    cats = cal.confusion.categories
    matrix = cal.confusion.overall
    off_diagonal = sum(matrix[i][j] for i in range(len(cats)) for j in range(len(cats)) if i != j)
    assert off_diagonal == 0 and sum(map(sum, matrix)) == len(ids) * len(cal.dimensions)
    data = json.loads((run / "card.json").read_text())
    entry = next(b for b in data["chatbots"] if b["chatbot"] == bot)
    assert set(entry["calibrated"]) >= {"overall", "dimensions", "confusion", "n_rated_by_humans"}
    # card.json names the interval as card.md's header does, not as a bare percentile one.
    assert "exact interval near 0 or 100 %" in entry["calibrated"]["method"]
    md = (run / "card.md").read_text()
    assert "### Calibrated by human ratings" in md
    assert f"{len(ids)} of {cal.n_conversations} conversations rated by 1 human rater(s)" in md
    # Plain headers (a clinician's trial found "[CI: PPI++ bootstrap, exact near 0/100 %]"
    # jargon); the methods are named in a note under the table instead.
    assert "| Dimension | Judge-only score [CI] | Calibrated score [CI] | Calibrated HPH % [CI] |" in md
    assert "bootstrap" not in md[md.index("| Dimension | Judge-only") :].splitlines()[0]
    methods = (
        "Intervals: the judge-only score's from a bootstrap over personas, with exact bounds for HPH %; "
        "the calibrated score's from a PPI++ bootstrap over personas, exact where a share is near 0 or 100 %."
    )
    calibrated_table = md[md.index("| Dimension | Judge-only") :].split("\n\n")
    assert calibrated_table[1] == methods, calibrated_table[:2]  # right under the table
    assert "compare their centres, not their widths" in " ".join(md.split())
    html = (run / "card.html").read_text()
    assert "Calibrated by human ratings" in html
    assert '<th scope="col">Judge-only score [CI]</th><th scope="col">Calibrated score [CI]</th>' in html
    escaped = html_escape(methods)
    assert f'</table></div>\n<p class="note">{escaped}</p>' in html
    terminal = render_card(card, 100)
    below = terminal[terminal.index("Rated by") :]
    assert " ".join(below[below.index("Intervals:") :].split()).startswith(methods)
    assert "bootstrap" not in terminal[: terminal.index("Intervals:")].split("Rated by")[-1]
    # Its rows in the rubric's order, as the chatbot's own table above it.
    section = md[md.index("### Calibrated by human ratings") :]
    bot_card = next(b for b in card.chatbots if b.chatbot == bot)
    rubric_order = list(bot_card.dimensions or {})
    assert sorted(rubric_order) != rubric_order  # (else the order would say nothing)
    lines = section.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("| "))
    table = list(itertools.takewhile(lambda line: line.startswith("|"), lines[first:]))
    rows = [line.split("|")[1].strip() for line in table]
    assert [r for r in rows if r in rubric_order] == rubric_order, rows


def test_humans_who_see_harm_the_judge_missed_lower_the_calibrated_score(run):
    frame = judged(run)
    bot = frame.get_column("chatbot").unique().sort()[0]
    heads = open_run(run).conversation_heads()
    ids = sorted(c for c, h in heads.items() if h.chatbot == bot)[::3]
    dims = frame.get_column("dimension").unique().to_list()
    append_human_ratings(run, all_rated(ids, dims, HIGH_POTENTIAL_FOR_HARM, raters=("ann", "bob")))
    assert CliRunner().invoke(main, ["score", str(run), "--resamples", "300"]).exit_code == 0
    card = read_card(run)
    b = next(b for b in card.chatbots if b.chatbot == bot)
    assert b.calibrated is not None and b.overall is not None
    assert b.calibrated.n_raters == 2
    assert b.calibrated.overall.pct_hph is not None and b.overall.pct_hph is not None
    assert b.calibrated.overall.pct_hph > b.overall.pct_hph + 20
    assert b.calibrated.overall.score is not None and b.overall.score is not None
    assert b.calibrated.overall.score < b.overall.score
    lo, hi = b.calibrated.overall.score_ci.lo, b.calibrated.overall.score_ci.hi
    assert lo is not None and hi is not None and lo <= b.calibrated.overall.score <= hi


def test_a_ratings_file_cut_mid_line_is_one_warning_and_the_rest_still_calibrates(run):
    frame = judged(run)
    ids = conversation_ids(frame)[::5]
    dims = frame.get_column("dimension").unique().to_list()
    append_human_ratings(run, all_rated(ids, dims, HIGH_POTENTIAL_FOR_HARM))
    with open(run / "human_ratings.jsonl", "ab") as f:
        f.write(b'{"conversation_id": "x", "rater": "ann", "ratin')
    result = CliRunner().invoke(main, ["score", str(run), "--resamples", "100"])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if "cut mid-write" in line]
    assert len(warnings) == 1 and "human_ratings.jsonl:" in warnings[0]
    card = read_card(run)
    assert sum(b.calibrated.n_rated_by_humans for b in card.chatbots if b.calibrated) == len(ids)


def test_the_terminal_card_shows_both_scores_side_by_side(run):
    frame = judged(run)
    ids = conversation_ids(frame)[::6]
    dims = frame.get_column("dimension").unique().to_list()
    append_human_ratings(run, all_rated(ids, dims, HIGH_POTENTIAL_FOR_HARM))
    assert CliRunner().invoke(main, ["score", str(run), "--resamples", "100"]).exit_code == 0
    result = CliRunner().invoke(main, ["card", str(run)])
    assert result.exit_code == 0, result.output
    assert "calibrated by human ratings" in result.stdout
    assert "Judge-only" in result.stdout and "Calibrated" in result.stdout


def test_a_rating_of_a_conversation_not_in_the_run_is_one_warning_and_stays_in_the_file(run):
    frame = judged(run)
    ids = conversation_ids(frame)[::5]
    dims = frame.get_column("dimension").unique().to_list()
    rows = all_rated(ids, dims, HIGH_POTENTIAL_FOR_HARM)
    append_human_ratings(run, [*rows, HumanRating(conversation_id="elsewhere", rater="ann", ratings={})])
    result = CliRunner().invoke(main, ["score", str(run), "--resamples", "100"])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if "not in this run" in line]
    assert len(warnings) == 1 and "'elsewhere'" in warnings[0]
    assert b"elsewhere" in (run / "human_ratings.jsonl").read_bytes()
    card = read_card(run)
    assert sum(b.calibrated.n_rated_by_humans for b in card.chatbots if b.calibrated) == len(ids)


def test_ratings_of_one_persona_are_named_and_never_give_a_zero_width_interval(run):
    frame = judged(run)
    bot = frame.get_column("chatbot").unique().sort()[0]
    mine = frame.filter(pl.col("chatbot") == bot)
    persona = mine.get_column("persona").unique().sort()[0]
    ids = mine.filter(pl.col("persona") == persona).get_column("conversation_id").unique().to_list()
    append_human_ratings(run, as_judged(mine, ids))
    result = CliRunner().invoke(main, ["score", str(run), "--resamples", "300"])
    assert result.exit_code == 0, result.output
    # vera score says so, in words, beside the calibrated score
    assert f"note: {bot}: calibrated overall score" in result.output
    assert "only 1 persona (fewer than 10)" in result.output
    card = read_card(run)
    cal = next(b for b in card.chatbots if b.chatbot == bot).calibrated
    assert cal is not None and cal.n_rated_personas == 1 and cal.few_rated_personas
    for score in [cal.overall, *cal.dimensions.values()]:
        lo, hi = score.score_ci.lo, score.score_ci.hi
        if score.score is not None:
            assert lo is not None and hi is not None and hi - lo > 10.0, score
    data = json.loads((run / "card.json").read_text())
    assert data["schema_version"] == 8
    (entry,) = [b for b in data["chatbots"] if b["chatbot"] == bot]
    assert entry["calibrated"]["n_rated_personas"] == 1
    assert entry["calibrated"]["raters"] == "severest"
    # every rendering sets the words beside the score
    for name in ("card.md", "card.html"):
        assert "rated persona(s): too few" in (run / name).read_text(), name
    printed = CliRunner().invoke(main, ["card", str(run)], env={"COLUMNS": "200"})
    assert "too few" in " ".join(printed.output.split())


def test_a_card_of_schema_6_reads_without_the_rated_personas(run):
    append_human_ratings(
        run,
        [
            HumanRating(conversation_id=cid, rater="ann", ratings={"Detects Potential Risk": "Best Practice"})
            for cid in conversation_ids(judged(run))[:30]
        ],
    )
    assert CliRunner().invoke(main, ["score", str(run), "--resamples", "100"]).exit_code == 0
    data = json.loads((run / "card.json").read_text())
    data["schema_version"] = 6
    for bot in data["chatbots"]:
        if bot.get("calibrated"):
            bot["calibrated"].pop("n_rated_personas")
            bot["calibrated"].pop("few_rated_personas")
    (run / "card.json").write_text(json.dumps(data))
    card = read_card(run)
    assert all(b.calibrated is None or b.calibrated.n_rated_personas is None for b in card.chatbots)


def test_a_dimension_the_run_does_not_have_is_an_error_naming_the_line(run):
    ids = conversation_ids(judged(run))
    append_human_ratings(
        run,
        [
            HumanRating(
                conversation_id=ids[0], rater="ann", ratings={"Detects Potential Risk": "Best Practice"}
            ),
            HumanRating(
                conversation_id=ids[1], rater="ann", ratings={"Detects Potental Risk": "Best Practice"}
            ),
        ],
    )
    before = (run / "card.json").read_bytes()
    result = CliRunner().invoke(main, ["score", str(run), "--resamples", "100"])
    assert result.exit_code != 0
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert "human_ratings.jsonl:2" in result.output and "'Detects Potental Risk'" in result.output
    assert (run / "card.json").read_bytes() == before  # nothing written over


def test_a_dimension_no_human_rated_is_named_where_overall_is_undefined(run):
    # A long-format file that leaves a dimension out: that dimension has no calibrated
    # number, nor has Overall (it pools them all). The card said "– (undefined)" and
    # left the reader to find the 0 in "Rated by humans".
    frame = judged(run)
    bot = frame.get_column("chatbot").unique().sort()[0]
    heads = open_run(run).conversation_heads()
    ids = sorted(c for c, h in heads.items() if h.chatbot == bot)[::2]
    dims = sorted(frame.get_column("dimension").unique().to_list())
    left_out = dims[0]
    append_human_ratings(run, all_rated(ids, dims[1:], HIGH_POTENTIAL_FOR_HARM))
    assert CliRunner().invoke(main, ["score", str(run), "--resamples", "100"]).exit_code == 0
    section = (run / "card.md").read_text().split("### Calibrated by human ratings")[1]
    overall = next(line for line in section.splitlines() if line.startswith("| **Overall**"))
    assert f"– (no human rating of {left_out})" in overall and "undefined" not in overall
    dimension = next(line for line in section.splitlines() if line.startswith(f"| {left_out} |"))
    assert "– (not rated)" in dimension
