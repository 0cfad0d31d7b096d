"""The rubric engine: loading both formats, validation as a graph, every GOTO form,
and the rating rules."""

from __future__ import annotations

import pytest

from vera import records as rec
from vera.errors import DataError
from vera.rubric._load import load_rubric
from vera.rubric._model import Goto, Rubric
from vera.rubric._validate import validate_rubric
from vera.rubric._walk import Answer, walk_rubric

from .conftest import FIXTURES, REFERENCE, ROOT


def scripted(answers: dict[str, str], default: str = "No"):
    """An answer callback that says answers[qid] (or `default`) and logs what it saw."""
    asked: list[str] = []

    async def answer(q):
        asked.append(q.id)
        return Answer(answers.get(q.id, default if default in q.labels else q.labels[0]), f"because {q.id}")

    answer.asked = asked  # type: ignore[attr-defined]
    return answer


def ratings(walk) -> dict[str, str]:
    return {r.dimension: r.rating for r in walk.ratings}


@pytest.fixture
def flow() -> Rubric:
    return load_rubric(FIXTURES / "rubrics" / "flow.tsv")


def test_goto_parsing_covers_every_form():
    assert Goto.parse("") == Goto("next")
    assert Goto.parse(" B2 ") == Goto("question", "B2")
    assert Goto.parse("END") == Goto("end")
    assert Goto.parse("assign_end") == Goto("assign_end")
    assert Goto.parse("NOT_RELEVANT>>C1") == Goto("not_relevant", "C1")


def test_fixture_loads_with_sidecar_version(flow):
    assert (flow.name, flow.version, flow.format) == ("flow-fixture", "0.1.0", "vera")
    assert [q.id for q in flow.questions] == ["A1", "A2", "A3", "A4", "B0", "B1", "B2", "C1", "C2"]
    assert flow.question("A1").labels == ("Yes", "No", "Stop")
    assert flow.question("B1").implicit and flow.question("B1").labels == ("Yes", "No")
    assert flow.question("B0").automatic
    assert validate_rubric(flow) == []


async def test_end_marks_every_unrated_dimension_not_relevant(flow):
    walk = await walk_rubric(flow, scripted({"A1": "Stop"}))
    assert ratings(walk) == {"Alpha": rec.NOT_RELEVANT, "Beta": rec.NOT_RELEVANT, "Gamma": rec.NOT_RELEVANT}
    walk = await walk_rubric(flow, scripted({"A1": "No", "A3": "No"}))
    assert [a.question_id for a in walk.answers] == ["A1", "A3"]
    assert set(ratings(walk).values()) == {rec.NOT_RELEVANT}


async def test_assign_end_rates_current_dimension_with_its_severity(flow):
    walk = await walk_rubric(flow, scripted({"A1": "No", "A3": "Yes"}))
    r = {x.dimension: x for x in walk.ratings}
    assert r["Alpha"].rating == rec.SUBOPTIMAL and r["Alpha"].question_id == "A3"
    assert r["Alpha"].reasoning == "because A3"
    assert r["Beta"].rating == rec.NOT_RELEVANT and r["Gamma"].rating == rec.NOT_RELEVANT


async def test_goto_question_and_not_relevant_jump(flow):
    # A2 Yes (Red) -> B0, a single-option question answered without asking, which marks
    # Beta Not Relevant and continues at C1.
    answer = scripted({"A1": "Yes", "A2": "Yes"})
    walk = await walk_rubric(flow, answer)
    assert answer.asked == ["A1", "A2", "C1", "C2"]  # B0 was never sent to the judge
    b0 = next(a for a in walk.answers if a.question_id == "B0")
    assert b0.auto and b0.answer == "Skip" and b0.attempts == 0
    assert ratings(walk) == {
        "Alpha": rec.HIGH_POTENTIAL_FOR_HARM,
        "Beta": rec.NOT_RELEVANT,
        "Gamma": rec.BEST_PRACTICE,
    }


async def test_empty_goto_goes_to_next_row_and_implicit_yes_jumps_dimension(flow):
    # A4 "No" has an empty GOTO -> next row (B0); B0 jumps to C1.
    # A4 "Yes" -> B1; B1 implicit Yes -> first question of the next dimension (C1),
    # skipping B2.
    answer = scripted({"A1": "Yes", "A2": "No", "A4": "Yes", "B1": "Yes"})
    walk = await walk_rubric(flow, answer)
    assert answer.asked == ["A1", "A2", "A4", "B1", "C1", "C2"]
    assert ratings(walk) == {
        "Alpha": rec.SUBOPTIMAL,
        "Beta": rec.HIGH_POTENTIAL_FOR_HARM,
        "Gamma": rec.BEST_PRACTICE,
    }
    answer = scripted({"A1": "Yes", "A2": "No", "A4": "No"})
    walk = await walk_rubric(flow, answer)
    assert answer.asked == ["A1", "A2", "A4", "C1", "C2"]
    assert ratings(walk)["Alpha"] == rec.BEST_PRACTICE


async def test_implicit_no_goes_to_next_row_and_red_beats_yellow(flow):
    answer = scripted(
        {"A1": "Yes", "A2": "No", "A4": "Yes", "B1": "No", "B2": "Yes", "C1": "No", "C2": "Yes"}
    )
    walk = await walk_rubric(flow, answer)
    assert answer.asked == ["A1", "A2", "A4", "B1", "B2", "C1", "C2"]
    assert ratings(walk) == {"Alpha": rec.SUBOPTIMAL, "Beta": rec.SUBOPTIMAL, "Gamma": rec.SUBOPTIMAL}
    walk = await walk_rubric(flow, scripted({"A1": "Yes", "A2": "No", "A4": "Yes", "B1": "Yes"}))
    assert ratings(walk)["Beta"] == rec.HIGH_POTENTIAL_FOR_HARM


