"""`vera compare BASELINE CANDIDATE --gate`: a worse candidate exits 4 and is named; the
same, a better candidate, or a loss within the margin exits 0; pairing is by persona
and, where the runs share them, by seed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.report.shared._outcome import Exit

from ..helpers import widest_line
from .conftest import run_vera

GOOD, BAD = "offline/best-practice", "offline/risk-ignoring"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """One-chatbot runs on the same 40 personas: the good chatbot (seed 1, and seeds 1
    and 2), its exact copy, the bad chatbot (seed 1) and the bad chatbot on seed 7."""
    root = tmp_path_factory.mktemp("gate")
    out = {}
    for name, bot, seeds in (
        ("good", GOOD, ["--seed", "1"]),
        ("good-2seeds", GOOD, ["--seeds", "1,2"]),
        ("bad", BAD, ["--seed", "1"]),
        ("bad-seed7", BAD, ["--seed", "7"]),
    ):
        out[name] = root / name
        run_vera(
            "run", "--providers", bot, "--out", str(out[name]), *seeds, "--limit-personas", "40", "--quiet"
        )
    out["good-copy"] = root / "good-copy"
    shutil.copytree(out["good"], out["good-copy"])
    return out


def gate(*args: str | Path):
    return CliRunner().invoke(main, ["compare", *map(str, args), "--gate", "--resamples", "300"])


def gate_json(*args: str | Path) -> tuple[int, dict]:
    result = CliRunner().invoke(
        main, ["compare", *map(str, args), "--gate", "--resamples", "300", "--json", "-"]
    )
    return result.exit_code, json.loads(result.stdout)


def test_a_worse_candidate_fails_the_gate_and_is_named(runs):
    result = gate(runs["good"], runs["bad"])
    assert result.exit_code == int(Exit.WORSE) == 4, result.output
    verdict = " ".join(result.output.split())
    assert "gate: FAILED (exit code 4)" in verdict and "Overall" in verdict
    assert "Traceback" not in result.output
    code, data = gate_json(runs["good"], runs["bad"])
    assert code == 4 and not data["passed"]
    overall = next(r for r in data["pairs"][0]["rows"] if r["dimension"] == "Overall")
    assert overall["worse"] and overall["diff_ci"][1] < 0
    assert overall["diff"] == pytest.approx(overall["candidate"] - overall["baseline"], abs=0.11)
    assert f"{GOOD} → {BAD}: Overall" in data["worse"]


def test_the_same_chatbot_passes(runs):
    result = gate(runs["good"], runs["good-copy"])
    assert result.exit_code == 0, result.output
    assert "gate: passed" in result.output
    _, data = gate_json(runs["good"], runs["good-copy"])
    assert data["passed"] and data["worse"] == []
    assert all(r["diff"] == 0.0 for r in data["pairs"][0]["rows"] if r["diff"] is not None)


def test_a_better_candidate_passes(runs):
    assert gate(runs["bad"], runs["good"]).exit_code == 0


def test_a_loss_within_the_margin_passes(runs):
    _, data = gate_json(runs["good"], runs["bad"])
    overall = next(r for r in data["pairs"][0]["rows"] if r["dimension"] == "Overall")
    largest_loss = -min(r["diff_ci"][0] for r in data["pairs"][0]["rows"] if r["diff"] is not None)
    # A margin beyond every interval's far end: nothing is worse by more than it (and no
    # score can lose more than 100 points, the largest margin the gate takes).
    result = CliRunner().invoke(
        main,
        [
            "compare",
            str(runs["good"]),
            str(runs["bad"]),
            "--gate",
            "--resamples",
            "300",
            "--margin",
            str(min(100, largest_loss + 1)),
        ],
    )
    assert result.exit_code == 0, result.output
    # A margin just inside the overall interval's near end still fails on Overall.
    near = -overall["diff_ci"][1]
    code, data = gate_json(runs["good"], runs["bad"], "--margin", str(max(0.0, near - 1)))
    assert code == 4 and any(w.endswith("Overall") for w in data["worse"])


def test_runs_sharing_a_seed_are_paired_by_persona_and_seed(runs):
    code, data = gate_json(runs["good-2seeds"], runs["good"])
    assert code == 0 and data["paired_by"] == "persona and seed" and data["shared_seeds"] == [1]
    # Only seed 1's conversations of the two-seed baseline enter: its gate score is its
    # seed-1 score on the card.
    card = json.loads((runs["good-2seeds"] / "card.json").read_text())
    seed1 = next(s for s in card["chatbots"][0]["by_seed"]["seeds"] if s["seed"] == 1)
    overall = next(r for r in data["pairs"][0]["rows"] if r["dimension"] == "Overall")
    assert overall["baseline"] == seed1["score"]
    assert data["pairs"][0]["n_shared"] == seed1["n_personas"]


def test_runs_without_a_shared_seed_are_paired_by_persona(runs):
    code, data = gate_json(runs["good"], runs["bad-seed7"])
    assert code == 4 and data["paired_by"] == "persona" and data["shared_seeds"] == []


def test_gate_needs_exactly_two_runs_and_margin_needs_gate(runs):
    three = gate(runs["good"], runs["bad"], runs["good-copy"])
    assert three.exit_code == 1 and three.output.startswith("error: ") and "exactly two" in three.output
    margin = CliRunner().invoke(main, ["compare", str(runs["good"]), str(runs["bad"]), "--margin", "2"])
    assert margin.exit_code == 1 and margin.output.startswith("error: ") and "--gate" in margin.output
    negative = gate(runs["good"], runs["bad"], "--margin", "-1")
    assert negative.exit_code == 1 and negative.output.startswith("error: ")


def test_the_gate_report_fits_an_80_column_terminal(runs):
    result = CliRunner().invoke(
        main,
        ["compare", str(runs["good"]), str(runs["bad"]), "--gate", "--resamples", "100"],
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 4
    assert widest_line(result.output) <= 80
