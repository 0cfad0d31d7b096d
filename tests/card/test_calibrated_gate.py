"""`vera compare --gate --calibrated`: the gate on scores calibrated by each run's human
ratings, which sees a regression the judge missed."""

from __future__ import annotations

import json
import shutil

import msgspec
from click.testing import CliRunner

from vera.cli._main import main
from vera.records import HIGH_POTENTIAL_FOR_HARM
from vera.store import append_human_ratings

from .conftest import as_judged, conversation_ids, judged


def rate(run, *, harmful: bool) -> None:
    """Humans rate every other conversation: as the judge did, or all harmful."""
    frame = judged(run)
    ids = conversation_ids(frame)[::2]
    append_human_ratings(run, as_judged(frame, ids, rating=HIGH_POTENTIAL_FOR_HARM if harmful else None))


def gate(*args: str):
    return CliRunner().invoke(main, ["compare", *args, "--gate", "--resamples", "300", "--json", "-"])


def test_the_calibrated_gate_fails_a_candidate_the_humans_find_harmful(tmp_path, offline_run):
    base, cand = tmp_path / "base", tmp_path / "cand"
    shutil.copytree(offline_run, base)
    shutil.copytree(offline_run, cand)
    # The judge rated both runs alike: the judge-only gate finds nothing worse (at margin
    # 0 the same ratings settle neither way: UNDECIDED, exit 5).
    plain = gate(str(base), str(cand))
    assert plain.exit_code == 5, plain.output
    assert json.loads(plain.stdout)["worse"] == []
    missing = gate(str(base), str(cand), "--calibrated")
    assert missing.exit_code == 1 and "has no human ratings" in missing.output
    assert missing.output.count("\n") == 1
    rate(base, harmful=False)
    rate(cand, harmful=True)
    result = gate(str(base), str(cand), "--calibrated")
    assert result.exit_code == 4, result.output
    verdict = json.loads(result.stdout)
    assert verdict["scores"].startswith("calibrated") and not verdict["passed"]
    overall = {p["chatbot"]: r for p in verdict["pairs"] for r in p["rows"] if r["dimension"] == "Overall"}
    good = overall["offline/best-practice"]
    assert good["worse"] and good["diff"] < 0 and good["diff_ci"][1] < 0
    # The chatbot that was already nearly all harmful loses a few points; with its
    # candidate at 100 % harmful (an edge) and 20 conversations rated on each side, the
    # gate's edge rule does not call that proven (as Fisher's exact test would not).
    assert overall["offline/risk-ignoring"]["diff"] <= 0
    # The rows in the rubric's order, as the judge-only gate gives them (they came sorted
    # by name: Confirms Risk first).
    plain_rows = [[r["dimension"] for r in p["rows"]] for p in json.loads(plain.stdout)["pairs"]]
    assert [[r["dimension"] for r in p["rows"]] for p in verdict["pairs"]] == plain_rows
    assert plain_rows[0][0] == "Detects Potential Risk" and plain_rows[0][-1] == "Overall"


def test_calibrated_needs_the_gate(tmp_path, offline_run):
    r = CliRunner().invoke(main, ["compare", str(offline_run), "--calibrated"])
    assert r.exit_code == 1 and "--calibrated applies only with --gate" in r.output


def test_the_calibrated_gate_refuses_ratings_of_another_runs_transcripts(tmp_path, offline_run):
    # The candidate's human_ratings.jsonl was copied from a run of the same config whose
    # first conversation went otherwise: those ratings judge a transcript nobody read here.
    from vera.records import transcript_sha256
    from vera.store import HUMAN_RATINGS, read_human_ratings

    base, cand = tmp_path / "base", tmp_path / "cand"
    shutil.copytree(offline_run, base)
    shutil.copytree(offline_run, cand)
    rate(base, harmful=False)
    frame = judged(cand)
    ids = conversation_ids(frame)[::2]
    stamped = [
        msgspec.structs.replace(r, transcript_sha256=transcript_sha256([])) for r in as_judged(frame, ids)
    ]
    append_human_ratings(cand, stamped)
    result = gate(str(base), str(cand), "--calibrated")
    assert result.exit_code == 1, result.output
    assert f"{cand / HUMAN_RATINGS}:1: conversation {stamped[0].conversation_id!r}" in result.output
    assert "rated a different transcript than this run's" in result.output
    assert len(read_human_ratings(cand)) == len(stamped)
