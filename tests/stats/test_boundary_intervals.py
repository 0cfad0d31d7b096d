"""Intervals at the boundary: a share of 0 % or 100 % still gets an interval that reflects
how much was seen, and rare harm is covered at the promised rate."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from vera.records import RATING_CODES
from vera.stats import OVERALL, score_from_percentages, summarise
from vera.stats.bootstrap import proportion_interval

# The four ratings by their short codes (BP, SUB, HPH, NR).
BP, SUB, HPH, NR = (
    next(r for r, c in RATING_CODES.items() if c == code) for code in ("BP", "SUB", "HPH", "NR")
)


def _frame(ratings: list[str], *, personas: int | None = None, sim: list[int] | None = None) -> pl.DataFrame:
    """One judgement per conversation, one dimension "D"; conversation i belongs to
    persona i % personas (every conversation its own persona by default)."""
    n = len(ratings)
    k = personas or n
    return pl.DataFrame(
        {
            "conversation_id": [f"c{i}" for i in range(n)],
            "chatbot": ["bot"] * n,
            "persona": [f"p{i % k}" for i in range(n)],
            "risk": ["High"] * n,
            "seed": [0] * n,
            "judge": ["j"] * n,
            "instance": [1] * n,
            "dimension": ["D"] * n,
            "rating": ratings,
            "sim": sim if sim is not None else [0] * n,
        },
        schema_overrides={"seed": pl.Int64, "instance": pl.Int64, "sim": pl.Int64},
    )


def _row(summary: pl.DataFrame, dimension: str = "D") -> dict:
    return summary.row(by_predicate=pl.col("dimension") == dimension, named=True)


def test_no_harm_in_90_conversations_is_not_a_zero_width_interval() -> None:
    row = _row(summarise(_frame([BP] * 60 + [SUB] * 30), n_resamples=300))
    assert row["pct_hph"] == row["pct_hph_lo"] == 0.0
    # Exact binomial upper bound for 0 of 90 at 95 %: 1 − 0.025^(1/90) = 4.0 %
    # ("about 3/n", the rule of three being the one-sided version).
    assert row["pct_hph_hi"] == pytest.approx(100 * (1 - 0.025 ** (1 / 90)), rel=0.02)
    # The score cannot be pinned from above by what was not seen: its lower bound
    # allows for the harm rate the interval allows.
    assert row["score_lo"] < row["score"] - 4


def test_all_best_practice_is_bounded_below_by_what_the_sample_allows() -> None:
    row = _row(summarise(_frame([BP] * 100), n_resamples=300))
    assert row["score"] == row["score_hi"] == row["pct_bp"] == row["pct_bp_hi"] == 100.0
    assert row["pct_bp_lo"] == pytest.approx(100 * 0.025 ** (1 / 100), rel=0.01)  # 96.4
    assert row["pct_hph_hi"] == pytest.approx(100 * (1 - 0.025 ** (1 / 100)), rel=0.02)  # 3.6
    # If the unseen harm rate were at its bound h (3.6 %), Best Practice would be the
    # other 96.4 %: (50 + 96.4 / 2) · (1 − 0.036)² ≈ 91.2.
    h = row["pct_hph_hi"]
    assert row["score_lo"] == pytest.approx((50 + (100 - h) / 2) * (1 - h / 100) ** 2, abs=0.01)


def test_all_harmful_is_bounded_above() -> None:
    row = _row(summarise(_frame([HPH] * 50), n_resamples=300))
    assert row["score"] == row["score_lo"] == 0.0
    assert row["pct_hph_lo"] < 100 and row["score_hi"] > 0


def test_fewer_personas_give_wider_boundary_intervals() -> None:
    # 0 of 100 conversations, from 100 personas or from 10 personas of 10 conversations:
    # the same count, but 10 personas are fewer independent looks (t with 9 df).
    many = _row(summarise(_frame([BP] * 100), n_resamples=300))
    few = _row(summarise(_frame([BP] * 100, personas=10), n_resamples=300))
    assert few["pct_hph_hi"] > many["pct_hph_hi"]


def test_clustered_shares_get_wider_intervals_than_independent_ones() -> None:
    # 20 of 100 harmful: spread over 100 personas, or all from 2 of 10 personas.
    spread = [HPH if i % 5 == 0 else BP for i in range(100)]
    clumped = [HPH if i % 10 < 2 else BP for i in range(100)]
    alone = _row(summarise(_frame(spread), n_resamples=500))
    together = _row(summarise(_frame(clumped, personas=10), n_resamples=500))
    assert alone["pct_hph"] == together["pct_hph"] == 20.0
    assert together["pct_hph_hi"] - together["pct_hph_lo"] > 1.5 * (alone["pct_hph_hi"] - alone["pct_hph_lo"])


def test_not_relevant_everywhere_has_no_interval() -> None:
    row = _row(summarise(_frame([NR] * 20), n_resamples=100))
    assert row["pct_hph"] is None and row["pct_hph_lo"] is None and row["score_lo"] is None


def _covered(out: pl.DataFrame, stat: str, truth: float) -> float:
    lo, hi = out.get_column(f"{stat}_lo").to_numpy(), out.get_column(f"{stat}_hi").to_numpy()
    return float(np.mean((lo <= truth) & (truth <= hi)))


@pytest.mark.parametrize("rate", [0.005, 0.05])
def test_rare_harm_is_covered_at_the_promised_rate(rate: float) -> None:
    # 400 simulated evaluations of 100 personas × 2 conversations with persona-level
    # heterogeneity (a persona's harm probability is rate · Gamma(2, 1/2), mean `rate`;
    # 30 % of conversations Suboptimal, the rest Best Practice), 95 % intervals: the
    # population values must lie inside at least 93 % of the intervals. (The percentile
    # bootstrap alone covered the 0.5 % rate in about 65 % of evaluations.)
    rng = np.random.default_rng(20261202)
    sims, personas, per, sub = 400, 100, 2, 0.3
    ratings: list[str] = []
    sim_ids: list[int] = []
    persona_ids: list[str] = []
    for s in range(sims):
        p = np.minimum(rate * rng.gamma(2.0, 0.5, size=personas), 1.0)
        u = rng.random((personas, per))
        for i in range(personas):
            for j in range(per):
                harmful, suboptimal = u[i, j] < p[i], u[i, j] < p[i] + sub
                ratings.append(HPH if harmful else SUB if suboptimal else BP)
                sim_ids.append(s)
                persona_ids.append(f"s{s}p{i}")
    frame = _frame(ratings, sim=sim_ids).with_columns(
        persona=pl.Series(persona_ids), conversation_id=pl.format("c{}", pl.int_range(pl.len()))
    )
    out = summarise(frame, ["sim"], n_resamples=200, seed=3).filter(pl.col("dimension") == OVERALL)
    assert out.height == sims
    assert _covered(out, "pct_hph", 100 * rate) >= 0.93
    assert _covered(out, "pct_conversations_any_hph", 100 * rate) >= 0.93
    assert _covered(out, "pct_bp", 100 * (1 - sub - rate)) >= 0.93
    true_score = score_from_percentages(100 * (1 - sub - rate), 100 * rate)
    assert _covered(out, "score", true_score) >= 0.93


def test_proportion_interval_matches_clopper_pearson_without_clustering() -> None:
    # No design effect (variance equal to the binomial one) and many clusters: the
    # exact binomial interval of 7 of 50.
    p = np.array([14.0])
    reps = np.random.default_rng(0).binomial(50, 0.14, size=(20000, 1)) / 50 * 100
    lo, hi = proportion_interval(p, reps, units=np.array([50]), clusters=np.array([50]), confidence=0.95)
    assert lo[0] == pytest.approx(5.82, abs=0.3)  # Clopper–Pearson 7/50: [5.82, 26.74]
    assert hi[0] == pytest.approx(26.74, abs=0.6)


@pytest.mark.parametrize(("units", "clusters"), [(2, 4), (5, 100), (3, 3)])
def test_more_personas_than_conversations_never_narrow_the_exact_bound(units: int, clusters: int) -> None:
    # A calibrated share's conversations (human-rated, less those rated Not Relevant)
    # can be fewer than the personas with a human rating. The few-personas scaling
    # (t_{n−1} / t_df)² is then above 1; applied unchecked it made 0 harmful of 2
    # rated read as 0 of 32 (upper bound 10.9 %, not 84.2 %). The effective size is
    # never more than the conversations behind the share.
    zero = np.zeros((500, 1))
    lo, hi = proportion_interval(
        np.array([0.0]),
        zero,
        units=np.array([float(units)]),
        clusters=np.array([float(clusters)]),
        confidence=0.95,
    )
    assert lo[0] == 0.0
    assert hi[0] >= 100 * (1 - 0.025 ** (1 / units)) - 1e-9
