"""Simulation: does `vera plan` predict the width of a fixed comparison?

    .venv/bin/python benchmarks/bench_plan.py              # 20 pilots, 1,000 comparisons a design
    .venv/bin/python benchmarks/bench_plan.py --pilots 3 --reps 200
    .venv/bin/python benchmarks/bench_plan.py --paired     # the pairing credit, by coupling

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
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from seqsim import draw

from vera.stats.bootstrap import score_from_percentages
from vera.stats.planning import fixed_se, pairing_of, variability
from vera.stats.sequential import BP, HPH, RATED

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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pilots", type=int, default=20)
    p.add_argument("--reps", type=int, default=1000, help="pairs of full runs a design")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--paired", action="store_true", help="check the pairing credit, by coupling")
    args = p.parse_args(argv)
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


if __name__ == "__main__":
    raise SystemExit(main())
