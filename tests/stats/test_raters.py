"""How raters who disagree become one rating (`combine_raters`): the three rules on a
hand-made file, and the same rule in `judge_vs_consensus` and the calibrated labels."""

from __future__ import annotations

import polars as pl
import pytest

from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.records import NOT_RELEVANT as NR
from vera.records import SUBOPTIMAL as SUB
from vera.stats import combine_raters, judge_vs_consensus
from vera.stats.ppi import human_consensus

# item → the raters' ratings of one dimension ("D")
PANELS = {
    "bp-hph": [BP, HPH],
    "bp-sub": [BP, SUB],
    "sub-hph": [SUB, HPH],
    "bp-nr": [BP, NR],
    "nr-nr": [NR, NR],
    "bp-bp": [BP, BP],
    "three": [BP, BP, HPH],  # a third rater: here majority parts from severest
}
EXPECTED = {
    "severest": {
        "bp-hph": HPH,
        "bp-sub": SUB,
        "sub-hph": HPH,
        "bp-nr": BP,
        "nr-nr": NR,
        "bp-bp": BP,
        "three": HPH,
    },
    # two raters who disagree tie: settled to the most severe, as severest does
    "majority": {
        "bp-hph": HPH,
        "bp-sub": SUB,
        "sub-hph": HPH,
        "bp-nr": BP,
        "nr-nr": NR,
        "bp-bp": BP,
        "three": BP,
    },
    # levels HPH 0, SUB 1, BP 2; the mean rounded down (toward severe); NR left out
    "mean": {
        "bp-hph": SUB,
        "bp-sub": SUB,
        "sub-hph": HPH,
        "bp-nr": BP,
        "nr-nr": NR,
        "bp-bp": BP,
        "three": SUB,
    },
}


def long_frame() -> pl.DataFrame:
    rows = [(item, f"r{i}", "D", r) for item, panel in PANELS.items() for i, r in enumerate(panel)]
    return pl.DataFrame(rows, schema=["item_id", "rater", "dimension", "rating"], orient="row")


@pytest.mark.parametrize("rule", ["severest", "majority", "mean"])
def test_each_rule_on_a_hand_made_panel(rule):
    got = combine_raters(long_frame(), rule)
    assert dict(zip(got["item_id"], got["rating"], strict=True)) == EXPECTED[rule]
    assert dict(zip(got["item_id"], got["n_raters"], strict=True)) == {k: len(v) for k, v in PANELS.items()}
    # the calibrated labels are formed by the same function
    assert human_consensus(long_frame(), rule).equals(got)


def test_the_default_is_severest():
    # one rater seeing harm is enough for it to count, in every use of the rule
    assert combine_raters(long_frame()).equals(combine_raters(long_frame(), "severest"))
    assert human_consensus(long_frame()).equals(combine_raters(long_frame(), "severest"))
    assert not combine_raters(long_frame()).equals(combine_raters(long_frame(), "majority"))


def test_an_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="raters must be one of severest, majority, mean"):
        combine_raters(long_frame(), "loudest")  # type: ignore[arg-type]


@pytest.mark.parametrize("rule", ["severest", "majority", "mean"])
def test_agreement_sets_the_judge_against_the_same_rule(rule):
    # A judge that rated every item as the `mean` rule combines its raters.
    judged = pl.DataFrame(
        {
            "conversation_id": list(EXPECTED["mean"]),
            "judge": "j",
            "instance": 1,
            "dimension": "D",
            "rating": list(EXPECTED["mean"].values()),
        }
    )
    result = judge_vs_consensus(long_frame(), judged, raters=rule, n_resamples=50)
    assert result.raters == rule and result.n_items == len(PANELS)
    agree = sum(EXPECTED[rule][k] == v for k, v in EXPECTED["mean"].items()) / len(PANELS)
    assert result.overall.percent_agreement == pytest.approx(agree)
    assert (agree == 1.0) == (rule == "mean")
