"""Simulation: does `vera plan` predict the width of a fixed comparison?

    .venv/bin/python benchmarks/bench_plan.py              # 20 pilots, 1,000 comparisons a design
    .venv/bin/python benchmarks/bench_plan.py --pilots 3 --reps 200
    .venv/bin/python benchmarks/bench_plan.py --paired     # the pairing credit, by coupling
    .venv/bin/python benchmarks/bench_plan.py --gate-size --pilots 3 --gates 100   # the gate's size
    .venv/bin/python benchmarks/bench_plan.py --gate-size --pilots 3 --gates 100 --reps 200 --boundary spending

A pilot is one run of the baseline (100 personas × 3 seeds, `seqsim.py`); the planner
(`vera.stats.planning`) reads its within-persona variability and predicts the 95 %
interval width of the Overall difference for each design. The truth is measured by
drawing many pairs of full runs of that design (baseline and an as-good candidate on
the same personas, their conversations independent) and taking 2 × 1.96 × the standard
deviation of their Overall differences. Printed per design: the truth, the mean
prediction over the pilots and the largest relative error of one pilot's prediction.

With `--paired`, the two chatbots' conversations of a unit are alike (`seqsim.draw`'s
`coupling`: the share of ratings drawn from the same random number): each pilot holds
both sides on the same units, the planner reads the pairing correlation off their paired
differences (`vera.stats.planning.pairing_of`) and predicts the width with it; the truth
is measured on pairs of full runs with the same coupling. Printed beside it: what the
prediction would be if the sides were taken as independent (how large it errs).

With `--gate-size`, the sequential gate's size: each pilot (100 personas × `--pilot-seeds`,
both sides at `--coupling`) is handed to the planner's simulation
(`vera.stats.planning.gate_sizes`, `--gates` simulated gates a difference) for a design of
`--personas` × `--seeds` at `--margin` (waves of `--wave`), with the pairing it reads
credited or, with `--no-credit`, none (as a pilot of one chatbot would be planned); the
truth is `--reps` gates run on fresh pairs of runs of that design with the same coupling.
Printed per pilot and true difference (±2 × margin): the predicted mean and
90th-percentile units beside the measured ones. `--boundary spending` (`--spending`)
sizes and measures the gate of `vera gate --boundary spending` instead: the planner
reads the boundary from a table per design (`vera.stats.sequential.SpendingTable`), the
measured gates integrate it at every look, as the gate does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_sequential import chunk_intervals, first_stop, gate_levels, statuses, verdicts, wave_looks
from seqsim import LABELS, draw, shift_for

from vera.stats.bootstrap import score_from_percentages
from vera.stats.groupseq import DEFAULT_SPENDING
from vera.stats.planning import fixed_se, gate_sizes, pairing_of, variability
from vera.stats.sequential import BP, HORIZON, HPH, RATED

DESIGNS = ((100, 3), (100, 10), (50, 4), (200, 2))


def overall(x: np.ndarray) -> np.ndarray:
    t = x[..., -1, :].sum(axis=-2)
    return np.asarray(
        score_from_percentages(100 * t[..., BP] / t[..., RATED], 100 * t[..., HPH] / t[..., RATED])
    )


def true_width(
    rng: np.random.Generator, personas: int, seeds: int, reps: int, coupling: float = 0.0
) -> float:
    diffs = []
    for start in range(0, reps, 50):
        base, cand, _ = draw(rng, min(50, reps - start), personas, seeds, 0.0, coupling=coupling)
        diffs.append(overall(cand) - overall(base))
    return float(2 * 1.96 * np.std(np.concatenate(diffs), ddof=1))


def check(rng: np.random.Generator, pilots: int, reps: int, designs: tuple[tuple[int, int], ...] = DESIGNS):
    """The pilots' within-persona sds, and per design (personas, seeds, true width, mean
    predicted width, largest relative error of one pilot's prediction)."""
    sds = []
    for _ in range(pilots):
        base, _, persona_of = draw(rng, 1, 100, 3, 0.0)
        sds.append(variability(base[0, :, -1], persona_of).within_sd)
    out = []
    for personas, seeds in designs:
        truth = true_width(rng, personas, seeds, reps)
        predicted = np.array([2 * 1.96 * fixed_se(sd, personas * seeds) for sd in sds])
        out.append(
            (personas, seeds, truth, float(predicted.mean()), float(np.max(np.abs(predicted / truth - 1))))
        )
    return sds, out


COUPLINGS = (0.0, 0.3, 0.6, 0.9)


