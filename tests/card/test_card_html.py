"""card.html: valid HTML5, self-contained, every number of card.json on it, the plots
embedded as SVG and written as 2× PNGs, every text from the run escaped."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from .conftest import MARKUP_REASONING, run_vera
from .numbers import missing_numbers, numbers_in, parse_page

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def card_and_html(run_dir: Path) -> tuple[dict, str]:
    return json.loads((run_dir / "card.json").read_text()), (run_dir / "card.html").read_text()


@pytest.fixture(params=["offline_run", "rich_run"])
def any_run(request) -> Path:
    return request.getfixturevalue(request.param)


def test_the_page_is_well_formed_html5(any_run):
    _, html = card_and_html(any_run)
    page = parse_page(html)
    assert page.doctype is not None and page.doctype.lower() == "doctype html"
    assert page.problems == [] and page.stack == []
    assert page.tags["html"] == page.tags["head"] == page.tags["body"] == page.tags["title"] == 1
    assert page.tags["h1"] == 1 and page.tags["main"] == 1
    assert re.search(r'<html lang="en">\s*<head>\s*<meta charset="utf-8">', html)


def test_the_page_fetches_nothing(any_run):
    _, html = card_and_html(any_run)
    assert "http://" not in html and "https://" not in html
    assert "<link" not in html and "<script" not in html and "url(" not in html and "@import" not in html
    sources = re.findall(r"""\bsrc\s*=\s*["']?([^"'\s>]*)""", html)
    assert sources and all(s.startswith("data:image/svg+xml;base64,") for s in sources)
    for src in sources:
        svg = base64.b64decode(src.split(",", 1)[1]).decode()
        # An SVG can fetch too: no linked images, no stylesheets, no links anywhere.
        assert "<image" not in svg and "<script" not in svg and "@import" not in svg
        assert not re.search(r'href="(?!#)', svg)
    links = re.findall(r"""\bhref\s*=\s*["']?([^"'\s>]*)""", html)
    inside = [link for link in links if link.startswith("#")]
    assert inside and all(f'id="{link[1:]}"' in html for link in inside)
    # Every other link is a conversation's page written beside the card, and lands on
    # an element of it.
    for link in set(links) - set(inside):
        path, _, anchor = link.partition("#")
        assert re.fullmatch(r"conversations/[0-9a-f]+\.html", path), link
        page = (any_run / path).read_text()
        assert anchor and f'id="{anchor}"' in page, link


def test_every_number_of_card_json_is_on_the_page(any_run):
    card, html = card_and_html(any_run)
    assert missing_numbers(card, parse_page(html).text) == {}


def test_the_number_check_notices_a_missing_section(rich_run):
    # The check above must be able to fail: drop the per-judge tables and it does.
    card, html = card_and_html(rich_run)
    text = parse_page(html).text
    start = text.index("By judge")
    cut = text[:start] + text[text.index("Agreement between judges", start) :]
    assert missing_numbers(card, cut)


def test_plots_are_embedded_as_svg_and_written_as_2x_png_files(offline_run):
    _, html = card_and_html(offline_run)
    page = parse_page(html)
    files = {p.name: p.read_bytes() for p in (offline_run / "plots").glob("*.png")}
    assert set(files) == {"ratings.png", "scores.png", "risk.png", "chatbots.png", "differences.png"}
    assert all(png.startswith(PNG_SIGNATURE) for png in files.values())
    # 2×: a 6.4-inch figure at 200 dpi is over 1,000 pixels wide.
    widths = [int.from_bytes(png[16:20], "big") for png in files.values()]
    assert min(widths) > 1000
    embedded = [base64.b64decode((img["src"] or "").split(",", 1)[1]) for img in page.images]
    assert len(embedded) == len(files)
    assert all(svg.lstrip().startswith(b"<?xml") and b"<svg" in svg for svg in embedded)
    assert all(img["alt"] for img in page.images)


def test_header_names_versions_offline_label_counts_judges_seeds_and_cost(offline_run):
    card, html = card_and_html(offline_run)
    page = parse_page(html)
    header = page.text[: page.text.index("How to read this card")]
    assert 'class="offline"' in html and "Offline run:" in header
    for key in ("rubric", "personas", "user_prompts", "judge_prompts"):
        v = card["versions"][key]
        assert f"{v['name']} {v['version']}" in header
    assert f"{card['counts']['conversations_complete']} complete" in header
    assert f"mean {card['counts']['mean_turns']}" in header
    assert "offline/lexical-judge × 1 instance" in header
    assert "Seeds 1" in header.replace(":", "")
    assert f"${card['accounting']['total']['cost_usd']}" in header


def test_every_harmful_rating_is_listed_with_its_reasoning_escaped(rich_run):
    card, html = card_and_html(rich_run)
    harmful = [h for bot in card["chatbots"] for h in bot["harmful"]]
    text = parse_page(html).text
    assert any(h["reasoning"] == MARKUP_REASONING for h in harmful)
    for h in harmful:
        assert h["conversation_id"] in text and h["reasoning"] in text
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>bold</b>" not in html


def test_failed_work_is_listed_and_not_scored(rich_run):
    card, html = card_and_html(rich_run)
    text = parse_page(html).text
    assert {f["id"] for f in card["failures"]} == {"failed-conversation", "failed-judgement"}
    assert "Failed work (not scored)" in text and "HTTP 503 after 3 attempts" in text


def test_vera_card_rewrites_the_page_and_tells_where_it_is(offline_run):
    (offline_run / "card.html").unlink()
    out = run_vera("card", str(offline_run))
    assert "Dimension score [CI]" in out and f"HTML card: {offline_run / 'card.html'}" in out
    assert "## " not in out  # a terminal rendering, not raw Markdown
    assert (offline_run / "card.html").is_file()
    only = run_vera("card", str(offline_run), "--html")
    assert only.strip() == str(offline_run / "card.html")


def test_a_one_chatbot_card_has_no_comparison(tmp_path):
    out = tmp_path / "one"
    run_vera(
        "run", "--providers", "offline/best-practice", "--out", str(out), "--limit-personas", "8", "--quiet"
    )
    card, html = card_and_html(out)
    assert card["comparisons"] == [] and "Comparisons (paired)" not in html
    assert not (out / "plots" / "chatbots.png").exists()
    assert missing_numbers(card, parse_page(html).text) == {}


def test_numbers_are_read_back_as_the_card_formats_them():
    text = "a 1,234.5 b-7 c -2.5 [3.7, 4.6] sha 6d1e06 2,000 resamples"
    assert numbers_in(text) == {"1,234.5": 1, "-2.5": 1, "3.7": 1, "4.6": 1, "2,000": 1}
