"""Human ratings as calibration labels: each conversation's one human rating per
dimension, and how many conversations humans should rate (`vera ratings plan`). The
card's calibrated scores are built from them in `vera.report.card._calibrated`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec
import numpy as np
import polars as pl

from vera.records import DEFAULT_CONFIDENCE, OVERALL, HumanRating, RaterRule
from vera.stats.bootstrap import MIN_RATED_PERSONAS
from vera.stats.humans import DEFAULT_RATER_RULE
from vera.stats.ppi import (
    calibrated_summary,
    calibration_units,
    human_consensus,
    persona_floor,
    planned_width,
    ratings_for_width,
)
from vera.store import latest_human_ratings

_FS = ("f_bp", "f_hph", "f_nr")
_YS = ("y_bp", "y_hph", "y_nr")


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


def human_labels(humans: Sequence[HumanRating], raters: RaterRule = DEFAULT_RATER_RULE) -> pl.DataFrame:
    """Per (conversation_id, dimension): the humans' one rating, their ratings combined
    by the rule `raters` (`vera.stats.humans.combine_raters`)."""
    long = human_long(humans)
    if long.height == 0:
        return pl.DataFrame(schema={"conversation_id": pl.Utf8, "dimension": pl.Utf8, "rating": pl.Utf8})
    return human_consensus(long, raters).select(
        pl.col("item_id").alias("conversation_id"), "dimension", "rating"
    )


def few_personas_words(personas: int) -> str | None:
    """What the card says beside a calibrated score whose human ratings come from fewer
    than `MIN_RATED_PERSONAS` personas (None when there are enough)."""
    if personas >= MIN_RATED_PERSONAS:
        return None
    return (
        f"human ratings from only {personas} persona{'s' if personas != 1 else ''} "
        f"(fewer than {MIN_RATED_PERSONAS}): too few to say how far the judge is off, "
        "so the calibrated interval is wide; rate conversations of more personas"
    )


# ---------------------------------------------------------------------------------------
# How many conversations to rate
# ---------------------------------------------------------------------------------------

# The plan's bootstrap resamples by default (`vera ratings plan --resamples`): fewer than
# DEFAULT_RESAMPLES, as it runs one bootstrap per candidate number of ratings.
PLAN_RESAMPLES: Final = 500
_CANDIDATES = (10, 15, 20, 30, 40, 50, 75, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, 2000)


class ChatbotPlan(msgspec.Struct, frozen=True, kw_only=True):
    """How many of a chatbot's conversations to rate for a calibrated overall interval
    of the width asked (None: not reachable even with all of them)."""

    chatbot: str
    n_conversations: int
    n_rated: int  # already rated by humans
    n_needed: int | None
    widths: dict[int, float]  # conversations rated -> expected interval width
    basis: str  # "human ratings so far" or "judge's ratings as if uncorrected"
    # The width no number of ratings removes: the sampling of personas (the judge's mean
    # under the same bootstrap, or the humans' scaled to all N where wider; without 20
    # ratings, the width expected with all rated); None when it cannot be estimated.
    floor: float | None = None


def plan_ratings(
    frame: pl.DataFrame,
    humans: Sequence[HumanRating],
    width: float,
    *,
    resamples: int = PLAN_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> list[ChatbotPlan]:
    """Per chatbot, the number of conversations to rate so that the calibrated overall
    score's interval is expected to be at most `width` points wide.

    The width has a floor no number of ratings removes, the sampling of personas (the
    judge's mean under the same bootstrap, or the humans' mean scaled to all N where
    that is wider, F); only the part above it shrinks as 1/√n.
    With 20 or more rated conversations, from the interval they give now (w₀ at n₀):
    w(n)² = F² + (w₀² − F²)·(1/n − 1/N)/(1/n₀ − 1/N) (`vera.stats.ppi.planned_width`), and a width at or
    below F is not reachable. Before that, conservatively, as if the judge
    told nothing about the humans (λ = 0): the width of the humans' mean alone, with the
    judge's ratings standing in for the spread of the humans' (a judge that predicts
    the humans only narrows it)."""
    labels = human_labels(humans)
    units = calibration_units(frame, labels)
    plans = []
    for (bot,), part in units.group_by(["chatbot"], maintain_order=True):
        ids = part.get_column("conversation_id").unique().sort()
        n_total = ids.len()
        n_rated = part.filter(pl.col("y_bp").is_not_null()).get_column("conversation_id").n_unique()
        kw: dict[str, Any] = {"n_resamples": resamples, "confidence": confidence, "seed": seed}
        widths: dict[int, float] = {}
        floor = _width(calibrated_summary(part, ["chatbot"], estimator="judge", **kw))
        sizes = sorted({*(c for c in _CANDIDATES if c <= n_total), n_total})
        n_needed: int | None = None
        if n_rated >= 20 and (measured := _width(calibrated_summary(part, ["chatbot"], **kw))) is not None:
            basis = "human ratings so far"
            # A judge that rates everything Best Practice while the humans see harm has
            # no spread of its own: the plan promised widths falling to 0 (`persona_floor`).
            humans_only = _width(calibrated_summary(part, ["chatbot"], estimator="human", **kw))
            base = persona_floor(floor if floor is not None else 0.0, humans_only, n_rated, n_total)
            floor = base
            for n in sizes:
                widths[n] = planned_width(measured, n_rated, base, n, n_total)
            exact = ratings_for_width(measured, n_rated, base, width, n_total)
            n_needed = exact if exact is not None and exact <= n_total else None
        else:
            basis = "judge's ratings as if uncorrected"
            stand_in = part.with_columns(pl.col(f).alias(y) for f, y in zip(_FS, _YS, strict=True))
            rng = np.random.default_rng(seed)
            for n in sizes:
                chosen = ids.sample(n, seed=int(rng.integers(2**31))).to_list()
                sample = stand_in.with_columns(
                    pl.when(pl.col("conversation_id").is_in(chosen)).then(pl.col(y)).otherwise(None).alias(y)
                    for y in _YS
                )
                w = _width(calibrated_summary(sample, ["chatbot"], estimator="human", **kw))
                if w is not None:
                    widths[n] = w
            # A few ratings that happen to agree give a narrow bootstrap interval (no
            # spread to resample); more ratings never widen the interval, so each width
            # is at least the width of any larger sample, and none is below the floor.
            least = floor if floor is not None else 0.0
            for n in sorted(widths, reverse=True):
                least = widths[n] = max(widths[n], least)
            # The floor is what rating all of them gives (with the exact bound near
            # 0 or 100 %, not the judge's spread alone: a judge that rates everything
            # Best Practice has none, and the plan printed a floor of 0.0 beside
            # "rating all 100 gives 9.7").
            if n_total in widths:
                floor = widths[n_total]
            needed = [n for n, w in sorted(widths.items()) if w <= width]
            n_needed = needed[0] if needed and (floor is None or width > floor) else None
        plans.append(
            ChatbotPlan(
                chatbot=str(bot),
                n_conversations=n_total,
                n_rated=n_rated,
                n_needed=n_needed,
                widths={n: round(w, 1) for n, w in widths.items()},
                basis=basis,
                floor=None if floor is None else round(floor, 1),
            )
        )
    return plans


def _overall(summary: pl.DataFrame) -> dict[str, Any]:
    return summary.filter(pl.col("dimension") == OVERALL).row(0, named=True)


def _width(summary: pl.DataFrame) -> float | None:
    """The overall score's interval width; None where it has none (too few
    conversations or ratings: never a NaN to print)."""
    o = _overall(summary)
    lo, hi = o["score_lo"], o["score_hi"]
    if lo is None or hi is None or not np.isfinite(hi - lo):
        return None
    return float(hi - lo)
