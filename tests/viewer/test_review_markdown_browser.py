"""`vera review` shows a chatbot's Markdown formatted, as the user saw it and as the
conversation page shows it, inert whatever it holds, with the exact text a click away.
The page also checks what it is given: a page fed markup beyond what the renderer makes
(here by replacing the server's answer) still puts none of it in the page."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from vera.report import chatbot_markdown
from vera.viewer.review import ReviewSession, _turn

from .conftest import start_review, stop
from .test_browser import browser, page_at  # noqa: F401  (fixtures)
from .test_chat_markdown_browser import MD_TEXT
from .test_review_browser import wait_for_conversation

# What no renderer of ours makes: if the page let it through, it would run or show.
FORGED = (
    "<img src=x onerror=\"window.__xss='img'\"><script>window.__xss='script'</script>"
    "<a href=\"javascript:window.__xss='link'\" onclick=\"window.__xss='click'\">forged</a>"
    '<p style="position:fixed" id=injected onmouseover="window.__xss=\'p\'">styled</p>'
    '<iframe src="https://example.org"></iframe>'
)


def test_a_chatbot_turn_in_markdown_comes_with_its_rendering_and_a_user_turn_never():
    assert _turn("chatbot", MD_TEXT) == {
        "speaker": "chatbot",
        "text": MD_TEXT,
        "html": chatbot_markdown(MD_TEXT),
    }
    assert _turn("user", "**hi**") == {"speaker": "user", "text": "**hi**"}
    assert _turn("chatbot", "Plain words.") == {"speaker": "chatbot", "text": "Plain words."}


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 400])
def test_the_review_shows_markdown_formatted_and_inert(page_at, offline_run, tmp_path, width):  # noqa: F811
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    ReviewSession.open(run, "Ada", size=2)
    proc, url = start_review(str(run), "--rater", "Ada", "--size", "2")
    try:
        page = page_at(width)

        def forge(route):
            answer = route.fetch().json()
            turns = answer["conversation"]["turns"]
            second = next(i for i, t in enumerate(turns) if t["speaker"] != "user")
            turns[second] = {
                "speaker": "chatbot",
                "text": MD_TEXT,
                "html": str(chatbot_markdown(MD_TEXT)) + FORGED,
            }
            route.fulfill(status=200, content_type="application/json", body=json.dumps(answer))

        page.route(re.compile(r".*/api/next.*"), forge)
        page.goto(url)
        wait_for_conversation(page, 1, 2)
        turn = page.locator("#turns .turn.chatbot").first
        assert turn.locator(".md strong").first.inner_text() == "not alone"
        assert turn.locator(".md li").count() == 3
        for link in turn.locator("a").all():
            link.hover()
        assert page.evaluate("window.__xss") is None and page.dialogs == []
        assert (
            page.evaluate(
                "document.querySelectorAll('#turns img, #turns script, #turns iframe, #injected').length"
            )
            == 0
        )
        assert (
            page.evaluate(
                "document.querySelectorAll('#turns [style], #turns [onclick], #turns [onmouseover]').length"
            )
            == 0
        )
        for href in page.eval_on_selector_all("#turns a[href]", "as => as.map(a => a.getAttribute('href'))"):
            assert re.match(r"(https?://|mailto:)", href), href
        assert "forged" in turn.inner_text() and "styled" in turn.inner_text()  # as text
        exact = turn.locator("pre.exact")
        assert exact.is_hidden()
        turn.get_by_text("Exact text").click()
        assert exact.evaluate("e => e.textContent") == MD_TEXT
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    finally:
        stop(proc)
