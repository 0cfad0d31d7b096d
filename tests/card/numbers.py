"""The formatting rule of the card, restated independently for the tests: every number
of card.json appears in the renderings as `format(x, ",")` (card.json stores numbers
already rounded), and a reader's text is tokenised back into such numbers."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

# A number not glued to a word on either side (so no digits out of hashes or names); a
# sign only where it cannot be a hyphen.
_START = r"(?<![\w.,\-])"
_END = r"(?![\w]|\.\d)"
NUMBER = re.compile(rf"{_START}-?\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?{_END}|{_START}-?\d+(?:\.\d+)?{_END}")


def numeric_leaves(
    obj: Any, path: tuple[Any, ...] = (), skip: frozenset[str] = frozenset()
) -> Iterator[tuple[tuple[Any, ...], int | float]]:
    """Every int and float in a JSON value (booleans are not numbers), with its path."""
    if isinstance(obj, bool) or obj is None:
        return
    if isinstance(obj, int | float):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k not in skip:
                yield from numeric_leaves(v, (*path, k), skip)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from numeric_leaves(v, (*path, i), skip)


def expected_numbers(card: dict[str, Any], skip: frozenset[str] = frozenset()) -> Counter[str]:
    return Counter(format(x, ",") for _, x in numeric_leaves(card, skip=skip))


def numbers_in(text: str) -> Counter[str]:
    return Counter(NUMBER.findall(text))


def missing_numbers(card: dict[str, Any], text: str, skip: frozenset[str] = frozenset()) -> dict[str, int]:
    """Numbers of the card that the text shows fewer times than the card holds them."""
    want, have = expected_numbers(card, skip), numbers_in(text)
    return {k: n - have[k] for k, n in want.items() if have[k] < n}


class PageText(HTMLParser):
    """The text a reader sees (no CSS, no attribute values), and the page's structure:
    unbalanced or misnested tags, and the doctype."""

    VOID = frozenset(
        {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.doctype: str | None = None
        self.tags: Counter[str] = Counter()
        self.images: list[dict[str, str | None]] = []

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        if tag == "img":
            self.images.append(dict(attrs))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if not self.stack or self.stack[-1] != "style":
            self.parts.append(data)

    @property
    def text(self) -> str:
        return " ".join(self.parts)


def parse_page(html: str) -> PageText:
    page = PageText()
    page.feed(html)
    page.close()
    return page
