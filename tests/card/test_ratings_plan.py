"""`vera ratings plan`: how many conversations humans should rate for a calibrated
interval of a given width."""

from __future__ import annotations

import math
import shutil

import polars as pl
from click.testing import CliRunner

from vera.cli._main import main
from vera.report import plan_ratings

from .conftest import as_judged, conversation_ids, judged


def test_without_ratings_the_plan_assumes_the_judge_is_no_help_and_widths_shrink(offline_run):
    frame = judged(offline_run)
    plans = plan_ratings(frame, [], 30.0, resamples=200)
    assert {p.chatbot for p in plans} == set(frame.get_column("chatbot").unique())
    for p in plans:
        assert p.basis.startswith("judge's ratings") and p.n_rated == 0
        widths = list(p.widths.values())
        assert widths == sorted(widths, reverse=True) and widths[0] > 0  # more ratings, never wider
        if p.n_needed is not None:
            assert p.widths[p.n_needed] <= 30.0
            assert all(w > 30.0 for n, w in p.widths.items() if n < p.n_needed)


def test_with_twenty_ratings_the_plan_scales_their_interval_by_root_n(offline_run):
    frame = judged(offline_run)
    # The risk-ignoring stand-in: its ratings vary across personas, so the floor is above 0.
    bot = "offline/risk-ignoring"
    mine = frame.filter(pl.col("chatbot") == bot)
    humans = as_judged(mine, conversation_ids(mine)[:24])
    (plan,) = [p for p in plan_ratings(frame, humans, 5.0, resamples=200) if p.chatbot == bot]
    assert plan.basis == "human ratings so far" and plan.n_rated == 24
    assert plan.floor is not None and plan.floor > 0
    # Above the floor, the part of the width that ratings remove shrinks as 1/√n.
    widths = list(plan.widths.values())
    assert widths == sorted(widths, reverse=True) and min(widths) >= plan.floor - 0.1
    if plan.floor >= 5.0:
        assert plan.n_needed is None  # no number of ratings reaches it


def test_a_width_below_the_persona_floor_is_not_reachable_and_says_why(tmp_path, offline_run):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    result = CliRunner().invoke(main, ["ratings", "plan", str(run), "--width", "0.5", "--resamples", "100"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "not reachable: the sampling of personas alone makes the interval about" in text
    assert "floor (the sampling of personas" in text
    assert "nan" not in result.output.lower() and "rate " not in text.split("not reachable")[0]


def test_the_planned_width_has_a_floor_and_shrinks_above_it():
    from vera.stats.ppi import planned_width, ratings_for_width

    assert planned_width(20.0, 25, 10.0, 25) == 20.0
    assert planned_width(20.0, 25, 10.0, 100) == math.sqrt(100 + 300 / 4)
    assert planned_width(20.0, 25, 10.0, 10**9) > 10.0
    assert ratings_for_width(20.0, 25, 10.0, 10.0) is None
    n = ratings_for_width(20.0, 25, 10.0, 12.0)
    assert n is not None and planned_width(20.0, 25, 10.0, n) <= 12.0 < planned_width(20.0, 25, 10.0, n - 1)


def test_the_command_prints_one_proposal_per_chatbot(tmp_path, offline_run):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    result = CliRunner().invoke(main, ["ratings", "plan", str(run), "--width", "40", "--resamples", "100"])
    assert result.exit_code == 0, result.output
    assert "about 40 points wide" in result.output
    assert result.output.count("expected width by conversations rated") == 2
    bad = CliRunner().invoke(main, ["ratings", "plan", str(run), "--width", "0"])
    assert bad.exit_code == 1 and "--width" in bad.output and bad.output.count("\n") == 1


def test_the_floor_is_never_zero_where_rating_them_all_leaves_a_width(offline_run):
    # The best-practice stand-in's judge rates everything Best Practice: its mean has no
    # spread, and the plan printed a floor of 0.0 beside "rating all N gives 9.7" (no
    # ratings yet) and, once humans had seen harm the judge missed, expected widths
    # falling to 0.0 when every conversation is rated.
    from vera.records import BEST_PRACTICE as BP
    from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH

    frame = judged(offline_run)
    bot = "offline/best-practice"
    mine = frame.filter(pl.col("chatbot") == bot)
    ids = conversation_ids(mine)
    (before,) = [p for p in plan_ratings(frame, [], 5.0, resamples=200) if p.chatbot == bot]
    assert before.floor is not None and before.floor == before.widths[len(ids)] > 0
    # Humans who call every third of 24 rated conversations harmful.
    humans = [
        h for i, cid in enumerate(ids[:24]) for h in as_judged(mine, [cid], rating=HPH if i % 3 == 0 else BP)
    ]
    (after,) = [p for p in plan_ratings(frame, humans, 5.0, resamples=200) if p.chatbot == bot]
    assert after.basis == "human ratings so far"
    assert after.floor is not None and after.floor > 5.0 and after.widths[len(ids)] >= after.floor - 0.1
    assert after.n_needed is None
