"""Planning a comparison before spending on it (`vera plan`).

Two designs answer "is the candidate worse than the baseline by more than the margin?":

- **fixed**: run the candidate on P personas × U user-agents × S seeds and compare once
  (`vera compare --gate`). Its interval of candidate − baseline (Overall) has a
  standard error that a pilot run predicts;
- **sequential**: `vera gate`, which stops as soon as the answer is settled; its size is
  random, so it is predicted by simulation from the pilot's own units.

The unit of variability is a unit's *influence* on the Overall score (the delta method
at the run's shares: ∂S/∂BP·(bp − BP·rated) + ∂S/∂HPH·(hph − HPH·rated), over the mean
rated per unit), in score points, so the score's standard error over N independent
units is the influences' standard deviation over √N. Two runs on the same personas share
each persona's difficulty (a persona hard for one chatbot is hard for the other), so in
the difference the between-persona part cancels and the within-persona part counts
twice: se = σ_within · √(2 / N). Conversations of the two chatbots with the same simulated
user and seed are alike too (the gate and `vera compare --gate` pair them), which
narrows the interval: with ρ the correlation of the two chatbots' influences on the same
unit, se = σ_within · √(2 (1 − ρ) / N). A pilot that holds both sides on the same units
shows ρ through its paired differences (`pairing`); a pilot of one chatbot cannot, and
then ρ = 0 is assumed, so the sizes err on the large side.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import msgspec
import numpy as np

from vera.stats.bootstrap import RARE_EVENTS, score_from_percentages
from vera.stats.groupseq import DEFAULT_SPENDING
from vera.stats.sequential import (
    ASYMPTOTIC,
    BP,
    HPH,
    MIN_UNITS,
    RATED,
    SPENDING,
    Method,
    SpendingTable,
    _influence,
    _score,
    difference_sequence,
    edge_interval,
    fixed_gate_levels,
    upper_levels,
)

# Without a pilot: the within-persona spread of a unit's influence on Overall, in score
# points. One judge rating five dimensions per conversation; the simulation behind
# docs/statistics.md (benchmarks/seqsim.py) shows about 21, real runs with fewer
# relevant dimensions more. 30 errs on the large side.
DEFAULT_WITHIN_SD = 30.0


class Variability(msgspec.Struct, frozen=True, kw_only=True):
    """How much a unit's influence on the Overall score varies, in score points."""

    within_sd: float  # within a persona (what does not cancel between two chatbots)
    between_sd: float  # of persona means, about the run's
    units: int  # the pilot's units (0: the default, no pilot)
    personas: int
    units_per_persona: float
    # The correlation of the two chatbots' influences on one unit that the sizes take
    # credit for (0: independent beyond the persona), and the paired units it was
    # measured on (0: not measured, assumed).
    pairing: float = 0.0
    paired_units: int = 0


DEFAULT_VARIABILITY = Variability(
    within_sd=DEFAULT_WITHIN_SD, between_sd=0.0, units=0, personas=0, units_per_persona=0.0
)


def unit_influences(counts: np.ndarray) -> np.ndarray:
    """Each unit's influence on the Overall score: `counts` (N, 3) are BP, HPH and
    rated per unit (any common scale); returns (N,) score points."""
    c = np.asarray(counts, dtype=np.float64)
    total = c.sum(axis=0)
    rated = total[RATED] / c.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        bp, hph = total[BP] / total[RATED], total[HPH] / total[RATED]
    return _influence(c, np.asarray(bp), np.asarray(hph), np.asarray(rated))


