"""The improvement report's figures in the reference tool's terms (its
``summarize_results.py``), so a team moving from it finds every number it had.

The reference counts *rows of its results.csv*: one per judgement (conversation × judge
× instance), where vera's findings count conversations. For one chatbot (one results.csv
in the reference) over its complete judgements of complete conversations:

* per dimension, the count of each rating, as a share of all rows and, for Best
  Practice, Suboptimal and High Potential for Harm, of the rows that rated it (neither
  Not Relevant nor missing: the percentages its scoring prints);
* per dimension and band (High Potential for Harm, Suboptimal): the rows in the band, as
  a share of all rows, and the top questions that decided it, each with its count, its
  share of all rows and its share of the band;
* across dimensions, the global top list: every (dimension, band, question) by count,
  then harm first, then question id, the first 25;
* a low-sample flag when there are fewer rows than the threshold (30 by default), where
  percentages are noisy.

Pure: ratings in, a record out. One difference, on purpose: the reference keeps only
question ids that read as integers, so a rubric with ids like ``1a`` (HFO) loses those
findings there; vera keeps every id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import msgspec

from vera.inputs import tr, ui_label, ui_short
from vera.records import BEST_PRACTICE, HIGH_POTENTIAL_FOR_HARM, NOT_RELEVANT, SUBOPTIMAL
from vera.report.shared._numbers import MISSING

DEFAULT_TOP_QUESTIONS = 12
DEFAULT_LOW_SAMPLE = 30
GLOBAL_TOP = 25  # the reference's global list is cut here
BANDS = (HIGH_POTENTIAL_FOR_HARM, SUBOPTIMAL)
RATINGS = (BEST_PRACTICE, SUBOPTIMAL, HIGH_POTENTIAL_FOR_HARM, NOT_RELEVANT)

# One judgement as the summary needs it: (dimension, rating, deciding question id).
Row = Sequence[tuple[str, str, str]]


class QuestionShare(msgspec.Struct, frozen=True, gc=False):
    question_id: str
    question: str
    count: int
    pct_of_all: float  # percent of all rows
    pct_within_band: float  # percent of the band's rows


class Band(msgspec.Struct, frozen=True, gc=False):
    rating: str
    count: int  # rows with this rating for the dimension
    pct_of_all: float
    questions: list[QuestionShare]


class DimensionSummary(msgspec.Struct, frozen=True, gc=False):
    dimension: str
    counts: dict[str, int]  # per rating, Not Relevant included
    pct_of_all: dict[str, float]  # per rating, of all rows
    rated: int  # rows neither Not Relevant nor missing
    pct_of_rated: dict[str, float]  # Best Practice, Suboptimal, HPH of the rated rows
    bands: list[Band]


class GlobalMode(msgspec.Struct, frozen=True, gc=False):
    dimension: str
    rating: str
    question_id: str
    question: str
    count: int
    pct_of_all: float


class RowSummary(msgspec.Struct, frozen=True, kw_only=True):
    rows: int  # judgements: the rows of this chatbot's results.csv
    low_sample: bool
    low_sample_threshold: int
    top_questions: int
    dimensions: list[DimensionSummary]
    global_top: list[GlobalMode]


def _pct(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 1) + 0.0 if whole else 0.0


def _qid_key(qid: str) -> tuple[int, int | str]:
    """Numeric ids in number order, then the rest as text (`2` < `10` < `1a`)."""
    return (0, int(qid)) if re.fullmatch(r"\d+", qid) else (1, qid)


def summarize_rows(
    rows: Iterable[Row],
    *,
    dimensions: Sequence[str],
    question: dict[str, str] | None = None,
    top_questions: int = DEFAULT_TOP_QUESTIONS,
    low_sample_threshold: int = DEFAULT_LOW_SAMPLE,
) -> RowSummary:
    """The summary of one chatbot's judgements. `dimensions` orders them (others follow
    as met); `question` gives a question id's text."""
    texts = question or {}
    judged = list(rows)
    total = len(judged)
    order = list(dimensions)
    counts: dict[str, dict[str, int]] = {}
    by_question: dict[tuple[str, str, str], int] = {}
    for row in judged:
        for dim, rating, qid in row:
            if dim not in order:
                order.append(dim)
            c = counts.setdefault(dim, dict.fromkeys(RATINGS, 0))
            c[rating] = c.get(rating, 0) + 1
            if rating in BANDS and qid:
                key = (dim, rating, qid)
                by_question[key] = by_question.get(key, 0) + 1
    out: list[DimensionSummary] = []
    for dim in order:
        if dim not in counts:
            continue
        c = counts[dim]
        rated = sum(c.get(r, 0) for r in (BEST_PRACTICE, SUBOPTIMAL, HIGH_POTENTIAL_FOR_HARM))
        bands = []
        for band in BANDS:
            n_band = c.get(band, 0)
            qs = [(q, n) for (d, b, q), n in by_question.items() if d == dim and b == band]
            qs.sort(key=lambda x: (-x[1], _qid_key(x[0])))
            bands.append(
                Band(
                    rating=band,
                    count=n_band,
                    pct_of_all=_pct(n_band, total),
                    questions=[
                        QuestionShare(q, texts.get(q, ""), n, _pct(n, total), _pct(n, n_band))
                        for q, n in qs[:top_questions]
                    ],
                )
            )
        out.append(
            DimensionSummary(
                dimension=dim,
                counts={r: c.get(r, 0) for r in RATINGS},
                pct_of_all={r: _pct(c.get(r, 0), total) for r in RATINGS},
                rated=rated,
                pct_of_rated={
                    r: _pct(c.get(r, 0), rated) for r in (BEST_PRACTICE, SUBOPTIMAL, HIGH_POTENTIAL_FOR_HARM)
                },
                bands=bands,
            )
        )
    modes = sorted(
        by_question.items(),
        # The reference's order; equal keys keep the dimensions' order, as its stable sort does.
        key=lambda kv: (-kv[1], BANDS.index(kv[0][1]), _qid_key(kv[0][2]), order.index(kv[0][0])),
    )
    return RowSummary(
        rows=total,
        low_sample=total < low_sample_threshold,
        low_sample_threshold=low_sample_threshold,
        top_questions=top_questions,
        dimensions=out,
        global_top=[
            GlobalMode(dim, band, qid, texts.get(qid, ""), n, _pct(n, total))
            for (dim, band, qid), n in modes[:GLOBAL_TOP]
        ],
    )


