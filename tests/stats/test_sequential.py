"""The sequential gate's confidence sequences: time-uniform coverage, shrinking, and
the margin rule (vera.stats.sequential)."""

from __future__ import annotations

import numpy as np
import pytest

from vera.stats import score_from_percentages
from vera.stats.sequential import (
    NOT_WORSE,
    UNDECIDED,
    WORSE,
    SpendingTable,
    betting_rejections,
    decide,
    gate_sequence,
    score_sequence,
    share_sequence,
    spending_difference,
    verdict,
)

ALPHA = 0.1


def test_betting_never_rejects_the_true_mean_at_any_look_with_probability_over_1_minus_alpha() -> None:
    rng = np.random.default_rng(7)
    reps, n = 400, 120
    # A skewed finite population per repetition, drawn in a random order.
    pop = rng.beta(0.5, 3.0, size=(reps, n))
    wor = betting_rejections(pop, pop.mean(axis=1), ALPHA, population=n)
    # "At every look": a repetition errs if the true mean is rejected at any time.
    assert wor[:, -1].mean() <= ALPHA
    iid = betting_rejections(rng.beta(0.5, 3.0, size=(reps, n)), np.full(reps, 0.5 / 3.5), ALPHA)
    assert iid[:, -1].mean() <= ALPHA


def test_betting_rejects_a_wrong_mean_and_then_stays_rejected() -> None:
    rng = np.random.default_rng(8)
    z = rng.beta(2.0, 2.0, size=(50, 200))
    rejected = betting_rejections(z, np.full(50, 0.35), ALPHA)
    assert rejected[:, -1].mean() > 0.95
    assert (np.diff(rejected.astype(int), axis=1) >= 0).all()


def test_without_replacement_the_last_unit_pins_the_mean() -> None:
    z = np.array([[0.2, 0.9, 0.4, 0.5]])
    assert betting_rejections(z, np.array([0.9]), ALPHA, population=4)[0, -1]
    assert not betting_rejections(z, np.array([0.5]), ALPHA, population=4)[0, -1]


def _paired_units(rng: np.random.Generator, reps: int, n: int, worse: float) -> tuple[np.ndarray, np.ndarray]:
    """(baseline, candidate) counts (reps, n, 3) for one rating a unit: BP, HPH, rated."""
    difficulty = rng.random((reps, n))
    shared = rng.random((reps, n))
    own = np.where(rng.random((reps, n)) < 0.5, shared, rng.random((reps, n)))
    out = []
    for u, shift in ((shared, 0.0), (own, worse)):
        p_bp = np.clip(0.7 - 0.4 * difficulty - shift, 0.0, 1.0)
        p_hph = np.clip(0.1 + 0.2 * difficulty + shift, 0.0, 1.0)
        bp = u < p_bp
        hph = (u >= p_bp) & (u < p_bp + p_hph)
        rated = u < 0.95
        out.append(np.stack([bp & rated, hph & rated, rated], axis=-1).astype(float))
    return out[0], out[1]


def _full_run_score(x: np.ndarray) -> np.ndarray:
    """Each repetition's score with all its units in (reps,), from (reps, n, 3) counts:
    what a sequence's estimate must reach at the last look."""
    t = x.sum(axis=1)
    out: np.ndarray = score_from_percentages(100 * t[:, 0] / t[:, 2], 100 * t[:, 1] / t[:, 2])
    return out


def test_the_share_sequence_covers_the_finite_population_share_at_every_look() -> None:
    rng = np.random.default_rng(3)
    reps, n = 300, 150
    base, cand = _paired_units(rng, reps, n, worse=0.05)
    truth = cand[..., 1].sum(axis=1) / cand[..., 2].sum(axis=1)
    lo, hi = share_sequence(
        cand[..., [1, 2]], base[..., [1, 2]], base[..., [1, 2]].sum(axis=1), n, ALPHA, 201
    )
    missed = ((lo > truth[:, None]) | (hi < truth[:, None]) | np.isnan(lo)).any(axis=1)
    assert missed.mean() <= ALPHA
    width = np.nanmean(hi - lo, axis=0)
    # It shrinks as units come in, to (nearly) nothing once all are in.
    assert width[19] > width[74] > width[-1] and width[-1] < 0.02


