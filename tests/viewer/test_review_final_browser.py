"""`vera review` in Chromium at desktop and phone widths: each dimension's guide opens in
place, a saved rating can be changed until the judge's ratings are shown, and then the
form is final (and the API refuses a save the page could still try). Skips without a
browser unless VERA_BROWSER_TESTS=required (see test_browser.py)."""

from __future__ import annotations

import shutil

import pytest

from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.rubric import run_rubric
from vera.store import latest_human_ratings, open_run, read_human_ratings
from vera.viewer.review import ReviewSession

from .conftest import start_review, stop
from .shots import shot
from .test_browser import browser, no_page_scroll  # noqa: F401  (fixture)
from .test_review_browser import wait_for_conversation

SIZES = [(1400, 900), (400, 850)]


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_guide_opens_in_place_and_a_rating_changes_until_the_judge_is_shown(
    browser,  # noqa: F811
    offline_run,
    tmp_path,
    width,
    height,
):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    review = ReviewSession.open(run, "Ada", size=4)
    dims = review.dimensions
    rubric, _ = run_rubric(open_run(run).manifest, run)
    assert rubric is not None
    first_red = next(q.text for q in rubric.questions if q.dimension == dims[0] and q.severity == "Red")
    proc, url = start_review(str(run), "--rater", "Ada", "--size", "4")
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(url)
        wait_for_conversation(page, 1, 4)
        group = page.get_by_role("group", name=f"1. {dims[0]}")
        guide = group.locator("details.guide")
        assert not guide.locator(".meaning").first.is_visible()  # folded until asked for
        guide.get_by_text("What each rating means").click()
        assert guide.locator(".meaning").count() == 4
        assert first_red in guide.inner_text() and guide.locator(".meaning").first.is_visible()
        assert page.url == url  # the page did not change
        assert no_page_scroll(page)
        guide.locator("summary").scroll_into_view_if_needed()
        shot(page, tmp_path, f"review-guide-{width}")

        for i, d in enumerate(dims):
            page.get_by_role("group", name=f"{i + 1}. {d}").get_by_role("radio", name=BP).check()
        page.get_by_role("button", name="Save ratings").click()
        page.wait_for_function("() => document.querySelector('#status').textContent.startsWith('Saved:')")
        # The mis-click put right: the same form, saved again.
        group.get_by_role("radio", name=HPH).check()
        page.get_by_role("button", name="Save changes").click()
        page.wait_for_function(
            "() => document.querySelector('#status').textContent.startsWith('Saved your changes')"
        )
        latest = latest_human_ratings(read_human_ratings(run))
        assert len(latest) == 1 and latest[0].ratings[dims[0]] == HPH
        assert "until you show the judge's ratings" in page.inner_text("#change-hint")

        page.get_by_role("button", name="Show the judge's ratings").click()
        page.wait_for_selector("#judge-table tbody tr")
        assert page.get_by_role("button", name="Save changes").is_disabled()
        assert group.get_by_role("radio", name=BP).is_disabled()
        assert "final" in page.inner_text("#change-hint")
        assert no_page_scroll(page)
        shot(page, tmp_path, f"review-final-{width}")
        # The page's own script cannot slip a save past it either: the API refuses it.
        token = page.locator('meta[name="vera-token"]').get_attribute("content")
        status = page.evaluate(
            """([token, body]) => fetch('/api/ratings', {method: 'POST', body: JSON.stringify(body),
                 headers: {'Content-Type': 'application/json', 'X-Vera-Token': token}}).then(r => r.status)""",
            [token, {"conversation_id": review.order[0], "ratings": dict.fromkeys(dims, BP)}],
        )
        assert status == 409
    finally:
        context.close()
        stop(proc)
    assert len(read_human_ratings(run)) == 2
