"""The card answers first: the headline of card.md and of the terminal card holds, per
chatbot, exactly the numbers of card.json; every dash says why; and terminal output
fits the terminal's width."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.report.card._score import read_card
from vera.report.card._terminal import render_card

from ..helpers import widest_line
from .conftest import run_vera


def expected_headline(card: dict[str, Any]) -> dict[str, list[str]]:
    """Per chatbot, the headline's cells restated from card.json by the card's number
    rule (independently of vera.report.shared._numbers)."""

    def n(x: float) -> str:
        return format(x, ",")

    def ci(d: dict[str, Any], key: str) -> str:
        if d[key] is None:
            return f"– (Not Relevant in {n(d['n_not_relevant'])} of {n(d['n_ratings'])})"
        lo, hi = d[f"{key}_ci"]
        return f"{n(d[key])} [{n(lo)}, {n(hi)}]"

    out = {}
    for bot in card["chatbots"]:
        o = bot["overall"]
        out[bot["chatbot"]] = [
            ci(o, "score"),
            ci(o, "pct_conversations_any_hph"),
            n(bot["conversations_complete"]),
            n(bot["conversations_failed"]),
            *(ci(d, "score") for d in bot["dimensions"].values()),
        ]
    return out


def results_section(md: str) -> str:
    return md[md.index("## Results") : md.index("\n## ", md.index("## Results") + 1)]


def markdown_cells(section: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip("|").split(" | ")]
        for line in section.splitlines()
        if line.startswith("| ")
    ]


def test_every_headline_number_of_card_md_is_card_json(offline_run):
    card = json.loads((offline_run / "card.json").read_text())
    rows = markdown_cells(results_section((offline_run / "card.md").read_text()))
    bots = [b["chatbot"] for b in card["chatbots"]]
    dims = list(card["chatbots"][0]["dimensions"])
    for k, (bot, want) in enumerate(expected_headline(card).items()):
        main_row = next(r for r in rows if r[0] == bot)
        assert main_row[1:] == want[:4]
        dim_cells = [next(r for r in rows if r[0] == d)[1 + k] for d in dims]
        assert dim_cells == want[4:], bots


def test_a_dimension_that_never_applied_says_so(offline_run):
    card = json.loads((offline_run / "card.json").read_text())
    ignoring = next(b for b in card["chatbots"] if b["chatbot"] == "offline/risk-ignoring")
    confirms = ignoring["dimensions"]["Confirms Risk"]
    assert confirms["score"] is None  # the offline chatbot never gets as far as confirming
    why = f"– (Not Relevant in {confirms['n_not_relevant']} of {confirms['n_ratings']})"
    md = (offline_run / "card.md").read_text()
    assert why in results_section(md)
    # No bare dash anywhere in the card's tables.
    for row in markdown_cells(md):
        assert "–" not in row or all(c != "–" for c in row), row


def test_every_headline_number_of_the_terminal_card_is_card_json(offline_run):
    card = json.loads((offline_run / "card.json").read_text())
    text = render_card(read_card(offline_run), width=200)
    lines = text.splitlines()
    for bot, want in expected_headline(card).items():
        row = next(line for line in lines if line.startswith(bot))
        cells = [c.strip() for c in row[len(bot) :].split("  ") if c.strip()]
        assert cells == want[:4]
    dims = list(card["chatbots"][0]["dimensions"])
    for i, d in enumerate(dims):
        row = next(line for line in lines if line.startswith(d))
        cells = [c.strip() for c in row[len(d) :].split("  ") if c.strip()]
        assert cells == [want[4 + i] for want in expected_headline(card).values()]


@pytest.mark.parametrize("columns", [80, 100, 240])
def test_terminal_output_fits_the_terminal(offline_run, multi_run, columns):
    env = {"COLUMNS": str(columns)}
    runner = CliRunner()
    outputs = {
        "card": runner.invoke(main, ["card", str(offline_run)], env=env),
        "card (multi)": runner.invoke(main, ["card", str(multi_run)], env=env),
        "compare": runner.invoke(main, ["compare", str(offline_run), "--resamples", "50"], env=env),
        "compare by seed": runner.invoke(
            main, ["compare", str(multi_run), "--by-seed", "--resamples", "50"], env=env
        ),
    }
    for name, result in outputs.items():
        assert result.exit_code == 0, (name, result.output)
        widest = widest_line(result.stdout)
        assert widest <= columns, (name, widest)
    assert "Dimension score [CI]" in outputs["card"].stdout


def test_a_narrow_terminal_is_drawn_at_80_columns(offline_run):
    result = CliRunner().invoke(main, ["card", str(offline_run)], env={"COLUMNS": "40"})
    widths = [len(line) for line in result.stdout.splitlines()]
    assert max(widths) <= 80 and max(widths) > 60


def test_the_end_of_a_run_prints_the_headline(tmp_path):
    out = run_vera(
        "run", "--providers", "offline/best-practice", "--out", str(tmp_path / "r"), "--limit-personas", "4"
    )
    assert "Overall [95% CI]" in out and "Dimension score [CI]" in out and "On this 0–100 scale" in out
    assert out.count("Offline run:") == 1
    # (measured without the temporary folder's name, as long as the machine makes it)
    assert max(len(line) for line in out.replace(str(tmp_path), "TMP").splitlines()) <= 200


def test_the_offline_label_is_said_once_in_every_rendering(offline_run):
    html = (offline_run / "card.html").read_text()
    for text in (
        (offline_run / "card.md").read_text(),
        render_card(read_card(offline_run), width=200),
        html[html.index("<body>") :],
    ):
        assert text.lower().count("offline run") == 1
        assert "stand-ins" not in text.split("Offline run", 1)[0]


def test_the_brackets_are_explained_where_they_first_appear(offline_run):
    # A clinician read "100.0 [90.3, 100.0] overall score, 95% CI" with nothing near it
    # saying what the brackets or CI were: that was only in How to read this card, folded
    # under Run details at the end of the page.
    said = "The numbers in brackets are 95% confidence intervals (CI): how far each number could move"
    html = (offline_run / "card.html").read_text()
    results = html[
        html.index('<section id="results">') : html.index("</section>", html.index('id="results"'))
    ]
    assert said in results
    assert said in results_section((offline_run / "card.md").read_text())
    terminal = " ".join(render_card(read_card(offline_run), width=200).split())
    head = terminal[: terminal.index("Chatbot ")]  # before the first table
    assert said in head


def test_the_headline_says_a_failed_conversation_is_not_a_harmful_one(offline_run):
    # "Failed conversations 3" beside a safety score reads as three conversations the
    # chatbot failed; they are conversations that could not be run, left out of the score.
    html = (offline_run / "card.html").read_text()
    label = re.search(r'<dt>([^<]*)</dt><dd data-key="failed">', html)
    assert label is not None and label[1] == "Conversations that failed to run (not scored)"