def variability(counts: np.ndarray, persona: np.ndarray) -> Variability:
    """The pilot's variability: `counts` (N, 3) per unit (Overall), `persona` (N,) its
    persona index. With one unit per persona the within part cannot be told from the
    between part, and all of it is taken as within (the larger guess)."""
    u = unit_influences(counts)
    who = np.asarray(persona, dtype=np.int64)
    n_per = np.bincount(who).astype(np.float64)
    seen = n_per > 0
    sums = np.bincount(who, weights=u)
    squares = np.bincount(who, weights=u * u)
    within_ss = float(np.where(n_per >= 2, squares - sums**2 / np.maximum(n_per, 1.0), 0.0).sum())
    within_df = float(np.where(n_per >= 2, n_per - 1.0, 0.0).sum())
    means = sums[seen] / n_per[seen]
    if within_df > 0:
        within = math.sqrt(within_ss / within_df)
        between = float(np.std(means, ddof=1)) if means.size > 1 else 0.0
    else:
        within = float(np.std(u, ddof=1)) if u.size > 1 else DEFAULT_WITHIN_SD
        between = 0.0
    return Variability(
        within_sd=within,
        between_sd=between,
        units=int(u.size),
        personas=int(seen.sum()),
        units_per_persona=float(u.size / max(int(seen.sum()), 1)),
    )


# The most pairing credit taken: a small pilot whose two sides agreed on nearly every
# unit would otherwise promise an interval of almost no width from a handful of units.
MAX_PAIRING = 0.9


def paired_factor(pairing: float) -> float:
    """2 (1 − ρ): the variance of a unit's paired difference over σ_within²."""
    return 2.0 * (1.0 - min(pairing, MAX_PAIRING))


def fixed_se(within_sd: float, units: int, pairing: float = 0.0) -> float:
    """The standard error of a fixed comparison's Overall difference on `units` units
    (`pairing`: the correlation of the two sides' influences on the same unit)."""
    return within_sd * math.sqrt(paired_factor(pairing) / units)


def units_for_width(within_sd: float, width: float, level: float = 0.95, pairing: float = 0.0) -> int:
    """Units a fixed comparison needs for its `level` interval to be `width` points wide."""
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    return max(2, math.ceil(paired_factor(pairing) * (2.0 * z * within_sd / width) ** 2))


def units_for_power(
    within_sd: float, margin: float, power: float, level: float = 0.95, pairing: float = 0.0
) -> int:
    """Units a fixed comparison needs to call a candidate truly as good as its baseline
    NOT WORSE (its `level` interval above −margin) with probability `power`."""
    normal = NormalDist()
    z = normal.inv_cdf(0.5 + level / 2.0) + normal.inv_cdf(power)
    return max(2, math.ceil(paired_factor(pairing) * (z * within_sd / margin) ** 2))


def power_of(within_sd: float, margin: float, units: int, level: float = 0.95, pairing: float = 0.0) -> float:
    """The chance a fixed comparison of `units` units calls an equal candidate NOT WORSE."""
    normal = NormalDist()
    se = fixed_se(within_sd, units, pairing)
    if se <= 0:
        return 1.0
    return normal.cdf(margin / se - normal.inv_cdf(0.5 + level / 2.0))


def pairing_of(baseline: np.ndarray, candidate: np.ndarray, within_sd: float) -> float:
    """The pairing correlation a pilot of both sides shows: `baseline` and `candidate`
    (N, 3) are BP, HPH and rated per unit (Overall) of two chatbots on the same N units.
    Each side's influences are taken at its own shares, and ρ is read off the variance of
    their paired differences, var(d) = 2 σ_within² (1 − ρ), so that the planner's standard
    error is var(d)'s own. The total variance of d is used, persona means included: a
    persona the two chatbots differ on adds to it (two different chatbots need not share
    a persona's difficulty), so this errs large. Negative when the candidate varies more
    than the baseline or the two go opposite ways."""
    d = unit_influences(candidate) - unit_influences(baseline)
    if d.size < 2 or not within_sd > 0:
        return 0.0
    return 1.0 - float(np.var(d, ddof=1)) / (2.0 * within_sd**2)


class GateSize(msgspec.Struct, frozen=True, kw_only=True):
    """The simulated sequential gate for one true difference (Overall, points)."""

    difference: float
    reached: float  # the difference the pilot's score allows (= difference unless near 0 or 100)
    mean_units: float
    p90_units: float
    worse: float  # share of repetitions that ended WORSE
    not_worse: float
    undecided: float


