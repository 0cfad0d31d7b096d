"""A chatbot's turn as its user saw it: Markdown rendered to safe HTML.

Chatbots answer in Markdown (lists, bold, links) and their users see it formatted; a
clinician reading the transcript should see the same. The text comes from a model, so it
is untrusted: it is rendered here, on the server, by markdown-it-py with raw HTML turned
off (a `<script>` or `<img onerror>` in the text comes out as visible text), links kept
only for http, https and mailto (anything else, `javascript:` among them, stays text) and
marked rel="noopener noreferrer nofollow", and images shown as their link (a page about a
transcript loads nothing from elsewhere). No id or class from the text reaches the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from importlib import resources
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

# The rules for what chatbot_markdown writes, one file for the two pages that show it: the
# conversation page (inline) and the review page (review.css). Each stylesheet holds the
# slot line where they go. The file's blank line is the conversation page's own: its
# inline style, the policy's hash of it and a card's page files keep their bytes.
MARKDOWN_CSS = resources.files("vera.report.shared").joinpath("chat_markdown.css").read_text(encoding="utf-8")
MARKDOWN_CSS_SLOT = "/* Here: vera/report/shared/chat_markdown.css, the rules for a chatbot's Markdown. */\n"


def with_markdown_css(css: str) -> str:
    """`css` with the Markdown rules in place of its slot line."""
    if css.count(MARKDOWN_CSS_SLOT) != 1:
        raise ValueError("a stylesheet showing chatbot Markdown holds its slot line once")
    return css.replace(MARKDOWN_CSS_SLOT, MARKDOWN_CSS)


# Schemes a link may keep; the comparison is on the normalised, lower-case address.
SAFE_SCHEMES = ("http://", "https://", "mailto:")
# What plain prose renders to: a turn made of these only has nothing to format, and is
# shown as its text, as before.
_PLAIN_BLOCKS = frozenset({"paragraph_open", "paragraph_close", "inline"})
_PLAIN_INLINE = frozenset({"text", "softbreak", "hardbreak"})


def _safe_link(url: str) -> bool:
    address = url.strip().lower()
    return address.startswith(SAFE_SCHEMES)


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    return str(self.renderToken(tokens, idx, options, env))


def _image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    # An image is shown as a link to it, never loaded: the alt text names it.
    token = tokens[idx]
    alt = "".join(c.content for c in token.children or []) or "image"
    src = str(token.attrGet("src") or "")
    return (
        f'<a href="{escape(src)}" rel="noopener noreferrer nofollow">[image: {escape(alt)}]</a>'
        if _safe_link(src)
        else escape(f"[image: {alt}]")
    )


def _heading_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    # A chatbot's heading is bold text in its turn, not a heading of the page's outline.
    return '<p class="heading"><strong>'


def _heading_close(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return "</strong></p>\n"


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = _safe_link  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image)
    md.add_render_rule("heading_open", _heading_open)
    md.add_render_rule("heading_close", _heading_close)
    return md


_MD = _parser()


def chatbot_markdown(text: str) -> str | None:
    """The turn's HTML (escaped, links filtered), or None when it is plain prose that
    Markdown would not change (then it is shown as its text)."""
    tokens = _MD.parse(text)
    plain = all(
        t.type in _PLAIN_BLOCKS and all(c.type in _PLAIN_INLINE for c in t.children or []) for t in tokens
    )
    if plain:
        return None
    return str(_MD.renderer.render(tokens, _MD.options, {}))
