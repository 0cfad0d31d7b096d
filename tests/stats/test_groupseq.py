"""Group-sequential boundaries (vera.stats.groupseq) against published tables, and by
simulation of the model they assume."""

from __future__ import annotations

import numpy as np
import pytest

from vera.stats.groupseq import (
    crossing_probability,
    obrien_fleming,
    parse_spending,
    spending_bounds,
    spent,
    upper_bounds,
)


def test_obrien_fleming_matches_the_published_constants() -> None:
    # Jennison & Turnbull (2000), Table 2.3: C_B(5, 0.05) = 2.040 for five looks at
    # two-sided 0.05 (one-sided 0.025), boundaries C_B·√(5/k).
    assert np.round(obrien_fleming(5, 0.025), 2).tolist() == [4.56, 3.23, 2.63, 2.28, 2.04]
    # gsDesign's unit tests (inst/unitTests/runit.output.R, "test.Deming.OFbound"): four
    # looks, 4.05, 2.86, 2.34, 2.02.
    assert np.round(obrien_fleming(4, 0.025), 2).tolist() == [4.05, 2.86, 2.34, 2.02]


def test_repeated_fixed_tests_inflate_as_published() -> None:
    # gsDesign's unit tests ("test.Deming.gsProb"): a one-sided 0.025 test repeated at
    # 2, 4, 10 and 20 equally spaced looks errs 0.042, 0.063, 0.097, 0.124.
    for looks, published in ((2, 0.042), (4, 0.063), (10, 0.097), (20, 0.124)):
        info = np.arange(1.0, looks + 1)
        got = crossing_probability(info, np.full(looks, 1.959964), grid=201)
        assert round(got, 3) == published


def test_lan_demets_obrien_fleming_spending_at_five_looks() -> None:
    # Lan–DeMets O'Brien–Fleming spending, five equally spaced looks, one-sided 0.025:
    # 4.877, 3.357, 2.680, 2.290, 2.031 (as gsDesign's sfLDOF and ldbounds give).
    got = spending_bounds(np.arange(1.0, 6.0), 0.025, "obf", grid=201)
    assert np.round(got, 3).tolist() == [4.877, 3.357, 2.680, 2.290, 2.031]
    # The default grid is within 1e-4 of a fine one.
    coarse = spending_bounds(np.arange(1.0, 6.0), 0.025, "obf")
    assert np.abs(coarse - got).max() < 1e-4
    # Each boundary spends exactly its increment.
    cum = spent(np.arange(1.0, 6.0) / 5, 0.025, "obf")
    for k in range(1, 6):
        assert crossing_probability(np.arange(1.0, k + 1), got[:k], grid=201) == pytest.approx(
            cum[k - 1], rel=1e-4
        )


def test_spending_functions() -> None:
    tau = np.linspace(0, 1, 11)
    for spec in ("obf", "pocock", "hsd:-4", "hsd:1", "hsd:0"):
        a = spent(tau, 0.05, spec)
        assert a[0] == 0 and a[-1] == pytest.approx(0.05) and (np.diff(a) >= 0).all()
    # Pocock spends more early than O'Brien–Fleming; HSD γ = −4 lies between.
    assert spent(0.3, 0.05, "pocock") > spent(0.3, 0.05, "hsd:-4") > spent(0.3, 0.05, "obf")
    assert parse_spending("HSD:-2") == ("hsd", -2.0)
    for bad in ("ld", "hsd:x", "obf:1", "hsd:nan"):
        with pytest.raises(ValueError):
            parse_spending(bad)


def test_alpha_holds_by_simulation_at_planned_and_unplanned_looks() -> None:
    # The model the gate's boundary assumes: the estimate after t of N units, about the
    # persona population's difference, has variance s² + σ²(1/t − 1/N) with nested
    # increments. Simulate it (sampling without replacement from a finite population,
    # plus a persona error) and count first crossings of the one-sided boundary.
    rng = np.random.default_rng(5)
    n_units, sims, alpha = 200, 20000, 0.05
    sigma, s = 1.0, 0.06
    planned = np.arange(20, n_units + 1, 20)
    for looks in (planned, np.array([20, 60, 70, 130, 200]), planned[:4]):
        var = s**2 + sigma**2 * (1.0 / looks - 1.0 / n_units) * n_units / (n_units - 1)
        info = 1.0 / var
        c = spending_bounds(np.append(info, 1.0 / s**2) if looks[-1] < n_units else info, alpha)[: len(looks)]
        population = rng.normal(0.0, sigma, size=(sims, n_units))
        population -= population.mean(axis=1, keepdims=True)
        means = np.cumsum(population, axis=1)[:, looks - 1] / looks
        est = means + rng.normal(0.0, s, size=(sims, 1))
        crossed = (est / np.sqrt(var) >= c).any(axis=1).mean()
        # Never above α (by more than simulation error); a gate stopped at look 4 of 10
        # has spent only part of it.
        assert crossed <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / sims)
        if looks[-1] == n_units:
            assert crossed >= alpha - 3 * np.sqrt(alpha * (1 - alpha) / sims)


def test_a_look_that_spends_nothing_has_no_boundary() -> None:
    c = upper_bounds(np.array([[1.0, 2.0, 3.0]]), np.array([[0.0, 0.01, 0.025]]))
    assert np.isinf(c[0, 0]) and np.isfinite(c[0, 1:]).all()
