"""The list's "Download this list (CSV)" in Chromium, desktop and phone: it carries the
filters, and what it downloads is the filtered list."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from vera.viewer.catalogue import Catalogue, Query

from . import test_browser
from .conftest import HPH, MARKUP_ID
from .shots import shot
from .test_browser import wait_for_list

browser = test_browser.browser
viewer_url = test_browser.viewer_url


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), [(1400, 900), (400, 850)])
def test_the_csv_link_downloads_the_filtered_list(browser, viewer_url, viewer_run, tmp_path, width, height):
    params = {"dimension": "Guides to Human Care", "rating": HPH}
    expected = Catalogue.open([viewer_run]).listed(Query.from_params(params))["id"].to_list()
    context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    page = context.new_page()
    try:
        page.goto(f"{viewer_url}?{urlencode(params)}")
        wait_for_list(page)
        link = page.get_by_role("link", name="Download this list (CSV)")
        assert link.get_attribute("href") == f"export.csv?{urlencode(params)}"
        with page.expect_download() as info:
            link.click()
        lines = info.value.path().read_text().splitlines()
        assert [line.split(",")[1] for line in lines[1:]] == expected
        assert test_browser.no_page_scroll(page)
        shot(page, tmp_path, f"list-{width}")
    finally:
        context.close()


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height"), [(1400, 900), (400, 850)])
def test_the_ratings_differ_filter(browser, viewer_url, tmp_path, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(viewer_url)
        wait_for_list(page)
        page.locator("#filter-box summary").click() if width < 760 else None
        page.get_by_label("Ratings differ").select_option("judges")
        page.wait_for_function(
            "() => document.querySelector('#summary').textContent === 'Conversations 1–1 of 1'"
        )
        assert page.locator("#list tbody td.id a").all_inner_texts() == [MARKUP_ID]
        assert "differ=judges" in page.url
        assert (
            page.get_by_role("link", name="Download this list (CSV)")
            .get_attribute("href")
            .endswith("differ=judges")
        )
        assert test_browser.no_page_scroll(page)
    finally:
        context.close()