def shift_for(totals: np.ndarray, difference: float) -> float:
    """The share of Best Practice ratings moved to High Potential for Harm (negative:
    of harm ratings moved to Best Practice) that changes the Overall score of `totals`
    (BP, HPH, rated) by `difference` points (bisection)."""
    if difference == 0:
        return 0.0
    lo, hi = (0.0, 1.0) if difference < 0 else (-1.0, 0.0)
    for _ in range(60):
        mid = (lo + hi) / 2
        if score_change(totals, mid) > difference:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def score_change(totals: np.ndarray, s: float) -> float:
    """How far moving share `s` of the ratings (as `shift_for`) moves the Overall score of
    `totals` (BP, HPH, rated): a pilot near 0 or 100 cannot move by every difference."""
    bp, hph = totals[BP], totals[HPH]
    d = s * bp if s >= 0 else s * hph
    base = float(_score(bp, hph, totals[RATED]))
    return float(_score(bp - d, hph + d, totals[RATED])) - base


def _shifted(rng: np.random.Generator, counts: np.ndarray, s: float) -> np.ndarray:
    """`counts` (..., rows, 3) with share `s` of every dimension's Best Practice ratings
    moved to harm (negative: the other way); the last row (Overall) is their sum."""
    out = counts.copy()
    dims = out[..., :-1, :]
    if s > 0:
        moved = rng.binomial(dims[..., BP].astype(np.int64), s)
        dims[..., BP] -= moved
        dims[..., HPH] += moved
    elif s < 0:
        moved = rng.binomial(dims[..., HPH].astype(np.int64), -s)
        dims[..., HPH] -= moved
        dims[..., BP] += moved
    out[..., -1, :] = dims.sum(axis=-2)
    return out


def _moved(counts: np.ndarray, s: float) -> np.ndarray:
    """`_shifted`'s expectation: share `s` of the Best Practice ratings moved to harm
    (negative: of the harm ratings to Best Practice), fractionally, not drawn."""
    out = counts.copy()
    dims = out[..., :-1, :]
    moved = s * dims[..., BP] if s >= 0 else s * dims[..., HPH]
    dims[..., BP] -= moved
    dims[..., HPH] += moved
    out[..., -1, :] = dims.sum(axis=-2)
    return out


def _stretched(counts: np.ndarray, mean: np.ndarray, stretch: np.ndarray) -> np.ndarray:
    """`counts` (N, rows, 3) moved away from their pool's `mean` by `stretch` (N,)."""
    return np.asarray(mean + (counts - mean) * stretch[:, None, None])


def gate_coupling(pairing: float, pool_sizes: list[int]) -> float:
    """The share of simulated candidate units copied from the baseline's that gives the
    paired differences the variance the pilot measured, 2 σ² (1 − `pairing`).

    Drawing a persona's units from its k pilot units (with replacement) gives them the
    pool's spread around its own mean, (k − 1)/k of σ² on average (2/3 with 3 seeds),
    while the pool's mean, shared by both sides, carries the other σ²/k: two independent
    draws already differ less than two new conversations would, as if paired by 1/k.
    Copying a share c of the units makes the paired variance 2 σ² f (1 − c),
    f = Σ(k − 1)/Σk, so c = 1 − (1 − ρ)/f, clipped to [0, MAX_PAIRING]; each side's
    variance and their covariance are then the pilot's too. Where ρ < 1 − f (no pairing
    credit among them) no unit is copied and the draws are stretched instead
    (`restored_spread`)."""
    total = sum(pool_sizes)
    kept = (total - len(pool_sizes)) / total if total else 0.0
    if pairing <= 0 or kept <= 0:
        return 0.0
    return min(max(1.0 - (1.0 - min(pairing, MAX_PAIRING)) / kept, 0.0), MAX_PAIRING)


