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

import csv
import html
import io
import re
from collections.abc import Callable
from pathlib import Path

import msgspec

from vera.inputs import BASE, Strings
from vera.records import RunManifest
from vera.rubric import GUIDE_WORDS

# An element whose whole content is text, marked for translation.
_MARKED = re.compile(
    r'(?P<open><(?P<tag>[a-z][a-z0-9]*)\b[^>]*?\sdata-ui="(?P<key>[a-z_]+)"[^>]*>)(?P<body>[^<]*)(?P<close></(?P=tag)>)'
)
_PLACEHOLDER = re.compile(r'data-ui-placeholder="(?P<key>[a-z_]+)"(?P<between>[^>]*?)placeholder="[^"]*"')
# An element's accessible name, marked for translation (data-ui-label before aria-label).
_ARIA = re.compile(r'data-ui-label="(?P<key>[a-z_]+)"(?P<between>[^>]*?)aria-label="[^"]*"')


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

    def aria(m: re.Match[str]) -> str:
        key = f"{section}.{m['key']}"
        if key not in BASE:
            return m[0]
        return f'data-ui-label="{m["key"]}"{m["between"]}aria-label="{html.escape(strings(key))}"'

    text = _ARIA.sub(aria, _PLACEHOLDER.sub(placeholder, _MARKED.sub(element, text)))
    return with_words(text, strings, section).encode("utf-8")


def words_block(strings: Strings, section: str) -> str:
    """The section's strings as a JSON data block for a page's scripts, with the pack's
    display names of dimensions and ratings under ``_names`` (the canonical name stays
    the data; a script shows "Name（gloss）", as the card does)."""
    words: dict[str, object] = dict(strings.section(section))
    words["_names"] = dict(strings.glosses)
    # JSON in a data block: "<" escaped, so no text can close the element.
    blob = msgspec.json.encode(words).decode("utf-8").replace("<", "\\u003c")
    return f'<script id="vera-ui" type="application/json">{blob}</script>\n'


def with_words(page: str, strings: Strings, section: str) -> str:
    """A rendered page with the section's words for its scripts (unchanged in English:
    the scripts then use their own English)."""
    if strings.english:
        return page
    return page.replace("</head>", words_block(strings, section) + "</head>", 1)


def guide_words(strings: Strings) -> dict[str, str]:
    """The review's rating guide's sentences (vera.rubric.GUIDE_WORDS) in `strings`' language."""
    return {name: strings(f"review.guide_{name}") for name in GUIDE_WORDS}


def option_namer(manifest: RunManifest, run_dir: Path, strings: Strings) -> Callable[[str], str]:
    """How the rating guide names an answer option: its canonical label quoted, or in a
    pack's language the rubric file's ``option_text`` for it (the label stays the data)."""
    names = {} if strings.english else _option_texts(manifest, run_dir)
    return lambda label: f"“{names[label]}”" if label in names else repr(label)


def _option_texts(manifest: RunManifest, run_dir: Path) -> dict[str, str]:
    """Canonical option label -> the pack's text for it, from a rubric TSV's
    ``option_text`` column (none when the file is gone or has no such column)."""
    path = Path(manifest.rubric.path)
    if not path.is_absolute() and not path.is_file():
        path = run_dir / path
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    out: dict[str, str] = {}
    for row in csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE):
        label, shown = (row.get("option") or "").strip(), (row.get("option_text") or "").strip()
        if label and shown:
            out.setdefault(label, shown)
    return out
