"""The card's calibrated scores: the run's human ratings (human_ratings.jsonl) turned
into PPI++ estimates beside the judge-only ones (`vera.stats.ppi`), as the card's
`Calibrated` block of each chatbot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from vera.records import OVERALL, HumanRating, RaterRule
from vera.report.calibration._calibration import few_personas_words, human_labels
from vera.report.card._schema import Calibrated, CalibratedScore, Confusion, Interval
from vera.stats.humans import DEFAULT_RATER_RULE, confusion_matrices
from vera.stats.ppi import (
    METHOD,
    calibrated_summary,
    calibration_units,
)


def calibrated_by_chatbot(
    frame: pl.DataFrame,
    humans: Sequence[HumanRating],
    *,
    resamples: int,
    confidence: float,
    seed: int,
    raters: RaterRule = DEFAULT_RATER_RULE,
) -> dict[str, Calibrated]:
    """Each chatbot's calibrated scores (for chatbots with at least one human-rated
    judged conversation), raters who disagree combined by `raters`."""
    labels = human_labels(humans, raters)
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
        overall = next(r for r in rows if r["dimension"] == OVERALL)
        personas = int(overall["n_rated_personas"])
        out[bot] = Calibrated(
            method=METHOD,
            n_conversations=units.filter(pl.col("chatbot") == bot).get_column("conversation_id").n_unique(),
            n_rated_by_humans=len(mine),
            n_raters=len({r.rater for r in humans if r.conversation_id in set(mine)}),
            overall=_score(overall),
            dimensions={r["dimension"]: _score(r) for r in rows if r["dimension"] != OVERALL},
            confusion=Confusion(
                categories=confusion.categories,
                overall=confusion.overall,
                dimensions=confusion.dimensions,
            ),
            n_rated_personas=personas,
            few_rated_personas=few_personas_words(personas),
            raters=raters,
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
