"""The rubric engine: loading both formats, validation as a graph, every GOTO form,
and the rating rules."""

from __future__ import annotations

import msgspec
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


async def test_our_rubric_1_2_auto_answers_c0_and_asks_g12_in_the_immediate_branch():
    r = load_rubric(ROOT / "rubrics" / "vera-si.tsv")
    assert [q.id for q in r.questions if q.auto] == ["C0"]
    # Risk never registered: C0 is recorded without a call, Confirms Risk Not Relevant.
    answer = scripted({"D1": "Yes", "D2": "Yes", "G0": "Immediate risk"})
    walk = await walk_rubric(r, answer)
    assert "C0" not in answer.asked
    c0 = next(a for a in walk.answers if a.question_id == "C0")
    assert c0.auto and c0.attempts == 0 and c0.reasoning.startswith("Auto Answer")
    assert ratings(walk)["Confirms Risk"] == rec.NOT_RELEVANT
    # G12 comes after G7-G9 and before the Yellow questions; its Yes is harmful.
    assert answer.asked[answer.asked.index("G7") :][:5] == ["G7", "G8", "G9", "G12", "G10"]
    walk = await walk_rubric(r, scripted({"D1": "Yes", "G0": "Immediate risk", "G12": "Yes"}))
    rating = next(x for x in walk.ratings if x.dimension == "Guides to Human Care")
    assert (rating.rating, rating.question_id) == (rec.HIGH_POTENTIAL_FOR_HARM, "G12")


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


REFERENCE_2 = ROOT.parent / "shared" / "reference" / "vera-mh-2.0" / "data"

_HEADER = ["Label", "Question ID", "Dimension", "Severity", "Question", "Answer", "GOTO", "", "Auto Answer"]
_ROWS = [
    ["Gate", "1a", "A", "", "Anything?", "Yes", "2b", "", ""],
    ["", "", "", "", "", "No", "END", "", ""],
    [
        "Skip",
        "2b",
        "B",
        "",
        "Pick the only one.",
        "Rate this dimension Not Relevant",
        "NOT_RELEVANT>>3",
        "",
        "TRUE",
    ],
    ["Last", "3", "C", "Red", "Harmful?", "", "", "", ""],
]


def _write(path, header, rows):
    path.write_text("\n".join("\t".join(r) for r in [header, *rows]) + "\n")
    # Its own dimensions A, B, C, listed in its sidecar as a rubric with others than the
    # method's five lists them.
    path.with_suffix(".toml").write_text('dimensions = ["A", "B", "C"]\n')
    return path


def test_columns_are_found_by_name_in_any_order(tmp_path):
    plain = load_rubric(_write(tmp_path / "a.tsv", _HEADER, _ROWS))
    order = [8, 6, 0, 5, 4, 3, 2, 1, 7]
    shuffled = load_rubric(
        _write(tmp_path / "b.tsv", [_HEADER[i] for i in order], [[r[i] for i in order] for r in _ROWS])
    )
    assert validate_rubric(plain) == [] and validate_rubric(shuffled) == []
    assert [q.id for q in plain.questions] == ["1a", "2b", "3"]
    strip = ("path", "sha256", "line")
    same = [{k: v for k, v in msgspec.to_builtins(q).items() if k not in strip} for q in shuffled.questions]
    assert same == [
        {k: v for k, v in msgspec.to_builtins(q).items() if k not in strip} for q in plain.questions
    ]
    q = plain.question("2b")
    assert (q.title, q.auto, q.automatic) == ("Skip", True, True)
    assert plain.question("1a").title == "Gate" and not plain.question("1a").automatic


async def test_an_auto_answered_question_makes_no_call_and_is_recorded(tmp_path):
    r = load_rubric(_write(tmp_path / "a.tsv", _HEADER, _ROWS))
    answer = scripted({"1a": "Yes", "3": "Yes"})
    walk = await walk_rubric(r, answer)
    assert answer.asked == ["1a", "3"]  # 2b answered without a call
    auto = [a for a in walk.answers if a.auto]
    assert [(a.question_id, a.answer, a.attempts) for a in auto] == [
        ("2b", "Rate this dimension Not Relevant", 0)
    ]
    assert "Auto Answer" in auto[0].reasoning
    assert ratings(walk) == {"A": rec.BEST_PRACTICE, "B": rec.NOT_RELEVANT, "C": rec.HIGH_POTENTIAL_FOR_HARM}


