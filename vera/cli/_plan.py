"""`vera plan`: size and price a comparison before running it (vera.app.plan_comparison)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import msgspec

from vera.app import Cost, PlanOptions, PlanRecord, plan_comparison
from vera.cli._door import Number, alpha_option, boundary_options, margin_option, seed_option, wave_option
from vera.ranges import LEVEL, POSITIVE_POINTS
from vera.stats import DEFAULT_SPENDING
from vera.stats.planning import GateSize
from vera.store import atomic_write, check_output


@click.command()
@click.option(
    "--pilot",
    type=click.Path(file_okay=False, exists=True),
    help="A run of the baseline (or a chatbot like it) to read variability and tokens from. "
    "Without it: a conservative spread of 30 points, and no gate size or cost.",
)
@margin_option(points=POSITIVE_POINTS)
@click.option(
    "--width",
    type=Number(POSITIVE_POINTS, "points"),
    help="Also size a fixed design for this 95 % interval width.",
)
@click.option(
    "--power",
    type=Number(LEVEL, "power"),
    default=0.8,
    show_default=True,
    help="Chance a fixed design calls an equal candidate NOT WORSE.",
)
@alpha_option("The gate's α.")
@wave_option("The gate's units per wave.")
@boundary_options()
@click.option(
    "--personas", type=click.IntRange(min=2), help="Personas of the design (default: the pilot's, or 100)."
)
@click.option(
    "--reps",
    type=click.IntRange(min=10),
    default=200,
    show_default=True,
    help="Simulated gates per difference.",
)
@seed_option("Seed of the simulation.")
@click.option(
    "--candidate",
    help="Price the chatbot's calls at this profile (name or name/model), with the pilot's tokens.",
)
@click.option("--chatbot", help="The pilot's chatbot to plan from (needed when the pilot scored several).")
@click.option(
    "--pilot-candidate",
    type=click.Path(file_okay=False, exists=True),
    metavar="RUN",
    help="A run of another chatbot on the pilot's own units (e.g. a vera gate run): their paired "
    "differences show how alike paired conversations are, and the sizes take credit for it. "
    "A pilot of two chatbots pairs them when --chatbot names the baseline.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    is_flag=False,
    flag_value="-",
    metavar="[FILE|-]",
    help="Write the whole plan as JSON to FILE (alone, or -: to standard output instead of the text).",
)
def plan(json_path: str | None, **options: Any) -> None:
    """Plan a comparison at a margin before spending on it: the personas × user-agents ×
    seeds a fixed design needs (for --width, and for --power at --margin), the expected
    and 90th-percentile size of a sequential `vera gate` for the same question
    (simulated from the pilot's units; where they all scored alike, from a stand-in with
    the fixed design's assumed spread), and what each costs in tokens and money at the
    profiles' prices, live and in batch. Not `vera ratings plan` (human ratings)."""
    runs = [r for r in (options["pilot"], options["pilot_candidate"]) if r is not None]
    check_output(json_path, "--json", runs=runs)
    # The gate's default boundary (a plan resumes nothing: no recorded one to keep).
    options["boundary"] = options["boundary"] or "spending"
    record = plan_comparison(PlanOptions(**options)).record()
    if json_path is not None:
        text = msgspec.json.format(msgspec.json.encode(record)) + b"\n"
        if json_path == "-":
            click.echo(text.decode(), nl=False)
            return
        atomic_write(Path(json_path), text, what="the plan")
    _print(record)
    if json_path is not None:
        click.echo(f"plan written to {json_path}")


def _print(p: PlanRecord) -> None:
    v, a = p.variability, p.assumptions
    if v.units and a.within_sd_source == "default":
        # Not the pilot's: say so where the spread is shown, not only in a note below.
        click.echo(
            f"pilot: {v.units} units, {v.personas} personas; a unit's spread on Overall {v.within_sd:.1f} "
            f"points within a persona, assumed ({a.within_sd_reason}); {v.between_sd:.1f} between "
            "personas' means"
        )
    elif v.units:
        click.echo(
            f"pilot: {v.units} units, {v.personas} personas; a unit's spread on Overall "
            f"{v.within_sd:.1f} points within a persona ({v.between_sd:.1f} between personas' means)"
        )
    for note in p.notes:
        click.echo(f"note: {note}")
    click.echo("fixed design (vera run + vera compare --gate):")
    for d in p.designs:
        line = (
            f"  {d.goal}: {d.personas} personas × {d.user_agents} user-agents × {d.seeds} seeds = {d.units} units"
            f" · 95 % width {d.width:.1f} points · power {d.power:.2f}"
        )
        if d.overall_power is not None and abs(d.overall_power - d.power) > 0.05:
            # The dimensions decide (at the ends of the scale): say what Overall alone promised.
            line += f" (Overall alone {d.overall_power:.2f}; every dimension must clear the margin)"
        click.echo(line + _money(d.cost))
    if p.gate is not None:
        # The default gate's line names no boundary; another names itself as typed.
        bound = " --boundary sequence" if p.gate.boundary == "sequence" else ""
        if p.gate.spending not in (None, DEFAULT_SPENDING):
            bound = f" --spending {p.gate.spending}"
        spread = (
            f", simulated with the assumed spread ({p.gate.within_sd:.1f} points)"
            if p.gate.within_sd_source == "default"
            else ""
        )
        click.echo(
            f"sequential gate (vera gate{bound}, waves of {a.wave}, α {a.alpha:g}) on {p.gate.units} units"
            f"{spread}:"
        )
        for g in p.gate.sizes:
            verdicts = f"WORSE {g.worse:.0%} / NOT WORSE {g.not_worse:.0%} / UNDECIDED {g.undecided:.0%}"
            click.echo(
                f"  true difference {_signed(g.difference, 'g')}{_reach(g)}: {g.mean_units:.0f} units on average, "
                f"90th percentile {g.p90_units:.0f} · {verdicts}" + _money(g.cost, "on average")
            )
    click.echo(p.pairing_note)


def _signed(x: float, spec: str) -> str:
    """`x` with its sign always shown, a negative one as the minus sign (U+2212) the
    rest of vera's user text writes: +10, −10, −3.5."""
    return format(x, "+" + spec).replace("-", "\u2212")


def _reach(g: GateSize) -> str:
    """What a pilot scoring near 0 or 100 lets a difference become (empty: all of it).
    The words follow the difference's direction: a score that cannot move that way at
    all is said plainly, not as a signed zero ("+0.0" for a drop read as a rise)."""
    if abs(g.reached - g.difference) <= 0.5:
        return ""
    if round(g.reached, 1) == 0 or (g.reached > 0) != (g.difference > 0):
        return f" (the pilot's score allows no change {'upwards' if g.difference > 0 else 'downwards'})"
    return f" (the pilot's score allows only {_signed(g.reached, '.1f')})"


def _money(cost: Cost | None, what: str = "") -> str:
    if cost is None:
        return ""
    tail = f" {what}" if what else ""
    return (
        f" · {cost.tokens / 1e6:.2f} M tokens, ${cost.live_usd:,.2f} live, ${cost.batch_usd:,.2f} batch{tail}"
    )
