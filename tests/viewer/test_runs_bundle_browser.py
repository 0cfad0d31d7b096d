"""In Chromium, desktop (1400×900) and phone (400×850): `vera view FOLDER`'s runs list
opens a run and comes back; a bundle opened from disk (file://, no server) lists,
searches, filters, opens a conversation and goes back, answering every list query as
the server does; no console error, no sideways scroll, the run's markup never runs."""

from __future__ import annotations

import re
import signal
from urllib.parse import urlencode

import pytest

from vera.viewer.bundle import page_file
from vera.viewer.catalogue import Catalogue, Query

from .conftest import FAILED_ID, MARKUP_ID, SECOND_JUDGE, start_view
from .shots import shot
from .test_browser import browser, no_page_scroll  # noqa: F401 - fixtures
from .test_bundle import bundled  # noqa: F401 - fixture
from .test_runs_folder import folder  # noqa: F401 - fixture

SIZES = [(1400, 900), (400, 850)]


def summary_is(page, pattern: str) -> str:
    """Wait for the summary line to match (a locator assertion: no script is evaluated in
    the page, whose policy forbids it), and return it."""
    from playwright.sync_api import expect

    expect(page.locator("#summary")).to_have_text(re.compile(pattern), timeout=30_000)
    return page.inner_text("#summary")


def expect_text(page, selector: str, text: str) -> None:
    from playwright.sync_api import expect

    expect(page.locator(selector)).to_have_text(text, timeout=30_000)


def wait_for_list(page) -> str:
    return summary_is(page, r"^(Conversations|No conversation)")


@pytest.fixture
def page_of(browser):  # noqa: F811 - the fixture imported above
    """page_of(width, height) → a page recording console errors, page errors and dialogs."""
    contexts = []

    def make(width: int, height: int):
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.problems = []
        page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: page.problems.append(str(e)))
        page.on("dialog", lambda d: (page.problems.append(f"dialog: {d.message}"), d.dismiss()))
        return page

    yield make
    for c in contexts:
        c.close()


@pytest.fixture(scope="module")
def folder_url(folder):  # noqa: F811
    proc, url = start_view(str(folder))
    yield url
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_runs_list_opens_a_run_and_comes_back(page_of, folder_url, width, height, tmp_path):
    page = page_of(width, height)
    page.goto(folder_url)
    expect_text(page, "#runs-summary", "3 run(s)")
    assert page.locator("#run-list tbody tr").count() == 3
    text = page.inner_text("#run-list")
    assert "partial" in text and "4 of 10 conversations" in text and "not scored" in text
    assert "unreadable" in text
    assert no_page_scroll(page)
    shot(page, tmp_path, f"runs-list-{width}", full_page=True)
    # find a run by what it is called
    page.fill('#run-filters [name="q"]', "partial")
    assert page.locator("#run-list tbody tr").count() == 1
    page.fill('#run-filters [name="q"]', "")
    page.locator("#run-list tbody tr").filter(has_text="a/scored").locator("a.run-link").click()
    summary = wait_for_list(page)
    assert summary.startswith("Conversations 1–") and "/r/" in page.url
    assert no_page_scroll(page)
    page.click("a.home")
    expect_text(page, "#runs-summary", "3 run(s)")
    assert page.problems == []


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_bundle_opened_from_disk_lists_searches_filters_and_opens_pages(
    page_of,
    bundled,  # noqa: F811
    width,
    height,
    tmp_path,
):
    out, _, _ = bundled
    page = page_of(width, height)
    index = (out / "index.html").as_uri()
    page.goto(index)
    summary = wait_for_list(page)
    assert summary.startswith("Conversations 1–") and page.url.startswith("file://")
    assert no_page_scroll(page)
    shot(page, tmp_path, f"bundle-list-{width}", full_page=False)
    # a conversation, and back
    page.locator("#list tbody td.id a").first.click()
    page.wait_for_load_state()
    assert "/runs/0/conversations/" in page.url and page.locator("#transcript").count() == 1
    assert page.locator("nav.steps").count() == 1 and no_page_scroll(page)
    shot(page, tmp_path, f"bundle-conversation-{width}")
    page.go_back()
    wait_for_list(page)
    # search: the phone starts with the filters folded
    if not page.evaluate("document.getElementById('filter-box').open"):
        page.click("#filter-box > summary")
    page.fill('#filters [name="q"]', "feels pointless")
    page.press('#filters [name="q"]', "Enter")
    summary_is(page, "containing")
    assert page.locator("#list tbody td.id a").all_inner_texts() == [MARKUP_ID]
    assert page.locator("#list mark").count() >= 1 and "q=feels+pointless" in page.url
    # a filter, then back to the search by the browser's Back
    page.fill('#filters [name="q"]', "")
    page.press('#filters [name="q"]', "Enter")
    wait_for_list(page)
    page.select_option("select[name=status]", "failed")
    summary_is(page, " of 1$")
    assert page.locator("#list tbody td.id a").all_inner_texts() == [FAILED_ID]
    page.go_back()
    summary_is(page, r" of (?!1$)\d+$")
    # the grid, the comparison and the card open from disk too
    for link, sign in (("#grid-link", "#grid"), ("#compare-link", "#scores")):
        page.goto(index)
        wait_for_list(page)
        page.click(link)
        page.wait_for_load_state()
        assert page.locator(sign).count() == 1, link
        assert no_page_scroll(page), link
    assert page.evaluate("window.__xss === undefined")
    assert page.problems == []


