"""card.html in a real headless Chromium (Debian's `chromium`, driven by Playwright, as
in tests/viewer/test_browser.py): at 1400 and 400 CSS pixels the page never scrolls
sideways and the headline's first score is on screen without scrolling; its numbers
are card.json's. Screenshots go to each test's tmp folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..viewer.test_browser import browser, page_at  # noqa: F401  (fixtures)
from .test_headline import expected_headline

FOLD = 900  # the viewport height the tests use


@pytest.fixture(params=["offline_run", "rich_run"])
def card_run(request, offline_run, rich_run) -> Path:
    # Both runs are named here, not looked up on demand, so pytest makes them (through
    # vera's own event loop) before the module's browser starts Playwright's loop.
    return {"offline_run": offline_run, "rich_run": rich_run}[request.param]


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 400])
def test_the_card_fits_the_screen_and_answers_above_the_fold(width, card_run, page_at, tmp_path):  # noqa: F811
    page = page_at(width)
    page.goto((card_run / "card.html").as_uri())
    page.screenshot(path=tmp_path / f"card-{width}.png")
    page.screenshot(path=tmp_path / f"card-{width}-full.png", full_page=True)
    scroll, inner = page.evaluate("[document.scrollingElement.scrollWidth, innerWidth]")
    assert scroll <= inner, f"the page scrolls sideways at {width}px: {scroll} > {inner}"
    first = page.locator("#headline-0 .score")
    box = first.bounding_box()
    assert box is not None and box["y"] + box["height"] <= FOLD
    assert page.locator("#headline-0 .ci").is_visible()
    # The details are folded: the hashes are not on screen until opened.
    details = page.locator("details.run-details")
    assert not details.evaluate("d => d.open")
    assert not page.get_by_text("sha256", exact=False).first.is_visible()
    assert "Suicide-risk safety card" in page.title()


@pytest.mark.slow
def test_the_headline_on_screen_is_card_json(offline_run, page_at):  # noqa: F811
    card = json.loads((offline_run / "card.json").read_text())
    page = page_at(1400)
    page.goto((offline_run / "card.html").as_uri())
    for i, (bot, want) in enumerate(expected_headline(card).items()):
        box = page.locator(f"#headline-{i}")
        assert box.locator("h3").inner_text() == bot
        shown = [
            f"{box.locator('.score').inner_text()} {box.locator('.ci').inner_text()}",
            box.locator('[data-key="any_hph"]').inner_text(),
            box.locator('[data-key="conversations"]').inner_text(),
            box.locator('[data-key="failed"]').inner_text(),
            *box.locator('[data-key="dimension"]').all_inner_texts(),
        ]
        assert shown == want
