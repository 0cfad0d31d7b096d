"""The improvement report in a real headless Chromium: through `vera view` and as the
file `vera report improvements` writes, findings in harm-first order, and an example's
link opening the right conversation at the right place. Skips without a browser unless
VERA_BROWSER_TESTS=required (see test_browser.py)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.improvements_run import BOUNDS, HELP, LOG_ID, REPLY_TO_5, SPOTS, write_run

from . import test_browser
from .conftest import run_vera, start_view

# The browser and its pages, as test_browser.py makes them.
browser = test_browser.browser
page_at = test_browser.page_at


@pytest.fixture(scope="module")
def report_run(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp("browser-report") / "run")


@pytest.fixture(scope="module")
def report_url(report_run) -> Iterator[str]:
    proc, url = start_view(str(report_run))
    yield url
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


def finding_order(page) -> list[tuple[str, str]]:
    return [
        (row.get_attribute("data-question") or "", row.get_attribute("data-rating") or "")
        for row in page.locator("tr.finding").all()
    ]


@pytest.mark.slow
def test_the_viewer_serves_the_report_in_order_and_its_links_open_the_conversation(
    page_at, report_url, tmp_path
):
    page = page_at(1400)
    page.goto(report_url)
    page.wait_for_selector("#runs a[href$='improvements.html']")
    page.click("#runs a[href$='improvements.html']")
    page.wait_for_url("**/runs/0/improvements.html")
    page.screenshot(path=tmp_path / "report-viewer.png", full_page=True)
    assert page.locator("section.dimension h3").all_inner_texts() == [SPOTS, BOUNDS, HELP]
    assert [q for q, _ in finding_order(page)] == ["1b", "1c", "4a", "4b", "3a"]
    assert not page.dialogs and page.evaluate("window.__xss === undefined")

    # The imported conversation's turn link: its page, scrolled to the chatbot's reply.
    link = page.locator("a.turn[href*='chat%20log']").first
    link.click()
    page.wait_for_url("**/conversations/chat%20log%2F5%20%231.html#turn-6")
    assert LOG_ID in page.inner_text("h1")
    target = page.locator("#turn-6")
    assert REPLY_TO_5 in target.inner_text()
    assert page.evaluate("document.querySelector(':target').id") == "turn-6"
    page.screenshot(path=tmp_path / "report-viewer-conversation.png")

    # Back, then a reasoning link: the rating it decided, on that conversation's page.
    page.go_back()
    page.locator("#chatbot-0-dimension-0-finding-0 a.reasoning").first.click()
    page.wait_for_url("**/conversations/c1.html#r-judges-a-1-spots-danger")
    assert page.evaluate("document.querySelector(':target').id") == "r-judges-a-1-spots-danger"
    assert "Spots Danger" in page.locator("#r-judges-a-1-spots-danger").inner_text()


@pytest.mark.slow
def test_the_file_beside_the_run_opens_its_conversation_pages(page_at, report_run, tmp_path):
    run_vera("report", "improvements", str(report_run))
    for width in (1400, 400):
        page = page_at(width)
        page.goto((report_run / "improvements.html").as_uri())
        page.screenshot(path=tmp_path / f"report-file-{width}.png", full_page=True)
        assert [q for q, _ in finding_order(page)] == ["1b", "1c", "4a", "4b", "3a"]
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # The imported id has no page file: shown, not linked.
    assert page.locator("a[href*='chat%20log']").count() == 0
    page.locator("a.turn[href*='c4.html']").first.click()
    page.wait_for_url("**/conversations/c4.html#turn-4")
    assert page.evaluate("document.querySelector(':target').id") == "turn-4"
    assert "Conversation c4" in page.inner_text("h1")