@pytest.mark.parametrize(
    ("cell", "options", "expected"),
    [
        ("maybe", 1, "Auto Answer 'maybe': write true, false or leave it empty"),
        ("true", 2, "Auto Answer true but 2 answer options"),
        ("True", 0, "Auto Answer true but 0 answer options"),
    ],
)
def test_auto_answer_needs_true_or_false_and_exactly_one_answer(tmp_path, cell, options, expected):
    rows = [list(r) for r in _ROWS]
    rows[2][8] = cell
    if options == 0:
        rows[2][5:7] = ["", ""]
        rows[2][3] = "Red"
    extra = [["", "", "", "", "", "Other", "3", "", ""]] if options == 2 else []
    p = _write(tmp_path / "a.tsv", _HEADER, rows[:3] + extra + rows[3:])
    problems = validate_rubric(load_rubric(p))
    assert [(x.line, expected in x.message) for x in problems] == [(4, True)], problems


def test_false_or_empty_auto_answer_is_a_normal_question(tmp_path):
    rows = [list(r) for r in _ROWS]
    rows[0][8] = "FALSE"
    r = load_rubric(_write(tmp_path / "a.tsv", _HEADER, rows))
    assert validate_rubric(r) == []
    assert not r.question("1a").auto and not r.question("3").auto


@pytest.mark.skipif(not REFERENCE_2.exists(), reason="reference data absent")
@pytest.mark.parametrize(
    ("target", "file", "auto_id"), [("SI", "rubric.tsv", "5"), ("HFO", "rubric_HFO.tsv", "7")]
)
def test_the_2_0_rubrics_load_and_validate(target, file, auto_id):
    r = load_rubric(REFERENCE_2 / target / file)
    assert validate_rubric(r) == []
    assert [q.id for q in r.questions if q.auto] == [auto_id]
    assert len(r.dimensions) == 5
    if target == "HFO":
        assert r.questions[1].id == "1a" and r.questions[0].title  # the leading Label column
        sel = r.selector()
        assert sel is not None and sel.id == "11"
        assert sel.labels == ("No Danger", "Immediate Danger Absent", "Immediate Danger Present")


@pytest.mark.skipif(not REFERENCE_2.exists(), reason="reference data absent")
def test_vera_validate_rubric_passes_both_2_0_rubrics():
    from click.testing import CliRunner

    from vera.cli._main import main

    for path in (REFERENCE_2 / "SI" / "rubric.tsv", REFERENCE_2 / "HFO" / "rubric_HFO.tsv"):
        result = CliRunner().invoke(main, ["validate", "rubric", str(path)])
        assert result.exit_code == 0, result.output
        assert ": ok — " in result.output and "5 dimensions" in result.output


def test_a_pack_s_option_text_is_kept_for_display_and_the_label_stays_the_answer():
    """A locale pack's rubric gives each option its text (option_text): the judge still
    answers with the English label, and a page shows the text."""
    from vera.rubric import QuestionTexts

    root = ROOT
    zh = load_rubric(root / "locales" / "zh-CN" / "rubric.tsv")
    d1 = zh.question("D1")
    assert [(o.label, o.text) for o in d1.options][:2] == [("Yes", "是"), ("No", "否")]
    assert all(
        o.text == "" for q in load_rubric(root / "rubrics" / "vera-si.tsv").questions for o in q.options
    )
    texts = QuestionTexts({}, options={"D1": {"Yes": "是"}, "G0": {"Immediate risk": "紧急风险"}})
    assert texts.option("D1", "Yes") == "是" and texts.option("D1", "Maybe") == "Maybe"
    assert texts.any_option("Immediate risk") == "紧急风险" and texts.any_option("x") == "x"
