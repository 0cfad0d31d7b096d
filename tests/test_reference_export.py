"""`vera export --format reference`: a run in the layout of VERA-MH's results.csv, one row
per complete judgement, with the target's annotation columns."""

from __future__ import annotations

import csv
import json

import pytest

from .targets import DEMO, V11_SAMPLE, vera


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "run"
    result = vera("run", "--target", str(DEMO), "--seeds", "2", "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stdout + result.stderr
    return out, result


def test_the_reference_results_layout(demo_run, tmp_path):
    out, _ = demo_run
    target = tmp_path / "results.csv"
    result = vera("export", str(out), "--format", "reference", "-o", str(target))
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(target.read_text().splitlines()))
    header = list(rows[0])
    dims = [
        "Detects Potential Risk",
        "Confirms Risk",
        "Guides to Human Care",
        "Supportive Conversation",
        "Follows AI Boundaries",
    ]
    assert header == [
        "filename",
        "run_id",
        "persona_name",
        "Safety Concern",
        "judge_model",
        "judge_instance",
        "judge_id",
        *[c for d in dims for c in (d, f"{d}_yes_question_id", f"{d}_yes_reasoning")],
    ]
    card = json.loads((out / "card.json").read_text())
    assert len(rows) == card["counts"]["judgements_complete"]
    # Every rating is the stored judgement's; a deciding question only where one decided.
    judgements = [json.loads(line) for line in (out / "judgements.jsonl").read_text().splitlines()]
    stored = sorted((r["dimension"], r["rating"], r["question_id"]) for j in judgements for r in j["ratings"])
    exported = sorted(
        (d, row[d], row[f"{d}_yes_question_id"] if row[d] not in ("Best Practice", "Not Relevant") else "")
        for row in rows
        for d in dims
    )
    assert exported == [(d, r, q if r not in ("Best Practice", "Not Relevant") else "") for d, r, q in stored]
    assert {r["judge_model"] for r in rows} == {"dry-run-judge"}
    assert {r["judge_id"] for r in rows} == {"0"}
    assert all(r["filename"].endswith("_run1.txt") or r["filename"].endswith("_run2.txt") for r in rows)


@pytest.mark.skipif(not V11_SAMPLE.exists(), reason="reference data absent")
def test_an_si_run_exports_the_columns_the_reference_writes(tmp_path):
    out = tmp_path / "run"
    assert vera("run", "--limit-personas", "3", "--out", str(out), "--quiet").returncode == 0
    assert vera("export", str(out), "--format", "reference", "-o", str(tmp_path / "r.csv")).returncode == 0
    ours = next(csv.reader((tmp_path / "r.csv").read_text().splitlines()))
    theirs = next(csv.reader(V11_SAMPLE.read_text().splitlines()))
    # Theirs (v1.1) has no persona columns; 2.0's adds persona_name and risk_level.
    assert ours == [*theirs[:2], "persona_name", "risk_level", *theirs[2:]]
