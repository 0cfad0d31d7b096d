"""Paired comparisons between chatbots over shared personas."""

from __future__ import annotations

import polars as pl

from vera.stats import OVERALL, compare, summarise


def overall(pairs: pl.DataFrame) -> dict:
    return pairs.row(by_predicate=pl.col("dimension") == OVERALL, named=True)


def test_a_real_difference_is_flagged(make_ratings) -> None:
    frame = make_ratings(chatbots={"good": 1.5, "poor": -0.5}, personas=30, spread=1.5, seed=1)
    _, pairs = compare(frame, n_resamples=1000)
    row = overall(pairs)
    assert (row["chatbot_a"], row["chatbot_b"]) == ("good", "poor")
    assert row["diff"] > 0 and row["diff_lo"] > 0 and row["excludes_zero"] is True
    assert row["diff"] == row["score_a"] - row["score_b"]


def test_no_difference_is_not_flagged(make_ratings) -> None:
    # Same skill; only the draws differ.
    frame = make_ratings(chatbots={"a": 0.0, "b": 0.0}, personas=30, spread=1.5, seed=2)
    _, pairs = compare(frame, n_resamples=1000)
    row = overall(pairs)
    assert row["diff_lo"] < 0 < row["diff_hi"] and row["excludes_zero"] is False


def test_pairing_narrows_the_interval_when_personas_drive_scores(make_ratings) -> None:
    # Persona difficulty is shared by both chatbots: pairing cancels it, so the paired
    # interval is narrower than treating the two scores as independent would give.
    frame = make_ratings(chatbots={"a": 0.3, "b": 0.0}, personas=30, spread=2.5, seed=3)
    table, pairs = compare(frame, n_resamples=1000)
    widths = table.filter(pl.col("dimension") == OVERALL).select(
        (pl.col("score_hi") - pl.col("score_lo")).alias("w")
    )
    unpaired = float((widths.get_column("w") ** 2).sum()) ** 0.5
    row = overall(pairs)
    assert row["diff_hi"] - row["diff_lo"] < 0.75 * unpaired


def test_unshared_personas_are_dropped_and_counted(make_ratings) -> None:
    a = make_ratings(chatbots={"a": 0.0}, personas=20, seed=4)  # p0..p19
    b = make_ratings(chatbots={"b": 0.0}, personas=20, persona_offset=5, seed=4)  # p5..p24
    _, pairs = compare(pl.concat([a, b]), n_resamples=200)
    row = overall(pairs)
    assert (row["n_shared"], row["n_only_a"], row["n_only_b"]) == (15, 5, 5)
    shared = pl.concat([a, b]).filter(pl.col("persona").is_in([f"p{i}" for i in range(5, 20)]))
    only_shared = summarise(shared, ["chatbot"], n_resamples=10)
    score_a = only_shared.filter((pl.col("chatbot") == "a") & (pl.col("dimension") == OVERALL))
    assert row["score_a"] == score_a.item(0, "score")


def test_table_is_the_per_unit_summary_and_every_pair_appears(make_ratings) -> None:
    frame = make_ratings(chatbots={"x": 0.0, "y": 0.5, "z": 1.0}, personas=10, seed=5)
    table, pairs = compare(frame, n_resamples=200, seed=3)
    assert table.equals(summarise(frame, ["chatbot"], n_resamples=200, seed=3))
    assert sorted(set(pairs.select("chatbot_a", "chatbot_b").rows())) == [
        ("x", "y"),
        ("x", "z"),
        ("y", "z"),
    ]
    assert pairs.height == 3 * 4  # three dimensions plus Overall per pair
    assert pairs.get_column("bootstrap_resamples").unique().to_list() == [200]


def test_comparison_is_reproducible(make_ratings) -> None:
    frame = make_ratings(chatbots={"a": 0.0, "b": 0.5}, personas=10, seed=6)
    assert compare(frame, n_resamples=200, seed=1)[1].equals(compare(frame, n_resamples=200, seed=1)[1])


def test_seeds_can_be_compared_within_a_chatbot(make_ratings) -> None:
    frame = make_ratings(chatbots={"a": 0.0}, personas=10, conversations=2, seed=7)
    _, pairs = compare(frame, unit=["chatbot", "seed"], n_resamples=100)
    assert {"chatbot_a", "seed_a", "chatbot_b", "seed_b"} <= set(pairs.columns)
    assert pairs.schema["seed_a"] == pl.Int64
    assert pairs.select("seed_a", "seed_b").unique().rows() == [(0, 1)]


def test_a_single_unit_has_no_pairs(make_ratings) -> None:
    table, pairs = compare(make_ratings(personas=5), n_resamples=50)
    assert table.height == 4 and pairs.height == 0 and "diff_lo" in pairs.columns
