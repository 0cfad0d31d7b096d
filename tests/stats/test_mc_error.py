"""The Monte Carlo error of a bootstrap interval end (`quantile_mc_error`), and decisions
on an end that do not depend on the bootstrap seed (`compare_settled`)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from vera.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    MAX_SETTLE_RESAMPLES,
    OVERALL,
    compare,
    compare_settled,
)
from vera.stats.bootstrap import quantile_mc_band, quantile_mc_error

from .conftest import generate_ratings


def test_the_error_of_a_quantile_matches_theory_and_the_spread_over_seeds():
    # The 2.5% quantile of B normal draws has standard error sqrt(τ(1 − τ)/B) / φ(z_τ).
    b, tau = DEFAULT_RESAMPLES, 0.025
    theory = np.sqrt(tau * (1 - tau) / b) / (np.exp(-(1.959964**2) / 2) / np.sqrt(2 * np.pi))
    estimates, ends = [], []
    for seed in range(200):
        reps = np.random.default_rng(seed).normal(size=(b, 1))
        lo_mc, _ = quantile_mc_error(reps, DEFAULT_CONFIDENCE)
        estimates.append(lo_mc[0])
        ends.append(np.quantile(reps[:, 0], tau))
    assert np.median(estimates) == pytest.approx(theory, rel=0.2)
    assert np.std(ends) == pytest.approx(theory, rel=0.2)


def test_a_quantile_on_a_wide_plateau_has_no_monte_carlo_error():
    reps = np.concatenate([np.full(1000, -1.0), np.zeros(8000), np.full(1000, 1.0)])[:, None]
    low, high = quantile_mc_band(reps, 0.5)
    assert (low[0], high[0]) == (0.0, 0.0)
    assert quantile_mc_error(reps, 0.95)[0][0] == 0.0
    assert np.isnan(quantile_mc_error(np.full((10, 1), np.nan), 0.95)[0][0])  # nothing to estimate


def test_a_clear_decision_is_settled_at_the_resamples_asked():
    frame = generate_ratings(chatbots={"good": 2.0, "bad": -2.0}, personas=20, seed=1)
    pairs = compare_settled(frame, above=0.0, n_resamples=500)
    assert pairs.get_column("settled").all()
    assert pairs.get_column("bootstrap_resamples").unique().to_list() == [500]


def test_a_decision_on_the_threshold_raises_the_resamples_within_the_bound():
    frame = generate_ratings(chatbots={"a": 0.0, "b": 0.0}, personas=12, seed=3)
    _, first = compare(frame, n_resamples=200)
    # A threshold exactly where the lower end falls at 200 resamples: undecidable there.
    above = first.filter(pl.col("dimension") == OVERALL).get_column("diff_lo")[0]
    pairs = compare_settled(frame, above=above, n_resamples=200, max_resamples=3200)
    assert pairs.get_column("bootstrap_resamples")[0] in (800, 3200)
    assert (pairs.get_column("diff_lo_mc") >= 0).all()
    assert MAX_SETTLE_RESAMPLES == 64 * DEFAULT_RESAMPLES
