"""Group-sequential (α-spending) boundaries for the release gate (`vera gate --boundary spending`).

A confidence sequence (`vera.stats.sequential`) covers at *every* possible look, which
is more than a gate needs: its looks are the ends of its waves, and its maximum size is
the baseline's unit count, both known before the first wave. A group-sequential design
spends α only at the looks that happen, and is narrower for it.

The model (the canonical joint distribution of Jennison & Turnbull 2000, "Group
Sequential Methods with Applications to Clinical Trials", ch. 3). After t of the N units,
drawn in a random order without replacement, the gate's estimate of candidate − baseline
is θ̂(t) = θ + e_P + e(t): e_P the persona part (the full run's own error about the
persona population, variance s²) and e(t) the without-replacement error about the full
run (variance σ²(1/t − 1/N)·N/(N − 1), zero with every unit in). Given the population,
e(t) has mean 0, so the two are uncorrelated, and for nested samples cov(e(t), e(u)) =
var(e(u)) when t < u. Hence cov(θ̂(t), θ̂(u)) = var(θ̂(u)): the estimates at the looks
are a Brownian motion observed at the *information* levels I = 1/var, whose largest
value, with every unit in, is the finite 1/s². Under the normal approximation the
one-sided boundaries at those levels are computed by recursive numerical integration
(Armitage, McPherson & Rowe 1969; Jennison & Turnbull ch. 19), spending α by the
information fraction τ = I/I_max (Lan & DeMets 1983). Spending by information, not by
look number, is what keeps α when the looks are not the planned ones (a budget stop, a
conversation cap, a wave of failures): each look spends α(τ) − α(τ_previous) whatever
the looks before it were, and a gate that stops early has simply spent less than α.

σ and s are estimated as the units come in (a large-sample reading, as the asymptotic
sequence's); at each look the information of every look so far is computed with the
current estimates, so the boundaries depend only on the data up to that look and a
resumed gate recomputes the same ones.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

# scipy.special is imported inside the functions that use it, not here: every `vera`
# command imports this module when it starts (through vera.stats), and scipy there
# would cost each one, `vera --help` included, most of a second.

Family = Literal["obf", "pocock", "hsd"]
# The default family: Hwang, Shih & DeCani (1990) with γ = −4, close to O'Brien–Fleming
# at the last look (so a gate that runs to the end loses little against the fixed test)
# and spending a little more early than the Lan–DeMets O'Brien–Fleming function.
DEFAULT_SPENDING = "hsd:-4"
# Grid points per look of the recursive integration (odd: Simpson's rule). 61 gives
# boundaries within 0.0001 of 401's at five looks (tests/stats/test_groupseq.py).
GRID = 61
# The continuation region is cut off this many standard deviations below 0 (the mass
# below is under 1e-15).
FLOOR = 8.0
# The largest critical value solved for: a look that spends nothing has an infinite one.
CEILING = 9.0
# Most Newton steps per look (it stops when no root moves by 1e-9; a step that would
# leave the bracket is a bisection instead).
NEWTON = 60


def parse_spending(spec: str) -> tuple[Family, float]:
    """`obf`, `pocock` or `hsd:GAMMA` → (family, γ); ValueError on anything else."""
    name, _, param = spec.strip().lower().partition(":")
    if name in ("obf", "pocock") and not param:
        return name, 0.0  # type: ignore[return-value]
    if name == "hsd":
        try:
            gamma = float(param) if param else -4.0
        except ValueError:
            raise ValueError(f"hsd:GAMMA needs a number, not {param!r}") from None
        if not math.isfinite(gamma):
            raise ValueError(f"hsd:GAMMA needs a finite number, not {param!r}")
        return "hsd", gamma
    raise ValueError(f"unknown spending function {spec!r} (obf, pocock or hsd:GAMMA)")


def spent(tau: np.ndarray | float, alpha: float, spec: str = DEFAULT_SPENDING) -> np.ndarray:
    """The α spent by information fraction τ ∈ [0, 1] (cumulative, α at τ = 1).

    - `obf`: Lan–DeMets O'Brien–Fleming-like, 2 − 2Φ(z(1 − α/2)/√τ);
    - `pocock`: Lan–DeMets Pocock-like, α·ln(1 + (e − 1)τ);
    - `hsd:γ`: Hwang–Shih–DeCani, α(1 − e^(−γτ))/(1 − e^(−γ)) (γ = 0: ατ; −4 is close
      to O'Brien–Fleming, 1 to Pocock).
    """
    from scipy.special import ndtr, ndtri  # (here: see the note on imports)

    family, gamma = parse_spending(spec)
    t = np.clip(np.asarray(tau, dtype=np.float64), 0.0, 1.0)
    if family == "obf":
        with np.errstate(divide="ignore"):
            out = 2.0 - 2.0 * ndtr(ndtri(1.0 - alpha / 2.0) / np.sqrt(t))
    elif family == "pocock":
        out = alpha * np.log1p((math.e - 1.0) * t)
    elif gamma == 0.0:
        out = alpha * t
    else:
        out = alpha * -np.expm1(-gamma * t) / -math.expm1(-gamma)
    return np.asarray(np.where(t >= 1.0, alpha, np.minimum(out, alpha)))


def _simpson(m: int) -> np.ndarray:
    w = np.ones(m)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w / 3.0


def _phi(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return out


def upper_bounds(info: np.ndarray, cumulative: np.ndarray, grid: int = GRID) -> np.ndarray:
    """One-sided critical values c_k for a standardised statistic Z_k = S_k/√I_k, S a
    Brownian motion observed at the increasing information levels `info` (..., K): the
    chance that Z first reaches c at look k is the increment of `cumulative` (..., K)
    there (α spent so far) under the null. An increment of 0 gives c = inf."""
    from scipy.special import ndtr, ndtri  # (here: see the note on imports)

    info = np.asarray(info, dtype=np.float64)
    cum = np.asarray(cumulative, dtype=np.float64)
    shape = info.shape
    k_max = shape[-1]
    info = info.reshape(-1, k_max)
    cum = np.broadcast_to(cum, shape).reshape(-1, k_max)
    batch = info.shape[0]
    inc = np.diff(np.concatenate([np.zeros((batch, 1)), cum], axis=1), axis=1)
    out = np.full((batch, k_max), np.inf)
    m = grid if grid % 2 else grid + 1
    w = _simpson(m)
    u = np.linspace(0.0, 1.0, m)
    # The first look: Z_1 is standard normal.
    c = np.where(inc[:, 0] > 1e-15, ndtri(1.0 - np.clip(inc[:, 0], 1e-300, 1.0)), np.inf)
    out[:, 0] = c
    top = np.minimum(c, CEILING)
    sd = np.sqrt(info[:, 0])
    # The sub-density of S_1 on the continuation region [−FLOOR·√I, c·√I], with the
    # integration weights (step × Simpson) folded in.
    x = (-FLOOR + (top + FLOOR)[:, None] * u) * sd[:, None]
    h = (top + FLOOR) * sd / (m - 1)
    dens = _phi(x / sd[:, None]) / sd[:, None] * (w * h[:, None])
    for k in range(1, k_max):
        delta = info[:, k] - info[:, k - 1]
        if (delta <= 0).any():
            raise ValueError("information levels must increase from look to look")
        sd_k, sd_d = np.sqrt(info[:, k]), np.sqrt(delta)

        target = inc[:, k]
        # Newton's method from the unconditional quantile, which is at or above the
        # root (crossing first at k is rarer than being above c at k), bracketed: a
        # step that leaves the bracket is a bisection.
        c_k = ndtri(1.0 - np.clip(target, 1e-300, 0.5))
        lo, hi = np.full(batch, -FLOOR), np.minimum(c_k, CEILING)
        for _ in range(NEWTON):
            z = (c_k[:, None] * sd_k[:, None] - x) / sd_d[:, None]
            f = (dens * ndtr(-z)).sum(axis=1) - target
            slope = -(dens * _phi(z)).sum(axis=1) * sd_k / sd_d
            lo, hi = np.where(f > 0, c_k, lo), np.where(f > 0, hi, c_k)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                step = c_k - f / slope
            inside = np.isfinite(step) & (step > lo) & (step < hi)
            moved = np.where(inside, step, 0.5 * (lo + hi))
            done = (np.abs(moved - c_k) < 1e-9).all()
            c_k = moved
            if done:
                break
        c = np.where(target > 1e-15, c_k, np.inf)
        c = np.where(np.isfinite(c) & (c >= CEILING - 1e-9), np.inf, c)
        out[:, k] = c
        top = np.minimum(c, CEILING)
        x_new = (-FLOOR + (top + FLOOR)[:, None] * u) * sd_k[:, None]
        h = (top + FLOOR) * sd_k / (m - 1)
        kern = _phi((x_new[:, :, None] - x[:, None, :]) / sd_d[:, None, None]) / sd_d[:, None, None]
        dens = np.einsum("bij,bj->bi", kern, dens) * (w * h[:, None])
        x = x_new
    return out.reshape(shape)


def crossing_probability(info: np.ndarray, bounds: np.ndarray, grid: int = GRID) -> float:
    """The null chance that Z ever reaches `bounds` (K,) at the `info` (K,) levels (the
    total one-sided error of a given boundary; used to check published tables)."""
    from scipy.special import ndtr  # (here: see the note on imports)

    info = np.asarray(info, dtype=np.float64)
    b = np.asarray(bounds, dtype=np.float64)
    m = grid if grid % 2 else grid + 1
    w, u = _simpson(m), np.linspace(0.0, 1.0, m)
    total = float(ndtr(-b[0]))
    sd = math.sqrt(info[0])
    x = (-FLOOR + (b[0] + FLOOR) * u) * sd
    dens = _phi(x / sd) / sd * w * ((b[0] + FLOOR) * sd / (m - 1))
    for k in range(1, len(b)):
        sd_k, sd_d = math.sqrt(info[k]), math.sqrt(info[k] - info[k - 1])
        total += float((dens * ndtr(-(b[k] * sd_k - x) / sd_d)).sum())
        x_new = (-FLOOR + (b[k] + FLOOR) * u) * sd_k
        kern = _phi((x_new[:, None] - x[None, :]) / sd_d) / sd_d
        dens = kern @ dens * w * ((b[k] + FLOOR) * sd_k / (m - 1))
        x = x_new
    return total


def obrien_fleming(looks: int, alpha: float, grid: int = 401) -> np.ndarray:
    """The classical O'Brien–Fleming boundary for `looks` equally spaced looks at one-sided
    `alpha`: C·√(K/k), C such that the total crossing chance is α (bisection)."""
    k = np.arange(1, looks + 1, dtype=np.float64)
    lo, hi = 0.5, 6.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if crossing_probability(k, mid * np.sqrt(looks / k), grid) > alpha:
            lo = mid
        else:
            hi = mid
    c = 0.5 * (lo + hi)
    out: np.ndarray = c * np.sqrt(looks / k)
    return out


def spending_bounds(
    info: np.ndarray, alpha: float, spec: str = DEFAULT_SPENDING, grid: int = GRID
) -> np.ndarray:
    """Critical values at the information levels `info` (..., K), the last of which
    (or any with τ ≥ 1) is the maximum: α spent by τ = I/I_max (`spent`)."""
    info = np.asarray(info, dtype=np.float64)
    tau = info / info[..., -1:]
    return upper_bounds(info, spent(tau, alpha, spec), grid)
