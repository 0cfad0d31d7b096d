"""Simulation: the gates at the ends of the scale, with and without the edge rule.

    .venv/bin/python benchmarks/bench_edges.py --pilot RUN                  # shares, 600 units
    .venv/bin/python benchmarks/bench_edges.py --pilot RUN --paired --reps 400 --seeds 2

The pilot is a run of one chatbot near 0 or 100 (the offline best-practice run of
docs/statistics.md: `vera run --config configs/offline.toml --providers
offline/best-practice --limit-personas 50 --seed 1`). Its units all score alike, so, as
`vera plan` does, the gate is simulated on its stand-in with the assumed 30-point spread
(`vera.stats.planning.spread_pilot`). For a design of the pilot's personas × `--seeds`
at `--margin` (waves of `--wave`, spending boundary) and true differences 0 and
±2 × margin, printed:

- without `--paired`: the simulated gate's mean units and verdict shares without the
  edge rule and with it (`gate_sizes(edge_rule=...)`), and the simulated compare --gate
  (`fixed_power_simulated`'s model: one look at every unit, the edge rule on the low end);
- with `--paired`: each simulated run read by the gate (before, after) and by compare on
  the same draws (`gate_sizes` draws the same runs for the same seed, one repetition a
  seed), how often the gate says NOT WORSE where compare says UNDECIDED and how often it
  agrees where compare settles; `--both-ends` reads compare with the gate's own rule on
  both ends at compare's levels instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import vera.stats.planning as planning
from vera.app._gate import _max_ratings, unit_counts
from vera.report import read_run
from vera.stats.planning import GateSize, gate_sizes, spread_pilot
from vera.stats.sequential import fixed_gate_levels

ALPHA = 0.05
LEVEL = 0.95


def _pilot(path: Path) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    run = read_run(path)
    units = unit_counts(run.ratings)
    index = {p: i for i, p in enumerate(sorted({k[0] for k in units.keys}))}
    who = np.array([index[k[0]] for k in units.keys])
    bound = _max_ratings(run.manifest.judges, run.manifest.judge_instances, 1, len(units.labels))
    counts, who2, _, _ = spread_pilot(units.counts, who, 30.0, 1)
    return counts, who2, units.labels, bound


def _verdict(g: GateSize) -> str:
    return "W" if g.worse else ("N" if g.not_worse else "U")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pilot", type=Path, required=True, help="a run of one chatbot near 0 or 100")
    p.add_argument("--seeds", type=int, default=12, help="seeds a persona in the design")
    p.add_argument("--margin", type=float, default=5.0)
    p.add_argument("--wave", type=int, default=20)
    p.add_argument("--reps", type=int, default=100)
    p.add_argument("--paired", action="store_true", help="gate and compare on the same simulated runs")
    p.add_argument("--both-ends", action="store_true", help="compare with the rule on both ends (--paired)")
    a = p.parse_args(argv)
    counts, who, labels, bound = _pilot(a.pilot)
    personas = int(who.max()) + 1
    n = personas * a.seeds
    diffs = [0.0, -2 * a.margin, 2 * a.margin]
    common = dict(
        labels=labels, max_ratings=bound, personas=personas, units_per_persona=a.seeds, margin=a.margin
    )

    def gate(rule: bool, seed: int, reps: int, d: list[float]) -> list[GateSize]:
        return gate_sizes(
            counts, who, alpha=ALPHA, wave=a.wave, method="spending", edge_rule=rule, seed=seed, reps=reps,
            differences=d, **common,  # type: ignore[arg-type]
        )  # fmt: skip

    def fixed(seed: int, reps: int, d: list[float]) -> list[GateSize]:
        if not a.both_ends:
            return gate_sizes(
                counts, who, alpha=(1 - LEVEL) / 2, wave=n, method="spending", edge_level=LEVEL, seed=seed,
                reps=reps, differences=d, **common,  # type: ignore[arg-type]
            )  # fmt: skip
        # The gate's own rule at compare's levels for α, on both ends, one look.
        planning.fixed_gate_levels = lambda rows, _: fixed_gate_levels(rows, ALPHA)  # type: ignore[assignment]
        try:
            return gate_sizes(
                counts, who, alpha=(1 - LEVEL) / 2, wave=n, method="spending", seed=seed, reps=reps,
                differences=d, **common,  # type: ignore[arg-type]
            )  # fmt: skip
        finally:
            planning.fixed_gate_levels = fixed_gate_levels

    if not a.paired:
        for name, sizes in (
            ("gate, no edge rule", gate(False, 0, a.reps, diffs)),
            ("gate, edge rule", gate(True, 0, a.reps, diffs)),
            ("compare --gate", fixed(0, a.reps, diffs)),
        ):
            for g in sizes:
                print(
                    f"{n} units  {name:18s} difference {g.difference:+5.1f} (reaches {g.reached:+.1f}): "
                    f"{g.mean_units:6.1f} units on average · WORSE {g.worse:.2f} / NOT WORSE {g.not_worse:.2f} "
                    f"/ UNDECIDED {g.undecided:.2f}"
                )
        return 0
    # The spending table is built once per design and read by every simulated gate.
    made: dict[tuple[object, ...], planning.SpendingTable] = {}
    table = planning.SpendingTable

    def cached(looks: np.ndarray, population: int, spending: str, grid: int = 61) -> planning.SpendingTable:
        key = (tuple(int(x) for x in looks), population, spending, grid)
        if key not in made:
            made[key] = table(looks, population, spending, grid)
        return made[key]

    planning.SpendingTable = cached  # type: ignore[assignment,misc]
    try:
        for d in diffs:
            read = np.array(
                [
                    [
                        _verdict(gate(False, s, 1, [d])[0]),
                        _verdict(gate(True, s, 1, [d])[0]),
                        _verdict(fixed(s, 1, [d])[0]),
                    ]
                    for s in range(a.reps)
                ]
            )
            settled = read[:, 2] != "U"
            for name, col in (("no edge rule", 0), ("edge rule", 1)):
                agree = (
                    float((read[settled, col] == read[settled, 2]).mean()) if settled.any() else float("nan")
                )
                opposite = float(((read[:, col] != "U") & settled & (read[:, col] != read[:, 2])).mean())
                loose = float(((read[:, col] == "N") & (read[:, 2] == "U")).mean())
                print(
                    f"{n} units  difference {d:+5.1f}  gate, {name:12s}: NOT WORSE where compare UNDECIDED "
                    f"{loose:.2f} · agrees where compare settles {agree:.2f} (compare settles "
                    f"{settled.mean():.2f}) · opposite verdicts {opposite:.2f}"
                )
    finally:
        planning.SpendingTable = table  # type: ignore[misc]
    return 0


if __name__ == "__main__":
    sys.exit(main())
