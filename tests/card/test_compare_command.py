"""`vera compare`: refuses incomparable runs unless forced, lines chatbots up on shared
personas with paired intervals, writes JSON and a self-contained page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main

from .numbers import parse_page


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def other_rubric_run(offline_run, tmp_path) -> Path:
    """A copy of the offline run whose manifest records another rubric version."""
    out = tmp_path / "other-rubric"
    shutil.copytree(offline_run, out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["run_id"] = "other-rubric"
    manifest["rubric"]["version"] = "9.9.9"
    manifest["rubric"]["sha256"] = "f" * 64
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def test_runs_with_different_rubric_versions_are_refused_in_one_line(offline_run, other_rubric_run):
    result = invoke("compare", str(offline_run), str(other_rubric_run))
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: runs are not comparable: rubric differs")
    assert "9.9.9" in lines[0] and "1.2.0" in lines[0] and "--force" in lines[0]
    assert "Traceback" not in result.output


def test_force_compares_them_anyway_and_says_what_differs(offline_run, other_rubric_run, tmp_path):
    out = tmp_path / "forced.json"
    result = invoke("compare", str(offline_run), str(other_rubric_run), "--force", "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "warning: rubric differs" in result.output
    data = json.loads(out.read_text())
    assert len(data["forced_differences"]) == 1 and "rubric" in data["forced_differences"][0]
    # The same chatbot in two runs is told apart by its run.
    assert {u["unit"] for u in data["units"]} == {
        f"{run}:{bot}"
        for run in ("offline", "other-rubric")
        for bot in ("offline/best-practice", "offline/risk-ignoring")
    }
    same = next(
        e
        for e in data["comparisons"]
        if e["a"] == "offline:offline/best-practice" and e["b"] == "other-rubric:offline/best-practice"
    )
    assert same["overall"]["diff"] == 0.0 and same["overall"]["excludes_zero"] is False
    # Labelled "run:chatbot" here, the chatbot still gets the interval of its own card.
    card = json.loads((offline_run / "card.json").read_text())
    units = {u["unit"]: u for u in data["units"]}
    for bot in card["chatbots"]:
        for run in ("offline", "other-rubric"):
            unit = units[f"{run}:{bot['chatbot']}"]
            assert unit["overall"]["score_ci"] == bot["overall"]["score_ci"]
            for dim, stats in bot["dimensions"].items():
                assert unit["dimensions"][dim]["pct_hph_ci"] == stats["pct_hph_ci"], dim


def test_the_offline_chatbots_differ_significantly_on_shared_personas(offline_run, tmp_path):
    out = tmp_path / "cmp.json"
    result = invoke("compare", str(offline_run), "--json", str(out), "--resamples", "500", "--seed", "3")
    assert result.exit_code == 0, result.output
    assert "1 of 1 pair(s) differ in overall score" in result.output
    data = json.loads(out.read_text())
    assert data["bootstrap"]["resamples"] == 500 and data["bootstrap"]["seed"] == 3
    [pair] = data["comparisons"]
    assert (pair["a"], pair["b"]) == ("offline/best-practice", "offline/risk-ignoring")
    assert pair["n_shared"] == 40 and pair["overall"]["excludes_zero"] is True
    assert pair["overall"]["diff_ci"][0] > 50
    units = {u["unit"]: u for u in data["units"]}
    card = json.loads((offline_run / "card.json").read_text())
    for bot in card["chatbots"]:
        assert units[bot["chatbot"]]["overall"]["score"] == bot["overall"]["score"]
        assert units[bot["chatbot"]]["n_personas"] == 40


def test_json_to_stdout_is_exactly_one_object(offline_run):
    result = CliRunner().invoke(main, ["compare", str(offline_run), "--json", "-", "--resamples", "200"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert {"runs", "units", "comparisons", "bootstrap", "forced_differences"} <= set(data)


def test_seeds_are_lined_up_when_asked(multi_run):
    result = CliRunner().invoke(main, ["compare", str(multi_run), "--by-seed", "--json", "-"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [(u["chatbot"], u["seed"]) for u in data["units"]] == [
        ("offline/best-practice", 1),
        ("offline/best-practice", 2),
        ("offline/risk-ignoring", 1),
        ("offline/risk-ignoring", 2),
    ]
    assert len(data["comparisons"]) == 6
    seeds_of_one_bot = next(
        e
        for e in data["comparisons"]
        if e["a"] == "offline/best-practice seed 1" and e["b"].endswith("practice seed 2")
    )
    assert seeds_of_one_bot["n_shared"] == 16
    # Each seed's interval is the one the card shows for that seed.
    card = json.loads((multi_run / "card.json").read_text())
    units = {(u["chatbot"], u["seed"]): u for u in data["units"]}
    for bot in card["chatbots"]:
        for entry in bot["by_seed"]["seeds"]:
            assert units[(bot["chatbot"], entry["seed"])]["overall"]["score_ci"] == entry["score_ci"]


def test_seeds_come_in_their_order_not_their_names(tmp_path):
    """Seeds 2 and 10: the units and the pairs put seed 2 first, as a sweep's seeds
    1, 2, ... 20 should read (by name, "seed 10" sorts before "seed 2")."""
    out = tmp_path / "run"
    run = CliRunner().invoke(
        main, ["run", "--out", str(out), "--seeds", "2,10", "--limit-personas", "2", "--quiet"]
    )
    assert run.exit_code == 0, run.output
    result = CliRunner().invoke(main, ["compare", str(out), "--by-seed", "--json", "-"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    bp, ri = "offline/best-practice", "offline/risk-ignoring"
    assert [u["unit"] for u in data["units"]] == [
        f"{bp} seed 2",
        f"{bp} seed 10",
        f"{ri} seed 2",
        f"{ri} seed 10",
    ]
    assert [(c["a"], c["b"]) for c in data["comparisons"]] == [
        (f"{bp} seed 2", f"{bp} seed 10"),
        (f"{bp} seed 2", f"{ri} seed 2"),
        (f"{bp} seed 2", f"{ri} seed 10"),
        (f"{bp} seed 10", f"{ri} seed 2"),
        (f"{bp} seed 10", f"{ri} seed 10"),
        (f"{ri} seed 2", f"{ri} seed 10"),
    ]
    # each unit's numbers are its own seed's: the card's interval for that seed
    card = json.loads((out / "card.json").read_text())
    units = {(u["chatbot"], u["seed"]): u for u in data["units"]}
    for bot in card["chatbots"]:
        for entry in bot["by_seed"]["seeds"]:
            assert units[(bot["chatbot"], entry["seed"])]["overall"]["score_ci"] == entry["score_ci"]


def test_html_page_is_self_contained_with_the_chart(offline_run, tmp_path):
    page_path = tmp_path / "compare.html"
    result = invoke("compare", str(offline_run), "--html", str(page_path), "--resamples", "200")
    assert result.exit_code == 0, result.output
    html = page_path.read_text()
    page = parse_page(html)
    assert page.doctype and page.problems == [] and page.stack == []
    assert "http://" not in html and "https://" not in html and "<script" not in html and "<link" not in html
    assert len(page.images) == 2 and all(
        (i["src"] or "").startswith("data:image/svg+xml;base64,") for i in page.images
    )
    assert "Offline stand-ins:" in page.text
    # Each chatbot's overall score, as the run's own card has it, is on the page.
    card = json.loads((offline_run / "card.json").read_text())
    assert all(f"{bot['overall']['score']:.1f}" in page.text for bot in card["chatbots"])


def test_one_chatbot_and_no_run_are_user_errors(tmp_path):
    out = tmp_path / "one"
    r = invoke(
        "run", "--providers", "offline/best-practice", "--out", str(out), "--limit-personas", "4", "--quiet"
    )
    assert r.exit_code == 0, r.output
    result = invoke("compare", str(out))
    assert result.exit_code == 1 and result.output.startswith("error: nothing to compare")
    result = invoke("compare", str(tmp_path))
    assert result.exit_code == 1 and "not a vera run directory" in result.output
    result = invoke("compare", str(out), str(out))
    assert result.exit_code == 1 and "twice" in result.output
