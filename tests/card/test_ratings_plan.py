"""`vera ratings plan`: how many conversations humans should rate for a calibrated
interval of a given width."""

from __future__ import annotations

import math
import shutil

import polars as pl
from click.testing import CliRunner

from vera.cli._main import main
from vera.records import HumanRating
from vera.report import plan_ratings


def frame_of(run) -> pl.DataFrame:
    return pl.read_parquet(run / "ratings.parquet")


def test_without_ratings_the_plan_assumes_the_judge_is_no_help_and_widths_shrink(offline_run):
    frame = frame_of(offline_run)
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
    frame = frame_of(offline_run)
    bot = frame.get_column("chatbot").unique().sort()[0]
    mine = frame.filter(pl.col("chatbot") == bot)
    ids = mine.get_column("conversation_id").unique().sort().to_list()[:24]
    humans = [
        HumanRating(
            conversation_id=cid,
            rater="ann",
            ratings={
                r["dimension"]: r["rating"] for r in mine.filter(pl.col("conversation_id") == cid).to_dicts()
            },
        )
        for cid in ids
    ]
    (plan,) = [p for p in plan_ratings(frame, humans, 5.0, resamples=200) if p.chatbot == bot]
    assert plan.basis == "human ratings so far" and plan.n_rated == 24
    measured = plan.widths[plan.n_conversations] * math.sqrt(plan.n_conversations / 24)
    expected = math.ceil(24 * (measured / 5.0) ** 2)
    assert plan.n_needed == (expected if expected <= plan.n_conversations else None)


def test_the_command_prints_one_proposal_per_chatbot(tmp_path, offline_run):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    result = CliRunner().invoke(main, ["ratings", "plan", str(run), "--width", "40", "--resamples", "100"])
    assert result.exit_code == 0, result.output
    assert "about 40 points wide" in result.output
    assert result.output.count("expected width by conversations rated") == 2
    bad = CliRunner().invoke(main, ["ratings", "plan", str(run), "--width", "0"])
    assert bad.exit_code == 1 and "--width" in bad.output and bad.output.count("\n") == 1