def check_paired(
    rng: np.random.Generator,
    pilots: int,
    reps: int,
    couplings: tuple[float, ...] = COUPLINGS,
    designs: tuple[tuple[int, int], ...] = DESIGNS,
):
    """Per coupling and design: (coupling, mean pairing read by the pilots, personas,
    seeds, true width, mean predicted width, largest relative error of one pilot's
    prediction, mean prediction taking the sides as independent)."""
    out = []
    for coupling in couplings:
        read = []
        for _ in range(pilots):
            base, cand, persona_of = draw(rng, 1, 100, 3, 0.0, coupling=coupling)
            sd = variability(base[0, :, -1], persona_of).within_sd
            read.append((sd, pairing_of(base[0, :, -1], cand[0, :, -1], sd)))
        for personas, seeds in designs:
            truth = true_width(rng, personas, seeds, reps, coupling)
            n = personas * seeds
            predicted = np.array([2 * 1.96 * fixed_se(sd, n, rho) for sd, rho in read])
            independent = np.mean([2 * 1.96 * fixed_se(sd, n) for sd, _ in read])
            out.append(
                (
                    coupling,
                    float(np.mean([rho for _, rho in read])),
                    personas,
                    seeds,
                    truth,
                    float(predicted.mean()),
                    float(np.max(np.abs(predicted / truth - 1))),
                    float(independent),
                )
            )
    return out


# A unit's five dimensions are rated once each; Overall sums them.
MAX_RATINGS = np.array([1.0] * (len(LABELS) - 1) + [len(LABELS) - 1.0])


def measured_gate(
    rng: np.random.Generator,
    *,
    personas: int,
    seeds: int,
    difference: float,
    margin: float,
    wave: int,
    alpha: float,
    reps: int,
    coupling: float,
    boundary: str = "sequence",
    spending: str = DEFAULT_SPENDING,
) -> tuple[float, float]:
    """The true gate's (mean, 90th-percentile) units: `reps` gates, as `vera gate` runs
    them (`--boundary`, `--spending`), on fresh pairs of runs of the design whose Overall
    differs by `difference`; the gates are bench_sequential.py's (`chunk_intervals`:
    the spending boundary integrated at every look, as the gate does, not tabulated)."""
    n = personas * seeds
    looks = wave_looks(n, wave)
    method = "spending" if boundary == "spending" else "asymptotic"
    used = []
    for start in range(0, reps, 10):
        k = min(10, reps - start)
        *_, lo, hi = chunk_intervals(
            rng, k, personas, seeds, shift_for(difference), looks, alpha, gate_levels(alpha), 0, method,
            HORIZON, spending, coupling=coupling,
        )  # fmt: skip
        used.append(first_stop(verdicts(statuses(lo, hi, margin)), looks)[1])
    u = np.concatenate(used).astype(float)
    return float(u.mean()), float(np.quantile(u, 0.9))


