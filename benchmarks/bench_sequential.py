"""Simulation: is the sequential gate valid under continuous monitoring, and what does
it save?

    .venv/bin/python benchmarks/bench_sequential.py                 # 1,000 repetitions a setting
    .venv/bin/python benchmarks/bench_sequential.py --reps 50 --json out.json
    .venv/bin/python benchmarks/bench_sequential.py --seeds 3 --method spending   # the α-spending boundary

Each repetition draws a baseline and a candidate run on the same units (personas ×
seeds, five dimensions, one judge; `seqsim.py`), shuffles the units (the gate's seeded
order without replacement) and looks after every wave:

- **sequential**: the gate's confidence sequence (`vera.stats.sequential`), or with
  `--method spending` its group-sequential α-spending boundary (`--spending obf`,
  `pocock` or `hsd:GAMMA`; `vera gate --boundary spending`), stopping at the first look
  whose verdict is WORSE or NOT WORSE, UNDECIDED when the units run out;
- **naive**: the same data and stopping rule with a fixed-size interval (normal, delta
  method, finite-population corrected, the same α split over the rows) recomputed after
  every wave, as a team peeking at a fixed-size test would;
- **full run**: the fixed gate on all units (`vera compare --gate`'s method and levels:
  a paired persona-cluster percentile bootstrap, each row's WORSE end at its share of α
  as the sequential gate splits it, every NOT WORSE end at α/2;
  `vera.stats.fixed_gate_levels`), whose verdict is settled when every row's interval
  lies above −margin (NOT WORSE) or one row's lies below (WORSE).

The candidate's true difference (Overall, candidate − baseline; the population's, not
the sample's) is 0, −margin, −2 × margin or +2 × margin. Printed per setting: the rate of
each verdict for both procedures, the mean and 90th-percentile units used, and the
sequential verdict's agreement with a settled full run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from seqsim import LABELS, draw, shift_for, true_scores

from vera.stats.bootstrap import score_from_percentages
from vera.stats.groupseq import DEFAULT_SPENDING
from vera.stats.sequential import (
    BP,
    HORIZON,
    HPH,
    MIN_UNITS,
    RATED,
    difference_sequence,
    fixed_gate_levels,
    influence_sequence,
    one_sided_level,
    persona_spread,
    upper_levels,
)

CHUNK = 5  # repetitions computed at once (memory: chunk × rows × grid × units floats)


def settings(margin: float) -> list[tuple[str, float]]:
    return [
        ("as good (0)", 0.0),
        ("at the margin (−m)", -margin),
        ("worse by 2m", -2 * margin),
        ("better by 2m", 2 * margin),
    ]


def wave_looks(n: int, wave: int) -> np.ndarray:
    """The units judged at each look: every `wave`, and all `n` at the last."""
    looks = np.arange(wave, n + 1, wave)
    return looks if looks[-1] == n else np.append(looks, n)


def gate_levels(alpha: float) -> np.ndarray:
    """The gate's one-sided levels of the rows' upper ends: α split over the rows,
    Overall half (`vera.stats.sequential.upper_levels`)."""
    return np.array(upper_levels([label == "Overall" for label in LABELS], alpha))


def statuses(lo: np.ndarray, hi: np.ndarray, margin: float) -> np.ndarray:
    """Per row: −1 WORSE, +1 NOT WORSE, 0 undecided (NaN: undecided)."""
    out = np.zeros(lo.shape, dtype=np.int8)
    out[hi < -margin] = -1
    out[lo > -margin] = 1
    return out


def verdicts(status: np.ndarray) -> np.ndarray:
    """Over the rows axis (−2): −1 if any row is WORSE, +1 if all are NOT WORSE, else 0."""
    worse = (status == -1).any(axis=-2)
    fine = (status == 1).all(axis=-2)
    return np.where(worse, -1, np.where(fine, 1, 0))


def first_stop(v: np.ndarray, looks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(verdict, units used) stopping at the first settled look; (0, N) when none is."""
    settled = v != 0
    any_settled = settled.any(axis=-1)
    idx = np.argmax(settled, axis=-1)
    verdict = np.where(any_settled, np.take_along_axis(v, idx[:, None], -1)[:, 0], 0)
    units = np.where(any_settled, looks[idx], looks[-1])
    return verdict, units


