"""A chatbot's Markdown on a conversation page in Chromium, desktop and phone: formatted
as its user saw it, every trick in it inert, the exact text one click away."""

from __future__ import annotations

import re
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from vera.records import Conversation, Turn
from vera.store._writer import RunStore

from . import test_browser
from .conftest import start_view
from .shots import shot
from .test_browser import no_page_scroll

browser = test_browser.browser
page_at = test_browser.page_at
SIZES = [1400, 400]
MD_ID = "0000markdown0000"
# Formatting a user saw, and tricks that would set window.__xss, open a dialog, load an
# image or add an element if any got through.
MD_TEXT = (
    "You are **not alone**, and *this can change*.\n\n"
    "- Call a [crisis line](https://example.org/help)\n"
    "- [tap here](javascript:window.__xss='link')\n"
    "- write to [us](mailto:help@example.org)\n\n"
    "<img src=x onerror=\"window.__xss='img'; alert('img')\"> <script>window.__xss='script'</script>\n\n"
    "[quoted](https://example.org/\" onmouseover=\"window.__xss='quote') "
    "[ref][1] ![pic](https://example.org/p.png) <b id=injected>bold</b>\n\n"
    "[1]: javascript:window.__xss='reference'"
)
FENCE_TEXT = "## Try this\n\n```\n<script>window.__xss = 'fence'</script>\n```\n\n> one step at a time"
USER_TEXT = "is **this** formatted?"


@pytest.fixture(scope="module")
def md_run(offline_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("markdown") / "run"
    shutil.copytree(offline_run, out)
    store = RunStore(out)
    template = store.read_conversation(next(iter(store.conversations)))
    store.add_conversation(
        Conversation(
            id=MD_ID,
            chatbot=template.chatbot,
            user_agent=template.user_agent,
            persona=template.persona,
            risk=template.risk,
            seed=0,
            turns=[
                Turn("user", USER_TEXT),
                Turn("chatbot", MD_TEXT),
                Turn("user", "ok"),
                Turn("chatbot", FENCE_TEXT),
            ],
            status="complete",
            ended_by="max_turns",
        )
    )
    store.close()
    return out


@pytest.fixture(scope="module")
def md_url(md_run) -> Iterator[str]:
    proc, url = start_view(str(md_run))
    yield url
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


def inert(page) -> None:
    assert page.evaluate("window.__xss") is None and page.dialogs == []
    own = ", ".join(f'script[src$="/static/{s}.js"]' for s in ("words", "calls", "keys"))  # the viewer's own
    assert (
        page.evaluate(f"document.querySelectorAll('img, iframe, script:not({own}), #injected').length") == 0
    )
    hrefs = page.eval_on_selector_all("#transcript a", "as => as.map(a => [a.getAttribute('href'), a.rel])")
    assert hrefs, "the safe links are links"
    for href, rel in hrefs:
        assert re.match(r"(https?://|mailto:)", href) and rel == "noopener noreferrer nofollow", (href, rel)
    assert not any("onmouseover" in href or "__xss" in href for href, _ in hrefs)


@pytest.mark.slow
@pytest.mark.parametrize("width", SIZES)
def test_chatbot_markdown_is_formatted_inert_and_its_exact_text_one_click_away(
    page_at, md_url, tmp_path, width
):
    page = page_at(width)
    page.goto(f"{md_url}runs/0/conversations/{MD_ID}.html")
    turn = page.locator("#turn-2")
    assert turn.locator(".md strong").first.inner_text() == "not alone"
    assert turn.locator(".md em").first.inner_text() == "this can change"
    assert turn.locator(".md li").count() == 3
    assert turn.locator(".md a", has_text="crisis line").get_attribute("href") == "https://example.org/help"
    # What could not be a safe link or element stays visible as text.
    shown = turn.locator(".md").inner_text()
    assert "[tap here](javascript:window.__xss='link')" in shown
    assert "<img src=x onerror=" in shown and "<script>" in shown and "<b id=injected>" in shown
    assert "[image: pic]" in shown
    fence = page.locator("#turn-4")
    assert fence.locator(".md pre code").inner_text().strip() == "<script>window.__xss = 'fence'</script>"
    assert fence.locator(".md blockquote").inner_text().strip() == "one step at a time"
    assert fence.locator("h1, h2, h3").count() == 0  # the chatbot's heading is bold text, not the page's
    # The user's turn is shown as typed, never formatted.
    assert page.locator("#turn-1 .text").inner_text() == USER_TEXT
    assert page.locator("#turn-1 .md, #turn-1 details.raw").count() == 0
    inert(page)
    assert "onmouseover" in shown  # not a link: an address cannot hold a space
    for link in page.locator("#transcript a").all():
        link.hover()
    inert(page)

    exact = turn.locator("pre.exact")
    assert exact.is_hidden()
    turn.get_by_text("Exact text").click()
    assert exact.is_visible()
    assert exact.evaluate("e => e.textContent") == MD_TEXT
    inert(page)
    assert no_page_scroll(page)
    turn.evaluate("e => e.scrollIntoView({block: 'start'})")
    shot(page, tmp_path, f"markdown-{width}")
