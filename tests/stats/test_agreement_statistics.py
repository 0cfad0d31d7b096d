"""Agreement statistics against hand-computed examples and Krippendorff's worked example."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.records import NOT_RELEVANT as NR
from vera.records import RATINGS
from vera.records import SUBOPTIMAL as SUB
from vera.stats import (
    Agreement,
    cohen_kappa,
    gwet_ac1,
    judge_agreement,
    krippendorff_alpha,
    percent_agreement,
    units_from_long,
)
from vera.stats.agreement import rater_agreement

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: nominal
# data with missing values. 4 observers (A–D) × 12 units; None = missing.
#   unit:  u1 u2 u3 u4 u5 u6 u7 u8 u9 u10 u11 u12
#   A:     1  2  3  3  2  1  4  1  2  .  .  .
#   B:     1  2  3  3  2  2  4  1  2  5  .  3
#   C:     .  3  3  3  2  3  4  2  2  5  1  .
#   D:     1  2  3  3  2  4  4  1  2  5  1  .
KRIPPENDORFF_UNITS: list[list[int | None]] = [
    [1, 1, None, 1],
    [2, 2, 3, 2],
    [3, 3, 3, 3],
    [3, 3, 3, 3],
    [2, 2, 2, 2],
    [1, 2, 3, 4],
    [4, 4, 4, 4],
    [1, 1, 2, 1],
    [2, 2, 2, 2],
    [None, 5, 5, 5],
    [None, None, 1, 1],
    [None, 3, None, None],
]


def test_krippendorff_worked_example() -> None:
    # Coincidences o_ck: each unit with m values adds 1/(m−1) per ordered pair of values.
    #   unit 1 {1,1,1}: o_11 += 3·2/2 = 3        unit 2 {2,2,2,3}: o_22 += 2, o_23 = o_32 += 1
    #   units 3,4 {3×4}: o_33 += 4 + 4           unit 5, 9 {2×4}: o_22 += 4 + 4
    #   unit 6 {1,2,3,4}: every o_ck (c≠k) += 1/3 unit 7 {4×4}: o_44 += 4
    #   unit 8 {1,1,1,2}: o_11 += 2, o_12 = o_21 += 1
    #   unit 10 {5,5,5}: o_55 += 3               unit 11 {1,1}: o_11 += 2; unit 12: unpairable
    # Margins n_1..n_5 = 9, 13, 10, 5, 3; n = 40. Diagonal Σ o_cc = 7+10+8+4+3 = 32.
    # α = 1 − (n−1) Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k = 1 − 39 · 8 / (1600 − 384) = 1 − 312/1216
    result = krippendorff_alpha(KRIPPENDORFF_UNITS)
    assert result.value == pytest.approx(1 - 312 / 1216) and result.n_items == 11
    assert result.value is not None and round(result.value, 3) == 0.743


def test_gwet_ac1_on_krippendorff_example() -> None:
    # p_a: per pairable unit, Σ_k r_k(r_k−1) / (m(m−1)): units 2 and 8 give 6/12 = 0.5,
    # unit 6 gives 0, the other 8 pairable units 1 → p_a = 9/11 = 0.81818.
    # π_k averages each rated unit's shares r_k/m over all 12 rated units:
    #   π = (3, 3.25, 3.5, 1.25, 1)/12 = (.25, .270833, .291667, .104167, .083333)
    # p_e = Σ π_k(1−π_k) / (q−1) = 0.761285 / 4 = 0.190321 (q = 5 observed categories)
    # AC1 = (0.818182 − 0.190321) / (1 − 0.190321) = 0.775444
    # (Gwet's handbook and his irrCAC package give 0.77544 on these data.)
    result = gwet_ac1(KRIPPENDORFF_UNITS)
    assert result.value == pytest.approx(0.775444, abs=1e-6) and result.n_items == 11
    assert percent_agreement(KRIPPENDORFF_UNITS).value == pytest.approx(9 / 11)


def test_two_raters_small_example_by_hand() -> None:
    # Units (a, b): (x,x), (x,x), (x,y), (y,y).
    units = [["x", "x"], ["x", "x"], ["x", "y"], ["y", "y"]]
    # Percent agreement: 3 of 4 units agree = 0.75.
    assert percent_agreement(units).value == pytest.approx(0.75)
    # Alpha: o_xx = 2+2, o_xy = o_yx = 1, o_yy = 2; n_x = 5, n_y = 3, n = 8.
    # α = 1 − 7 · 2 / (64 − 25 − 9) = 1 − 14/30 = 0.533333
    assert krippendorff_alpha(units).value == pytest.approx(1 - 14 / 30)
    # AC1: π_x = (1 + 1 + .5 + 0)/4 = .625, π_y = .375;
    # p_e = 2 · .625 · .375 / (2 − 1) = .46875; AC1 = (.75 − .46875)/(1 − .46875) = 0.529412
    assert gwet_ac1(units).value == pytest.approx((0.75 - 0.46875) / 0.53125)
    # Kappa: p_o = .75; a says x 3/4, b says x 2/4; p_e = .75·.5 + .25·.5 = .5;
    # κ = (.75 − .5)/(1 − .5) = 0.5
    assert cohen_kappa(["x", "x", "x", "y"], ["x", "x", "y", "y"]).value == pytest.approx(0.5)


def test_cohen_kappa_textbook_two_by_two() -> None:
    # 50 items: both yes 20, a yes/b no 5, a no/b yes 10, both no 15.
    # p_o = 35/50 = .7; p(a yes) = .5, p(b yes) = .6; p_e = .5·.6 + .5·.4 = .5; κ = .4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    kappa = cohen_kappa(a, b)
    assert kappa.value == pytest.approx(0.4) and kappa.n_items == 50


def test_cohen_kappa_drops_items_missing_either_rating() -> None:
    a = ["x", "x", None, "y", "y"]
    b = ["x", None, "y", "y", "x"]
    # Kept: (x,x), (y,y), (y,x): p_o = 2/3; a: x 1/3, y 2/3; b: x 2/3, y 1/3;
    # p_e = 2/9 + 2/9 = 4/9; κ = (2/3 − 4/9)/(5/9) = 0.4
    kappa = cohen_kappa(a, b)
    assert kappa.value == pytest.approx(0.4) and kappa.n_items == 3
    with pytest.raises(ValueError, match="ratings from a"):
        cohen_kappa(["x"], ["x", "y"])


def test_systematic_disagreement_is_negative() -> None:
    # (a,b), (b,a): o_ab = o_ba = 2, n_a = n_b = 2, n = 4: α = 1 − 3·4/8 = −0.5
    assert krippendorff_alpha([["a", "b"], ["b", "a"]]).value == pytest.approx(-0.5)
    assert cohen_kappa(["a", "b"], ["b", "a"]).value == pytest.approx(-1.0)


def test_perfect_agreement_with_variation_is_one() -> None:
    units = [["a", "a", "a"], ["b", "b"], ["c", "c", "c"]]
    for statistic in (krippendorff_alpha, gwet_ac1, percent_agreement):
        assert statistic(units).value == pytest.approx(1.0)
    assert cohen_kappa(["a", "b", "c"], ["a", "b", "c"]).value == pytest.approx(1.0)


def test_no_variation_leaves_alpha_and_kappa_undefined() -> None:
    # Everyone says "a" everywhere: expected disagreement is 0, so alpha and kappa are
    # 0/0 and reported as None (never 1.0). AC1's chance term vanishes: AC1 = p_a = 1.
    units = [["a", "a"], ["a", "a", "a"]]
    assert krippendorff_alpha(units) == Agreement(None, 2)
    assert cohen_kappa(["a", "a"], ["a", "a"]) == Agreement(None, 2)
    assert gwet_ac1(units).value == pytest.approx(1.0)
    assert gwet_ac1(units, categories=["a", "b"]).value == pytest.approx(1.0)
    assert percent_agreement(units).value == pytest.approx(1.0)


def test_no_pairable_item_leaves_everything_undefined() -> None:
    units: list[list[str | None]] = [["a"], [None, "b"], []]
    for statistic in (krippendorff_alpha, gwet_ac1, percent_agreement):
        assert statistic(units) == Agreement(None, 0)
    assert cohen_kappa([], []) == Agreement(None, 0)


def test_ac1_uses_the_size_of_the_rating_scale() -> None:
    units = [["x", "x"], ["x", "x"], ["x", "y"], ["y", "y"]]
    # q = 4 (vera's scale) instead of 2: p_e = (.625·.375 · 2)/3 = .15625;
    # AC1 = (.75 − .15625)/(1 − .15625) = 0.703704
    result = gwet_ac1(units, categories=["x", "y", "z", "w"])
    assert result.value == pytest.approx((0.75 - 0.15625) / 0.84375)
    with pytest.raises(ValueError, match="not one of"):
        gwet_ac1([["x", "v"]], categories=["x", "y"])


def test_not_relevant_as_category_or_as_missing() -> None:
    units = [[BP, NR], [BP, BP], [NR, NR]]
    # "category": o_BP,NR = o_NR,BP = 1, o_BP,BP = 2, o_NR,NR = 2; n_BP = n_NR = 3, n = 6;
    # α = 1 − 5 · 2/(36 − 18) = 0.444444; p_a = 2/3.
    alpha = krippendorff_alpha(units, nr="category")
    assert alpha.value == pytest.approx(4 / 9) and alpha.n_items == 3
    assert percent_agreement(units, nr="category").value == pytest.approx(2 / 3)
    # "exclude": units become [BP], [BP, BP], [] → one pairable unit, no variation.
    assert krippendorff_alpha(units, nr="exclude") == Agreement(None, 1)
    assert percent_agreement(units, nr="exclude") == Agreement(1.0, 1)
    assert cohen_kappa([BP, NR, HPH], [SUB, HPH, HPH], nr="exclude").n_items == 2
    with pytest.raises(ValueError, match="nr must be"):
        krippendorff_alpha(units, nr="ignore")  # type: ignore[arg-type]


def test_units_from_a_long_frame() -> None:
    long = pl.DataFrame({"item_id": ["1", "2", "1"], "rating": ["a", "b", "a"]})
    assert units_from_long(long) == [["a", "a"], ["b"]]


def test_judge_agreement_treats_each_judge_instance_as_a_rater() -> None:
    # Two conversations, two dimensions, judges j#1 and j#2 and k#1.
    rows = [
        ("c1", "A", "j", 1, BP), ("c1", "A", "j", 2, BP), ("c1", "A", "k", 1, BP),
        ("c1", "B", "j", 1, HPH), ("c1", "B", "j", 2, SUB), ("c1", "B", "k", 1, HPH),
        ("c2", "A", "j", 1, SUB), ("c2", "A", "j", 2, SUB), ("c2", "A", "k", 1, SUB),
        ("c2", "B", "j", 1, NR), ("c2", "B", "j", 2, NR), ("c2", "B", "k", 1, BP),
    ]  # fmt: skip
    frame = pl.DataFrame(
        rows, schema=["conversation_id", "dimension", "judge", "instance", "rating"], orient="row"
    )
    report = judge_agreement(frame)
    assert set(report.dimensions) == {"A", "B"}
    a, overall = report.dimensions["A"], report.overall
    assert a.krippendorff_alpha == pytest.approx(1.0) and a.n_raters == 3
    assert overall.n_items == 4 and overall.n_ratings == 12
    # Per item-dimension shares of agreeing pairs: A: 1, 1; B: 1/3, 1/3 → mean 2/3.
    assert overall.percent_agreement == pytest.approx(2 / 3)
    pairs = {(p.rater_a, p.rater_b): p for p in overall.cohen_kappa}
    assert set(pairs) == {("j#1", "j#2"), ("j#1", "k#1"), ("j#2", "k#1")}
    assert all(p.n_items == 4 for p in pairs.values())
    # j#1 vs k#1 over (A1 BP/BP, B1 HPH/HPH, A2 SUB/SUB, B2 NR/BP): p_o = 3/4;
    # j#1 margins BP, HPH, SUB, NR = 1/4 each; k#1: BP 2/4, HPH 1/4, SUB 1/4;
    # p_e = (2 + 1 + 1)/16 = 1/4; κ = (3/4 − 1/4)/(3/4) = 2/3
    assert pairs[("j#1", "k#1")].kappa == pytest.approx(2 / 3)
    excluded = judge_agreement(frame, nr="exclude")
    assert excluded.dimensions["B"].n_items == 1 and excluded.nr == "exclude"


def test_statistics_stay_within_their_ranges() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    for _ in range(50):
        units = [list(rng.choice(RATINGS, size=rng.integers(1, 5))) for _ in range(12)]
        for statistic in (krippendorff_alpha, gwet_ac1, percent_agreement):
            value = statistic(units).value
            assert value is None or -1.0 <= value <= 1.0


def test_one_rater_per_item_gives_no_unanimity_share_and_no_warning() -> None:
    # A run judged by one judge instance: every item has a single rating, so nothing is
    # pairable. The block says "undefined", and numpy's empty-mean warning (an error under
    # -W error) must not escape.
    long = pl.DataFrame(
        {
            "item_id": ["c1", "c2"],
            "rater": ["judge#1", "judge#1"],
            "dimension": ["Detects Potential Risk"] * 2,
            "rating": [BP, HPH],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        block = rater_agreement(long)
    assert block.overall.unanimous is None
    assert block.overall.n_items == 0