def naive_interval(
    cand: np.ndarray, base: np.ndarray, total: np.ndarray, population: int, z_low: float, z_high: Any
) -> tuple[np.ndarray, np.ndarray]:
    """A fixed-size normal interval for candidate − baseline after each unit (delta
    method on the score of the control-variate totals, finite-population corrected)."""
    t = np.arange(1, cand.shape[-2] + 1, dtype=np.float64)[:, None]
    diff = cand - base
    mean = np.cumsum(diff, axis=-2) / t
    est_total = total[..., None, :] + mean * population
    r = est_total[..., RATED]
    b_share, h_share = est_total[..., BP] / r, est_total[..., HPH] / r
    est = (
        score_from_percentages(100 * b_share, 100 * h_share)
        - score_from_percentages(
            100 * total[..., BP] / total[..., RATED], 100 * total[..., HPH] / total[..., RATED]
        )[..., None]
    )
    d_b = 50.0 * (1.0 - h_share) ** 2
    d_h = -2.0 * (50.0 + 50.0 * b_share) * (1.0 - h_share)
    # Each unit's influence on the score at look t's shares is A·x + B·y + C·w (x, y, w:
    # its paired BP, HPH and rated differences); its variance over the units seen comes
    # from running means of the products.
    a, bb, cc = d_b, d_h, -(d_b * b_share + d_h * h_share)
    x, y, w = diff[..., BP], diff[..., HPH], diff[..., RATED]
    tt = t[:, 0]

    def m(v: np.ndarray) -> np.ndarray:
        return np.cumsum(v, axis=-1) / tt

    mean_u = a * m(x) + bb * m(y) + cc * m(w)
    sq = (
        a**2 * m(x * x) + bb**2 * m(y * y) + cc**2 * m(w * w)
        + 2 * a * bb * m(x * y) + 2 * a * cc * m(x * w) + 2 * bb * cc * m(y * w)
    )  # fmt: skip
    var = np.maximum(sq - mean_u**2, 0.0) * tt / np.maximum(tt - 1, 1)
    se = np.sqrt(var / tt * (1.0 - tt / population)) / (r / population)
    return est - z_low * se, est + z_high * se


def full_run(
    base: np.ndarray,
    cand: np.ndarray,
    persona_of: np.ndarray,
    rng: np.random.Generator,
    margin: float,
    alpha: float,
    highs: np.ndarray,
    resamples: int = 2000,
):
    """The fixed gate's verdict on all units (`vera compare --gate`'s method and levels):
    a paired persona-cluster percentile bootstrap, each row's upper end of candidate −
    baseline at its one-sided level `highs` (α split over the rows as the sequential
    gate splits it: Overall α/2, each dimension α/10), its lower end at one-sided α/2
    (`vera.stats.fixed_gate_levels`: `alpha` and `highs` are its α and upper levels)."""
    personas = int(persona_of.max()) + 1
    per_b = np.zeros((*base.shape[:1], personas, *base.shape[2:]))
    per_c = np.zeros_like(per_b)
    np.add.at(per_b, (slice(None), persona_of), base)
    np.add.at(per_c, (slice(None), persona_of), cand)
    w = rng.multinomial(personas, np.full(personas, 1.0 / personas), size=(base.shape[0], resamples)).astype(
        float
    )
    tb = np.einsum("rbp,rpkc->rbkc", w, per_b)
    tc = np.einsum("rbp,rpkc->rbkc", w, per_c)
    with np.errstate(invalid="ignore", divide="ignore"):
        sb = score_from_percentages(100 * tb[..., BP] / tb[..., RATED], 100 * tb[..., HPH] / tb[..., RATED])
        sc = score_from_percentages(100 * tc[..., BP] / tc[..., RATED], 100 * tc[..., HPH] / tc[..., RATED])
    d = sc - sb  # (k, resamples, rows)
    low, _ = fixed_gate_levels([label == "Overall" for label in LABELS], alpha)
    lo = np.nanquantile(d, low, axis=1)
    hi = np.empty_like(lo)
    for level in np.unique(highs):
        sel = highs == level
        hi[:, sel] = np.nanquantile(d[..., sel], 1.0 - float(level), axis=1)
    return verdicts(statuses(lo, hi, margin)[..., None])[..., 0]