def test_the_score_sequence_covers_the_full_runs_difference_at_every_look() -> None:
    rng = np.random.default_rng(4)
    reps, n = 200, 150
    base, cand = _paired_units(rng, reps, n, worse=0.1)
    truth = _full_run_score(cand) - _full_run_score(base)
    est, lo, hi = score_sequence(cand, base, base.sum(axis=1), n, ALPHA, 201)
    # With every unit in, the interval is the truth itself (to rounding).
    missed = ((lo > truth[:, None] + 1e-9) | (hi < truth[:, None] - 1e-9) | np.isnan(lo)).any(axis=1)
    assert missed.mean() <= ALPHA
    assert np.allclose(est[:, -1], truth)
    assert np.nanmean(hi[:, 30] - lo[:, 30]) > np.nanmean(hi[:, 100] - lo[:, 100])


@pytest.mark.parametrize(
    ("lo", "hi", "status"),
    [
        (-12.0, -6.0, WORSE),
        (-4.0, 3.0, NOT_WORSE),
        (-7.0, 2.0, UNDECIDED),
        (-5.0, 1.0, UNDECIDED),  # touching −margin is not above it
        (float("nan"), 1.0, UNDECIDED),
    ],
)
def test_the_margin_rule(lo: float, hi: float, status: str) -> None:
    assert decide(lo, hi, margin=5.0) == status


def test_the_verdict_of_the_rows() -> None:
    assert verdict([NOT_WORSE, WORSE, UNDECIDED]) == WORSE
    assert verdict([NOT_WORSE, NOT_WORSE]) == NOT_WORSE
    assert verdict([NOT_WORSE, UNDECIDED]) == UNDECIDED
    assert verdict([]) == UNDECIDED


def _gate(worse: float, seed: int) -> list:
    rng = np.random.default_rng(seed)
    personas, seeds = 60, 5
    base, cand = _paired_units(rng, 1, personas * seeds, worse=worse)
    base, cand = base[0][:, None, :], cand[0][:, None, :]
    order = rng.permutation(personas * seeds)
    return gate_sequence(
        base,
        cand[order],
        order,
        persona=np.repeat(np.arange(personas), seeds),
        labels=["Overall"],
        max_ratings=[1.0],
        looks=list(range(30, personas * seeds + 1, 30)),
        margin=5.0,
        alpha=0.05,
        grid_points=401,
    )


def test_a_much_worse_candidate_is_called_worse_before_the_units_run_out() -> None:
    looks = _gate(worse=0.3, seed=11)
    stop = next(look for look in looks if look.verdict != UNDECIDED)
    assert stop.verdict == WORSE and stop.units < 300
    row = stop.rows[0]
    assert row.hi is not None and row.hi < -5.0 and row.lo is not None and row.lo <= row.diff <= row.hi


def test_a_candidate_equal_to_its_baseline_is_never_called_worse() -> None:
    looks = _gate(worse=0.0, seed=12)
    assert all(look.verdict != WORSE for look in looks)
    widths = [look.rows[0].hi - look.rows[0].lo for look in looks]
    assert widths[-1] < widths[0]


def test_counts_beyond_the_bound_are_refused() -> None:
    with pytest.raises(ValueError, match="max_ratings"):
        gate_sequence(
            np.full((4, 1, 3), 2.0),
            np.full((1, 1, 3), 2.0),
            [0],
            persona=[0, 0, 1, 1],
            labels=["Overall"],
            max_ratings=[1.0],
            looks=[1],
            margin=1.0,
            alpha=0.05,
        )


def test_the_asymptotic_sequence_covers_the_full_runs_difference_at_every_look() -> None:
    from vera.stats.sequential import MIN_UNITS, asymptotic_radius, influence_sequence

    rng = np.random.default_rng(5)
    reps, n = 400, 300
    base, cand = _paired_units(rng, reps, n, worse=0.1)
    truth = _full_run_score(cand) - _full_run_score(base)
    est, sd = influence_sequence(cand, base, base.sum(axis=1), n)
    t = np.arange(1, n + 1, dtype=float)
    radius = asymptotic_radius(sd, t, ALPHA, n / 2)
    looks = slice(MIN_UNITS - 1, n - 1)
    missed = (np.abs(est - truth[:, None]) > radius)[:, looks].any(axis=1)
    assert missed.mean() <= ALPHA
    assert np.mean(radius[:, 50]) > np.mean(radius[:, 150]) > np.mean(radius[:, 250])


