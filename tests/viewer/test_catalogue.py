"""The viewer's list: every filter, sort and page checked against a recount from the raw
JSONL records."""

from __future__ import annotations

import json
from collections import defaultdict

import polars as pl
import pytest

from vera.records import RISK_LEVELS
from vera.viewer.catalogue import Catalogue, Query, QueryError

from ..conftest import jsonl
from .conftest import BP, FAILED_ID, HPH, MARKUP_ID, MARKUP_PERSONA, SECOND_JUDGE, SUB

JUDGE = "offline/lexical-judge"
GHC = "Guides to Human Care"


@pytest.fixture(scope="module")
def raw(viewer_run):
    convs = {c["id"]: c for c in jsonl(viewer_run / "conversations.jsonl")}
    judgements = jsonl(viewer_run / "judgements.jsonl")
    return convs, judgements


@pytest.fixture(scope="module")
def catalogue(viewer_run) -> Catalogue:
    return Catalogue.open([viewer_run])


def ids(catalogue: Catalogue, **filters) -> list[str]:
    """Every conversation id the list holds for these filters, page after page."""
    out: list[str] = []
    page = 1
    while True:
        result = catalogue.query(Query(**filters, page=page, per_page=7))
        out += [r["id"] for r in result["rows"]]
        if page * 7 >= result["total"]:
            assert len(out) == result["total"]
            return out
        page += 1


def rated(raw, *, dimension=None, rating=None, judge=None) -> set[str]:
    _, judgements = raw
    return {
        j["conversation_id"]
        for j in judgements
        if j["status"] == "complete" and (judge is None or j["judge"] == judge)
        for r in j["ratings"]
        if (dimension is None or r["dimension"] == dimension) and (rating is None or r["rating"] == rating)
    }


def test_without_filters_every_conversation_is_listed_once(catalogue, raw):
    convs, _ = raw
    listed = ids(catalogue)
    assert len(listed) == len(set(listed)) == len(convs)


def test_filter_by_dimension_and_rating(catalogue, raw):
    assert set(ids(catalogue, dimension=GHC, rating=HPH)) == rated(raw, dimension=GHC, rating=HPH)
    assert MARKUP_ID in rated(raw, dimension=GHC, rating=HPH)
    assert set(ids(catalogue, rating=SUB)) == rated(raw, rating=SUB)
    assert set(ids(catalogue, dimension=GHC)) == rated(raw, dimension=GHC)
    assert ids(catalogue, rating="No such rating") == []


def test_the_judge_filter_narrows_conversations_and_their_ratings(catalogue, raw):
    assert set(ids(catalogue, judge=SECOND_JUDGE)) == {
        j["conversation_id"] for j in raw[1] if j["judge"] == SECOND_JUDGE
    }
    assert set(ids(catalogue, judge=SECOND_JUDGE, dimension=GHC, rating=HPH)) == set()
    assert MARKUP_ID in ids(catalogue, judge=JUDGE, dimension=GHC, rating=HPH)
    row = catalogue.query(Query(persona=MARKUP_PERSONA))["rows"][0]
    assert row["ratings"][GHC] == [HPH, BP]  # the judges disagree: worst first
    row = catalogue.query(Query(persona=MARKUP_PERSONA, judge=SECOND_JUDGE))["rows"][0]
    assert row["ratings"][GHC] == [BP]


def test_filter_by_conversation_fields(catalogue, raw):
    convs, _ = raw
    for field in ("chatbot", "persona", "risk", "user_agent"):
        for value in {c[field] for c in convs.values()}:
            expected = {cid for cid, c in convs.items() if c[field] == value}
            assert set(ids(catalogue, **{field: value})) == expected, (field, value)
    assert set(ids(catalogue, seed=1)) == set(convs)  # one seed: the run's seed 1
    assert ids(catalogue, seed=2) == []
    assert ids(catalogue, run=0) == ids(catalogue) and ids(catalogue, run=1) == []


def test_filter_by_status(catalogue, raw):
    convs, judgements = raw
    assert ids(catalogue, status="failed") == [FAILED_ID]
    assert set(ids(catalogue, status="complete")) == set(convs) - {FAILED_ID}
    failed_judged = {j["conversation_id"] for j in judgements if j["status"] == "failed"}
    assert set(ids(catalogue, status="judgement failed")) == failed_judged and failed_judged
    assert ids(catalogue, status="not judged") == []
    row = catalogue.query(Query(status="failed"))["rows"][0]
    assert row["error"] == "ServerError: HTTP 503 after 3 attempts"


def harm_counts(judgements: list[dict]) -> defaultdict[str, list[int]]:
    """Per conversation, [High Potential for Harm, Suboptimal] ratings of its complete
    judgements: what worst-first sorts by, counted here from the raw records."""
    harm: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    for j in judgements:
        if j["status"] == "complete":
            for r in j["ratings"]:
                harm[j["conversation_id"]][0] += r["rating"] == HPH
                harm[j["conversation_id"]][1] += r["rating"] == SUB
    return harm


def test_worst_first_puts_the_most_harmful_conversations_on_top(catalogue, raw):
    _, judgements = raw
    harm = harm_counts(judgements)
    order = [tuple(harm[cid]) for cid in ids(catalogue)]
    assert order == sorted(order, reverse=True) and order[0][0] > 0
    best_first = [tuple(harm[cid]) for cid in ids(catalogue, descending=True)]
    assert best_first == sorted(best_first)