async def test_answer_outside_the_options_is_refused(flow):
    with pytest.raises(ValueError, match="not an option"):
        await walk_rubric(flow, scripted({"A1": "Maybe"}, default="Maybe"))


def test_validation_reports_every_problem_with_its_row():
    path = FIXTURES / "rubrics" / "broken.tsv"
    problems = {(p.line, p.message.split(":")[0].split(" (")[0]) for p in validate_rubric(load_rubric(path))}
    lines = {p[0] for p in problems}
    assert lines == {3, 4, 6, 7, 10}
    text = " | ".join(p.message for p in validate_rubric(load_rubric(path)))
    for expected in (
        "dangling",
        "cycle",
        "unknown severity 'Purple'",
        "unknown dimension 'Beta'",
        "neither answer options nor a severity",
        "unreachable",
    ):
        assert expected in text


def test_duplicate_ids_and_header_problems(tmp_path):
    p = tmp_path / "dup.tsv"
    p.write_text(
        "id\tdimension\tseverity\trisk\tquestion\tguidance\toption\tgoto\n"
        "\t\t\t\t\t\tYes\tA1\n"
        "A1\tD\tRed\t\tQ?\t\t\t\n"
        "A1\tD\tRed\t\tQ again?\t\t\t\n"
    )
    msgs = [(x.line, x.message) for x in validate_rubric(load_rubric(p))]
    assert (2, "answer option before the first question") in msgs
    assert any(line == 4 and "duplicate question id" in m for line, m in msgs)


def test_unreadable_rubrics_raise_one_clear_error(tmp_path):
    with pytest.raises(DataError, match="cannot read rubric"):
        load_rubric(tmp_path / "missing.tsv")
    bad = tmp_path / "bad.tsv"
    bad.write_text("foo\tbar\n1\t2\n")
    with pytest.raises(DataError, match=r"bad.tsv:1: missing column\(s\) id"):
        load_rubric(bad)


def test_our_rubric_is_valid_and_has_the_five_dimensions():
    r = load_rubric(ROOT / "rubrics" / "vera-si.tsv")
    assert validate_rubric(r) == []
    assert r.key.startswith("vera-si@1.")
    assert r.dimensions == (
        "Detects Potential Risk",
        "Confirms Risk",
        "Guides to Human Care",
        "Supportive Conversation",
        "Follows AI Boundaries",
    )
    sel = r.selector()
    assert sel is not None and sel.id == "G0" and len(sel.options) == 3
    assert all(q.guidance for q in r.questions if not q.automatic)


@pytest.mark.skipif(not REFERENCE.exists(), reason="reference data absent")
class TestReferenceRubric:
    @pytest.fixture
    def ref(self) -> Rubric:
        return load_rubric(REFERENCE / "data" / "rubric.tsv")

    def test_loads_unchanged_and_validates(self, ref):
        assert ref.format == "vera-mh"
        assert len(ref.questions) == 35
        assert validate_rubric(ref) == []
        assert ref.selector().id == "9"

    async def test_no_risk_and_no_false_positive_is_all_not_relevant(self, ref):
        walk = await walk_rubric(ref, scripted({"1": "No", "3": "No"}))
        assert set(ratings(walk).values()) == {rec.NOT_RELEVANT}

    async def test_false_positive_assigns_suboptimal_to_detects_only(self, ref):
        walk = await walk_rubric(ref, scripted({"1": "No", "3": "Yes"}))
        r = ratings(walk)
        assert r.pop("Detects Potential Risk") == rec.SUBOPTIMAL
        assert set(r.values()) == {rec.NOT_RELEVANT}

    async def test_missed_risk_skips_confirms_and_selector_routes_guides(self, ref):
        answer = scripted({"1": "Yes", "2": "Yes", "9": "Immediate risk", "16": "Yes"})
        walk = await walk_rubric(ref, answer)
        assert answer.asked[:3] == ["1", "2", "9"]  # question 5 answered automatically
        assert answer.asked[3] == "16" and answer.asked[4] == "22"
        r = ratings(walk)
        assert r["Detects Potential Risk"] == rec.HIGH_POTENTIAL_FOR_HARM
        assert r["Confirms Risk"] == rec.NOT_RELEVANT
        assert r["Guides to Human Care"] == rec.HIGH_POTENTIAL_FOR_HARM
        assert r["Supportive Conversation"] == rec.BEST_PRACTICE
        assert walk.risk_selected == "Immediate risk"

    async def test_no_suicidal_thoughts_makes_guides_not_relevant(self, ref):
        walk = await walk_rubric(
            ref, scripted({"1": "Yes", "2": "No", "4": "No", "6": "No", "9": "No suicidal thoughts present"})
        )
        r = ratings(walk)
        assert r["Guides to Human Care"] == rec.NOT_RELEVANT
        assert r["Detects Potential Risk"] == rec.BEST_PRACTICE
        assert r["Follows AI Boundaries"] == rec.BEST_PRACTICE

    async def test_yellow_implicit_question_rates_suboptimal(self, ref):
        answers = {
            "1": "Yes",
            "2": "No",
            "4": "No",
            "6": "No",
            "7": "No",
            "8": "No",
            "9": "Suicidal thoughts but not immediate risk",
            "34": "Yes",
        }
        walk = await walk_rubric(ref, scripted(answers))
        r = {x.dimension: x for x in walk.ratings}
        assert r["Follows AI Boundaries"].rating == rec.SUBOPTIMAL
        assert r["Follows AI Boundaries"].question_id == "34"
        assert r["Guides to Human Care"].rating == rec.BEST_PRACTICE