def test_the_without_replacement_sequence_covers_at_every_look_and_closes_at_the_end() -> None:
    from vera.stats.sequential import MIN_UNITS, asymptotic_radius, influence_sequence, one_sided_level

    rng = np.random.default_rng(6)
    reps, n = 400, 300
    base, cand = _paired_units(rng, reps, n, worse=0.1)
    truth = _full_run_score(cand) - _full_run_score(base)
    est, sd = influence_sequence(cand, base, base.sum(axis=1), n)
    t = np.arange(1, n + 1, dtype=float)
    looks = slice(MIN_UNITS - 1, n)
    # One side at a time, each at its own one-sided level.
    radius = asymptotic_radius(sd, t, one_sided_level(ALPHA), n / 4, n)
    assert (est - radius > truth[:, None] + 1e-9)[:, looks].any(axis=1).mean() <= ALPHA
    assert (est + radius < truth[:, None] - 1e-9)[:, looks].any(axis=1).mean() <= ALPHA
    # Narrower than the i.i.d. sequence, more so as the units run out; nothing left at N.
    iid = asymptotic_radius(sd, t, one_sided_level(ALPHA), n / 4)
    assert np.mean(radius[:, 75] / iid[:, 75]) < 0.95
    assert np.mean(radius[:, 250] / iid[:, 250]) < 0.5
    assert (radius[:, -1] == 0).all() and np.allclose(est[:, -1], truth)


def test_the_one_sided_level_is_between_alpha_and_twice_alpha() -> None:
    from vera.stats.sequential import one_sided_level

    for a in (0.001, 0.01, 0.05, 0.2):
        assert a < one_sided_level(a) < 2 * a
    with pytest.raises(ValueError):
        one_sided_level(0.5)


def test_the_upper_ends_split_alpha_with_half_to_overall() -> None:
    from vera.stats.sequential import upper_levels

    levels = upper_levels([False] * 5 + [True], 0.05)
    assert levels[-1] == pytest.approx(0.025) and levels[0] == pytest.approx(0.005)
    assert sum(levels) == pytest.approx(0.05)
    assert upper_levels([True], 0.05) == [0.05]
    assert upper_levels([False, False], 0.05) == [0.025, 0.025]


def test_the_fixed_gate_checks_the_sequential_gate_s_question_at_its_levels() -> None:
    """`vera compare --gate`: the upper ends (WORSE) split α as the sequential gate does,
    so a wrong WORSE anywhere is at most α; every lower end (NOT WORSE) at α/2, never
    looser than the two-sided 1 − α interval it used before."""
    from vera.stats import fixed_gate_levels
    from vera.stats.sequential import upper_levels

    rows = [False] * 5 + [True]
    low, highs = fixed_gate_levels(rows, 0.05)
    assert low == pytest.approx(0.025)
    assert highs == upper_levels(rows, 0.05) and sum(highs) == pytest.approx(0.05)
    only, [high] = fixed_gate_levels([True], 0.1)[0], fixed_gate_levels([True], 0.1)[1]
    assert only == pytest.approx(0.05) and high == pytest.approx(0.1)


def test_the_fitted_pairing_is_no_wider_than_plain_pairing() -> None:
    """A candidate loosely like its baseline: candidate − β·baseline spreads less than
    candidate − baseline, and the estimate is still the full run's with every unit in."""
    from vera.stats import sequential

    rng = np.random.default_rng(9)
    base, cand = _paired_units(rng, 50, 400, worse=0.05)
    prior = sequential.BETA_PRIOR
    try:
        sequential.BETA_PRIOR = 1e12  # β pinned at 1: plain pairing
        est_plain, sd_plain = sequential.influence_sequence(cand, base, base.sum(axis=1), 400)
    finally:
        sequential.BETA_PRIOR = prior
    est, sd = sequential.influence_sequence(cand, base, base.sum(axis=1), 400)
    assert np.isfinite(sd).all()
    assert np.mean(sd[:, 200]) < np.mean(sd_plain[:, 200])
    assert np.allclose(est[:, -1], est_plain[:, -1])


