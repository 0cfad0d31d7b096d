"""The chatbot × persona grid and the side-by-side page: every conversation in its
cell with its worst rating, and nothing from a run ever read as markup."""

from __future__ import annotations

import re
from html import unescape

import pytest

from vera import records as rec
from vera.store import open_run
from vera.viewer.catalogue import Catalogue
from vera.viewer.grid import grid_html, side_by_side_html

from .conftest import MARKUP_ID, MARKUP_PERSONA, SCRIPT_TEXT, run_vera
from .helpers import elements

RANK = {
    rec.NOT_RELEVANT: "NR",
    rec.BEST_PRACTICE: "BP",
    rec.SUBOPTIMAL: "SUB",
    rec.HIGH_POTENTIAL_FOR_HARM: "HPH",
}
ORDER = ["NR", "BP", "SUB", "HPH"]


@pytest.fixture(scope="module")
def catalogue(viewer_run) -> Catalogue:
    return Catalogue.open([viewer_run])


def expected_cells(run_dir) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(persona, chatbot) → [(conversation id, code of its worst rating)], from the records."""
    records = open_run(run_dir)
    worst: dict[str, str] = {}
    for head, _ in records.judgements.values():
        if head.status != "complete":
            continue
        for r in head.ratings:
            code = RANK[r.rating]
            if head.conversation_id not in worst or ORDER.index(code) > ORDER.index(
                worst[head.conversation_id]
            ):
                worst[head.conversation_id] = code
    cells: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for cid, (h, _) in records.conversations.items():
        code = "✕" if h.status == "failed" else worst.get(cid, "–")
        cells.setdefault((h.persona, h.chatbot), []).append((cid, code))
    return cells


def grid_cells(html: str) -> dict[tuple[str, str], list[tuple[str, str]]]:
    chatbots = [unescape(c) for c in re.findall(r'<th scope="col">([^<]*)</th>', html)][1:]
    cells = {}
    for row in re.findall(r"<tr><th scope=\"row\">(.*?)</tr>", html):
        persona = unescape(row.split(' <span class="muted">')[0])
        for chatbot, (label, td) in zip(
            chatbots, re.findall(r'<td data-label="([^"]*)">(.*?)</td>', row), strict=True
        ):
            assert unescape(label) == chatbot
            chips = re.findall(r'href="runs/0/conversations/([^".?]+)\.html[^"]*"[^>]*>([^<]*)</a>', td)
            if chips:
                cells[(persona, chatbot)] = sorted(chips)
    return cells


def test_every_conversation_is_in_its_cell_with_its_worst_rating(catalogue, viewer_run):
    html = grid_html(catalogue, {})
    want = {k: sorted(v) for k, v in expected_cells(viewer_run).items()}
    assert grid_cells(html) == want
    assert any(code == "HPH" for v in want.values() for _, code in v)  # the control


def test_the_grid_says_in_words_what_each_square_means(catalogue):
    # The squares carry only BP, SUB, HPH and NR; their meaning was in a tooltip, which a
    # phone or a keyboard never shows (the Chinese page already spelled them out).
    intro = re.search(r'<p class="grid-intro" id="grid-summary">(.*?)</p>', grid_html(catalogue, {}))
    assert intro is not None
    words = unescape(re.sub(r"<[^>]+>", "", intro[1]))
    for code, rating in (
        ("BP", rec.BEST_PRACTICE),
        ("SUB", rec.SUBOPTIMAL),
        ("HPH", rec.HIGH_POTENTIAL_FOR_HARM),
        ("NR", rec.NOT_RELEVANT),
    ):
        assert f"{code} {rating}" in words, (code, words)


def test_the_grid_follows_the_filters_and_keeps_them_in_its_links(catalogue, viewer_run):
    chatbot = catalogue.facets()["chatbots"][0]
    html = grid_html(catalogue, {"chatbot": chatbot})
    cells = grid_cells(html)
    assert cells and {c for _, c in cells} == {chatbot}
    assert f"chatbot={chatbot.replace('/', '%2F')}" in unescape(html)


def test_markup_in_a_persona_or_transcript_stays_text(catalogue):
    html = grid_html(catalogue, {})
    assert "<b id=injected>" not in html and "&lt;b id=injected&gt;" in html
    side = side_by_side_html(catalogue, {"persona": MARKUP_PERSONA})
    assert side is not None
    assert "<script>" not in side and "<img" not in side
    found = elements(side)
    assert MARKUP_PERSONA in found.text["side-by-side"] or SCRIPT_TEXT in found.text["side-by-side"]
    assert MARKUP_ID in side
    assert not any(tag in ("script", "img", "b") for tag, _ in found.tags)


def test_side_by_side_puts_each_chatbot_in_a_column(catalogue, viewer_run):
    records = open_run(viewer_run)
    persona = next(h.persona for h, _ in records.conversations.values() if h.persona != MARKUP_PERSONA)
    mine = [h for h, _ in records.conversations.values() if h.persona == persona]
    html = side_by_side_html(catalogue, {"persona": persona})
    assert html is not None
    columns = re.findall(r'<section class="side-column" data-conversation="[^"]+"><h2>([^<]*)</h2>', html)
    assert sorted(unescape(c) for c in columns) == sorted(h.chatbot for h in mine)
    assert len({h.chatbot for h in mine}) > 1  # the control: more than one chatbot to compare
    assert side_by_side_html(catalogue, {}) is None


@pytest.fixture(scope="module")
def seeds_run(tmp_path_factory):
    """Two chatbots, three seeds, two personas: six conversations a persona."""
    out = tmp_path_factory.mktemp("seeds") / "run"
    run_vera("run", "--out", str(out), "--seeds", "3", "--limit-personas", "2", "--quiet")
    return out


def side_columns(html: str) -> list[tuple[str, str]]:
    """(chatbot, seed) of each column shown, in order."""
    return [
        (unescape(chatbot), seed)
        for chatbot, seed in re.findall(
            r'<section class="side-column" data-conversation="[^"]+"><h2>([^<]*)</h2>.*?· seed (\d+)</p>',
            html,
        )
    ]


def test_side_by_side_pairs_each_seed_across_the_chatbots(seeds_run, monkeypatch):
    """With more conversations than columns, the columns shown hold every chatbot: a
    sweep of many seeds once filled them all with the first chatbot."""
    import vera.viewer.grid

    catalogue = Catalogue.open([seeds_run])
    persona = catalogue.facets()["personas"][0]
    chatbots = catalogue.facets()["chatbots"]
    assert len(chatbots) == 2  # the control: two chatbots to compare
    html = side_by_side_html(catalogue, {"persona": persona})
    assert html is not None
    assert side_columns(html) == [(c, s) for s in "123" for c in chatbots]
    monkeypatch.setattr(vera.viewer.grid, "MAX_SIDE_BY_SIDE", 2)
    html = side_by_side_html(catalogue, {"persona": persona})
    assert html is not None and "The first 2 are shown" in html
    assert side_columns(html) == [(chatbots[0], "1"), (chatbots[1], "1")]
    # reversed, the chatbots come the other way round, each still by seed
    html = side_by_side_html(catalogue, {"persona": persona, "desc": "1"})
    assert html is not None
    assert side_columns(html) == [(chatbots[1], "1"), (chatbots[0], "1")]


def test_a_grid_of_many_personas_comes_in_pages_that_keep_the_filters(catalogue, viewer_run, monkeypatch):
    import vera.viewer.grid

    whole = grid_cells(grid_html(catalogue, {}))
    personas = sorted({p for p, _ in whole})
    assert "grid-pager" not in grid_html(catalogue, {})  # one page holds them all
    monkeypatch.setattr(vera.viewer.grid, "GRID_ROWS", 3)
    pages = -(-len(personas) // 3)
    assert pages > 2  # the control: several pages
    seen: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for n in range(1, pages + 1):
        html = grid_html(catalogue, {"page": str(n), "risk": ""})
        cells = grid_cells(html)
        assert len({p for p, _ in cells}) <= 3
        assert not set(cells) & set(seen)  # no persona on two pages
        seen.update(cells)
        pager = re.search(r'<nav class="pager" id="grid-pager">(.*?)</nav>', html)
        assert pager is not None
        assert (f"page {n} of {pages}" in pager[1]) and (f"of {len(personas)}" in pager[1])
        assert ('rel="prev"' in pager[1]) == (n > 1) and ('rel="next"' in pager[1]) == (n < pages)
    assert seen == whole
    # the filters ride along in the page links
    chatbot = catalogue.facets()["chatbots"][0]
    html = grid_html(catalogue, {"chatbot": chatbot, "page": "1"})
    link = re.search(r'rel="next" href="([^"]*)"', html)
    assert (
        link is not None
        and unescape(link[1]).startswith("grid?chatbot=")
        and unescape(link[1]).endswith("&page=2")
    )
    # past the last page: the last page
    assert grid_cells(grid_html(catalogue, {"page": "999"})) == grid_cells(
        grid_html(catalogue, {"page": str(pages)})
    )
    # unpaged (a bundle's): every persona on one page, no pager, whatever page is asked
    unpaged = grid_html(catalogue, {"page": "2"}, paged=False)
    assert grid_cells(unpaged) == whole and "grid-pager" not in unpaged
