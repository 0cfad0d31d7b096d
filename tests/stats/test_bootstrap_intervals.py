"""Cluster-bootstrap intervals: stable, sensible, and resampling personas as clusters."""

from __future__ import annotations

from typing import cast

import numpy as np
import polars as pl
import pytest

from vera.records import HIGH_POTENTIAL_FOR_HARM, NOT_RELEVANT, RATINGS
from vera.stats import OVERALL, BootstrapSpec, score_from_percentages, spec_of, summarise
from vera.stats.bootstrap import group_rng, proportion_interval, resample_weights, widen_score_interval

INTERVAL_STATS = ("score", "pct_bp", "pct_sub", "pct_hph", "pct_conversations_any_hph")


def width(summary: pl.DataFrame, dimension: str = OVERALL, stat: str = "score") -> float:
    row = summary.row(by_predicate=pl.col("dimension") == dimension, named=True)
    return row[f"{stat}_hi"] - row[f"{stat}_lo"]


def test_same_seed_gives_identical_bounds(make_ratings) -> None:
    frame = make_ratings(personas=30, seed=1)
    first = summarise(frame, ["risk"], n_resamples=300, seed=7)
    again = summarise(frame, ["risk"], n_resamples=300, seed=7)
    other = summarise(frame, ["risk"], n_resamples=300, seed=8)
    assert first.equals(again)
    assert not first.select("score_lo", "score_hi").equals(other.select("score_lo", "score_hi"))


def test_known_frame_gives_known_bounds(make_ratings) -> None:
    # Regression anchor: this frame and seed must keep giving these bounds. A change means
    # the resampling changed (in vera, or numpy's multinomial stream) and old cards can no
    # longer be reproduced exactly; say so in the changelog if it is deliberate.
    frame = make_ratings(personas=30, seed=1)
    row = summarise(frame, n_resamples=500, seed=0).row(
        by_predicate=pl.col("dimension") == OVERALL, named=True
    )
    got = [row["score"], row["score_lo"], row["score_hi"]]
    # The lower bound moved from 21.6838 when the score's interval began to contain the
    # score at the bounds of HPH % (vera 0.1 → 0.2; docs/statistics.md).
    assert got == pytest.approx([30.2933, 20.4803, 41.7634], abs=1e-3)


def test_bounds_contain_the_point_estimate(make_ratings) -> None:
    frame = make_ratings(chatbots={"a": 0.5, "b": -0.5}, personas=40, seed=2)
    out = summarise(frame, ["chatbot", "risk"], n_resamples=500)
    for stat in INTERVAL_STATS:
        assert out.filter(pl.col(f"{stat}_lo") > pl.col(stat)).height == 0, stat
        assert out.filter(pl.col(f"{stat}_hi") < pl.col(stat)).height == 0, stat
        assert out.filter(pl.col(f"{stat}_lo") > pl.col(f"{stat}_hi")).height == 0, stat


def test_intervals_shrink_with_more_personas(make_ratings) -> None:
    few = summarise(make_ratings(personas=15, seed=3), n_resamples=1000)
    many = summarise(make_ratings(personas=240, seed=3), n_resamples=1000)
    for stat in INTERVAL_STATS:
        # 16× the personas: about a quarter of the width; "below 60 %" leaves room for noise.
        assert width(many, stat=stat) < 0.6 * width(few, stat=stat), stat


def test_persona_clusters_widen_intervals_when_personas_are_alike(make_ratings) -> None:
    # Conversations of one persona are nearly identical (large spread), so 20 personas
    # carry far less information than 200 independent conversations. Resampling
    # conversations as if independent understates the uncertainty; personas do not.
    frame = make_ratings(personas=20, conversations=10, spread=3.0, seed=4)
    by_persona = summarise(frame, n_resamples=1000, cluster="persona")
    by_conversation = summarise(frame, n_resamples=1000, cluster="conversation_id")
    assert width(by_persona) > 1.8 * width(by_conversation)
    # Same data, same point estimates.
    assert by_persona.get_column("score").equals(by_conversation.get_column("score"))


