"""A chatbot's Markdown, rendered on the server: formatted as its user saw it, and inert
whatever the text holds (raw HTML, script links, image tricks); plain prose is left as
its text."""

from __future__ import annotations

import re
import shutil

import aiohttp
import pytest

from vera.report.shared._chat_markdown import (
    MARKDOWN_CSS,
    MARKDOWN_CSS_SLOT,
    chatbot_markdown,
    with_markdown_css,
)
from vera.report.shared._pages import PAGE_CSS
from vera.viewer.review import ReviewSession, build_review_app

from .conftest import serving_app
from .helpers import elements

# Each would run script, load something or add an element if it got through as markup.
PAYLOADS = [
    "<script>window.__xss = 'script'</script> **bold**",
    "<img src=x onerror=\"window.__xss = 'img'\"> *em*",
    "[click](javascript:window.__xss='link') **b**",
    "[click](JaVaScRiPt:window.__xss='case') **b**",
    "[click]( javascript:window.__xss='space' ) **b**",
    "[click](&#106;avascript:window.__xss='entity') **b**",
    "[click](java&#x0A;script:window.__xss='newline') **b**",
    "[click](vbscript:msgbox) **b**",
    "[click](data:text/html,<script>window.__xss='data'</script>) **b**",
    "[ref][1] **b**\n\n[1]: javascript:window.__xss='reference'",
    "<javascript:window.__xss='autolink'> **b**",
    "![x](javascript:window.__xss='image') **b**",
    "![x](https://example.org/track.png\" onerror=\"window.__xss='attr') **b**",
    "[x](https://example.org/\" onmouseover=\"window.__xss='quote') **b**",
    "<a href=\"javascript:window.__xss='a'\">a</a> **b**",
    '<iframe src="https://example.org"></iframe> **b**',
    "<svg onload=\"window.__xss='svg'\"></svg> **b**",
    "```html\n<script>window.__xss='fence'</script>\n```",
    "`<script>window.__xss='code'</script>` **b**",
    "<style>body{display:none}</style> **b**",
    "# <b id=injected>heading</b>",
]
ALLOWED_TAGS = {
    "p", "strong", "em", "ul", "ol", "li", "a", "code", "pre", "blockquote", "br", "hr", "s",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip


@pytest.mark.parametrize("text", PAYLOADS)
def test_no_markup_from_the_text_gets_through(text):
    html = chatbot_markdown(text)
    assert html is not None, "each payload has some Markdown to format"
    parsed = elements(html)
    for tag, attrs in parsed.tags:
        assert tag in ALLOWED_TAGS, tag
        # Only a link's own address and rel, a table cell's alignment, a list's start.
        assert set(attrs) <= {"href", "rel", "style", "start", "class"}, attrs
        if "style" in attrs:
            assert re.fullmatch(r"text-align:(left|right|center)", attrs["style"] or ""), attrs
        if "class" in attrs:
            assert attrs["class"] in ("heading",) or (attrs["class"] or "").startswith("language-"), attrs
        if tag == "a":
            assert re.match(r"(https?://|mailto:)", attrs["href"] or ""), attrs
            assert attrs["rel"] == "noopener noreferrer nofollow"
    assert "window.__xss" not in "".join(str(a.get("href", "")) for _, a in parsed.tags)


def test_markdown_is_formatted_and_safe_links_kept():
    html = chatbot_markdown(
        "You are **not alone**. Some options:\n\n"
        "1. Call a [crisis line](https://example.org/help)\n"
        "2. Write to [us](mailto:help@example.org)\n\n"
        "> take it one step at a time"
    )
    assert html is not None
    assert "<strong>not alone</strong>" in html
    assert "<ol>" in html and html.count("<li>") == 2
    assert '<a href="https://example.org/help" rel="noopener noreferrer nofollow">crisis line</a>' in html
    assert 'href="mailto:help@example.org"' in html
    assert "<blockquote>" in html


def test_a_chatbots_heading_is_not_a_heading_of_the_page():
    html = chatbot_markdown("# Steps\n\nbreathe")
    assert html is not None and "<h1" not in html
    assert '<p class="heading"><strong>Steps</strong></p>' in html


@pytest.mark.parametrize(
    "text", ["Hello.\nHow are you feeling today?", "I hear you. That sounds hard.", "a < b and c > d"]
)
def test_plain_prose_is_left_as_its_text(text):
    assert chatbot_markdown(text) is None


async def test_the_conversation_and_the_review_page_style_markdown_from_one_file(offline_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    session = ReviewSession.open(run, "tester", size=2)
    make = lambda allowed: build_review_app(session, token="t" * 32, allowed_hosts=allowed)  # noqa: E731
    async with (
        serving_app(make) as url,
        aiohttp.ClientSession() as http,
        http.get(f"{url}static/review.css") as r,
    ):
        review_css = await r.text()
    for css in (PAGE_CSS, review_css):
        assert css.count(MARKDOWN_CSS) == 1 and MARKDOWN_CSS_SLOT not in css
        # After the turn's own text rule, which its white-space overrides.
        assert css.index(".turn .text {") < css.index(MARKDOWN_CSS)
    with pytest.raises(ValueError, match="slot"):
        with_markdown_css(".turn { color: red; }\n")
