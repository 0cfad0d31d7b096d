"""`vera review` in Chromium when something goes wrong, as it does for a rater: the same
conversation open in two tabs, a tab closed with the form half filled, a save the disk
refuses. In each the rater must see what happened, where they are looking, and no rating
may change without their knowing. Skips without a browser unless
VERA_BROWSER_TESTS=required (see test_browser.py)."""

from __future__ import annotations

import shutil

import pytest

from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.store import latest_human_ratings, read_human_ratings
from vera.viewer.review import ReviewSession

from .conftest import start_review, stop
from .shots import shot
from .test_browser import browser, no_page_scroll  # noqa: F401  (fixture)
from .test_review_browser import wait_for_conversation

SIZES = [(1400, 900), (390, 844)]


def rate_all(page, dims: tuple[str, ...], rating: str) -> None:
    for i, d in enumerate(dims):
        page.get_by_role("group", name=f"{i + 1}. {d}").get_by_role("radio", name=rating).check()


def status_says(page, start: str) -> None:
    page.wait_for_function("s => document.querySelector('#status').textContent.startsWith(s)", arg=start)


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_second_tab_does_not_replace_the_first_tabs_rating_unseen(
    browser,  # noqa: F811
    offline_run,
    tmp_path,
    width,
    height,
):
    # Before: tab B's save replaced tab A's Best Practice with High Potential for Harm and
    # said "Saved your changes"; the calibrated score moved with a rating nobody meant.
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    dims = ReviewSession.open(run, "Ada", size=4).dimensions
    proc, url = start_review(str(run), "--rater", "Ada", "--size", "4")
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        a, b = context.new_page(), context.new_page()
        for page in (a, b):
            page.goto(url)
            wait_for_conversation(page, 1, 4)
        rate_all(a, dims, BP)
        a.get_by_role("button", name="Save ratings").click()
        status_says(a, "Saved:")

        rate_all(b, dims, HPH)
        b.get_by_role("button", name="Save ratings").click()
        status_says(b, "Not saved: you have rated this conversation already, in another tab or window")
        assert f"{dims[0]}: {BP}" in b.inner_text("#status")
        assert in_sight(b, "#form-status")
        assert [r.ratings[dims[0]] for r in read_human_ratings(run)] == [BP]
        # The rater chooses: Next keeps it, Save changes replaces it.
        assert b.get_by_role("button", name="Next conversation").is_visible()
        assert no_page_scroll(b)
        shot(b, tmp_path, f"review-two-tabs-{width}")
        b.get_by_role("button", name="Save changes").click()
        status_says(b, "Saved your changes")
        latest = latest_human_ratings(read_human_ratings(run))
        assert len(latest) == 1 and latest[0].ratings[dims[0]] == HPH
    finally:
        context.close()
        stop(proc)


def in_sight(page, selector: str) -> bool:
    """Whether the element is shown and inside the window, where the rater is looking (to
    the pixel: scrolled to the window's edge it may end a fraction of one beyond it)."""
    return page.evaluate(
        """s => { const e = document.querySelector(s); if (!e || e.hidden) return false;
                  const r = e.getBoundingClientRect();
                  return r.height > 0 && r.top >= -1 && r.bottom <= window.innerHeight + 1; }""",
        selector,
    )


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_save_the_disk_refuses_is_said_beside_the_save_button(
    browser,  # noqa: F811
    offline_run,
    tmp_path,
    width,
    height,
):
    # Before: "Not saved: not saved: ...: Read-only file system" went to the status line
    # at the top of the page, 320 px above the window on a desktop and 3,800 px on a
    # phone; the rater, at the Save button, saw nothing happen.
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    dims = ReviewSession.open(run, "Ada", size=4).dimensions
    proc, url = start_review(str(run), "--rater", "Ada", "--size", "4")
    (run / "human_ratings.jsonl").mkdir()  # the append fails, as on a read-only or full disk
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(url)
        wait_for_conversation(page, 1, 4)
        rate_all(page, dims, BP)
        page.get_by_role("button", name="Save ratings").click()
        status_says(page, "Not saved: ")
        said = page.inner_text("#form-status")
        assert said == page.inner_text("#status") and "human_ratings.jsonl" in said
        assert not said.lower().startswith("not saved: not saved"), said
        assert in_sight(page, "#form-status")
        assert page.get_by_role("button", name="Save ratings").is_enabled()  # try again
        assert page.eval_on_selector_all("input[type=radio]:checked", "x => x.length") == len(dims)
        assert no_page_scroll(page)
        shot(page, tmp_path, f"review-not-saved-{width}")
    finally:
        context.close()
        stop(proc)


@pytest.mark.slow
def test_ratings_not_saved_are_not_dropped_without_asking(browser, offline_run, tmp_path):  # noqa: F811
    # Before: a rater halfway through a conversation (two dimensions chosen, a note
    # written) who closed or reloaded the tab, or changed a saved rating and pressed Next,
    # lost it all without a word.
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    dims = ReviewSession.open(run, "Ada", size=4).dimensions
    proc, url = start_review(str(run), "--rater", "Ada", "--size", "4")
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    asked: list[str] = []

    def stay(dialog) -> None:
        asked.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", stay)
    try:
        page.goto(url)
        wait_for_conversation(page, 1, 4)
        with page.expect_event("close"):
            page.close(run_before_unload=True)  # nothing chosen yet: it closes at once
        assert asked == []

        page = context.new_page()
        page.on("dialog", stay)
        page.goto(url)
        wait_for_conversation(page, 1, 4)
        page.get_by_role("group", name=f"1. {dims[0]}").get_by_role("radio", name=HPH).check()
        page.get_by_label("Note (optional)").fill("Missed the goodbye in turn 3.")
        page.close(run_before_unload=True)
        page.wait_for_timeout(300)
        assert asked == ["beforeunload"] and not page.is_closed()  # the rater chose to stay
        assert page.get_by_label("Note (optional)").input_value() == "Missed the goodbye in turn 3."

        rate_all(page, dims, BP)
        page.get_by_role("button", name="Save ratings").click()
        status_says(page, "Saved:")
        page.get_by_role("group", name=f"1. {dims[0]}").get_by_role("radio", name=HPH).check()
        page.get_by_role("button", name="Next conversation").click()
        assert asked == ["beforeunload", "confirm"]
        assert page.inner_text("#conversation-title") == "Conversation 1 of 4"  # stayed
        page.get_by_role("button", name="Save changes").click()
        status_says(page, "Saved your changes")
        page.get_by_role("button", name="Next conversation").click()  # saved: no question
        wait_for_conversation(page, 2, 4)
        with page.expect_event("close"):
            page.close(run_before_unload=True)
        assert asked == ["beforeunload", "confirm"]
    finally:
        context.close()
        stop(proc)
    latest = latest_human_ratings(read_human_ratings(run))
    assert len(latest) == 1 and latest[0].ratings[dims[0]] == HPH