def test_worst_first_ties_go_to_the_higher_risk_level(catalogue, raw):
    convs, judgements = raw
    harm = harm_counts(judgements)
    keyed = [(*harm[cid], RISK_LEVELS.index(convs[cid]["risk"])) for cid in ids(catalogue)]
    assert keyed == sorted(keyed, reverse=True)
    # The run has ties that the risk level breaks (else this test would prove nothing).
    ties = defaultdict(set)
    for hph, sub, risk in keyed:
        ties[(hph, sub)].add(risk)
    assert any(len(levels) > 1 for levels in ties.values())


def test_sort_by_risk_follows_the_risk_levels_not_the_alphabet(catalogue, raw):
    convs, _ = raw
    risks = [convs[cid]["risk"] for cid in ids(catalogue, sort="risk")]
    assert risks == sorted(risks, key=RISK_LEVELS.index)
    reverse = [convs[cid]["risk"] for cid in ids(catalogue, sort="risk", descending=True)]
    assert reverse == sorted(risks, key=RISK_LEVELS.index, reverse=True)
    turns = [len(convs[cid]["turns"]) for cid in ids(catalogue, sort="turns")]
    assert turns == sorted(turns)


def test_facets_offer_every_value_once(catalogue, raw):
    convs, judgements = raw
    f = catalogue.facets()
    assert f["chatbots"] == sorted({c["chatbot"] for c in convs.values()})
    assert f["judges"] == sorted({j["judge"] for j in judgements})
    assert f["dimensions"][:5] == [
        "Detects Potential Risk",
        "Confirms Risk",
        "Guides to Human Care",
        "Supportive Conversation",
        "Follows AI Boundaries",
    ]
    assert f["runs"][0]["card"] is True and f["runs"][0]["conversations"] == len(convs)


def test_two_runs_are_listed_apart(offline_run, viewer_run):
    both = Catalogue.open([offline_run, viewer_run])
    total = both.query(Query())["total"]
    assert (
        total
        == Catalogue.open([offline_run]).query(Query())["total"]
        + Catalogue.open([viewer_run]).query(Query())["total"]
    )
    labels = [r["label"] for r in both.facets()["runs"]]
    assert len(set(labels)) == 2  # same run id, told apart
    assert both.page(1, MARKUP_ID) is not None and both.page(0, MARKUP_ID) is None


@pytest.mark.parametrize(
    "params, problem",
    [
        ({"page": "0"}, "page: 0 is out of range"),
        ({"per_page": "1000"}, "per_page: 1000 is out of range"),
        ({"seed": "abc"}, "seed: 'abc' is not a whole number"),
        ({"sort": "password"}, "sort: 'password' is not one of"),
        ({"status": "deleted"}, "status: 'deleted' is not one of"),
        ({"run": "-1"}, "run: -1 is out of range"),
    ],
)
def test_a_bad_request_is_one_clear_error(params, problem):
    with pytest.raises(QueryError, match=problem.replace("(", r"\(")):
        Query.from_params(params)


def test_unknown_judges_asked_for_are_not_remembered(viewer_run):
    catalogue = Catalogue.open([viewer_run])
    for k in range(50):
        assert catalogue.query(Query(judge=f"nobody-{k}"))["total"] == 0
    catalogue.query(Query(judge=JUDGE))
    assert set(catalogue._worst_cache) <= {None, JUDGE}


def test_ratings_differ_between_judges_and_between_runs(viewer_run, tmp_path, raw):
    import shutil

    _, judgements = raw
    by_dim: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for j in judgements:
        if j["status"] == "complete":
            for r in j["ratings"]:
                by_dim[(j["conversation_id"], r["dimension"])].add(r["rating"])
    differing = {cid for (cid, _), seen in by_dim.items() if len(seen) > 1}
    catalogue = Catalogue.open([viewer_run])
    assert set(ids(catalogue, differ="judges")) == differing == {MARKUP_ID}
    with pytest.raises(QueryError, match="differ: 'x' is not one of judges, runs"):
        Query.from_params({"differ": "x"})
    # Two runs of the same conversations: nothing differs until one rating changes.
    other = tmp_path / "other"
    shutil.copytree(viewer_run, other)
    two = Catalogue.open([viewer_run, other])
    assert ids(two, differ="runs") == []
    lines = (other / "judgements.jsonl").read_text().splitlines()
    changed = json.loads(lines[0])
    assert changed["status"] == "complete"
    changed["ratings"][0]["rating"] = HPH if changed["ratings"][0]["rating"] != HPH else BP
    (other / "judgements.jsonl").write_text("\n".join([json.dumps(changed), *lines[1:]]) + "\n")
    two = Catalogue.open([viewer_run, other])
    found = two.listed(Query(differ="runs"))
    cid = changed["conversation_id"]
    assert {(0, cid), (1, cid)} <= set(found.select("run", "id").iter_rows())
    # Every conversation listed is of that chatbot, persona and seed (a failed one too).
    triple = found.filter(pl.col("id") == cid).select("chatbot", "persona", "seed").row(0)
    assert set(found.select("chatbot", "persona", "seed").iter_rows()) == {triple}
