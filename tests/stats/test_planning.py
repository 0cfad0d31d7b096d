"""The planner's statistics (vera.stats.planning) and, on fewer pilots, the simulation
of benchmarks/bench_plan.py: predicted widths of a fixed design within 15 %."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.bench_plan import check
from vera.stats.planning import (
    fixed_se,
    gate_sizes,
    power_of,
    shift_for,
    units_for_power,
    units_for_width,
    variability,
)


def test_the_sizes_give_the_width_and_power_asked_for() -> None:
    n = units_for_width(25.0, 6.0)
    assert 2 * 1.96 * fixed_se(25.0, n) <= 6.0 < 2 * 1.96 * fixed_se(25.0, n - 1)
    m = units_for_power(25.0, 5.0, 0.8)
    assert power_of(25.0, 5.0, m) >= 0.8 > power_of(25.0, 5.0, m - 1)
    # Half the width takes four times the units.
    assert units_for_width(25.0, 3.0) == pytest.approx(4 * n, rel=0.01)


def test_the_within_persona_spread_is_told_from_the_between() -> None:
    rng = np.random.default_rng(1)
    personas, each = 200, 5
    # A persona's difficulty moves its Best Practice share; a unit is 5 ratings.
    p_bp = np.repeat(rng.uniform(0.3, 0.8, personas), each)
    bp = rng.binomial(5, p_bp)
    hph = rng.binomial(5 - bp, 0.3)
    counts = np.stack([bp, hph, np.full_like(bp, 5)], axis=1)
    persona = np.repeat(np.arange(personas), each)
    v = variability(counts, persona)
    assert v.between_sd > 0 and v.within_sd > 0 and v.personas == personas
    # Shuffling units across personas leaves no between part beyond the within noise.
    mixed = variability(counts[rng.permutation(len(bp))], persona)
    assert mixed.between_sd < v.between_sd
    alone = variability(counts[::each], np.arange(personas))
    assert alone.units_per_persona == 1 and alone.between_sd == 0


def test_the_shift_moves_the_score_by_the_difference_asked() -> None:
    from vera.stats.sequential import _score

    totals = np.array([300.0, 80.0, 500.0])
    for d in (-10.0, 7.0):
        s = shift_for(totals, d)
        moved = s * totals[0] if s > 0 else s * totals[1]
        after = _score(totals[0] - moved, totals[1] + moved, totals[2])
        assert float(after - _score(totals[0], totals[1], totals[2])) == pytest.approx(d, abs=0.01)


def test_the_simulated_gate_stops_early_far_from_the_margin() -> None:
    from benchmarks.seqsim import LABELS, draw

    rng = np.random.default_rng(3)
    base, _, persona_of = draw(rng, 1, 60, 3, 0.0)
    sizes = gate_sizes(
        base[0],
        persona_of,
        labels=list(LABELS),
        max_ratings=np.array([1.0] * 5 + [5.0]),
        personas=100,
        units_per_persona=10,
        differences=[-30.0, 0.0],
        margin=10.0,
        alpha=0.05,
        wave=50,
        reps=12,
        seed=4,
    )
    far, equal = sizes
    assert far.worse == 1.0 and far.mean_units < 500
    assert equal.worse == 0.0 and far.p90_units >= far.mean_units * 0.5


def test_the_predicted_widths_are_within_15_percent() -> None:
    sds, rows = check(np.random.default_rng(5), pilots=3, reps=300, designs=((100, 3), (100, 10), (50, 4)))
    assert len(sds) == 3
    for _personas, _seeds, _truth, _predicted, error in rows:
        assert error < 0.15
