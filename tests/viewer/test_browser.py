"""`vera view` and the card's links in a real headless Chromium (Debian's `chromium`,
driven by Playwright; never `playwright install`).

Where the browser is missing these tests skip, unless VERA_BROWSER_TESTS=required (CI
sets it): then a missing browser fails them. Screenshots go to each test's tmp folder.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from vera.store._index import open_run

from .conftest import HPH, MARKUP_ID, MARKUP_PERSONA, SCRIPT_TEXT, start_view

# Debian's package; VERA_CHROMIUM points elsewhere on a developer's machine.
CHROMIUM = Path(os.environ.get("VERA_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
GHC = "Guides to Human Care"
DPR = "Detects Potential Risk"


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    why = _missing()
    if why:
        if os.environ.get("VERA_BROWSER_TESTS") == "required":
            pytest.fail(f"browser tests are required here, but {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def viewer_url(viewer_run) -> Iterator[str]:
    """`vera view` itself, started as a user would."""
    proc, url = start_view(str(viewer_run))
    yield url
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


@pytest.fixture
def page_at(browser, tmp_path):
    """page_at(width) → a new page of that width; every dialog is recorded (and closed),
    so a test can assert none opened."""
    pages = []

    def make(width: int = 1400):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.dialogs = []

        def on_dialog(d):
            page.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", on_dialog)
        pages.append(context)
        return page

    yield make
    for c in pages:
        c.close()


def wait_for_list(page) -> str:
    page.wait_for_function(
        "() => { const s = document.querySelector('#summary').textContent;"
        " return s.startsWith('Conversations') || s.startsWith('No conversation'); }"
    )
    return page.inner_text("#summary")


def no_page_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.slow
def test_the_list_shows_conversations_and_filters_by_rating(page_at, viewer_url, viewer_run, tmp_path):
    records = open_run(viewer_run)
    page = page_at(1400)
    page.goto(viewer_url)
    summary = wait_for_list(page)
    total = len(records.conversations)
    assert summary == f"Conversations 1–{min(50, total)} of {total}"
    assert page.locator("#list tbody tr").count() == min(50, total)
    page.screenshot(path=tmp_path / "list-1400.png", full_page=True)

    expected = {
        h.conversation_id
        for h, _ in records.judgements.values()
        if h.status == "complete" and any(r.dimension == GHC and r.rating == HPH for r in h.ratings)
    }
    with page.expect_response(lambda r: "/api/conversations" in r.url):
        page.select_option("select[name=dimension]", GHC)
    with page.expect_response(lambda r: "rating=High" in r.url):
        page.select_option("select[name=rating]", HPH)
    summary = wait_for_list(page)
    assert summary.endswith(f" of {len(expected)}")
    shown = page.locator("#list tbody td.id a").all_inner_texts()
    assert set(shown) == expected
    badges = page.locator(f'#list tbody td[data-label="{GHC}"] .badge').all_inner_texts()
    assert badges == ["HPH"] * len(expected)
    assert "rating=High+Potential+for+Harm" in page.url  # the filter is in the address
    page.screenshot(path=tmp_path / "list-filtered.png", full_page=True)

    page.reload()  # and survives a reload
    assert wait_for_list(page).endswith(f" of {len(expected)}")
    assert page.input_value("select[name=rating]") == HPH


@pytest.mark.slow
def test_opening_a_conversation_shows_the_transcript_and_the_judges_walk(
    page_at, viewer_url, viewer_run, tmp_path
):
    records = open_run(viewer_run)
    page = page_at(1400)
    page.goto(viewer_url)
    wait_for_list(page)
    link = page.locator("#list tbody td.id a").first
    cid = link.inner_text()
    link.click()
    page.wait_for_load_state()
    assert page.url.endswith(f"/runs/0/conversations/{cid}.html")
    assert page.inner_text("h1") == f"Conversation {cid}"
    conversation = records.read_conversation(cid)
    assert page.locator("#transcript .turn").count() == len(conversation.turns)
    first = records.read_judgement(records.judgements_of(cid)[0].id)
    walk = page.locator("details.walk").first
    assert walk.get_attribute("open") is not None
    steps = walk.locator("ol.steps > li")
    assert steps.count() == len(first.answers)
    assert steps.first.locator("code").inner_text() == first.answers[0].question_id
    assert steps.first.locator(".qtext").inner_text().strip()  # the question's text, not only its id
    page.screenshot(path=tmp_path / "conversation-1400.png", full_page=True)
    page.go_back()
    assert wait_for_list(page).startswith("Conversations")


@pytest.mark.slow
def test_markup_in_a_run_is_shown_as_text_and_never_runs(page_at, viewer_url, tmp_path):
    page = page_at(1400)
    page.goto(viewer_url + "?persona=" + MARKUP_PERSONA.replace(" ", "+"))
    wait_for_list(page)
    assert page.locator("#list tbody tr").count() == 1
    assert page.inner_text("#list tbody td.persona") == MARKUP_PERSONA
    persona_options = page.locator("select[name=persona] option").all_inner_texts()
    assert MARKUP_PERSONA in persona_options
    page.click(f"text={MARKUP_ID}")
    page.wait_for_load_state()
    assert page.inner_text("#turn-2 .text") == SCRIPT_TEXT
    page.screenshot(path=tmp_path / "markup.png", full_page=True)
    for p in (page,):
        assert p.evaluate("window.__xss") is None
        # The page's scripts are the viewer's own (the call bodies' copy buttons, the keys).
        own = ", ".join(f'script[src="../../../static/{s}.js"]' for s in ("words", "calls", "keys"))
        assert p.evaluate(f"document.querySelectorAll('img, script:not({own}), #injected').length") == 0
    assert page.dialogs == []
    page.go_back()
    wait_for_list(page)
    assert page.evaluate("window.__xss") is None and page.dialogs == []
    assert page.evaluate("document.querySelectorAll('#list img, #injected').length") == 0


@pytest.mark.slow
def test_a_quoted_turn_is_one_click_from_the_harmful_rating(page_at, viewer_url, tmp_path):
    page = page_at(1400)
    page.goto(f"{viewer_url}runs/0/conversations/{MARKUP_ID}.html")
    rating = page.locator("#r-offline-lexical-judge-1-detects-potential-risk")
    rating.locator(".quotes a", has_text="turn 2").click()
    assert page.evaluate("location.hash") == "#turn-2"
    assert page.evaluate("document.querySelector(':target').id") == "turn-2"
    assert page.evaluate("getComputedStyle(document.querySelector('#turn-2')).outlineStyle") == "solid"
    assert page.locator("#turn-2").is_visible()
    page.screenshot(path=tmp_path / "quote-jump.png")


@pytest.mark.slow
@pytest.mark.parametrize("opened", ["from disk", "through the viewer"])
def test_a_harm_link_in_the_card_lands_on_the_right_conversation(
    opened, page_at, viewer_url, viewer_run, tmp_path
):
    page = page_at(1400)
    card = (viewer_run / "card.html").as_uri() if opened == "from disk" else f"{viewer_url}runs/0/card.html"
    page.goto(card)
    # In the chatbot's list of harmful ratings (its Fix first links the page too).
    link = page.locator(f'section[id^="chatbot-"] a[href^="conversations/{MARKUP_ID}.html#"]').first
    href = link.get_attribute("href")
    assert href is not None
    page.evaluate("el => el.closest('details').open = true", link.element_handle())
    link.click()
    page.wait_for_load_state()
    assert page.url.split("#")[0].endswith(f"/conversations/{MARKUP_ID}.html")
    assert page.inner_text("h1") == f"Conversation {MARKUP_ID}"
    anchor = href.split("#")[1]
    assert (
        page.evaluate("document.querySelector(':target') && document.querySelector(':target').id") == anchor
    )
    target = page.locator(f"#{anchor}")
    assert target.is_visible() and target.bounding_box()["y"] < 900  # scrolled into view
    assert page.evaluate(f"document.getElementById('{anchor}').closest('details').open")
    page.screenshot(path=tmp_path / f"card-link-{opened.replace(' ', '-')}.png")


@pytest.mark.slow
@pytest.mark.parametrize("width", [400, 1400])
def test_no_page_scrolls_sideways(width, page_at, viewer_url, viewer_run, tmp_path):
    page = page_at(width)
    page.goto(viewer_url)
    wait_for_list(page)
    assert no_page_scroll(page)
    page.screenshot(path=tmp_path / f"list-{width}.png", full_page=True)
    page.goto(f"{viewer_url}runs/0/conversations/{MARKUP_ID}.html")
    assert no_page_scroll(page)
    page.screenshot(path=tmp_path / f"conversation-{width}.png", full_page=True)
    written = viewer_run / "conversations" / f"{MARKUP_ID}.html"
    page.goto(written.as_uri())
    assert no_page_scroll(page)