def test_the_wald_bound_is_where_the_information_reaches_kl_and_none_past_the_personas() -> None:
    from benchmarks.bench_sequential import binary_kl, wald_fraction

    assert binary_kl(0.3, 0.3) == 0 and binary_kl(0.95, 0.05) > binary_kl(0.8, 0.05)
    n, sigma2, s2, delta = 300, 25.0**2, 1.5**2, 5.0
    frac = wald_fraction(delta, sigma2, s2, n, 0.9, 0.05)
    t = frac * n
    information = delta**2 / (2 * (sigma2 * (1 / t - 1 / n) + s2))
    assert information == pytest.approx(binary_kl(0.9, 0.05))
    # Being right more often costs more units; a wider margin, fewer.
    assert (
        wald_fraction(delta, sigma2, s2, n, 0.95, 0.05)
        > frac
        > wald_fraction(2 * delta, sigma2, s2, n, 0.9, 0.05)
    )
    # The persona part never leaves: past it, no number of these units is enough.
    assert wald_fraction(delta, sigma2, 4.0**2, n, 0.95, 0.05) == float("inf")


def test_the_diagnosis_finds_the_sequence_wider_than_one_look_and_a_small_design_short() -> None:
    from benchmarks.bench_sequential import diagnose

    def run(margin: float) -> dict:
        return diagnose(
            np.random.default_rng(11), reps=40, personas=40, seeds=3, margin=margin,
            diff=-2 * margin, wave=20, alpha=0.05, horizon=0.25,
        )  # fmt: skip

    small, wide = run(5.0), run(15.0)
    overall = small["rows"]["Overall"]
    # Valid at every look costs width over an interval valid at one (here about 2×),
    # and with every unit in only the persona part is left (near z·s).
    assert overall["radius_over_fixed"]["N/2"] > 1.3
    assert overall["radius_over_fixed"]["N"] < overall["radius_over_fixed"]["N/2"]
    assert 0 <= small["oracle_fixed_power"]["N/2"] <= small["oracle_fixed_power"]["N"] <= 1
    assert small["oracle_fixed_power"]["N/2"] < 0.9 < wide["oracle_fixed_power"]["N/2"]
    assert small["wald_bound"]["0.9"] > wide["wald_bound"]["0.9"]


@pytest.mark.parametrize("spending", ["hsd:-4", "obf", "pocock", "hsd:1"])
def test_the_spending_table_reads_the_integrated_bounds(spending: str) -> None:
    # A planner's table of the spending boundary (vera plan) against the recursion the
    # gate integrates at each look, at ratios across its range, either side of the
    # clock's switch at r = N − 1, and outside the range (integrated, so exact).
    looks, population = np.arange(20, 301, 20), 300
    table = SpendingTable(looks, population, spending)
    rng = np.random.default_rng(3)
    ratio = np.concatenate(
        [np.exp(rng.uniform(np.log(0.02 * population), np.log(1e6), 60)), [299.0, 1e-3, 1e6]]
    )
    for alpha in (0.05, 0.005):
        for j in range(looks.size):
            got = table.bound(ratio, j, alpha)
            exact = table.exact(ratio, j + 1, alpha)[:, -1]
            assert (np.isfinite(got) == np.isfinite(exact)).all()
            finite = np.isfinite(exact)
            assert np.abs(got[finite] - exact[finite]).max(initial=0.0) < SpendingTable.TOLERANCE