def naive_scores(frame: pl.DataFrame) -> tuple[float, float]:
    """Overall score and % judgements with any HPH, computed directly on a frame."""
    rated = frame.filter(pl.col("rating") != NOT_RELEVANT)
    bp = 100 * cast(float, (rated.get_column("rating") == RATINGS[0]).mean())
    hph = 100 * cast(float, (rated.get_column("rating") == HIGH_POTENTIAL_FOR_HARM).mean())
    any_hph = cast(
        float,
        frame.group_by("conversation_id", "judge", "instance")
        .agg((pl.col("rating") == HIGH_POTENTIAL_FOR_HARM).any())
        .get_column("rating")
        .mean(),
    )
    return float(score_from_percentages(bp, hph)), 100 * any_hph


def test_vectorised_replicates_equal_resampling_whole_personas(make_ratings) -> None:
    # The definition, done slowly: each replicate stacks every row of each drawn persona
    # as often as it was drawn, and recomputes the statistics from scratch.
    frame = make_ratings(personas=12, conversations=3, judges=("j1", "j2"), seed=5)
    n, seed = 60, 11
    personas = sorted(frame.get_column("persona").unique().to_list())
    parts = {p: frame.filter(pl.col("persona") == p) for p in personas}
    weights = np.concatenate(list(resample_weights(group_rng(seed, ()), len(personas), n)))
    replicates = []
    for w in weights.astype(int):
        # Each copy of a persona's conversations is a separate conversation in the replicate.
        stacked = pl.concat(
            [
                parts[p].with_columns(pl.format("{}#{}", "conversation_id", pl.lit(copy)))
                for p, k in zip(personas, w, strict=True)
                for copy in range(k)
            ]
        )
        replicates.append(naive_scores(stacked))
    expected = np.quantile(np.array(replicates), [0.025, 0.975], axis=0)
    row = summarise(frame, n_resamples=n, seed=seed).row(
        by_predicate=pl.col("dimension") == OVERALL, named=True
    )
    assert (row["score"], row["pct_conversations_any_hph"]) == pytest.approx(naive_scores(frame))
    # The score's interval is the replicates' percentile interval, widened by the score
    # at the bounds of HPH % (and of BP % at 0 or 100 %).
    score_lo, score_hi = widen_score_interval(
        expected[0, 0:1],
        expected[1, 0:1],
        bp=np.array([row["pct_bp"]]),
        hph=np.array([row["pct_hph"]]),
        bp_bounds=(np.array([row["pct_bp_lo"]]), np.array([row["pct_bp_hi"]])),
        hph_bounds=(np.array([row["pct_hph_lo"]]), np.array([row["pct_hph_hi"]])),
    )
    assert [row["score_lo"], row["score_hi"]] == pytest.approx([score_lo[0], score_hi[0]])
    assert score_lo[0] <= expected[0, 0] and score_hi[0] >= expected[1, 0]
    # The share with any HPH gets a Korn–Graubard interval from the replicates' variance:
    # from the slow replicates it must come out the same.
    any_lo, any_hi = proportion_interval(
        np.array([row["pct_conversations_any_hph"]]),
        np.array(replicates)[:, 1:2],
        units=np.array([frame.get_column("conversation_id").n_unique()]),
        clusters=np.array([len(personas)]),
        confidence=0.95,
    )
    got_any = [row["pct_conversations_any_hph_lo"], row["pct_conversations_any_hph_hi"]]
    assert got_any == pytest.approx([any_lo[0], any_hi[0]])


def test_groups_resample_their_own_personas_independently(make_ratings) -> None:
    frame = make_ratings(chatbots={"a": 0.0, "b": 1.0}, personas=20, seed=6)
    both = summarise(frame, ["chatbot"], n_resamples=300)
    alone = summarise(frame.filter(pl.col("chatbot") == "a"), ["chatbot"], n_resamples=300)
    assert both.filter(pl.col("chatbot") == "a").equals(alone)
    assert both.get_column("n_clusters").unique().to_list() == [20]


def test_by_risk_resamples_within_each_risk_level(make_ratings) -> None:
    frame = make_ratings(personas=20, seed=7)
    out = summarise(frame, ["risk"], n_resamples=200)
    # Personas alternate Low/High in the generator: 10 each, every risk level on its own.
    assert out.group_by("risk").agg(pl.col("n_clusters").first()).sort("risk").rows() == [
        ("High", 10),
        ("Low", 10),
    ]
    assert set(out.get_column("dimension")) == {"Detects", "Confirms", "Guides", OVERALL}