def mixture_radius(w: np.ndarray, w_horizon: np.ndarray, alpha: float) -> np.ndarray:
    """One side's radius, at one-sided level `alpha`, of the normal-mixture
    likelihood-ratio boundary for an estimate whose variance about its target is `w` at
    each look, the mixing variance set to make it tightest where the variance is
    `w_horizon`: r² = 2w(1 + w/τ²)·ln(√(1 + τ²/w)/level)."""
    level = one_sided_level(alpha)
    rho = np.exp(np.linspace(math.log(0.5), math.log(200.0), 2001))
    best = float(rho[np.argmin((1.0 + 1.0 / rho) * (0.5 * np.log1p(rho) + math.log(1.0 / level)))])
    tau2 = best * w_horizon
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.sqrt(2.0 * w * (1.0 + w / tau2) * np.log(np.sqrt(1.0 + tau2 / w) / level))
    return np.where(np.isfinite(w), out, np.inf)


def mixture_difference(
    cand: np.ndarray,
    base: np.ndarray,
    total: np.ndarray,
    alpha_low: float,
    alpha_high: float,
    looks: np.ndarray,
    *,
    persona: np.ndarray,
    units_per_persona: np.ndarray,
    horizon: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A comparator the gate does not use (`--method mixture`): one normal-mixture
    boundary on the estimate's whole variance about the persona population's difference,
    the without-replacement part σ²(1/t − 1/N)·N/(N − 1) plus the persona part s², in
    place of the gate's two parts with α split between them. In a Gaussian model the
    unit mean is sufficient for the shift, so the mixture likelihood ratio is a
    martingale and Ville's inequality holds; the price is that s² never leaves, so the
    interval with every unit in is this boundary at s², not z·s."""
    population = int(units_per_persona.sum())
    idx = looks - 1
    est_all, sd = influence_sequence(cand, base, total, population)
    t = looks.astype(np.float64)
    s = sd[..., idx]
    spread = persona_spread(cand, base, total, persona, units_per_persona, looks)
    fpc = population / max(population - 1, 1)
    w = np.where(t < MIN_UNITS, np.inf, s**2 * (1.0 / t - 1.0 / population) * fpc + spread**2)
    h = max(horizon * population, 1.0)
    w_h = s**2 * (1.0 / h - 1.0 / population) * fpc + spread**2
    est = est_all[..., idx]
    return est, est - mixture_radius(w, w_h, alpha_low), est + mixture_radius(w, w_h, alpha_high)


def chunk_intervals(
    rng: np.random.Generator,
    k: int,
    personas: int,
    seeds: int,
    shift: float,
    looks: np.ndarray,
    alpha: float,
    highs: np.ndarray,
    grid: int,
    method: str,
    horizon: float,
    spending: str = DEFAULT_SPENDING,
    coupling: float | None = None,
) -> tuple[np.ndarray, ...]:
    """Draw `k` repetitions and the gate's interval of every row at every look:
    (base, cand, persona_of, ct, bt, total, est, lo, hi); ct and bt are the scaled,
    shuffled units (k, rows, n, 3), est/lo/hi (k, rows, looks). `coupling`: the sides'
    shared ratings (`seqsim.draw`'s; None, its default). bench_plan.py's gate sizes
    are measured with this too."""
    n = personas * seeds
    rows = len(LABELS)
    scale = np.array([1.0] * (rows - 1) + [rows - 1.0])[None, None, :, None]
    paired = {} if coupling is None else {"coupling": coupling}
    base, cand, persona_of = draw(rng, k, personas, seeds, shift, **paired)
    order = np.argsort(rng.random((k, n)), axis=1)
    b = np.take_along_axis(base, order[:, :, None, None], 1) / scale
    c = np.take_along_axis(cand, order[:, :, None, None], 1) / scale
    total = (base / scale).sum(axis=1)  # (k, rows, 3)
    bt, ct = b.transpose(0, 2, 1, 3), c.transpose(0, 2, 1, 3)  # (k, rows, n, 3)
    who = np.broadcast_to(persona_of[order][:, None, :], ct.shape[:-1])
    units_per = np.bincount(persona_of).astype(float)
    est = np.empty((k, rows, len(looks)))
    lo, hi = np.empty_like(est), np.empty_like(est)
    for level in np.unique(highs):
        sel = highs == level
        if method == "mixture":
            est[:, sel], lo[:, sel], hi[:, sel] = mixture_difference(
                ct[:, sel], bt[:, sel], total[:, sel], alpha, float(level), looks,
                persona=who[:, sel], units_per_persona=units_per, horizon=horizon,
            )  # fmt: skip
            continue
        if method == "both":
            # Each at half the level, the tighter end kept (a union bound: the
            # intersection of two sequences at α/2 covers at α).
            _, m_lo, m_hi = mixture_difference(
                ct[:, sel], bt[:, sel], total[:, sel], alpha / 2, float(level) / 2, looks,
                persona=who[:, sel], units_per_persona=units_per, horizon=horizon,
            )  # fmt: skip
            est[:, sel], g_lo, g_hi = difference_sequence(
                ct[:, sel], bt[:, sel], total[:, sel], alpha / 2, float(level) / 2, looks,
                persona=who[:, sel], units_per_persona=units_per, horizon=HORIZON,
            )  # fmt: skip
            lo[:, sel], hi[:, sel] = np.maximum(m_lo, g_lo), np.minimum(m_hi, g_hi)
            continue
        est[:, sel], lo[:, sel], hi[:, sel] = difference_sequence(
            ct[:, sel], bt[:, sel], total[:, sel], alpha, float(level), looks,
            persona=who[:, sel], units_per_persona=units_per, grid_points=grid,
            method=method if method in ("betting", "spending") else "asymptotic",  # type: ignore[arg-type]
            horizon=horizon, spending=spending,
        )  # fmt: skip
    return base, cand, persona_of, ct, bt, total, est, lo, hi


def run_setting(
    rng: np.random.Generator,
    *,
    reps: int,
    personas: int,
    seeds: int,
    margin: float,
    diff: float,
    wave: int,
    alpha: float,
    grid: int,
    method: str,
    horizon: float,
    overall_share: float | None = None,
    spending: str = DEFAULT_SPENDING,
) -> dict[str, Any]:
    shift = shift_for(diff)
    n = personas * seeds
    looks = wave_looks(n, wave)
    # The gate's levels: every row's lower end at one-sided α, the upper ends α split
    # over the rows (Overall half); the naive interval uses the same levels, one look.
    highs = gate_levels(alpha)
    if overall_share is not None:
        # A comparator, not the gate's split: Overall gets this share of the WORSE α.
        highs = (
            np.where(np.array(LABELS) == "Overall", overall_share, (1 - overall_share) / (len(LABELS) - 1))
            * alpha
        )
    from scipy.stats import norm

    z_low = float(norm.ppf(1 - alpha))
    z_high = norm.ppf(1 - highs)[None, :, None]
    seq_v, seq_u, nai_v, nai_u, full_v = [], [], [], [], []
    # The betting grid needs small chunks; the others are cheaper computed in larger ones.
    chunk = CHUNK if method == "betting" else 25
    for start in range(0, reps, chunk):
        k = min(chunk, reps - start)
        base, cand, persona_of, ct, bt, total, _, lo, hi = chunk_intervals(
            rng, k, personas, seeds, shift, looks, alpha, highs, grid, method, horizon, spending
        )
        v = verdicts(statuses(lo, hi, margin))
        sv, su = first_stop(v, looks)
        nlo, nhi = naive_interval(ct, bt, total, n, z_low, z_high)
        nv, nu = first_stop(verdicts(statuses(nlo[..., looks - 1], nhi[..., looks - 1], margin)), looks)
        seq_v.append(sv)
        seq_u.append(su)
        nai_v.append(nv)
        nai_u.append(nu)
        full_v.append(full_run(base, cand, persona_of, rng, margin, alpha, gate_levels(alpha)))
    sv, su, nv, nu, fv = (np.concatenate(x) for x in (seq_v, seq_u, nai_v, nai_u, full_v))
    settled = fv != 0

    def rates(v: np.ndarray) -> dict[str, float]:
        return {
            "worse": float((v == -1).mean()),
            "not_worse": float((v == 1).mean()),
            "undecided": float((v == 0).mean()),
        }

    return {
        "diff": diff,
        "true_rows": [round(float(x), 2) for x in true_scores(shift)],
        "units": n,
        "reps": reps,
        "sequential": rates(sv)
        | {"mean_units": float(su.mean() / n), "p90_units": float(np.quantile(su, 0.9) / n)},
        "naive": rates(nv) | {"mean_units": float(nu.mean() / n)},
        "full_run": rates(fv),
        "agreement": float((sv[settled] == fv[settled]).mean()) if settled.any() else None,
        "full_settled": float(settled.mean()),
    }


def binary_kl(p: float, q: float) -> float:
    """KL divergence between Bernoulli(p) and Bernoulli(q)."""
    out = 0.0
    for a, b in ((p, q), (1.0 - p, 1.0 - q)):
        if a > 0:
            out += a * math.log(a / b)
    return out


def wald_fraction(delta: float, sigma2: float, s2: float, n: int, p: float, alpha: float) -> float:
    """The least mean share of the `n` units with which any procedure can be right with
    probability `p` while erring with probability at most `alpha` at a null `delta`
    away, when the estimate after t units has variance σ²(1/t − 1/n) + s² (Gaussian;
    Wald's argument: the mean information at stopping, δ²/(2·variance), is at least
    kl(p, α), and the information is concave in t when s² ≥ σ²/n, so its mean is at
    most its value at the mean stopping time). inf when all n units are not enough."""
    v_star = delta**2 / (2.0 * binary_kl(p, alpha))
    if v_star <= s2:
        return math.inf
    return 1.0 / ((v_star - s2) / sigma2 * n + 1.0)


def diagnose(
    rng: np.random.Generator,
    *,
    reps: int,
    personas: int,
    seeds: int,
    margin: float,
    diff: float,
    wave: int,
    alpha: float,
    horizon: float,
) -> dict[str, Any]:
    """Is a design slow to settle for want of power or because the sequence is loose?

    From `reps` repetitions at true Overall difference `diff`: the sequence's mean
    radius against an oracle fixed-size one-sided interval at the same number of units
    (z at the same level × the estimator's actual spread about the persona population's
    difference, measured over the repetitions), at N/4, N/2 and N; the oracle fixed-size
    test's power at N/2 and N; and a lower bound on the mean units any valid procedure
    needs (Wald's argument, Gaussian model fitted to that spread: see docs/statistics.md).
    """
    from scipy.stats import norm

    shift = shift_for(diff)
    n = personas * seeds
    looks = wave_looks(n, wave)
    highs = gate_levels(alpha)
    truth = true_scores(shift)
    ests, los, his = [], [], []
    for start in range(0, reps, 25):
        k = min(25, reps - start)
        *_, est, lo, hi = chunk_intervals(
            rng, k, personas, seeds, shift, looks, alpha, highs, 0, "asymptotic", horizon
        )
        ests.append(est)
        los.append(lo)
        his.append(hi)
    est, lo, hi = (np.concatenate(x) for x in (ests, los, his))  # (reps, rows, L)
    err = est - truth[None, :, None]
    sd = np.sqrt((err**2).mean(axis=0))  # (rows, L): spread about the population's difference
    z_low = float(norm.ppf(1 - alpha))
    z_high = norm.ppf(1 - highs)[:, None]
    worse = diff < 0
    # The end that settles this setting: the upper for WORSE, the lower for NOT WORSE.
    radius = np.nanmean(np.where(np.isfinite(hi), hi - est, np.nan) if worse else est - lo, axis=0)
    fixed = (z_high if worse else z_low) * sd
    out: dict[str, Any] = {"diff": diff, "units": n, "reps": reps, "rows": {}}
    marks = {"N/4": n // 4, "N/2": n // 2, "N": n}
    at = {name: int(np.argmin(np.abs(looks - m))) for name, m in marks.items()}
    # The oracle fixed-size test at a look (its spread known in advance).
    power = {}
    for name in ("N/2", "N"):
        j = at[name]
        if worse:
            call = (est[:, :, j] + z_high[:, 0] * sd[:, j] < -margin).any(axis=1)
        else:
            call = (est[:, :, j] - z_low * sd[:, j] > -margin).all(axis=1)
        power[name] = float(call.mean())
    out["oracle_fixed_power"] = power
    # Wald: for any procedure whose verdict is right with probability p here and wrong
    # with probability ≤ α at the nearest null (the row at −margin), the expected
    # information at stopping, E[δ²/(2 v(τ))], is at least kl(p, α). With v(n) =
    # σ²(1/n − 1/N) + s² (units drawn without replacement, s² the persona part that no
    # number of units removes) the information is concave in n, so E[τ] ≥ the n where
    # δ²/(2 v(n)) = kl(p, α).
    inv = 1.0 / looks - 1.0 / n
    keep = looks >= n // 4
    bounds = []
    for r, label in enumerate(LABELS):
        coef, *_ = np.linalg.lstsq(
            np.stack([inv[keep], np.ones(keep.sum())], axis=1), sd[r, keep] ** 2, rcond=None
        )
        sigma2, s2 = max(float(coef[0]), 1e-9), max(float(coef[1]), 1e-9)
        delta = abs(truth[r] + margin)
        row = {
            "truth": round(float(truth[r]), 2),
            "radius_over_fixed": {k: round(float(radius[r, j] / fixed[r, j]), 2) for k, j in at.items()},
            "sd": {k: round(float(sd[r, j]), 2) for k, j in at.items()},
            "sigma_unit": round(math.sqrt(sigma2), 1),
            "persona_sd": round(math.sqrt(s2), 2),
            # Wald's bound below needs the information concave in t: s² ≥ σ²/N.
            "concave": bool(s2 >= sigma2 / n),
        }
        for p in (0.8, 0.9, 0.95):
            row[f"wald_{p}"] = round(wald_fraction(delta, sigma2, s2, n, p, alpha), 3)
        out["rows"][label] = row
        bounds.append(row)
    # WORSE needs one row (the most informative bounds it from below); NOT WORSE needs
    # every row (each row's bound applies, so the largest does).
    pick = min if worse else max
    out["wald_bound"] = {f"{p}": float(pick(b[f"wald_{p}"] for b in bounds)) for p in (0.8, 0.9, 0.95)}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--personas", type=int, default=100)
    p.add_argument("--seeds", type=int, default=5, help="units per persona (user-agents × seeds)")
    p.add_argument("--margin", type=float, default=5.0)
    p.add_argument("--wave", type=int, default=25)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--grid", type=int, default=401, help="grid of hypothesised shares (the gate uses 1001)")
    p.add_argument(
        "--method",
        choices=["asymptotic", "betting", "spending", "mixture", "both"],
        default="asymptotic",
        help="the gate's boundaries (asymptotic, betting: confidence sequences; spending: the "
        "group-sequential α-spending boundary, --spending) or comparators it does not use: mixture (one "
        "boundary on the whole variance), both (mixture and asymptotic at half α each, the tighter end)",
    )
    p.add_argument(
        "--spending",
        default=DEFAULT_SPENDING,
        help="the spending function of --method spending: obf, pocock or hsd:GAMMA",
    )
    p.add_argument(
        "--horizon", type=float, default=HORIZON, help="share of units where the sequence is tightest"
    )
    p.add_argument(
        "--overall-share",
        type=float,
        default=None,
        help="share of the WORSE α given to Overall's upper end (the gate: 0.5, the rest to the dimensions)",
    )
    p.add_argument("--only", type=int, default=None, help="run only setting number K (0-3)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument(
        "--diagnose",
        action="store_true",
        help="power or looseness: the sequence's radius against an oracle fixed-size interval, "
        "the fixed test's power at N/2 and Wald's lower bound on the mean units (at ±2m)",
    )
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    out = []
    chosen = settings(args.margin)
    if args.only is not None:
        chosen = [chosen[args.only]]
    print(
        f"{args.personas} personas × {args.seeds} = {args.personas * args.seeds} units, margin {args.margin}, "
        f"wave {args.wave}, α {args.alpha}, {args.method}"
        f"{' ' + args.spending if args.method == 'spending' else ''}, {args.reps} repetitions a setting"
    )
    if args.diagnose:
        for name, diff in chosen:
            if diff == 0 or abs(diff) == args.margin:
                continue
            d = diagnose(
                rng, reps=args.reps, personas=args.personas, seeds=args.seeds, margin=args.margin,
                diff=diff, wave=args.wave, alpha=args.alpha, horizon=args.horizon,
            )  # fmt: skip
            d["setting"] = name
            out.append(d)
            print(
                f"{name}: oracle fixed-size power {d['oracle_fixed_power']};"
                f" Wald bound on mean units / N (p = 0.8, 0.9, 0.95): {d['wald_bound']}"
            )
            for label, row in d["rows"].items():
                print(f"  {label}: {row}")
        chosen = []
    for name, diff in chosen:
        t0 = time.time()
        r = run_setting(
            rng,
            reps=args.reps,
            personas=args.personas,
            seeds=args.seeds,
            margin=args.margin,
            diff=diff,
            wave=args.wave,
            alpha=args.alpha,
            grid=args.grid,
            method=args.method,
            horizon=args.horizon,
            overall_share=args.overall_share,
            spending=args.spending,
        )
        r["setting"] = name
        r["seconds"] = round(time.time() - t0, 1)
        out.append(r)
        s, nv, f = r["sequential"], r["naive"], r["full_run"]
        print(
            f"{name}: sequential WORSE {s['worse']:.3f} NOT WORSE {s['not_worse']:.3f} UNDECIDED {s['undecided']:.3f}"
            f" units {s['mean_units']:.1%} (p90 {s['p90_units']:.1%}) | naive WORSE {nv['worse']:.3f}"
            f" NOT WORSE {nv['not_worse']:.3f} units {nv['mean_units']:.1%} | full run WORSE {f['worse']:.3f}"
            f" NOT WORSE {f['not_worse']:.3f} | agreement {r['agreement']} | {r['seconds']} s",
            flush=True,
        )
    if args.json is not None:
        args.json.write_text(
            json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "results": out}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
