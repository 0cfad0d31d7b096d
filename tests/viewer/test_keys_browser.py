"""Keyboard shortcuts in Chromium, desktop and phone: the list (? help, / search, n / p
pages, o open) and the review (Ctrl+Enter saves, n goes on)."""

from __future__ import annotations

import shutil

import pytest

from vera.records import BEST_PRACTICE as BP
from vera.store import read_human_ratings
from vera.viewer.review import ReviewSession

from . import test_browser
from .conftest import start_review, stop
from .shots import shot
from .test_browser import wait_for_list
from .test_review_browser import wait_for_conversation

browser = test_browser.browser
viewer_url = test_browser.viewer_url
SIZES = [(1400, 900), (400, 850)]


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_lists_shortcuts(browser, viewer_url, tmp_path, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(viewer_url + "?per_page=25&sort=id")
        assert wait_for_list(page).startswith("Conversations 1–25 of")
        page.keyboard.press("?")
        assert page.get_by_role("dialog", name="Keyboard shortcuts").is_visible()
        assert test_browser.no_page_scroll(page)
        shot(page, tmp_path, f"list-keys-{width}")
        page.keyboard.press("Escape")
        assert page.locator("#keys").is_hidden()
        page.keyboard.press("n")
        page.wait_for_function(
            "() => document.querySelector('#summary').textContent.startsWith('Conversations 26')"
        )
        page.keyboard.press("p")
        page.wait_for_function(
            "() => document.querySelector('#summary').textContent.startsWith('Conversations 1–')"
        )
        page.keyboard.press("/")
        assert page.evaluate("document.activeElement.name") == "q"
        page.keyboard.type("n")  # typing in the search box is not a shortcut
        assert page.url.endswith("sort=id")
        # Take the letter back: leaving a changed box would apply its search and replace
        # the list while "o" below looks for its first row.
        page.keyboard.press("Backspace")
        page.keyboard.press("Escape")
        assert page.evaluate("document.activeElement.name") != "q"
        first = page.locator("#list tbody td.id a").first.inner_text()
        page.keyboard.press("o")
        page.wait_for_url(f"**/conversations/{first}.html*")
    finally:
        context.close()


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_reviews_save_and_next_keys(browser, offline_run, tmp_path, width, height):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    review = ReviewSession.open(run, "Ada", size=3)
    proc, url = start_review(str(run), "--rater", "Ada", "--size", "3")
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(url)
        wait_for_conversation(page, 1, 3)
        for i, d in enumerate(review.dimensions):
            page.get_by_role("group", name=f"{i + 1}. {d}").get_by_role("radio", name=BP).check()
        page.keyboard.press("Control+Enter")
        page.wait_for_function("() => document.querySelector('#status').textContent.startsWith('Saved:')")
        assert [r.conversation_id for r in read_human_ratings(run)] == review.order[:1]
        page.keyboard.press("n")
        wait_for_conversation(page, 2, 3)
        page.keyboard.press("?")
        assert page.get_by_role("dialog", name="Keyboard shortcuts").is_visible()
        assert test_browser.no_page_scroll(page)
        shot(page, tmp_path, f"review-keys-{width}")
    finally:
        context.close()
        stop(proc)