def restored_spread(
    counts: np.ndarray, pools: list[np.ndarray], pairing: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per pilot unit, its persona pool's mean counts and the factor its deviation from
    that mean is stretched by: √((1 − ρ) k / (k − 1)) where that exceeds 1, k the pool's
    units, else 1 (and 1 for a pool of one).

    Where copying cannot bring the paired variance down to 2 σ² (1 − ρ) because two
    independent draws from a pool already differ by only 2 σ² (k − 1)/k (`gate_coupling`:
    ρ below 1/k, e.g. no pairing credit), the gate would be simulated too small.
    Stretching each draw's deviation from its pool mean makes two independent draws
    differ by 2 σ² (1 − ρ), the measured (or, without credit, independent) paired
    variance. Each side then varies by σ²/k more than the pilot (its pool mean's share,
    counted again) and the two sides correlate more than they should, which leaves the
    simulated gate larger, not smaller. The counts become fractional, which the
    asymptotic sequence takes as any linear contribution."""
    mean = np.empty_like(counts)
    stretch = np.ones(counts.shape[0])
    for pool in pools:
        mean[pool] = counts[pool].mean(axis=0)
        if pool.size > 1:
            stretch[pool] = math.sqrt(max((1.0 - max(pairing, 0.0)) * pool.size / (pool.size - 1), 1.0))
    return mean, stretch


def spread_pilot(
    counts: np.ndarray, persona: np.ndarray, within_sd: float, seed: int, copies: int = 8
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """A stand-in, for the gate's simulation, for a pilot whose units all scored alike:
    `copies` units per pilot unit, in its persona; each, with probability q, has every
    rating replaced by one rating drawn for the unit (Best Practice, Suboptimal or High
    Potential for Harm alike: a conversation that goes another way goes so on every
    dimension), q the smallest that gives the units a within-persona spread of
    `within_sd` (Overall, points) by `variability`. The fixed design's sizes assume that
    spread; a gate simulated with none would settle at its first look.

    Whole ratings keep every count a count, so the scores stay in 0–100 and the gate's
    interval is bounded as a real one is (a spread added to a pilot at 100 without
    moving it would be cut at 100, and promise a smaller gate); the stand-in scores
    lower than the pilot. Returns its counts (N·copies, rows, 3), their persona, q, and
    the spread reached (short of `within_sd` only if even q = 1 cannot reach it)."""
    c = np.asarray(counts, dtype=np.float64)
    units = np.repeat(c, copies, axis=0)
    who = np.repeat(np.asarray(persona, dtype=np.int64), copies)
    rng = np.random.default_rng(seed)
    # The same draws for every q (common random numbers): the spread rises with q.
    chance = rng.random(units.shape[0])
    kind = np.asarray(rng.integers(0, 3, size=units.shape[0]))  # 0 BP, 1 Suboptimal, 2 HPH
    rated = units[:, :-1, RATED]

    def made(q: float) -> np.ndarray:
        out = units.copy()
        moved = chance < q
        out[moved, :-1, BP] = rated[moved] * (kind[moved, None] == 0)
        out[moved, :-1, HPH] = rated[moved] * (kind[moved, None] == 2)
        out[:, -1] = out[:, :-1].sum(axis=1)
        return out

    def spread(q: float) -> float:
        return variability(made(q)[:, -1], who).within_sd

    lo, hi = 0.0, 1.0
    if spread(hi) >= within_sd:
        for _ in range(30):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if spread(mid) >= within_sd else (mid, hi)
    return made(hi), who, hi, spread(hi)


def _edge_side(c: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of one side's totals (rows, 3) in conversations: its score, the score at
    the exact bounds of HPH % (low, high) at one-sided (1 − `level`)/2, and whether the
    edge rule applies to it (`RARE_EVENTS`)."""
    from scipy.stats import beta as beta_dist  # as vera.stats.bootstrap: not at import

    tail = (1.0 - level) / 2.0
    n = np.maximum(c[:, RATED], 1e-12)
    x = np.clip(c[:, HPH], 0.0, n)
    # Clipped: a simulated unit stretched from its pool's mean can have counts a
    # little outside a share's range.
    h = 100.0 * x / n
    bp = np.clip(100.0 * c[:, BP] / n, 0.0, 100.0 - h)
    with np.errstate(invalid="ignore"):
        h_hi = 100.0 * np.where(x < n, beta_dist.ppf(1.0 - tail, x + 1.0, np.maximum(n - x, 1e-12)), 1.0)
        h_lo = 100.0 * np.where(x > 0, beta_dist.ppf(tail, np.maximum(x, 1e-12), n - x + 1.0), 0.0)
    score = score_from_percentages(bp, h)
    # HPH at a bound, BP keeping its share of the rest (`widen_score_interval`).
    rest = np.where(h < 100.0, 1.0 / np.maximum(100.0 - h, 1e-12), 0.0)
    low = np.minimum(score, score_from_percentages(bp * (100.0 - h_hi) * rest, h_hi))
    high = np.maximum(score, score_from_percentages(bp * (100.0 - h_lo) * rest, h_lo))
    edge = n * np.minimum(np.minimum(bp, 100.0 - bp), np.minimum(h, 100.0 - h)) / 100.0 < RARE_EVENTS
    return np.asarray(score), np.asarray(low), np.asarray(high), np.asarray(edge)


def edge_low(candidate: np.ndarray, baseline: np.ndarray, level: float) -> np.ndarray:
    """The low end of candidate − baseline that `vera compare --gate`'s edge rule puts
    at most there, per row: `candidate`, `baseline` (rows, 3) are a run's BP, HPH and
    rated totals in conversations. Where either side's BP % or HPH % rests on fewer
    than `RARE_EVENTS` expected ratings of its kind or of the rest, the gate's interval
    is at least MOVER's combination of the two sides' own intervals, which contain the
    score at each exact bound of HPH % (docs/statistics.md, "At the edges"); elsewhere
    it does not apply (+inf: no bound). Taken with no pairing credit (r = 0: a side that never
    moves in the resamples gives none) and the exact bounds at n = the conversations
    rated (the design effect of 1 a side with no spread has), at the one-sided
    (1 − `level`)/2 the gate checks a lower end at."""
    b, b_low, _, b_edge = _edge_side(candidate, level)
    a, _, a_high, a_edge = _edge_side(baseline, level)
    mover = (b - a) - np.sqrt((b - b_low) ** 2 + (a_high - a) ** 2)
    return np.where((b_edge | a_edge) & np.isfinite(mover), mover, np.inf)


def edge_width(totals: np.ndarray, level: float) -> float:
    """The narrowest interval `vera compare --gate` gives Overall's difference of two
    runs with these expected totals (BP, HPH, rated in conversations) where its edge
    rule applies, both sides alike (an equal candidate): MOVER's two halves, r = 0;
    0 where the rule does not apply."""
    score, low, high, edge = _edge_side(np.asarray(totals, dtype=np.float64)[None, :], level)
    if not edge[0]:
        return 0.0
    return float(2.0 * np.hypot(score[0] - low[0], high[0] - score[0]))


def fixed_power_simulated(
    counts: np.ndarray,
    persona: np.ndarray,
    *,
    labels: list[str],
    max_ratings: np.ndarray,
    personas: int,
    units_per_persona: int,
    margin: float,
    level: float,
    reps: int,
    seed: int,
    pairing: float = 0.0,
) -> float:
    """The chance a fixed comparison of `personas` × `units_per_persona` units calls an
    equal candidate NOT WORSE, as `vera compare --gate` decides it: every row (each
    dimension and Overall) must have its lower end above −margin, each at one-sided
    (1 − `level`)/2.

    `power_of` answers for Overall alone from its spread. A dimension rests on a fifth of
    the ratings, and near 100 one harmful rating moves it several points, so at the top
    of the scale a dimension, not Overall, decides (docs/statistics.md, "Fixed design").
    So the fixed test is simulated from the pilot's units as the gate is (`gate_sizes`,
    the same draws and pairing), with one look at every unit: the spending boundary's
    interval there is est ∓ z·s, s the persona part, the delta-method reading of the
    fixed gate's paired bootstrap."""
    n = personas * units_per_persona
    (size,) = gate_sizes(
        counts, persona, labels=labels, max_ratings=max_ratings, personas=personas,
        units_per_persona=units_per_persona, differences=[0.0], margin=margin,
        alpha=(1.0 - level) / 2.0, wave=n, reps=reps, seed=seed, pairing=pairing, method=SPENDING,
        edge_level=level,
    )  # fmt: skip
    return size.not_worse


def gate_sizes(
    counts: np.ndarray,
    persona: np.ndarray,
    *,
    labels: list[str],
    max_ratings: np.ndarray,
    personas: int,
    units_per_persona: int,
    differences: list[float],
    margin: float,
    alpha: float,
    wave: int,
    reps: int,
    seed: int,
    pairing: float = 0.0,
    method: Method = ASYMPTOTIC,
    spending: str = DEFAULT_SPENDING,
    edge_level: float | None = None,
    edge_rule: bool = True,
) -> list[GateSize]:
    """The sequential gate's size by simulation from a pilot's units.

    `counts` (N, rows, 3): the pilot's BP, HPH, rated per unit and row (dimensions, then
    Overall), `persona` (N,) each unit's persona. Each repetition makes a baseline run of
    `personas` × `units_per_persona` units, persona by persona: a pilot persona drawn at
    random, its units drawn from that persona's pilot units; the candidate's units are
    drawn the same way from the same persona (so the two share the persona's difficulty
    but not their conversations), except that with probability `gate_coupling(pairing)`
    a candidate unit is the baseline's own (paired conversations are alike), then shifted
    to the true `difference`. Where copying cannot match the measured pairing (it is
    weaker than 1/k, or not credited), each drawn unit's deviation from its pool's
    mean is stretched instead (`restored_spread`). A pilot with one unit per persona is
    one pool (its whole spread is taken as within, as `variability` does). The gate then
    runs on them as `vera gate` would (waves of `wave`, seeded random order), with its
    boundary: the asymptotic confidence sequence, or with `method="spending"` the
    group-sequential boundary of the `spending` function (`spending_difference`, given
    every look, as the gate gives it). With `edge_level` the last look's low ends are
    also held to `vera compare --gate`'s edge rule at that level (`edge_low`): the fixed
    test, for `fixed_power_simulated`. Without it, and with `edge_rule` (the default),
    every look is held to that rule at compare's levels for the gate's α, as `vera gate`
    holds it (`gate_sequence`, `edge_interval`), so the predicted units and verdicts are
    the gate's near 0 or 100 too.
    """
    rng = np.random.default_rng(seed)
    c = np.asarray(counts, dtype=np.float64)
    who = np.asarray(persona, dtype=np.int64)
    pools = [np.flatnonzero(who == p) for p in np.unique(who)]
    if all(pool.size == 1 for pool in pools):
        pools = [np.arange(c.shape[0])]
    pool_mean, stretch = restored_spread(c, pools, pairing)
    coupling = gate_coupling(pairing, [len(p) for p in pools])
    n = personas * units_per_persona
    looks = np.arange(wave, n + 1, wave)
    if looks.size == 0 or looks[-1] != n:
        looks = np.append(looks, n)
    rows = [i for i in range(c.shape[1]) if c[:, i, RATED].sum() > 0]
    scale = np.asarray(max_ratings, dtype=np.float64)[rows][:, None]
    highs = np.array(upper_levels([labels[i] == labels[-1] for i in rows], alpha))
    edge_low_level, edge_highs = fixed_gate_levels([labels[i] == labels[-1] for i in rows], alpha)
    sequential_edge = edge_rule and edge_level is None
    # The spending boundary's critical values depend on a gate's data through one ratio
    # only: tabulated once for the design's looks, they are read by every simulated gate
    # instead of integrated at each of its looks (`SpendingTable`).
    table = SpendingTable(looks[looks >= MIN_UNITS], n, spending) if method == SPENDING else None
    persona_of = np.repeat(np.arange(personas), units_per_persona)
    units_per = np.full(personas, float(units_per_persona))
    out = []
    for difference in differences:
        s = shift_for(c[:, -1].sum(axis=0), difference)
        reached = score_change(c[:, -1].sum(axis=0), s)
        moved_mean = _moved(pool_mean, s)
        used, verdicts = np.empty(reps), np.empty(reps)
        for r in range(reps):
            chosen = rng.integers(0, len(pools), personas)
            base_idx = np.concatenate([rng.choice(pools[p], units_per_persona) for p in chosen])
            cand_idx = np.concatenate([rng.choice(pools[p], units_per_persona) for p in chosen])
            if coupling > 0:
                cand_idx = np.where(rng.random(n) < coupling, base_idx, cand_idx)
            base = _stretched(c[base_idx], pool_mean[base_idx], stretch[base_idx])[:, rows]
            cand = _stretched(_shifted(rng, c[cand_idx], s), moved_mean[cand_idx], stretch[cand_idx])[:, rows]
            order = rng.permutation(n)
            b = (base[order] / scale).transpose(1, 0, 2)  # (rows, n, 3)
            k = (cand[order] / scale).transpose(1, 0, 2)
            total = (base / scale).sum(axis=0)
            # The spending boundary's persona parts cost a pass per look, and a look's
            # bounds need only the looks before it: compute the first 4, 8, 16 … looks until
            # one settles (the same bounds as all at once, far fewer where it stops early).
            # The sequence's radius is cheap and computed at every look in one go.
            upto = min(4, looks.size) if method == SPENDING else looks.size
            while True:
                lo = np.empty((len(rows), upto))
                hi = np.empty_like(lo)
                for level in np.unique(highs):
                    sel = highs == level
                    _, lo[sel], hi[sel] = difference_sequence(
                        k[sel], b[sel], total[sel], alpha, float(level), looks[:upto],
                        persona=np.broadcast_to(persona_of[order], k[sel].shape[:-1]),
                        units_per_persona=units_per, method=method, spending=spending, table=table,
                    )  # fmt: skip
                if sequential_edge:
                    e_lo, e_hi = edge_interval(
                        k,
                        b,
                        persona_of[order],
                        scale[:, 0],
                        looks[:upto],
                        edge_low_level,
                        np.asarray(edge_highs),
                    )
                    lo, hi = np.minimum(lo, e_lo), np.maximum(hi, e_hi)
                if edge_level is not None and upto == looks.size:
                    # Over the most ratings a unit can give (`scale`), the counts are in
                    # units, as the exact bounds count conversations (one a unit offline).
                    edge = edge_low(k.sum(axis=1), total, edge_level)
                    lo[:, -1] = np.minimum(lo[:, -1], edge)
                worse = np.asarray((hi < -margin).any(axis=0))
                fine = np.asarray((lo > -margin).all(axis=0))
                settled = worse | fine
                if settled.any() or upto == looks.size:
                    break
                upto = min(2 * upto, looks.size)
            at = int(np.argmax(settled)) if settled.any() else upto - 1
            used[r] = looks[at]
            verdicts[r] = -1 if worse[at] else (1 if fine[at] else 0)
        out.append(
            GateSize(
                difference=difference,
                reached=round(reached, 1),
                mean_units=float(used.mean()),
                p90_units=float(np.quantile(used, 0.9)),
                worse=float((verdicts == -1).mean()),
                not_worse=float((verdicts == 1).mean()),
                undecided=float((verdicts == 0).mean()),
            )
        )
    return out
