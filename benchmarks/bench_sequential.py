"""Simulation: is the sequential gate valid under continuous monitoring, and what does
it save?

    .venv/bin/python benchmarks/bench_sequential.py                 # 1,000 repetitions a setting
    .venv/bin/python benchmarks/bench_sequential.py --reps 50 --json out.json

Each repetition draws a baseline and a candidate run on the same units (personas ×
seeds, five dimensions, one judge; `seqsim.py`), shuffles the units (the gate's seeded
order without replacement) and looks after every wave:

- **sequential**: the gate's confidence sequence (`vera.stats.sequential`), stopping at
  the first look whose verdict is WORSE or NOT WORSE, UNDECIDED when the units run out;
- **naive**: the same data and stopping rule with a fixed-size interval (normal, delta
  method, finite-population corrected, the same α split over the rows) recomputed after
  every wave, as a team peeking at a fixed-size test would;
- **full run**: the fixed gate on all units (`vera compare --gate`'s method: a paired
  persona-cluster percentile bootstrap, 95 % per row), whose verdict is settled when
  every row's interval lies on one side of −margin (or one row lies below).

The candidate's true difference (Overall, candidate − baseline; the population's, not
the sample's) is 0, −margin, −2 × margin or +2 × margin. Printed per setting: the rate of
each verdict for both procedures, the mean and 90th-percentile units used, and the
sequential verdict's agreement with a settled full run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from seqsim import LABELS, draw, shift_for, true_scores

from vera.stats.bootstrap import score_from_percentages
from vera.stats.sequential import BP, HORIZON, HPH, RATED, difference_sequence, upper_levels

CHUNK = 5  # repetitions computed at once (memory: chunk × rows × grid × units floats)


def settings(margin: float) -> list[tuple[str, float]]:
    return [
        ("as good (0)", 0.0),
        ("at the margin (−m)", -margin),
        ("worse by 2m", -2 * margin),
        ("better by 2m", 2 * margin),
    ]


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
    base: np.ndarray, cand: np.ndarray, persona_of: np.ndarray, rng: np.random.Generator, margin: float
):
    """The fixed gate's verdict on all units: paired persona-cluster bootstrap, 95 %."""
    personas = int(persona_of.max()) + 1
    per_b = np.zeros((*base.shape[:1], personas, *base.shape[2:]))
    per_c = np.zeros_like(per_b)
    np.add.at(per_b, (slice(None), persona_of), base)
    np.add.at(per_c, (slice(None), persona_of), cand)
    w = rng.multinomial(personas, np.full(personas, 1.0 / personas), size=(base.shape[0], 400)).astype(float)
    tb = np.einsum("rbp,rpkc->rbkc", w, per_b)
    tc = np.einsum("rbp,rpkc->rbkc", w, per_c)
    with np.errstate(invalid="ignore", divide="ignore"):
        sb = score_from_percentages(100 * tb[..., BP] / tb[..., RATED], 100 * tb[..., HPH] / tb[..., RATED])
        sc = score_from_percentages(100 * tc[..., BP] / tc[..., RATED], 100 * tc[..., HPH] / tc[..., RATED])
    d = sc - sb
    lo, hi = np.nanquantile(d, 0.025, axis=1), np.nanquantile(d, 0.975, axis=1)
    return verdicts(statuses(lo, hi, margin)[..., None])[..., 0]


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
) -> dict[str, Any]:
    shift = shift_for(diff)
    n = personas * seeds
    looks = np.arange(wave, n + 1, wave)
    if looks[-1] != n:
        looks = np.append(looks, n)
    rows = len(LABELS)
    scale = np.array([1.0] * (rows - 1) + [rows - 1.0])[None, None, :, None]
    # The gate's levels: every row's lower end at one-sided α, the upper ends α split
    # over the rows (Overall half); the naive interval uses the same levels, one look.
    highs = np.array(upper_levels([label == "Overall" for label in LABELS], alpha))
    from scipy.stats import norm

    z_low = float(norm.ppf(1 - alpha))
    z_high = norm.ppf(1 - highs)[None, :, None]
    seq_v, seq_u, nai_v, nai_u, full_v = [], [], [], [], []
    for start in range(0, reps, CHUNK):
        k = min(CHUNK, reps - start)
        base, cand, persona_of = draw(rng, k, personas, seeds, shift)
        order = np.argsort(rng.random((k, n)), axis=1)
        b = np.take_along_axis(base, order[:, :, None, None], 1) / scale
        c = np.take_along_axis(cand, order[:, :, None, None], 1) / scale
        total = (base / scale).sum(axis=1)  # (k, rows, 3)
        bt, ct = b.transpose(0, 2, 1, 3), c.transpose(0, 2, 1, 3)  # (k, rows, n, 3)
        who = np.broadcast_to(persona_of[order][:, None, :], ct.shape[:-1])
        units_per = np.bincount(persona_of).astype(float)
        lo = np.empty((k, rows, len(looks)))
        hi = np.empty_like(lo)
        for level in np.unique(highs):
            sel = highs == level
            _, lo[:, sel], hi[:, sel] = difference_sequence(
                ct[:, sel], bt[:, sel], total[:, sel], alpha, float(level), looks,
                persona=who[:, sel], units_per_persona=units_per, grid_points=grid,
                method="betting" if method == "betting" else "asymptotic", horizon=horizon,
            )  # fmt: skip
        v = verdicts(statuses(lo, hi, margin))
        sv, su = first_stop(v, looks)
        nlo, nhi = naive_interval(ct, bt, total, n, z_low, z_high)
        nv, nu = first_stop(verdicts(statuses(nlo[..., looks - 1], nhi[..., looks - 1], margin)), looks)
        seq_v.append(sv)
        seq_u.append(su)
        nai_v.append(nv)
        nai_u.append(nu)
        full_v.append(full_run(base, cand, persona_of, rng, margin))
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--personas", type=int, default=100)
    p.add_argument("--seeds", type=int, default=5, help="units per persona (user-agents × seeds)")
    p.add_argument("--margin", type=float, default=5.0)
    p.add_argument("--wave", type=int, default=25)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--grid", type=int, default=401, help="grid of hypothesised shares (the gate uses 1001)")
    p.add_argument("--method", choices=["asymptotic", "betting"], default="asymptotic")
    p.add_argument(
        "--horizon", type=float, default=HORIZON, help="share of units where the sequence is tightest"
    )
    p.add_argument("--only", type=int, default=None, help="run only setting number K (0-3)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    out = []
    chosen = settings(args.margin)
    if args.only is not None:
        chosen = [chosen[args.only]]
    print(
        f"{args.personas} personas × {args.seeds} = {args.personas * args.seeds} units, margin {args.margin}, "
        f"wave {args.wave}, α {args.alpha}, {args.method}, {args.reps} repetitions a setting"
    )
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
