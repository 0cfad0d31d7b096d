"""The held-out check on the reference data (benchmarks/bench_reference_calibration.py
on a few splits): the reference's human-validation conversations judged by the offline
judge, each estimator scored against clinicians' ratings it did not see."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.bench_reference_calibration import card_columns, held_out_check, main, render
from vera.cli._main import main as vera

from .conftest import REFERENCE

CLINICIANS = REFERENCE / "human_validation" / "clinician_ratings.csv"


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory) -> Path:
    if not CLINICIANS.exists():
        pytest.skip("reference data absent")
    out = tmp_path_factory.mktemp("ref") / "run"
    judged = CliRunner().invoke(
        vera,
        [
            "judge",
            "--transcripts",
            str(REFERENCE / "human_validation" / "conversations"),
            "--personas",
            str(REFERENCE / "data" / "personas.tsv"),
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert judged.exit_code == 0, judged.output
    imported = CliRunner().invoke(vera, ["ratings", "import", str(out), str(CLINICIANS)])
    assert imported.exit_code == 0, imported.output
    return out


def test_persona_splits_hold_whole_personas_out(reference_run):
    r = held_out_check(reference_run, 3, resamples=100)
    assert (r["conversations"], r["groups"], r["labelled_groups_per_split"]) == (90, 10, 5)
    assert set(r["estimators"]) == {"calibrated", "human-only", "judge-only"}
    # three clinicians a conversation, combined by the default rule (severest)
    assert r["raters"] == "severest" and round(r["clinicians_score_all"], 1) == 28.8
    # the judge sees every conversation in every split: one score, whatever the split
    judge = r["estimators"]["judge-only"]
    assert judge["score_range"][0] == judge["score_range"][1] == r["judge_only_all"][0]
    # the held-out score moves with the split: it is a sample of personas itself
    assert r["held_out_score_range"][0] < r["held_out_score_range"][1]
    # with 5 rated personas the card's few-persona floor applies: wide, and covering
    for name in ("calibrated", "human-only"):
        e = r["estimators"][name]
        assert e["width_mean"] > 20.0 and e["coverage"] == 1.0, (name, e)
    assert "| calibrated |" in render(r)


def test_the_rule_combining_the_clinicians_moves_their_score(reference_run):
    # majority lets two clinicians' Best Practice outvote a third's harm: a higher score
    r = held_out_check(reference_run, 1, by="conversation", resamples=50, raters="majority")
    assert round(r["clinicians_score_all"], 1) == 35.1
    assert r["groups"] == 90 and r["labelled_groups_per_split"] == 45


def test_the_card_columns_are_the_cards(reference_run):
    # vera score writes the same two columns on the card (bootstrap seed 0; one decimal)
    rows = {r["chatbot"]: r for r in card_columns(reference_run, "severest", 2000)}
    result = CliRunner().invoke(vera, ["score", str(reference_run)])
    assert result.exit_code == 0, result.output
    card = json.loads((reference_run / "card.json").read_text())
    for bot in card["chatbots"]:
        row, cal = rows[bot["chatbot"]], bot.get("calibrated")
        assert round(row["judge_only"][0], 1) == bot["overall"]["score"]
        if cal is None:
            assert row["calibrated"] is None
        else:
            assert [round(v, 1) for v in row["calibrated"]] == [
                round(v, 1) for v in (cal["overall"]["score"], *cal["overall"]["score_ci"])
            ]
    assert sum(r["calibrated"] is not None for r in rows.values()) == 3


def test_the_command_refuses_a_directory_that_is_no_run(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([str(tmp_path)])
    assert exit_.value.code == 2 and "no ratings.parquet" in capsys.readouterr().err
