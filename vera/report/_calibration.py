"""The card's calibrated scores: the run's human ratings (human_ratings.jsonl) turned
into PPI++ estimates beside the judge-only ones (`vera.stats.ppi`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from vera.records import OVERALL, HumanRating
from vera.report._schema import Calibrated, CalibratedScore, Confusion, Interval
from vera.stats.humans import confusion_matrices
from vera.stats.ppi import METHOD, calibrated_summary, calibration_units, human_consensus
from vera.store import latest_human_ratings


def human_long(humans: Sequence[HumanRating]) -> pl.DataFrame:
    """The long frame (item_id = conversation id, rater, dimension, rating) of each
    rater's latest rating of each conversation."""
    rows = [
        (r.conversation_id, r.rater, dimension, rating)
        for r in latest_human_ratings(humans)
        for dimension, rating in r.ratings.items()
    ]
    return pl.DataFrame(
        rows, schema=dict.fromkeys(("item_id", "rater", "dimension", "rating"), pl.Utf8), orient="row"
    )


def human_labels(humans: Sequence[HumanRating]) -> pl.DataFrame:
    """Per (conversation_id, dimension): the humans' consensus rating."""
    long = human_long(humans)
    if long.height == 0:
        return pl.DataFrame(schema={"conversation_id": pl.Utf8, "dimension": pl.Utf8, "rating": pl.Utf8})
    return human_consensus(long).select(pl.col("item_id").alias("conversation_id"), "dimension", "rating")


def calibrated_by_chatbot(
    frame: pl.DataFrame,
    humans: Sequence[HumanRating],
    *,
    resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, Calibrated]:
    """Each chatbot's calibrated scores (for chatbots with at least one human-rated
    judged conversation)."""
    labels = human_labels(humans)
    if labels.height == 0 or frame.height == 0:
        return {}
    units = calibration_units(frame, labels)
    rated = units.filter(pl.col("y_bp").is_not_null())
    chatbots = rated.get_column("chatbot").unique().to_list()
    if not chatbots:
        return {}
    units = units.filter(pl.col("chatbot").is_in(chatbots))
    summary = calibrated_summary(units, ["chatbot"], n_resamples=resamples, confidence=confidence, seed=seed)
    pairs = frame.join(labels.rename({"rating": "consensus"}), on=["conversation_id", "dimension"])
    out = {}
    for bot in chatbots:
        rows = summary.filter(pl.col("chatbot") == bot).to_dicts()
        mine = rated.filter(pl.col("chatbot") == bot).get_column("conversation_id").unique().to_list()
        confusion = confusion_matrices(pairs.filter(pl.col("chatbot") == bot), "category")
        out[bot] = Calibrated(
            method=METHOD,
            n_conversations=units.filter(pl.col("chatbot") == bot).get_column("conversation_id").n_unique(),
            n_rated_by_humans=len(mine),
            n_raters=len({r.rater for r in humans if r.conversation_id in set(mine)}),
            overall=_score(next(r for r in rows if r["dimension"] == OVERALL)),
            dimensions={r["dimension"]: _score(r) for r in rows if r["dimension"] != OVERALL},
            confusion=Confusion(
                categories=confusion["categories"],
                overall=confusion["overall"],
                dimensions=confusion["dimensions"],
            ),
        )
    return out


def _round(x: Any) -> float | None:
    return None if x is None else round(float(x), 1) + 0.0


def _score(row: dict[str, Any]) -> CalibratedScore:
    def ci(name: str) -> Interval:
        return Interval(_round(row[f"{name}_lo"]), _round(row[f"{name}_hi"]))

    return CalibratedScore(
        score=_round(row["score"]),
        score_ci=ci("score"),
        pct_bp=_round(row["pct_bp"]),
        pct_bp_ci=ci("pct_bp"),
        pct_hph=_round(row["pct_hph"]),
        pct_hph_ci=ci("pct_hph"),
        pct_nr=_round(row["pct_nr"]),
        pct_nr_ci=ci("pct_nr"),
        n_labelled=int(row["n_labelled"]),
    )
