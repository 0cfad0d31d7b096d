"""The viewer's comparison page: `vera compare` over the runs being viewed, each score
row linking to the list of exactly the conversations behind it."""

from __future__ import annotations

import json
import re
import shutil
import signal
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest

from vera.report import compare_runs
from vera.store import open_run
from vera.viewer.catalogue import Catalogue, Query
from vera.viewer.compare import comparable, compare_page, unit_links

from . import test_browser
from .conftest import start_view
from .shots import shot
from .test_browser import wait_for_list

browser = test_browser.browser
page_at = test_browser.page_at
viewer_url = test_browser.viewer_url

ROW_LINK = re.compile(r'<th scope="row"><a href="([^"]+)">([^<]*)</a></th>')


def test_each_score_row_links_to_the_list_of_its_own_conversations(viewer_run):
    catalogue = Catalogue.open([viewer_run])
    status, html = compare_page(catalogue)
    assert status == 200
    links = {unescape(name): unescape(href) for href, name in ROW_LINK.findall(html)}
    result = compare_runs([viewer_run])
    assert set(links) == {u.unit for u in result.units} and len(links) >= 2
    heads = [h for h, _ in open_run(viewer_run).conversations.values()]
    for unit in result.units:
        params = {k: v[0] for k, v in parse_qs(urlsplit(links[unit.unit]).query).items()}
        assert params == {"run": "0", "chatbot": unit.chatbot}
        listed = catalogue.listed(Query.from_params(params))
        # Exactly that chatbot's conversations: the ones its numbers are made of, and
        # its failed ones, which the list shows and the scores leave out.
        assert sorted(listed["id"].to_list()) == sorted(h.id for h in heads if h.chatbot == unit.chatbot)
        assert unit.n_conversations <= listed.height


def test_by_seed_links_name_the_seed_too(viewer_run):
    catalogue = Catalogue.open([viewer_run])
    result = compare_runs([viewer_run], by_seed=True)
    for unit in result.units:
        params = parse_qs(urlsplit(unit_links(result, catalogue)[unit.unit]).query)
        assert params["seed"] == [str(unit.seed)]


def test_runs_that_cannot_be_compared_get_the_reason_not_a_comparison(viewer_run, tmp_path):
    catalogue = Catalogue.open([viewer_run])
    status, html = compare_page(Catalogue([*catalogue.runs, *catalogue.runs]))
    assert status == 409 and "same run directory is given twice" in html


@pytest.mark.slow
def test_a_score_row_opens_the_list_of_its_conversations_in_the_browser(page_at, viewer_url, tmp_path):
    page = page_at(1400)
    page.goto(viewer_url)
    wait_for_list(page)
    page.click("#compare-link")
    page.wait_for_selector("#scores table")
    page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
    link = page.locator("#scores table th[scope=row] a").first
    chatbot = link.inner_text()
    link.click()
    summary = wait_for_list(page)
    assert summary.startswith("Conversations")
    assert parse_qs(urlsplit(page.url).query)["chatbot"] == [chatbot]
    assert page.locator("#list tbody td.id a").count() > 0
    page.screenshot(path=str(tmp_path / "list.png"), full_page=True)


def incomparable_pair(viewer_run, tmp_path):
    """The run, and a copy whose manifest names another rubric version."""
    other = tmp_path / "other"
    shutil.copytree(viewer_run, other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["run_id"] = "other-run"
    manifest["rubric"]["version"] = "9.9"
    manifest["rubric"]["sha256"] = "0" * 64
    (other / "manifest.json").write_text(json.dumps(manifest))
    return [viewer_run, other]


def test_incomparable_runs_get_a_page_that_says_why_in_words(viewer_run, tmp_path):
    catalogue = Catalogue.open(incomparable_pair(viewer_run, tmp_path))
    reasons = comparable(catalogue)
    assert len(reasons) == 1 and reasons[0].startswith("the rubric differs: ")
    status, html = compare_page(catalogue)
    assert status == 409
    assert "These runs cannot be compared" in html and "<style>" in html
    assert "--" not in unescape(html.split("<body>")[1])  # no command-line flag
    assert '<a href="index.html">← All conversations</a>' in html


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), [(1400, 900), (400, 850)])
def test_an_incomparable_pair_offers_no_link_and_the_page_says_why(
    browser, viewer_run, tmp_path, width, height
):
    proc, url = start_view(*map(str, incomparable_pair(viewer_run, tmp_path)))
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(url)
        wait_for_list(page)
        page.wait_for_selector("#compare-link.not-offered")
        assert page.locator("a#compare-link").count() == 0
        assert "No comparison: the rubric differs" in page.inner_text(".views")
        page.goto(url + "compare")
        assert page.inner_text("h1") == "These runs cannot be compared"
        assert test_browser.no_page_scroll(page)
        shot(page, tmp_path, f"compare-refused-{width}")
        page.get_by_role("link", name="← All conversations").click()
        wait_for_list(page)
    finally:
        context.close()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), [(1400, 900), (400, 850)])
def test_the_comparison_links_back(browser, viewer_url, tmp_path, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(viewer_url + "compare")
        page.wait_for_selector("#scores table", timeout=60_000)
        shot(page, tmp_path, f"compare-{width}")
        page.get_by_role("link", name="← All conversations").first.click()
        wait_for_list(page)
    finally:
        context.close()