@pytest.mark.slow
def test_a_bundle_list_loads_the_search_passages_only_when_it_searches(page_of, bundled):  # noqa: F811
    """data/search.js is most of a bundle (22 MB of 24 for 4,000 conversations): the list
    opens, pages and filters without it, and loads it once, on its first search."""
    out, _, _ = bundled
    page = page_of(1400, 900)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url.rsplit("/", 2)[-2] + "/" + r.url.rsplit("/", 1)[-1]))
    index = (out / "index.html").as_uri()
    page.goto(index)
    wait_for_list(page)
    page.select_option("select[name=status]", "failed")
    summary_is(page, " of 1$")
    assert "data/search.js" not in asked and page.evaluate("window.veraBundleSearch === undefined")
    page.fill('#filters [name="q"]', "feels pointless")
    page.press('#filters [name="q"]', "Enter")
    summary_is(page, "^No conversation contains")  # the markup one is not a failed one
    page.select_option("select[name=status]", "")
    summary_is(page, "containing")
    assert page.locator("#list tbody td.id a").all_inner_texts() == [MARKUP_ID]
    page.fill('#filters [name="q"]', "THE")
    page.press('#filters [name="q"]', "Enter")
    summary_is(page, "containing")
    assert asked.count("data/search.js") == 1
    # a search in the address, opened afresh, loads it too
    page.goto(f"{index}?q=pointless")
    summary_is(page, "containing")
    assert page.locator("#list tbody td.id a").count() >= 1
    assert page.problems == []


QUERIES = [
    {},
    {"sort": "id"},
    {"desc": "1"},
    {"sort": "seed"},
    {"sort": "risk", "desc": "1"},
    {"sort": "turns"},
    {"sort": "status", "per_page": "5", "page": "2"},
    {"status": "failed"},
    {"status": "judgement failed"},
    {"status": "not judged"},
    {"judge": SECOND_JUDGE},
    {"dimension": "Guides to Human Care", "rating": "High Potential for Harm"},
    {"rating": "Best Practice", "judge": SECOND_JUDGE},
    {"differ": "judges"},
    {"differ": "runs"},
    {"q": "pointless"},
    {"q": "THE", "per_page": "3", "page": "2"},
    {"chatbot": "offline/best-practice", "sort": "chatbot"},
    {"per_page": "3", "page": "4"},
    {"page": "99"},
]


@pytest.mark.slow
def test_the_bundle_answers_every_list_query_as_the_server_does(page_of, bundled, viewer_run):  # noqa: F811
    out, _, _ = bundled
    catalogue = Catalogue.open([viewer_run])
    page = page_of(1400, 900)
    page.goto((out / "index.html").as_uri())
    wait_for_list(page)
    for params in QUERIES:
        want = catalogue.query(Query.from_params(params))
        for row in want["rows"]:
            row["seed"] = str(row["seed"])  # seeds may pass 2**53: text in the bundle
        got = page.evaluate("q => window.veraBundle.get('api/conversations?' + q)", urlencode(params))
        assert got == want, params
    bad = page.evaluate("window.veraBundle.get('api/conversations?sort=nope')")
    assert "sort" in bad["error"]
    assert page.problems == []


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_bundled_page_steps_within_the_filtered_list_it_was_opened_from(
    page_of,
    bundled,  # noqa: F811
    viewer_run,
    width,
    height,
):
    out, _, _ = bundled
    params = {"chatbot": "offline/risk-ignoring", "sort": "id", "per_page": "2"}
    order = [
        r["id"]
        for r in Catalogue.open([viewer_run]).query(Query.from_params({**params, "per_page": "200"}))["rows"]
    ]
    page = page_of(width, height)
    page.goto(f"{(out / 'index.html').as_uri()}?{urlencode(params)}")
    wait_for_list(page)
    page.locator("#list tbody td.id a").first.click()
    expect_text(page, "nav.steps a:not([rel])", f"Conversation 1 of {len(order)} in this filtered list")
    page.click("nav.steps a[rel=next]")
    expect_text(page, "nav.steps a:not([rel])", f"Conversation 2 of {len(order)} in this filtered list")
    assert page_file(order[1]) in page.url and "chatbot=offline%2Frisk-ignoring" in page.url
    page.click("nav.steps a[rel=next]")
    expect_text(page, "nav.steps a:not([rel])", f"Conversation 3 of {len(order)} in this filtered list")
    page.keyboard.press("k")  # the viewer's keys work from disk too
    expect_text(page, "nav.steps a:not([rel])", f"Conversation 2 of {len(order)} in this filtered list")
    page.keyboard.press("j")
    expect_text(page, "nav.steps a:not([rel])", f"Conversation 3 of {len(order)} in this filtered list")
    page.click("nav.steps a:not([rel])")  # back to the list, at the page holding it
    summary_is(page, rf"^Conversations 3–4 of {len(order)}$")
    assert page.problems == [] and no_page_scroll(page)