def test_settings_are_recorded_in_the_output(make_ratings) -> None:
    out = summarise(make_ratings(seed=8), n_resamples=123, confidence=0.9, seed=5)
    assert spec_of(out) == BootstrapSpec(n_resamples=123, confidence=0.9, seed=5, cluster="persona")
    narrower = summarise(make_ratings(seed=8), n_resamples=123, confidence=0.5, seed=5)
    assert width(narrower) < width(out)


def test_single_persona_gives_a_wide_interval_not_a_degenerate_one(make_ratings) -> None:
    # Resampling one persona always draws the same persona: the bootstrap alone would say
    # [score, score]. One persona is one look at the chatbot, and the interval says so.
    row = summarise(make_ratings(personas=1, seed=9), n_resamples=50).row(0, named=True)
    assert row["score_lo"] < row["score"] < row["score_hi"]
    assert row["pct_hph_hi"] - row["pct_hph_lo"] > 40


def test_empty_frame_gives_an_empty_summary(make_ratings) -> None:
    out = summarise(make_ratings().clear(), ["chatbot"], n_resamples=10)
    assert out.height == 0 and "score_lo" in out.columns and "chatbot" in out.columns


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (pl.lit("Great").alias("rating"), "not a rating"),
        (pl.lit(OVERALL).alias("dimension"), "reserved"),
        (pl.lit(None, pl.Utf8).alias("persona"), "missing values"),
    ],
)
def test_malformed_frames_are_refused(make_ratings, change: pl.Expr, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        summarise(make_ratings().with_columns(change), n_resamples=10)


def test_bad_settings_are_refused(make_ratings) -> None:
    frame = make_ratings()
    with pytest.raises(ValueError, match="confidence"):
        summarise(frame, confidence=95)
    with pytest.raises(ValueError, match="n_resamples"):
        summarise(frame, n_resamples=0)
    with pytest.raises(ValueError, match="no column"):
        summarise(frame, ["provider"])


def test_a_rarely_rated_dimension_still_gets_an_interval(ratings_of) -> None:
    # Only persona p0 rates dimension A (BP); the other 9 say Not Relevant. Many
    # replicates draw no p0 and leave A undefined: they are left out, not counted as 0.
    rows = [("c0", "p0", "j", "A", RATINGS[0])] + [
        (f"c{i}", f"p{i}", "j", "A", NOT_RELEVANT) for i in range(1, 10)
    ]
    row = summarise(ratings_of(rows), n_resamples=200).row(0, named=True)
    assert row["score"] == row["score_hi"] == 100.0
    # One rated conversation says next to nothing: the interval must show it, not be
    # the zero-width [100, 100] the replicates alone would give.
    assert row["pct_bp_lo"] == pytest.approx(2.5, abs=0.01)  # Clopper–Pearson, 1 of 1
    assert row["score_lo"] < 10


def test_dimensions_a_group_never_rated_have_no_row(make_ratings) -> None:
    a = make_ratings(chatbots={"a": 0.0}, dimensions=("X", "Y"))
    b = make_ratings(chatbots={"b": 0.0}, dimensions=("X",))
    out = summarise(pl.concat([a, b]), ["chatbot"], n_resamples=20)
    assert out.filter(pl.col("chatbot") == "b").get_column("dimension").to_list() == ["X", OVERALL]


def test_results_do_not_depend_on_the_order_judgements_finished_in(make_ratings) -> None:
    # Judgements stream in as they finish, in any order; a card must not change with it.
    import random

    from vera.stats import compare

    frame = make_ratings(chatbots={"a": 0.3, "b": 0.6})
    parts = frame.partition_by(["conversation_id", "judge", "instance"], maintain_order=True)
    random.Random(3).shuffle(parts)
    shuffled = pl.concat(parts)
    assert not shuffled.equals(frame)
    assert summarise(frame, ["chatbot"], n_resamples=200, seed=4).equals(
        summarise(shuffled, ["chatbot"], n_resamples=200, seed=4)
    )
    table_a, pairs_a = compare(frame, n_resamples=200, seed=4)
    table_b, pairs_b = compare(shuffled, n_resamples=200, seed=4)
    assert table_a.equals(table_b) and pairs_a.equals(pairs_b)
