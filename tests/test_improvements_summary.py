"""`vera report improvements` in the reference's terms (its summarize_results.py): every
figure computed here from the reference's own definitions over the exported results.csv
(one per chatbot), and compared with vera's report of the same run."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import pytest

from vera.records import BEST_PRACTICE, HIGH_POTENTIAL_FOR_HARM, NOT_RELEVANT, SUBOPTIMAL
from vera.report.improvements._row_summary import summarize_rows

from .targets import DEMO, vera

BANDS = (HIGH_POTENTIAL_FOR_HARM, SUBOPTIMAL)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("summary") / "run"
    result = vera("run", "--target", str(DEMO), "--seeds", "3", "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stdout + result.stderr
    assert vera("export", str(out), "--format", "reference").returncode == 0
    return out


def reference_summary(path: Path, dims: list[str], top: int) -> dict:
    """summarize_results.py's figures, by its definitions: every row counts; a band's
    questions by count; shares of all rows and of the band; the global list by count,
    then harm first, then question id."""
    rows = list(csv.DictReader(path.read_text().splitlines()))
    total = len(rows)
    counts: dict = defaultdict(int)
    out: dict = {"total": total, "dims": {}}
    for d in dims:
        outcome = {
            r: sum(row[d] == r for row in rows)
            for r in (BEST_PRACTICE, SUBOPTIMAL, HIGH_POTENTIAL_FOR_HARM, NOT_RELEVANT)
        }
        rated = sum(v for k, v in outcome.items() if k != NOT_RELEVANT)
        bands = {}
        for band in BANDS:
            in_band = [row for row in rows if row[d] == band]
            per_q: dict = defaultdict(int)
            for row in in_band:
                if row[f"{d}_yes_question_id"]:
                    per_q[row[f"{d}_yes_question_id"]] += 1
                    counts[(d, band, row[f"{d}_yes_question_id"])] += 1
            ranked = sorted(
                per_q.items(), key=lambda kv: (-kv[1], (0, int(kv[0])) if kv[0].isdigit() else (1, kv[0]))
            )[:top]
            bands[band] = (
                len(in_band),
                100 * len(in_band) / total,
                {q: (n, 100 * n / total, 100 * n / len(in_band)) for q, n in ranked},
            )
        out["dims"][d] = {
            "pct_of_all": {k: 100 * v / total for k, v in outcome.items()},
            "pct_of_rated": {k: 100 * v / rated for k, v in outcome.items() if k != NOT_RELEVANT}
            if rated
            else {},
            "bands": bands,
        }

    # Its question ids are integers, sorted as numbers; ids it cannot read (`1a`) come
    # after them in vera, as text.
    def qid(q: str) -> tuple:
        return (0, int(q)) if q.isdigit() else (1, q)

    glob = sorted(counts.items(), key=lambda kv: (-kv[1], BANDS.index(kv[0][1]), qid(kv[0][2])))[:25]
    out["global"] = [(d, b, q, n, 100 * n / total) for (d, b, q), n in glob]
    return out


def test_the_summary_matches_the_references_definitions(demo_run):
    result = vera(
        "report", "improvements", str(demo_run), "--format", "json", "--out", "-",
        "--top-questions", "2", "--low-sample-threshold", "10",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert len(report["chatbots"]) == 2
    for bot in report["chatbots"]:
        s = bot["summary"]
        folder = bot["chatbot"].replace("/", "__")
        dims = [d["dimension"] for d in s["dimensions"]]
        ref = reference_summary(demo_run / "reference" / folder / "results.csv", dims, top=2)
        assert s["rows"] == ref["total"] == 9  # 3 seeds × 3 personas, one judge
        assert s["low_sample"] is True and s["low_sample_threshold"] == 10
        for d in s["dimensions"]:
            r = ref["dims"][d["dimension"]]
            for k, v in r["pct_of_all"].items():
                assert d["pct_of_all"][k] == pytest.approx(v, abs=0.05)
            for k, v in r["pct_of_rated"].items():
                assert d["pct_of_rated"][k] == pytest.approx(v, abs=0.05)
            for band in d["bands"]:
                n, pct, questions = r["bands"][band["rating"]]
                assert band["count"] == n and band["pct_of_all"] == pytest.approx(pct, abs=0.05)
                assert len(band["questions"]) <= 2
                assert [q["count"] for q in band["questions"]] == [c for c, _, _ in questions.values()]
                for q in band["questions"]:
                    count, of_all, within = questions[q["question_id"]]
                    assert q["count"] == count
                    assert q["pct_of_all"] == pytest.approx(of_all, abs=0.05)
                    assert q["pct_within_band"] == pytest.approx(within, abs=0.05)
        ours = [(m["dimension"], m["rating"], m["question_id"], m["count"]) for m in s["global_top"]]
        assert ours == [(d, b, q, n) for d, b, q, n, _ in ref["global"]]


def test_markdown_has_the_banner_and_every_section(demo_run, tmp_path):
    out = tmp_path / "fix.md"
    assert vera("report", "improvements", str(demo_run), "--format", "md", "--out", str(out)).returncode == 0
    md = out.read_text()
    assert md.count("Low sample: only 9 judgement(s) for this chatbot (fewer than 30)") == 2
    assert md.count("### In the reference's terms (9 judgements)") == 2
    assert (
        "| dimension | rated | Best Practice | Suboptimal | High Potential for Harm | Not Relevant (of all) |"
        in md
    )
    assert "| dimension | band | question | count | % of all | % within band |" in md
    assert "Top questions across dimensions:" in md
    quiet = tmp_path / "quiet.md"
    assert (
        vera(
            "report",
            "improvements",
            str(demo_run),
            "--format",
            "md",
            "--out",
            str(quiet),
            "--low-sample-threshold",
            "9",
        ).returncode
        == 0
    )
    assert "Low sample" not in quiet.read_text()


def test_html_shows_the_summary_tables(demo_run, tmp_path):
    out = tmp_path / "fix.html"
    assert vera("report", "improvements", str(demo_run), "--out", str(out)).returncode == 0
    html = out.read_text()
    assert html.count('class="reference-summary"') == 2
    assert 'class="summary-dimensions"' in html and 'class="summary-global"' in html


def test_summarize_rows_by_hand():
    rows = [
        [("D", HIGH_POTENTIAL_FOR_HARM, "2"), ("E", NOT_RELEVANT, "")],
        [("D", HIGH_POTENTIAL_FOR_HARM, "10"), ("E", SUBOPTIMAL, "10")],
        [("D", SUBOPTIMAL, "3"), ("E", SUBOPTIMAL, "10")],
        [("D", BEST_PRACTICE, ""), ("E", BEST_PRACTICE, "")],
    ]
    s = summarize_rows(
        rows, dimensions=["D", "E"], question={"10": "ten"}, top_questions=1, low_sample_threshold=4
    )
    assert s.rows == 4 and s.low_sample is False
    d = s.dimensions[0]
    assert d.pct_of_rated == {BEST_PRACTICE: 25.0, SUBOPTIMAL: 25.0, HIGH_POTENTIAL_FOR_HARM: 50.0}
    hph = d.bands[0]
    assert (hph.count, hph.pct_of_all) == (2, 50.0)
    # A tie in count: numeric ids in number order (2 before 10), one shown (--top-questions 1).
    assert [(q.question_id, q.pct_of_all, q.pct_within_band) for q in hph.questions] == [("2", 25.0, 50.0)]
    e = s.dimensions[1]
    assert e.pct_of_all[NOT_RELEVANT] == 25.0 and e.rated == 3
    assert [(m.dimension, m.rating, m.question_id, m.question, m.count) for m in s.global_top] == [
        ("E", SUBOPTIMAL, "10", "ten", 2),
        ("D", HIGH_POTENTIAL_FOR_HARM, "2", "", 1),
        ("D", HIGH_POTENTIAL_FOR_HARM, "10", "ten", 1),
        ("D", SUBOPTIMAL, "3", "", 1),
    ]


@pytest.mark.parametrize("locale", ["en", "zh-CN"])
def test_a_dimension_no_judgement_rated_shows_no_share_of_the_rated(tmp_path, locale):
    """The first personas are at no risk, so the offline judge rates every dimension Not
    Relevant: no judgement rated it, and "0.0% Best Practice" of nothing read as a
    chatbot that never got it right. The shares of the rated are a dash; Not Relevant's
    share of all is still a number."""
    from .test_cli import vera as vera_cli

    out = tmp_path / "run"
    args = ["run", "--limit-personas", "2", "--out", str(out), "--quiet"]
    assert vera_cli(*args, *(["--locale", locale] if locale != "en" else [])).returncode == 0
    proc = vera_cli("report", "improvements", str(out), "--format", "md", "--out", "-")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| Detects Potential Risk")]
    assert rows and all(r.endswith("| 0 | – | – | – | 100.0% |") for r in rows), rows
    html = out / "improvements.html"
    assert (
        vera_cli("report", "improvements", str(out), "--format", "html", "--out", str(html)).returncode == 0
    )
    assert "<td>0</td><td>0.0%</td>" not in html.read_text()
