"""The list's "Download this list (CSV)" in Chromium, desktop and phone: it carries the
filters, and what it downloads is the filtered list."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from vera.viewer.catalogue import Catalogue, Query

from . import test_browser
from .conftest import HPH
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
        assert link.get_attribute("href") == f"/export.csv?{urlencode(params)}"
        with page.expect_download() as info:
            link.click()
        lines = info.value.path().read_text().splitlines()
        assert [line.split(",")[1] for line in lines[1:]] == expected
        assert test_browser.no_page_scroll(page)
        shot(page, tmp_path, f"list-{width}")
    finally:
        context.close()
