"""Reading the viewer's pages in tests: elements by id, as text, with a real HTML parser."""

from __future__ import annotations

from html.parser import HTMLParser

_VOID = {"meta", "link", "br", "img", "input", "hr", "source", "wbr", "area", "col", "embed"}


class _ById(HTMLParser):
    """Collects the text content of every element that has an id, and every tag seen."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: dict[str, str] = {}
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._open: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag in _VOID:
            return
        self._open.append((tag, a.get("id")))
        if a.get("id"):
            self.text.setdefault(a["id"] or "", "")

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            t, _ = self._open.pop()
            if t == tag:
                break

    def handle_data(self, data: str) -> None:
        for _, ident in self._open:
            if ident:
                self.text[ident] += data


def elements(html: str) -> _ById:
    parser = _ById()
    parser.feed(html)
    parser.close()
    return parser


def text_of(html: str, ident: str) -> str:
    """The text content of the element with this id (whitespace collapsed)."""
    found = elements(html).text
    assert ident in found, f"no element with id {ident!r}"
    return " ".join(found[ident].split())


def open_all(page) -> None:
    """Open every <details> of a page in the browser, call bodies too: a body is loaded
    when it is opened (static/bodies.js), so this waits for each to be put in, then opens
    what they hold (a call's schema)."""
    opened = "() => document.querySelectorAll('details').forEach((d) => { d.open = true; })"
    page.evaluate(opened)
    page.wait_for_function("() => !document.querySelector('.call-wait:not(.warning)')")
    page.evaluate(opened)
