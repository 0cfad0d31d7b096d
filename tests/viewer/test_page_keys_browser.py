"""A conversation page's keyboard shortcuts in Chromium, desktop and phone: j / k (or n /
p) to the next or previous conversation of the list, u or Esc back to it, / to its
search box, ? for the list of keys; nothing happens while typing in a field."""

from __future__ import annotations

import re

import pytest

from . import test_browser
from .shots import shot
from .test_browser import no_page_scroll, wait_for_list
from .test_chat_markdown_browser import md_run, md_url  # noqa: F401  (fixtures)

browser = test_browser.browser
page_at = test_browser.page_at
SIZES = [1400, 400]


@pytest.mark.slow
@pytest.mark.parametrize("width", SIZES)
def test_a_conversation_pages_keys(page_at, md_url, tmp_path, width):  # noqa: F811
    page = page_at(width)
    page.goto(md_url + "?sort=id&per_page=25")
    wait_for_list(page)
    ids = page.locator("#list tbody td.id a").all_inner_texts()
    page.keyboard.press("j")
    page.keyboard.press("j")  # j / k walk the rows; Enter opens the one focused
    assert page.evaluate("document.activeElement.textContent") == ids[1]
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/conversations/{ids[1]}.html?sort=id&per_page=25")

    assert page.locator("nav.steps .keys-hint").inner_text() == "? for shortcuts"
    page.keyboard.press("?")
    help_box = page.get_by_role("dialog", name="Keyboard shortcuts")
    assert help_box.is_visible() and "next conversation" in help_box.inner_text()
    assert no_page_scroll(page)
    shot(page, tmp_path, f"conversation-keys-{width}")
    page.keyboard.press("?")
    assert help_box.is_hidden()
    page.keyboard.press("j")
    page.wait_for_url(f"**/conversations/{ids[2]}.html?*")
    page.keyboard.press("k")
    page.wait_for_url(f"**/conversations/{ids[1]}.html?*")
    page.keyboard.press("n")
    page.wait_for_url(f"**/conversations/{ids[2]}.html?*")
    page.keyboard.press("p")
    page.wait_for_url(f"**/conversations/{ids[1]}.html?*")

    # Typing in a field is typing, not a shortcut.
    page.evaluate("document.body.prepend(Object.assign(document.createElement('input'), {id: 'typing'}))")
    page.focus("#typing")
    page.keyboard.type("jkun/")
    assert page.input_value("#typing") == "jkun/"
    assert f"/conversations/{ids[1]}.html" in page.url
    page.evaluate("document.activeElement.blur()")

    page.keyboard.press("u")
    page.wait_for_url(re.compile(r"/(index\.html)?\?sort=id&per_page=25$"))
    wait_for_list(page)
    page.go_back()
    page.wait_for_url(f"**/conversations/{ids[1]}.html?*")
    page.keyboard.press("Escape")
    page.wait_for_url(re.compile(r"/(index\.html)?\?sort=id&per_page=25$"))
    page.go_back()
    page.wait_for_url(f"**/conversations/{ids[1]}.html?*")
    page.keyboard.press("/")
    page.wait_for_url(re.compile(r"/(index\.html)?\?sort=id&per_page=25#search$"))
    wait_for_list(page)
    page.wait_for_function("() => document.activeElement && document.activeElement.name === 'q'")
    page.keyboard.type("j")  # into the search box, not a row
    assert page.input_value("#filters [name=q]") == "j"