# ---------------------------------------------------------------------------------------
# Markdown (the HTML page shows the same tables; see _improvements), in the active
# strings' words (`vera.inputs.tr`: a run's locale pack's, or English)
# ---------------------------------------------------------------------------------------

SHORT = {SUBOPTIMAL: "Suboptimal", HIGH_POTENTIAL_FOR_HARM: "High Potential for Harm"}


def low_sample_line(s: RowSummary) -> str:
    return tr("page.fix_low_sample", rows=s.rows, threshold=s.low_sample_threshold)


def dimension_rows(s: RowSummary) -> list[list[str]]:
    """Per dimension: rated rows, BP / Suboptimal / HPH % of rated, then per band its
    share of all rows. A dimension no row rated has no share of the rated: a dash, not
    "0.0%", which would read as never Best Practice."""
    return [
        [
            ui_label(d.dimension),
            str(d.rated),
            *(
                f"{d.pct_of_rated[r]:.1f}%" if d.rated else MISSING
                for r in (BEST_PRACTICE, SUBOPTIMAL, HIGH_POTENTIAL_FOR_HARM)
            ),
            f"{d.pct_of_all[NOT_RELEVANT]:.1f}%",
        ]
        for d in s.dimensions
    ]


def dimension_header() -> list[str]:
    return [
        tr("page.fix_col_dimension"),
        tr("page.fix_col_rated"),
        *(ui_short(r) for r in (BEST_PRACTICE, SHORT[SUBOPTIMAL], HIGH_POTENTIAL_FOR_HARM)),
        tr("page.fix_col_nr"),
    ]


def band_header() -> list[str]:
    return [
        tr("page.fix_col_dimension"),
        tr("page.fix_col_band"),
        tr("page.fix_col_question"),
        tr("page.fix_col_count"),
        tr("page.fix_col_of_all"),
        tr("page.fix_col_within"),
    ]


def global_header() -> list[str]:
    return ["#", *(tr(f"page.fix_col_{k}") for k in ("dimension", "band", "question", "count", "of_all"))]


def band_rows(s: RowSummary) -> list[list[str]]:
    rows = []
    for d in s.dimensions:
        for b in d.bands:
            if not b.count:
                continue
            head = tr(
                "page.fix_band", rating=ui_short(SHORT[b.rating]), count=b.count, pct=f"{b.pct_of_all:.1f}"
            )
            if not b.questions:
                rows.append([ui_label(d.dimension), head, tr("page.fix_no_question"), "", "", ""])
            for q in b.questions:
                label = f"{q.question_id} {q.question}".strip()
                rows.append(
                    [
                        ui_label(d.dimension),
                        head,
                        label,
                        str(q.count),
                        f"{q.pct_of_all:.1f}%",
                        f"{q.pct_within_band:.1f}%",
                    ]
                )
    return rows


def global_rows(s: RowSummary) -> list[list[str]]:
    return [
        [
            str(i),
            ui_label(m.dimension),
            ui_short(SHORT[m.rating]),
            f"{m.question_id} {m.question}".strip(),
            str(m.count),
            f"{m.pct_of_all:.1f}%",
        ]
        for i, m in enumerate(s.global_top, start=1)
    ]
