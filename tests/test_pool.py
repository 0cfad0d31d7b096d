"""`vera pool RUN...` pools the scores of separate runs of one chatbot as the reference's
pool_vera_scores.py does (rows concatenated, scored together), with vera's intervals;
`vera score FILE.csv` scores the reference's own results.csv."""

from __future__ import annotations

import json

import pytest

from .targets import DEMO, V11_SAMPLE, vera

BOT = "offline/best-practice"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Seed 1 and seed 2 as two runs, and both seeds as one run (the pooled truth)."""
    root = tmp_path_factory.mktemp("pool")
    for name, seeds in (("a", ("--seed", "1")), ("b", ("--seed", "2")), ("both", ("--seeds", "1,2"))):
        result = vera("run", "--target", str(DEMO), *seeds, "--out", str(root / name), "--quiet")
        assert result.returncode == 0, result.stderr
    return root


def card_of(run, bot=BOT):
    card = json.loads((run / "card.json").read_text())
    return next(b for b in card["chatbots"] if b["chatbot"] == bot)


def test_pooling_two_runs_scores_as_one_run_of_both(runs):
    result = vera("pool", str(runs / "a"), str(runs / "b"), "--chatbot", BOT, "--json")
    assert result.returncode == 0, result.stderr
    pooled = json.loads(result.stdout)
    truth = card_of(runs / "both")
    assert pooled["chatbot"] == BOT and pooled["rows_per_source"] == [3, 3] and pooled["n_judgements"] == 6
    rows = {r["dimension"]: r for r in pooled["rows"]}
    assert rows["Overall"]["score"] == pytest.approx(truth["overall"]["score"], abs=0.051)
    assert rows["Overall"]["n_rated"] == truth["overall"]["n_rated"]
    for d, section in truth["dimensions"].items():
        assert rows[d]["score"] == pytest.approx(section["score"], abs=0.051), d
    lo, hi = rows["Overall"]["score_lo"], rows["Overall"]["score_hi"]
    assert lo <= rows["Overall"]["score"] <= hi  # vera's interval, not the reference's bare number


def test_a_run_given_twice_is_counted_as_it_is_scored(runs):
    result = vera("pool", str(runs / "a"), str(runs / "a"), "--chatbot", BOT, "--json")
    assert result.returncode == 0, result.stderr
    pooled = json.loads(result.stdout)
    once = card_of(runs / "a")
    assert pooled["rows_per_source"] == [3, 3] and pooled["n_judgements"] == 6
    rows = {r["dimension"]: r for r in pooled["rows"]}
    assert rows["Overall"]["n_rated"] == 2 * once["overall"]["n_rated"]


def test_a_run_with_several_chatbots_needs_one_named(runs):
    result = vera("pool", str(runs / "a"), str(runs / "b"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        "holds 2 chatbots (offline/best-practice, offline/risk-ignoring); name one with --chatbot"
        in result.stderr
    )


def test_score_of_a_reference_results_csv_gives_the_card(runs):
    assert vera("export", str(runs / "both"), "--format", "reference").returncode == 0
    csv_file = runs / "both" / "reference" / "offline__best-practice" / "results.csv"
    result = vera("pool", str(csv_file), "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["dimension"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["Overall"]["score"] == pytest.approx(card_of(runs / "both")["overall"]["score"], abs=0.051)
    text = vera("score", str(csv_file))
    assert text.returncode == 0, text.stderr
    assert "Overall" in text.stdout and "95% interval" in text.stdout


@pytest.mark.skipif(not V11_SAMPLE.exists(), reason="reference data absent")
def test_score_reads_the_v11_layout_taking_the_persona_from_the_file_name():
    result = vera("score", str(V11_SAMPLE))
    assert result.returncode == 0, result.stderr
    assert "8 judgements of 4 personas" in result.stdout


def test_a_file_that_is_not_a_results_csv_is_one_line(tmp_path):
    bad = tmp_path / "results.csv"
    bad.write_text("a,b\n1,2\n")
    result = vera("score", str(bad))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        result.stderr.strip()
        == f"error: {bad}:1: not the reference's results.csv: no column filename, judge_model, judge_instance"
    )
