"""compare.html (`vera compare --html`) in a real headless Chromium, as the card is in
test_card_browser.py: at 1400 and 400 CSS pixels the page never scrolls sideways, both
charts are drawn, and the scores on screen are the comparison's JSON. Screenshots go to
each test's tmp folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..viewer.conftest import invoke_vera
from ..viewer.test_browser import browser, page_at  # noqa: F401  (fixtures)


@pytest.fixture
def compared(offline_run, tmp_path) -> tuple[Path, dict]:
    page_path = tmp_path / "compare.html"
    args = ["compare", str(offline_run), "--resamples", "200"]
    made = invoke_vera(*args, "--html", str(page_path))
    assert made.exit_code == 0, made.output
    data = invoke_vera(*args, "--json", "-")
    assert data.exit_code == 0, data.output
    return page_path, json.loads(data.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 400])
def test_the_comparison_fits_the_screen_and_shows_its_numbers(width, compared, page_at, tmp_path):  # noqa: F811
    page_path, data = compared
    page = page_at(width)
    page.goto(page_path.as_uri())
    page.screenshot(path=tmp_path / f"compare-{width}.png", full_page=True)
    scroll, inner = page.evaluate("[document.scrollingElement.scrollWidth, innerWidth]")
    assert scroll <= inner, f"the page scrolls sideways at {width}px: {scroll} > {inner}"
    # Both charts decoded and drawn with a size, not broken images.
    drawn = page.evaluate(
        "[...document.querySelectorAll('#charts img')].map(i => i.complete && i.naturalWidth > 0"
        " && i.getBoundingClientRect().width > 0)"
    )
    assert drawn == [True, True]
    # The offline warning is on screen before anything else is read.
    banner = page.locator("p.offline")
    box = banner.bounding_box()
    assert banner.is_visible() and box is not None and box["y"] < 900
    scores = page.inner_text("#scores")
    for unit in data["units"]:
        assert unit["chatbot"] in scores
        assert f"{unit['overall']['score']:.1f}" in scores
    assert page.title() == "vera comparison"
