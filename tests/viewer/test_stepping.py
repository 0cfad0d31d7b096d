"""Previous / next on a conversation page: the same order as the list it came from."""

from __future__ import annotations

import re
from html import unescape

import pytest

from vera.viewer.catalogue import Catalogue, Query
from vera.viewer.stepping import steps_html

from .conftest import MARKUP_ID


@pytest.fixture(scope="module")
def catalogue(viewer_run) -> Catalogue:
    return Catalogue.open([viewer_run])


def listed(catalogue: Catalogue, params: dict[str, str]) -> list[tuple[int, str]]:
    rows = catalogue.query(Query.from_params({**params, "per_page": "200", "page": "1"}))["rows"]
    return [(r["run"], r["id"]) for r in rows]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"sort": "persona", "desc": "1"},
        {"status": "complete", "sort": "id"},
        {"q": "you", "sort": "turns"},
    ],
)
def test_each_conversations_neighbours_are_those_of_the_list(catalogue, params):
    order = listed(catalogue, params)
    assert len(order) > 3
    for i, (run, cid) in enumerate(order):
        found = catalogue.neighbours(Query.from_params(params), run, cid)
        assert found is not None
        assert (found.position, found.total) == (i, len(order))
        assert found.previous == (order[i - 1] if i else None)
        assert found.next == (order[i + 1] if i + 1 < len(order) else None)


def test_the_step_bar_keeps_the_list_in_its_links(catalogue):
    chatbot = catalogue.facets()["chatbots"][0]
    params = {"chatbot": chatbot, "sort": "id", "per_page": "2", "page": "9"}
    order = listed(catalogue, params)
    run, cid = order[2]
    html = steps_html(catalogue, params, run, cid)
    hrefs = [unescape(h) for h in re.findall(r'href="([^"]+)"', html)]
    query = f"chatbot={chatbot.replace('/', '%2F')}&sort=id&per_page=2"
    assert hrefs == [
        # Relative to the page (runs/0/conversations/): served under any prefix, or bundled.
        f"../../../runs/0/conversations/{order[1][1]}.html?{query}",
        f"../../../index.html?{query}&page=2",  # back to the list, at the page holding this one
        f"../../../runs/0/conversations/{order[3][1]}.html?{query}",
    ]
    assert f"Conversation 3 of {len(order)} in this filtered list" in html


def test_no_step_bar_outside_the_list_or_for_a_bad_query(catalogue):
    chatbot = catalogue.facets()["chatbots"][0]
    other = next(c for c in catalogue.facets()["chatbots"] if c != chatbot)
    (_, cid) = listed(catalogue, {"chatbot": other})[0]
    assert steps_html(catalogue, {"chatbot": chatbot}, 0, cid) == ""
    assert steps_html(catalogue, {"sort": "nonsense"}, 0, MARKUP_ID) == ""
    first = listed(catalogue, {})[0]
    html = steps_html(catalogue, {}, *first)
    assert '<span class="off">← Previous</span>' in html and "in the list" in html


def test_the_ratings_differ_filter_rides_along_on_the_step_bar(catalogue):
    # Stepping from a conversation of "ratings differ between judges" stays in that list.
    params = {"differ": "judges", "sort": "id"}
    order = listed(catalogue, params)
    assert (0, MARKUP_ID) in order
    html = steps_html(catalogue, params, 0, MARKUP_ID)
    assert html and "in this filtered list" in html
    assert all("differ=judges" in unescape(h) for h in re.findall(r'href="([^"]+)"', html))