def check_gate_size(
    rng: np.random.Generator,
    *,
    pilots: int,
    gates: int,
    reps: int,
    pilot_seeds: int = 3,
    coupling: float = 0.5,
    credit: bool = True,
    personas: int = 100,
    seeds: int = 10,
    margin: float = 5.0,
    wave: int = 50,
    alpha: float = 0.05,
    differences: tuple[float, ...] | None = None,
    boundary: str = "sequence",
    spending: str = DEFAULT_SPENDING,
):
    """Per true difference (default ±2 × margin): the measured (mean, p90) units, and per
    pilot (pairing read, predicted mean, predicted p90)."""
    if differences is None:
        differences = (-2 * margin, 2 * margin)
    read = []
    for _ in range(pilots):
        base, cand, persona_of = draw(rng, 1, 100, pilot_seeds, 0.0, coupling=coupling)
        sd = variability(base[0, :, -1], persona_of).within_sd
        rho = pairing_of(base[0, :, -1], cand[0, :, -1], sd)
        sizes = gate_sizes(
            base[0], persona_of, labels=list(LABELS), max_ratings=MAX_RATINGS, personas=personas,
            units_per_persona=seeds, differences=list(differences), margin=margin, alpha=alpha, wave=wave,
            reps=gates, seed=int(rng.integers(2**31)), pairing=rho if credit else 0.0,
            method="spending" if boundary == "spending" else "asymptotic", spending=spending,
        )  # fmt: skip
        read.append((rho, sizes))
    out = []
    for i, difference in enumerate(differences):
        truth = measured_gate(
            rng, personas=personas, seeds=seeds, difference=difference, margin=margin, wave=wave,
            alpha=alpha, reps=reps, coupling=coupling, boundary=boundary, spending=spending,
        )  # fmt: skip
        out.append(
            (difference, truth, [(rho, sizes[i].mean_units, sizes[i].p90_units) for rho, sizes in read])
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pilots", type=int, default=20)
    p.add_argument("--reps", type=int, default=1000, help="pairs of full runs a design")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--paired", action="store_true", help="check the pairing credit, by coupling")
    p.add_argument("--gate-size", action="store_true", help="check the sequential gate's predicted size")
    p.add_argument(
        "--gates", type=int, default=100, help="simulated gates a pilot and difference (--gate-size)"
    )
    p.add_argument("--pilot-seeds", type=int, default=3, help="seeds a persona in each pilot (--gate-size)")
    p.add_argument(
        "--coupling", type=float, default=0.5, help="share of a unit's ratings the sides share (--gate-size)"
    )
    p.add_argument("--no-credit", action="store_true", help="plan with no pairing credit (--gate-size)")
    p.add_argument("--personas", type=int, default=100, help="the gate's design (--gate-size)")
    p.add_argument("--seeds", type=int, default=10, help="the gate's design (--gate-size)")
    p.add_argument("--margin", type=float, default=5.0, help="(--gate-size)")
    p.add_argument("--wave", type=int, default=50, help="(--gate-size)")
    p.add_argument(
        "--boundary", choices=["sequence", "spending"], default="sequence", help="the gate's (--gate-size)"
    )
    p.add_argument("--spending", default=DEFAULT_SPENDING, help="with --boundary spending (--gate-size)")
    args = p.parse_args(argv)
    if args.gate_size:
        return _print_gate_size(args)
    if args.paired:
        rows = check_paired(np.random.default_rng(args.seed), args.pilots, args.reps)
        print(
            f"{args.pilots} paired pilots of 100 personas × 3 seeds a coupling; {args.reps} pairs of full runs a design"
        )
        print(
            "| coupling | pairing read (mean) | design | true 95 % width | predicted (mean) | mean error "
            "| largest error of one pilot | independent sides (mean) |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for c, rho, personas, seeds, truth, predicted, error, independent in rows:
            print(
                f"| {c:g} | {rho:.2f} | {personas} × {seeds} | {truth:.2f} | {predicted:.2f} | "
                f"{predicted / truth - 1:+.1%} | {error:.1%} | {independent:.2f} ({independent / truth - 1:+.0%}) |"
            )
        return 0
    sds, rows = check(np.random.default_rng(args.seed), args.pilots, args.reps)
    print(
        f"{args.pilots} pilots of 100 personas × 3 seeds: within-persona sd {np.mean(sds):.1f} "
        f"(range {min(sds):.1f}-{max(sds):.1f}); {args.reps} pairs of full runs a design"
    )
    print(
        "| design | true 95 % width | predicted (mean over pilots) | mean error | largest error of one pilot |"
    )
    print("|---|---|---|---|---|")
    for personas, seeds, truth, predicted, error in rows:
        print(
            f"| {personas} personas × {seeds} | {truth:.2f} | {predicted:.2f} | {predicted / truth - 1:+.1%} | {error:.1%} |"
        )
    return 0


def _print_gate_size(args: argparse.Namespace) -> int:
    rows = check_gate_size(
        np.random.default_rng(args.seed), pilots=args.pilots, gates=args.gates, reps=args.reps,
        pilot_seeds=args.pilot_seeds, coupling=args.coupling, credit=not args.no_credit,
        personas=args.personas, seeds=args.seeds, margin=args.margin, wave=args.wave,
        boundary=args.boundary, spending=args.spending,
    )  # fmt: skip
    bound = (
        f"--boundary spending --spending {args.spending}"
        if args.boundary == "spending"
        else "--boundary sequence"
    )
    print(
        f"gate ({bound}) of {args.personas} personas × {args.seeds} seeds, margin {args.margin:g}, waves of {args.wave}, "
        f"coupling {args.coupling:g}; {args.pilots} pilots of 100 personas × {args.pilot_seeds} seeds, "
        f"{args.gates} simulated gates each, pairing {'not credited' if args.no_credit else 'credited'}; "
        f"measured on {args.reps} gates"
    )
    print(
        "| true difference | pilot | ρ read | predicted mean (p90) | measured mean (p90) | error of the mean "
        "| error of p90 |"
    )
    print("|---|---|---|---|---|---|---|")
    for difference, (mean, p90), pilots in rows:
        for i, (rho, p_mean, p_p90) in enumerate(pilots, 1):
            print(
                f"| {difference:+g} | {i} | {rho:.2f} | {p_mean:.0f} ({p_p90:.0f}) | {mean:.0f} ({p90:.0f}) "
                f"| {p_mean / mean - 1:+.0%} | {p_p90 / p90 - 1:+.0%} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