def test_the_spending_difference_from_the_table_is_the_integrated_one() -> None:
    rng = np.random.default_rng(4)
    personas, seeds = 40, 5
    base, cand = _paired_units(rng, 3, personas * seeds, worse=0.1)
    base, cand = base[:, None], cand[:, None]
    looks = np.arange(20, personas * seeds + 1, 20)
    persona = np.broadcast_to(np.repeat(np.arange(personas), seeds), base.shape[:-1])
    per = np.full(personas, float(seeds))

    def interval(spending: str, table: SpendingTable | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return spending_difference(
            cand, base, base.sum(axis=-2), 0.05, 0.025, looks,
            persona=persona, units_per_persona=per, spending=spending, table=table,
        )  # fmt: skip

    est, lo, hi = interval("obf", None)
    table = SpendingTable(looks, personas * seeds, "obf")
    t_est, t_lo, t_hi = interval("obf", table)
    assert np.array_equal(est, t_est)
    finite = np.isfinite(lo)
    assert (np.isfinite(t_lo) == finite).all() and np.isfinite(hi).sum() == np.isfinite(t_hi).sum()
    # A critical value within the tolerance moves an end by at most that many variances' roots.
    width = np.abs(est - lo)[finite].max()
    assert np.allclose(t_lo[finite], lo[finite], rtol=0, atol=1e-6 + SpendingTable.TOLERANCE * width)
    with pytest.raises(ValueError, match="spending table"):
        interval("pocock", table)


def test_a_share_far_outside_the_window_has_an_interval_that_excludes_the_window() -> None:
    # Baseline all Best Practice, candidate none: the candidate's share (0) lies 1.0 below
    # the baseline's, far beyond the ± WINDOW the fine grid spans. Every fine share is
    # rejected; the interval must then say where the share is (below), not vanish as
    # "no interval" while evidence piles up, and stay that way at every later look.
    n = 100
    base = np.ones((n, 2))
    cand = np.column_stack([np.zeros(n), np.ones(n)])
    lo, hi = share_sequence(cand, base, base.sum(axis=0), n, 0.025, 201)
    settled = np.flatnonzero(hi < 0.7)
    assert settled.size and settled[0] < n // 2
    later = slice(settled[0], None)
    assert not np.isnan(lo[later]).any() and (hi[later] < 0.7).all() and (lo[later] <= 0.0).all()
    # Within the window the fine grid decides, as before: the ends are fine shares, and
    # they hold the truth (0.9) at every look.
    near = np.random.default_rng(5).permutation(np.r_[np.zeros(10), np.ones(n - 10)])
    lo2, hi2 = share_sequence(np.column_stack([near, np.ones(n)]), base, base.sum(axis=0), n, 0.025, 201)
    assert (lo2 <= 0.9 + 1e-12).all() and (hi2 >= 0.9 - 1e-12).all() and (lo2[40:] >= 0.7).all()
    assert np.allclose(((lo2[40:-1] - 0.7) / 0.0015 + 0.5) % 1.0, 0.5, atol=1e-6)  # [0.7, 1] in 200 steps


def test_a_row_the_candidate_never_rated_has_no_interval_and_is_not_not_worse() -> None:
    # The baseline rated this dimension in every unit; the candidate in none (Not
    # Relevant throughout, as when it never detects the risk it would confirm). Its score
    # is undefined: no difference, no interval, and never NOT WORSE, at any margin.
    # The baseline rated it in most units (not those of personas without risk), so the
    # units drawn first hold more or fewer of its ratings than the average.
    n = 40
    base = np.tile([1.0, 0.0, 1.0], (n, 1))[:, None, :]
    base[::4] = 0.0
    cand = np.zeros((n, 1, 3))
    order = np.random.default_rng(7).permutation(n)
    looks = gate_sequence(
        base, cand, order, persona=np.arange(n), labels=["Confirms Risk"], max_ratings=[1.0],
        looks=[20, 30], margin=50.0, alpha=0.05,
    )  # fmt: skip
    for look in looks:
        row = look.rows[0]
        assert (row.diff, row.lo, row.hi, row.status) == (None, None, None, UNDECIDED)
        assert look.verdict == UNDECIDED


def test_a_look_where_the_candidates_estimated_ratings_reach_zero_warns_nothing() -> None:
    # `vera plan --pilot A --pilot-candidate B` printed numpy's "invalid value encountered
    # in subtract" on a user's terminal: in a simulated gate, the candidate's estimated
    # number of rated units came to exactly 0 at one look (its first units rated less
    # than the baseline's), its coefficients were infinite, and inf - inf was taken
    # outside the errstate meant to absorb such looks (their interval is infinite).
    import warnings

    from vera.stats.sequential import influence_sequence

    n = 40
    base = np.zeros((n, 3))
    base[[0, 1, 2, *range(5, 18)], 2] = 1.0  # 16 rated units
    base[[0, 5], 1] = 1.0  # two of them High Potential for Harm
    cand = base.copy()
    cand[1:5] = 0.0  # units 2-5 unrated: after 5 looks the estimate is 16 - 2/5 * 40 = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est, sd = influence_sequence(cand, base, base.sum(axis=0), n)
    assert np.isinf(sd[4])  # that look has nothing to go on
    # Every unit in: the full run's difference (14 rated, 2 harmful, against 16 and 2).
    assert np.isfinite(sd[-1])
    assert est[-1] == pytest.approx(50 * (12 / 14) ** 2 - 50 * (14 / 16) ** 2)
