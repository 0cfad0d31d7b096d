"""The viewer's and the review's pages in the language of the run's locale pack.

The static pages (static/index.html, static/review.html) are written in English and mark
each translatable text with ``data-ui="KEY"`` (the key of vera.inputs._ui, without its
section); `translate_page` replaces those texts when the run's pack has strings, sets
``<html lang>``, and puts the section's strings in the page as a JSON block
(``<script id="vera-ui" type="application/json">``, data, never run) for the page's
script, which falls back to its own English for a key the block lacks. In English the
page is served exactly as it is on disk.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

import msgspec

from vera.inputs import BASE, ENGLISH, Strings, ui_strings
from vera.records import LocaleInfo, RunManifest

# An element whose whole content is text, marked for translation.
_MARKED = re.compile(
    r'(?P<open><(?P<tag>[a-z][a-z0-9]*)\b[^>]*?\sdata-ui="(?P<key>[a-z_]+)"[^>]*>)(?P<body>[^<]*)(?P<close></(?P=tag)>)'
)
_PLACEHOLDER = re.compile(r'data-ui-placeholder="(?P<key>[a-z_]+)"(?P<between>[^>]*?)placeholder="[^"]*"')


def run_strings(manifests: Iterable[RunManifest | None]) -> Strings:
    """The strings of the runs' locale pack when they all used the same one (English
    when any used none, or they differ)."""
    packs = {
        (m.locale.tag, m.locale.path) if m is not None and isinstance(m.locale, LocaleInfo) else None
        for m in manifests
    }
    if len(packs) != 1 or (only := packs.pop()) is None:
        return ENGLISH
    return ui_strings(*only)


def translate_page(page: bytes, strings: Strings, section: str) -> bytes:
    """`page` with its marked texts in `strings`' language (unchanged in English)."""
    if strings.english:
        return page
    text = page.decode("utf-8")
    text = text.replace('<html lang="en">', f'<html lang="{html.escape(strings.lang)}">', 1)

    def element(m: re.Match[str]) -> str:
        key = f"{section}.{m['key']}"
        return f"{m['open']}{html.escape(strings(key), quote=False)}{m['close']}" if key in BASE else m[0]

    def placeholder(m: re.Match[str]) -> str:
        key = f"{section}.{m['key']}"
        if key not in BASE:
            return m[0]
        return f'data-ui-placeholder="{m["key"]}"{m["between"]}placeholder="{html.escape(strings(key))}"'

    text = _PLACEHOLDER.sub(placeholder, _MARKED.sub(element, text))
    # JSON in a data block: "<" escaped, so no text can close the element.
    blob = msgspec.json.encode(strings.section(section)).decode("utf-8").replace("<", "\\u003c")
    text = text.replace(
        "</head>", f'<script id="vera-ui" type="application/json">{blob}</script>\n</head>', 1
    )
    return text.encode("utf-8")
