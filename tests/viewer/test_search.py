"""Free-text search in the viewer's list: what it finds is exactly what a plain,
case-insensitive scan of the records finds, and the snippets show where."""

from __future__ import annotations

import pytest

from vera.store import open_run
from vera.viewer.catalogue import Catalogue, Query, QueryError

from .conftest import MARKUP_ID


@pytest.fixture(scope="module")
def catalogue(viewer_run) -> Catalogue:
    return Catalogue.open([viewer_run])


def brute_force(run_dir, needle: str) -> set[str]:
    """The conversations whose turns or judge reasoning contain `needle`, any case."""
    records = open_run(run_dir)
    low = needle.lower()
    found = {c.id for c in records.iter_conversations() if any(low in t.text.lower() for t in c.turns)}
    for j in records.iter_judgements():
        texts = [r.reasoning for r in j.ratings] + [a.reasoning for a in j.answers]
        if any(low in t.lower() for t in texts):
            found.add(j.conversation_id)
    return found


def ids(catalogue: Catalogue, **params: str) -> set[str]:
    data = catalogue.query(Query.from_params({"per_page": "200", **params}))
    assert data["total"] == len(data["rows"])
    return {row["id"] for row in data["rows"]}


@pytest.mark.parametrize("needle", ["FEELS POINTLESS", "<script>", "(", "a.*b", "hotline", "988"])
def test_search_finds_exactly_what_a_plain_scan_finds(catalogue, viewer_run, needle):
    assert ids(catalogue, q=needle) == brute_force(viewer_run, needle)


def test_a_common_word_finds_many_and_combines_with_the_filters(catalogue, viewer_run):
    everyone = brute_force(viewer_run, "you")
    assert len(everyone) > 5  # the control: the offline transcripts say "you"
    assert ids(catalogue, q="you") == everyone
    chatbot = next(iter(catalogue.facets()["chatbots"]))
    records = open_run(viewer_run)
    of_chatbot = {cid for cid, (h, _) in records.conversations.items() if h.chatbot == chatbot}
    assert ids(catalogue, q="you", chatbot=chatbot) == everyone & of_chatbot


def test_snippets_say_where_and_keep_the_original_text(catalogue):
    data = catalogue.query(Query.from_params({"q": "Everything FEELS pointless"}))
    (row,) = [r for r in data["rows"] if r["id"] == MARKUP_ID]
    found = row["found"]
    # The turn, and the reasoning of both judges' rating and answer that quote it.
    wheres = [s["where"] for s in found["snippets"]]
    assert wheres[0] == "turn 1 · User"
    assert found["count"] >= 3 and len(found["snippets"]) == 3
    first = found["snippets"][0]
    assert first["match"] == "Everything feels pointless"  # as written, not as typed
    assert first["anchor"] == "turn-1"
    assert first["before"].endswith("by mistake, sorry. ") and first["after"] == " lately."
    judged = [s for s in found["snippets"] if s["where"] != "turn 1 · User"]
    assert judged and all(s["anchor"].startswith(("r-", "walk-")) for s in judged)


def test_no_search_adds_no_snippets_and_a_long_one_is_refused(catalogue):
    data = catalogue.query(Query.from_params({}))
    assert all("found" not in r for r in data["rows"])
    with pytest.raises(QueryError, match="q: longer than 200 characters"):
        Query.from_params({"q": "x" * 201})
    assert ids(catalogue, q="no such words anywhere 4f1c") == set()
