"""vera's walk against an independent walk of the published flow rules
(tests/rubric_rules.py), on every route of every rubric we run: ours, the fixture, the
reference v1.1 rubric and both VERA-MH 2.0 rubrics (SI v1.2 and HFO) where present.

By default the routes are path classes (every distinct route through each independent
part, every answer of every question); `VERA_EVERY_PATH=1` walks every literal path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vera.rubric._concurrent import walk_rubric_concurrent
from vera.rubric._load import load_rubric
from vera.rubric._model import Question
from vera.rubric._walk import Answer, walk_rubric

from . import rubric_rules as rules
from .conftest import FIXTURES, REFERENCE, ROOT

REFERENCE_2 = ROOT.parent / "shared" / "reference" / "vera-mh-2.0" / "data"
RUBRICS: dict[str, Path] = {
    "flow": FIXTURES / "rubrics" / "flow.tsv",
    "vera-si": ROOT / "rubrics" / "vera-si.tsv",
    "v1.1": REFERENCE / "data" / "rubric.tsv",
    "si-1.2": REFERENCE_2 / "SI" / "rubric.tsv",
    "hfo": REFERENCE_2 / "HFO" / "rubric_HFO.tsv",
}
# How many path classes each has at least, and every literal path (VERA_EVERY_PATH=1).
LEAST = {"flow": 8, "vera-si": 15, "v1.1": 25, "si-1.2": 25, "hfo": 40}
EVERY = {"flow": 18, "vera-si": 1000, "v1.1": 137283, "si-1.2": 206403, "hfo": 980416}


def sheet_and_rubric(name: str):
    path = RUBRICS[name]
    if not path.exists():
        pytest.skip("reference data absent")
    return rules.read_sheet(path), load_rubric(path)


def judge(given: dict[str, str]):
    asked: list[str] = []

    async def answer(q: Question) -> Answer:
        asked.append(q.id)
        return Answer(given[q.id], f"why {q.id}")

    return answer, asked


@pytest.mark.parametrize("semantics", ["vera", "reference"])
@pytest.mark.parametrize("name", RUBRICS)
async def test_vera_rates_every_route_as_the_published_rules_do(name, semantics):
    sheet, rubric = sheet_and_rubric(name)
    assert [it.qid for it in sheet.items] == [q.id for q in rubric.questions]
    paths = rules.answer_paths(sheet)
    if rules.EVERY_PATH and name != "vera-si":
        assert len(paths) == EVERY[name]
    assert len(paths) >= (EVERY if rules.EVERY_PATH else LEAST)[name]
    for given in paths:
        expected = rules.walk(sheet, given, semantics)
        answer, asked = judge(given)
        walk = await walk_rubric(rubric, answer, terminal=semantics)
        assert asked == expected.asked, given
        assert [a.question_id for a in walk.answers if a.auto] == expected.fixed, given
        assert {r.dimension: r.rating for r in walk.ratings} == expected.ratings, given
        answer, _ = judge(given)
        assert await walk_rubric_concurrent(rubric, answer, terminal=semantics) == walk


@pytest.mark.parametrize("name", RUBRICS)
def test_path_classes_cover_every_answer_of_every_reachable_question(name):
    sheet, _ = sheet_and_rubric(name)
    classes = rules.path_classes(sheet)
    covered = {(q, a) for given in classes for q, a in given.items()}
    reachable, frontier = {0}, [0]
    while frontier:
        for _, j, _ in rules._successors(sheet, frontier.pop()):
            if j != rules.EXIT and j not in reachable:
                reachable.add(j)
                frontier.append(j)
    for i in reachable:
        it = sheet.items[i]
        if not it.fixed:
            assert {(it.qid, label) for label in it.labels} <= covered, it.qid
    # Each class is a real, complete path, none twice.
    for given in classes:
        assert len(rules.walk(sheet, given).asked) == len(given)
    assert len({tuple(sorted(g.items())) for g in classes}) == len(classes)


def test_path_classes_are_paths_of_the_full_enumeration():
    sheet, _ = sheet_and_rubric("flow")
    every = list(rules.every_path(sheet))
    classes = rules.path_classes(sheet)
    assert all(g in every for g in classes) and len(classes) < len(every)


def test_hfo_counts_its_auto_answer_and_its_danger_tiers():
    sheet, _ = sheet_and_rubric("hfo")
    walked = [rules.walk(sheet, g) for g in rules.path_classes(sheet)]
    assert any("7" in o.fixed for o in walked)
    tiers = {g.get("11") for g in rules.path_classes(sheet)}
    assert {"No Danger", "Immediate Danger Absent", "Immediate Danger Present"} <= tiers


# One HFO route, both semantics: risk detected and confirmed well, the danger tier
# "Immediate Danger Present", one Yellow finding in Supportive Conversation (29), and
# all six AI Boundaries questions answered No, so the walk ends on 36's END.
HFO_PASSES_BOUNDARIES = {
    **dict.fromkeys(["0", "1a", "1b", "1c", "1d", "1e"], "Yes"),
    **dict.fromkeys(["2", "4", "6", "8", "9", "10"], "No"),
    "11": "Immediate Danger Present",
    **dict.fromkeys(["18", "19", "20", "21", "22", "23"], "No"),
    **dict.fromkeys(["24", "25", "26", "27", "28"], "No"),
    "29": "Yes",
    **dict.fromkeys(["31", "32", "33", "34", "35", "36"], "No"),
}


async def test_hfo_worked_example_under_both_semantics():
    _, rubric = sheet_and_rubric("hfo")
    answer, asked = judge(HFO_PASSES_BOUNDARIES)
    vera = await walk_rubric(rubric, answer)
    assert asked == list(HFO_PASSES_BOUNDARIES)
    assert {r.dimension: r.rating for r in vera.ratings} == {
        "Detects Potential Risk": rules.BP,
        "Confirms Risk": rules.BP,
        "Guides to Human Care": rules.BP,
        "Supportive Conversation": rules.SO,
        "Follows AI Boundaries": rules.BP,
    }
    answer, _ = judge(HFO_PASSES_BOUNDARIES)
    reference = await walk_rubric(rubric, answer, terminal="reference")
    assert {r.rating for r in reference.ratings} == {rules.NR}
    assert "END at question 36" in reference.ratings[0].reasoning
    # The same answers: only the ratings differ.
    assert reference.answers == vera.answers

    # "No Danger" ends at the tier: vera keeps the two dimensions already rated.
    no_danger = {k: HFO_PASSES_BOUNDARIES[k] for k in list(HFO_PASSES_BOUNDARIES)[:12]} | {"11": "No Danger"}
    answer, _ = judge(no_danger)
    vera = await walk_rubric(rubric, answer)
    assert [r.rating for r in vera.ratings] == [rules.BP, rules.BP, rules.NR, rules.NR, rules.NR]
    answer, _ = judge(no_danger)
    assert {r.rating for r in (await walk_rubric(rubric, answer, terminal="reference")).ratings} == {rules.NR}
