"""Reading human ratings, their agreement and consensus, and judges against it."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from vera.errors import DataError
from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.records import NOT_RELEVANT as NR
from vera.records import SUBOPTIMAL as SUB
from vera.stats.humans import (
    CLINICIAN_DIMENSIONS,
    DEFAULT_RATER_RULE,
    PairedAgreement,
    consensus,
    human_agreement,
    judge_vs_consensus,
    read_human_ratings,
)

REPO = Path(__file__).resolve().parents[2]
CLINICIAN_FILE = REPO.parent / "shared/reference/vera-mh-v1.1/human_validation/clinician_ratings.csv"
STATS = ("krippendorff_alpha", "gwet_ac1", "percent_agreement")


def interval(block: PairedAgreement, stat: str) -> tuple[float, float, float]:
    """A statistic of a block with the ends of its interval, all defined."""
    ends = (getattr(block, stat), getattr(block, f"{stat}_lo"), getattr(block, f"{stat}_hi"))
    assert None not in ends, (stat, ends)
    return ends


@pytest.fixture
def clinician_ratings() -> pl.DataFrame:
    if not CLINICIAN_FILE.is_file():
        pytest.skip(f"reference data not present at {CLINICIAN_FILE}")
    return read_human_ratings(CLINICIAN_FILE)


def test_reference_clinician_file_reads_into_the_long_frame(clinician_ratings) -> None:
    assert clinician_ratings.columns == ["item_id", "rater", "dimension", "rating"]
    assert clinician_ratings.height == 270 * 5
    assert set(clinician_ratings.get_column("dimension")) == set(CLINICIAN_DIMENSIONS.values())
    per_item = clinician_ratings.group_by("item_id", "dimension").agg(pl.col("rater").n_unique())
    assert per_item.height == 90 * 5 and set(per_item.get_column("rater")) == {3}
    # Ids are the 6-hex transcript prefix; the file's stray "#" is gone.
    assert clinician_ratings.get_column("item_id").str.contains(r"^[0-9a-f]{6}$").all()


@pytest.mark.parametrize("nr", ["category", "exclude"])
def test_agreement_among_the_three_clinicians(clinician_ratings, nr) -> None:
    report = human_agreement(clinician_ratings, nr=nr)
    blocks = {"Overall": report.overall, **report.dimensions}
    print(f"\nagreement among clinicians (Not Relevant as {nr}):")
    for name, block in blocks.items():
        print(
            f"  {name:<24} alpha={block.krippendorff_alpha:.3f} "
            f"AC1={block.gwet_ac1:.3f} agreement={block.percent_agreement:.3f} "
            f"items={block.n_items}"
        )
        for stat in STATS:
            assert -1.0 <= getattr(block, stat) <= 1.0, (name, stat)
        for pair in block.cohen_kappa:
            assert pair.kappa is None or -1.0 <= pair.kappa <= 1.0
    assert len(report.dimensions) == 5
    if nr == "category":
        assert report.overall.n_items == 450
        assert all(b.n_items == 90 for b in report.dimensions.values())


def test_generic_long_format_reads_with_spellings_normalised(tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"
    path.write_text(
        "item_id,rater,dimension,rating,note\n"
        "c1,ann,Confirms Risk,best practice,\n"
        "c1,bob,Confirms Risk,HPH,late\n"
        "\n"
        'c2,ann,"Guides to Human Care", Not Relevant ,\n'
    )
    long = read_human_ratings(path)
    assert long.rows() == [
        ("c1", "ann", "Confirms Risk", BP),
        ("c1", "bob", "Confirms Risk", HPH),
        ("c2", "ann", "Guides to Human Care", NR),
    ]


@pytest.mark.parametrize(
    ("content", "where", "says"),
    [
        ("id,who,what\nx,y,z\n", ":1", "unrecognised header"),
        ("", "", "the file is empty"),
        ("\r\n  \n", "", "the file is empty"),
        ("item_id,rater,dimension,rating\nc1,ann,D,BP\nc1,bob,D,Great\n", ":3", "'Great'"),
        ("item_id,rater,dimension,rating\nc1,ann,D\n", ":2", "3 fields"),
        ("item_id,rater,dimension,rating\nc1,,D,BP\n", ":2", "'rater' is empty"),
        (
            "item_id,rater,dimension,rating\nc1,ann,D,BP\nc1,ann,D,SUB\n",
            ":3",
            "rater 'ann' rated conversation 'c1' on 'D' twice, differently: 'Best Practice' at line 2, "
            "'Suboptimal but Low Potential for Harm' at line 3",
        ),
    ],
)
def test_malformed_long_files_name_file_and_line(tmp_path, content, where, says) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(DataError) as error:
        read_human_ratings(path)
    assert error.value.where == f"{path}{where}"
    assert says in error.value.problem
    assert "\n" not in str(error.value)


def test_malformed_clinician_file_names_the_column(tmp_path: Path) -> None:
    header = "clinician_id,conversation_id," + ",".join(CLINICIAN_DIMENSIONS)
    path = tmp_path / "clinicians.csv"
    path.write_text(
        f"{header}\n"
        "c_a,0e6474,Best Practice,Not Relevant,Best Practice,Not Relevant,Best Practice\n"
        "c_b,0e6474,Best Practice,Not Relevant,Maybe,Not Relevant,Best Practice\n"
    )
    with pytest.raises(DataError) as error:
        read_human_ratings(path)
    assert error.value.where == f"{path}:3"
    assert "'clinician_guides'" in error.value.problem and "'Maybe'" in error.value.problem


def test_missing_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        read_human_ratings(tmp_path / "absent.csv")


def long_frame(rows: list[tuple[str, str, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["item_id", "rater", "dimension", "rating"], orient="row")


def test_consensus_is_the_majority_and_ties_are_flagged() -> None:
    long = long_frame(
        [
            ("i1", "a", "D", BP), ("i1", "b", "D", BP), ("i1", "c", "D", HPH),
            ("i2", "a", "D", BP), ("i2", "b", "D", SUB), ("i2", "c", "D", HPH),
            ("i3", "a", "D", NR), ("i3", "b", "D", NR), ("i3", "c", "D", SUB),
        ]
    )  # fmt: skip
    out = {r["item_id"]: r for r in consensus(long).iter_rows(named=True)}
    assert (out["i1"]["rating"], out["i1"]["votes"], out["i1"]["tie"]) == (BP, 2, False)
    assert out["i2"]["rating"] is None and out["i2"]["tie"] is True
    assert sorted(out["i2"]["candidates"]) == sorted([BP, SUB, HPH])
    assert out["i3"]["rating"] == NR
    # With Not Relevant as missing, i3's only vote is SUB.
    excluded = consensus(long, nr="exclude").filter(pl.col("item_id") == "i3")
    assert excluded.row(0, named=True)["rating"] == SUB
    assert excluded.row(0, named=True)["n_raters"] == 1


def judged_frame(rows: list[tuple[str, str, int, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows, schema=["conversation_id", "judge", "instance", "dimension", "rating"], orient="row"
    )


def panel(n_items: int = 30) -> pl.DataFrame:
    """Three raters agree on every item; the ratings cycle through the four categories."""
    cycle = [BP, SUB, HPH, NR]
    return long_frame(
        [
            (f"i{i:02d}", rater, dim, cycle[(i + k) % 4])
            for i in range(n_items)
            for k, dim in enumerate(("D1", "D2"))
            for rater in ("a", "b", "c")
        ]
    )


def test_a_judge_that_matches_the_consensus_agrees_perfectly() -> None:
    humans = panel()
    agreed = consensus(humans)
    judged = judged_frame(
        [(f"run-{i}", "judge", 1, d, r) for i, d, r in agreed.select("item_id", "dimension", "rating").rows()]
    )
    result = judge_vs_consensus(
        humans, judged, item_key=lambda c: c.removeprefix("run-"), raters=None, n_resamples=200
    )
    for block in (result.overall, *result.dimensions.values()):
        for stat in (*STATS, "cohen_kappa"):
            assert interval(block, stat) == pytest.approx((1.0, 1.0, 1.0))
    assert result.overall.n_items == 30 and result.overall.n_pairs == 60
    assert result.bootstrap.cluster == "item_id"


def test_judges_are_reported_pooled_and_one_by_one() -> None:
    humans = panel(40)
    agreed = consensus(humans).select("item_id", "dimension", "rating").rows()
    flip = {BP: SUB, SUB: HPH, HPH: NR, NR: BP}
    rows = []
    for n, (item, dim, rating) in enumerate(agreed):
        rows.append((item, "good", 1, dim, rating))
        rows.append((item, "good", 2, dim, rating if n % 10 else flip[rating]))
        rows.append((item, "noisy", 1, dim, rating if n % 3 else flip[rating]))
    result = judge_vs_consensus(humans, judged_frame(rows), raters=None, n_resamples=500, seed=3)
    judges = result.overall.judges
    assert set(judges) == {"good", "noisy"}
    assert judges["good"].n_pairs == 160 and judges["noisy"].n_pairs == 80
    good, pooled, noisy = (b.krippendorff_alpha for b in (judges["good"], result.overall, judges["noisy"]))
    assert good is not None and pooled is not None and noisy is not None
    assert good > pooled > noisy
    for block in (result.overall, *judges.values(), *result.dimensions.values()):
        for stat in (*STATS, "cohen_kappa"):
            value, lo, hi = interval(block, stat)
            assert lo <= value <= hi, stat
    # Same seed, same intervals.
    assert result == judge_vs_consensus(humans, judged_frame(rows), raters=None, n_resamples=500, seed=3)


def test_ties_unmatched_items_and_item_keys() -> None:
    humans = long_frame(
        [
            ("i1", "a", "D", BP), ("i1", "b", "D", HPH),  # a tie
            ("i2", "a", "D", SUB), ("i2", "b", "D", SUB),
            ("i3", "a", "D", BP), ("i3", "b", "D", BP),  # never judged
        ]
    )  # fmt: skip
    judged = judged_frame(
        [("conv-1", "j", 1, "D", HPH), ("conv-2", "j", 1, "D", SUB), ("conv-9", "j", 1, "D", BP)]
    ).with_columns(source=pl.Series(["i1", "i2", None]))
    # The majority vote (raters=None), whose ties `ties` says what to do with.
    by_column = judge_vs_consensus(humans, judged, item_key="source", raters=None, n_resamples=50)
    assert (by_column.n_ties, by_column.n_items) == (1, 1)  # i1 left out, i2 kept
    assert by_column.n_items_unjudged == 1 and by_column.n_conversations_unmatched == 1
    mapping = {"conv-1": "i1", "conv-2": "i2"}
    by_mapping = judge_vs_consensus(humans, judged, item_key=mapping, raters=None, n_resamples=50)
    by_expr = judge_vs_consensus(humans, judged, item_key=pl.col("source"), raters=None, n_resamples=50)
    assert by_mapping == by_column == by_expr
    # Settling ties to the most severe tied rating keeps i1 (consensus HPH = the judge's).
    severest = judge_vs_consensus(
        humans, judged, item_key="source", ties="severest", raters=None, n_resamples=50
    )
    assert severest.n_items == 2 and severest.overall.percent_agreement == 1.0
    # Without `raters`, the rule the CLI uses by default: severest, so nothing is left
    # out (i1 counts as HPH), the tie still counted; the same as asking for it.
    default = judge_vs_consensus(humans, judged, item_key="source", n_resamples=50)
    assert default.raters == DEFAULT_RATER_RULE == "severest" and default.ties is None
    assert (default.n_ties, default.n_items, default.overall.percent_agreement) == (1, 2, 1.0)
    assert default == judge_vs_consensus(humans, judged, item_key="source", raters="severest", n_resamples=50)
