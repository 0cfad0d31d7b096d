"""The card's "Fix first": the improvement report with two examples per question in
card.json, a harm-first table in card.md and card.html linking pages that exist, and
cards written before it still read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest

from tests.improvements_run import HPH, SUB, write_run
from vera.report.card._build import CARD_EXEMPLARS
from vera.report.card._schema import decode_card, encode_card
from vera.report.card._score import score_run
from vera.report.improvements._report import run_improvements
from vera.store import open_run


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> Path:
    run = write_run(tmp_path_factory.mktemp("fix-first") / "run")
    score_run(run, resamples=50)
    return run


def test_card_json_holds_the_report_with_the_cards_examples(scored):
    card = decode_card((scored / "card.json").read_bytes())
    report = run_improvements(open_run(scored), exemplars=CARD_EXEMPLARS)
    # The card's own run_id is the one: two runs of a sweep differ in nothing else.
    assert card.fix_first == msgspec.structs.replace(report, run_id=None)
    assert card.fix_first is not None and card.fix_first.max_exemplars == 2
    # The key comes after every key of the schema before it (schema 8's come after it).
    keys = list(json.loads((scored / "card.json").read_text()))
    assert keys[keys.index("fix_first") + 1 :] == ["diagnostics", "by_columns", "absent_columns", "realism"]


def test_card_md_lists_findings_across_dimensions_harm_first(scored):
    md = (scored / "card.md").read_text()
    section = md[md.index("## Fix first") : md.index("## Overview")]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    assert [(r[0].strip("| "), r[2], r[3]) for r in rows[1:]] == [
        ("1b", "High Potential for Harm", "2"),
        ("4a", "High Potential for Harm", "1"),
        ("1c", "Suboptimal", "3"),
        # A tie keeps the dimensions' order: Keeps Boundaries (a harmful finding) first.
        ("4b", "Suboptimal", "1"),
        ("3a", "Suboptimal", "1"),
    ]
    assert "[c1](conversations/c1.html#r-judges-a-1-spots-danger)" in section


def test_card_html_links_each_example_to_a_page_beside_it(scored):
    html = (scored / "card.html").read_text()
    section = html[html.index('<section id="fix-first">') :]
    section = section[: section.index("</section>")]
    assert '<a href="#fix-first">Fix first</a>' in html
    hrefs = re.findall(r'href="([^"#]+)#', section)
    assert hrefs and all((scored / h).is_file() for h in hrefs)
    ratings = re.findall(r'<td class="text">(High Potential for Harm|Suboptimal)</td>', section)
    assert ratings == ["High Potential for Harm"] * 2 + ["Suboptimal"] * 3
    assert HPH and SUB  # the record's names; the table uses the short ones


def test_a_card_written_before_fix_first_still_reads_and_renders(scored, tmp_path):
    data = json.loads((scored / "card.json").read_text())
    del data["fix_first"]
    card = decode_card(json.dumps(data).encode())
    assert card.fix_first is None
    from vera.report.card._html import render_html
    from vera.report.card._markdown import render_markdown

    assert "Fix first" not in render_markdown(card) and "fix-first" not in render_html(card, [])
    assert json.loads(encode_card(card))["fix_first"] is None
