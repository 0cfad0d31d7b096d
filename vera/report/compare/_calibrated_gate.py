"""`vera compare --gate --calibrated`: the release gate on calibrated scores.

When both runs carry human ratings, each side's scores are calibrated by its own
ratings (PPI++, `vera.stats.ppi`) and the candidate − baseline difference gets a paired
interval (the same re-drawn personas on both sides), so a judge that grew more lenient
between the runs cannot hide a regression the clinicians would see.
"""

from __future__ import annotations

import polars as pl

from vera.errors import UserError
from vera.records import RaterRule
from vera.report.calibration._calibration import human_labels
from vera.report.shared._runs import Run
from vera.stats import MAX_SETTLE_RESAMPLES
from vera.stats.humans import DEFAULT_RATER_RULE
from vera.stats.ppi import calibrated_difference_settled, calibration_units
from vera.store import (
    HUMAN_RATINGS,
    check_human_dimensions,
    check_transcripts,
    open_run,
    read_human_ratings_numbered,
)


def calibrated_diffs(
    frame: pl.DataFrame,
    runs: dict[str, Run],
    bots: dict[str, str],
    *,
    resamples: int,
    confidence: float,
    seed: int,
    margin: float = 0.0,
    max_resamples: int = MAX_SETTLE_RESAMPLES,
    raters: RaterRule = DEFAULT_RATER_RULE,
) -> pl.DataFrame:
    """`compare`'s difference table (side_a, side_b, dimension, score_a, score_b, diff,
    diff_lo, diff_hi, n_shared) for the calibrated scores of the paired `frame`, whose
    `side` column names the keys of `runs` (baseline first). Raters who disagree are
    combined by `raters`, as the card combines them."""
    sides = tuple(runs)
    parts = []
    for side, run in runs.items():
        numbered = read_human_ratings_numbered(run.path)
        check_human_dimensions(
            run.path, numbered, set(run.ratings.get_column("dimension").unique().to_list())
        )
        check_transcripts(run.path / HUMAN_RATINGS, numbered, open_run(run.path))
        labels = human_labels([h for _, h in numbered], raters)
        mine = frame.filter(pl.col("side") == side)
        units = calibration_units(mine, labels, by=("side",))
        if units.filter(pl.col("y_bp").is_not_null()).height == 0:
            raise UserError(
                f"--calibrated: the {side} run {run.path} has no human ratings of {bots[side]}'s judged "
                "conversations (add them with vera review or vera ratings import)"
            )
        parts.append(units)
    # The candidate is worse when its b − a difference's upper end lies below −margin;
    # the resamples are raised while that is within Monte Carlo error.
    diffs = calibrated_difference_settled(
        pl.concat(parts),
        (sides[0], sides[1]),
        below=-margin,
        n_resamples=resamples,
        max_resamples=max_resamples,
        confidence=confidence,
        seed=seed,
    )
    n_shared = frame.get_column("persona").n_unique()
    return diffs.with_columns(
        side_a=pl.lit(sides[0]),
        side_b=pl.lit(sides[1]),
        # `compare` gives a − b; the gate flips it.
        diff=-pl.col("diff"),
        diff_lo=-pl.col("diff_hi"),
        diff_hi=-pl.col("diff_lo"),
        diff_lo_mc=pl.col("diff_hi_mc"),
        diff_hi_mc=pl.col("diff_lo_mc"),
        n_shared=pl.lit(n_shared),
    )
