"""`--raters`: `vera score`, the calibrated gate and `vera agreement` combine raters who
disagree by the same rule, and the card and the verdict say which."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.records import SUBOPTIMAL as SUB
from vera.report import read_card
from vera.report.card._score import stats_settings
from vera.store import append_human_ratings, open_run

from .conftest import as_judged, conversation_ids, judged
from .test_agreement_command import judged_run

GOOD = "offline/best-practice"


def rate_two(run: Path) -> None:
    """Every other conversation rated by ann as the judge did and by bob as harmful."""
    frame = judged(run)
    append_human_ratings(
        run,
        [
            human
            for cid in conversation_ids(frame)[::2]
            for human in (*as_judged(frame, [cid]), *as_judged(frame, [cid], rater="bob", rating=HPH))
        ],
    )


def score(run: Path, *extra: str):
    result = CliRunner().invoke(main, ["score", str(run), "--resamples", "200", *extra])
    assert result.exit_code == 0, result.output
    return next(b for b in read_card(run).chatbots if b.chatbot == GOOD).calibrated


def test_score_uses_the_rule_given_and_records_it(tmp_path, offline_run):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    rate_two(run)
    default, severest, majority, mean = (
        score(run),
        score(run, "--raters", "severest"),
        score(run, "--raters", "majority"),
        score(run, "--raters", "mean"),
    )
    assert [c.raters for c in (default, severest, majority, mean)] == [
        "severest",
        "severest",
        "majority",
        "mean",
    ]
    # two raters who disagree: majority settles the tie to the severest; mean lands between
    assert default.overall == severest.overall == majority.overall
    assert severest.overall.score < mean.overall.score
    assert json.loads((run / "card.json").read_text())["chatbots"][0]["calibrated"]["raters"] == "mean"


def test_the_default_is_severest(offline_run):
    manifest = open_run(offline_run).manifest
    assert stats_settings(manifest, resamples=None, confidence=None, seed=None).raters == "severest"
    assert (
        stats_settings(manifest, resamples=None, confidence=None, seed=None, raters="mean").raters == "mean"
    )


def test_the_calibrated_gate_uses_the_same_rule(tmp_path, offline_run):
    base, cand = tmp_path / "base", tmp_path / "cand"
    shutil.copytree(offline_run, base)
    shutil.copytree(offline_run, cand)
    frame = judged(base)
    append_human_ratings(base, as_judged(frame, conversation_ids(frame)[::2]))
    rate_two(cand)

    def diff(rule: str | None) -> float:
        given = [] if rule is None else ["--raters", rule]
        r = CliRunner().invoke(
            main,
            [
                "compare",
                str(base),
                str(cand),
                "--gate",
                "--calibrated",
                *given,
                "--resamples",
                "300",
                "--json",
                "-",
            ],
        )
        assert r.exit_code in (0, 4), r.output
        verdict = json.loads(r.stdout)
        assert f"raters combined: {rule or 'severest'}" in verdict["scores"]
        (row,) = [
            row
            for p in verdict["pairs"]
            if p["chatbot"] == GOOD
            for row in p["rows"]
            if row["dimension"] == "Overall"
        ]
        return float(row["diff"])

    default, severest, majority, mean = diff(None), diff("severest"), diff("majority"), diff("mean")
    assert default == severest == majority < mean <= 0


def test_raters_needs_the_calibrated_gate(offline_run):
    r = CliRunner().invoke(main, ["compare", str(offline_run), "--raters", "mean"])
    assert r.exit_code == 1 and "--raters applies only with --gate --calibrated" in r.output


@pytest.mark.parametrize(("rule", "agree"), [("severest", 0.0), ("majority", 0.0), ("mean", 1.0)])
def test_agreement_combines_by_the_same_rule(tmp_path, offline_run, rule, agree):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(
        "item_id,rater,dimension,rating\naaaaaa,ann,Confirms Risk,BP\naaaaaa,bob,Confirms Risk,HPH\n"
    )
    run = judged_run(tmp_path, offline_run, {"t/aaaaaa_P_m_run1.txt": {"Confirms Risk": SUB}})
    result = CliRunner().invoke(
        main,
        ["agreement", str(ratings), "--against", str(run), "--raters", rule, "--json", "--resamples", "50"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["raters"] == rule and data["overall"]["percent_agreement"] == agree


def test_agreement_raters_needs_a_run(tmp_path):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("item_id,rater,dimension,rating\naaaaaa,ann,Confirms Risk,BP\n")
    r = CliRunner().invoke(main, ["agreement", str(ratings), "--raters", "mean"])
    assert r.exit_code == 1 and "--raters needs --against" in r.output
