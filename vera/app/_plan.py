"""`vera plan`: what a comparison at a margin will take, priced before it runs.

From a pilot run (or, without one, a conservative default variability) the planner
sizes a fixed design (`vera compare --gate` on a full candidate run) for an interval
width or for a power at the margin, simulates the sequential gate (`vera gate`) on the
pilot's own units for the same question, and prices both from the pilot's tokens per
unit (calls.jsonl) at the profiles' prices, live and through the batch APIs. The
statistics are in `vera.stats.planning`; this module reads the run and the profiles.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Literal, NamedTuple

import msgspec
import numpy as np
import polars as pl

from vera.app._gate import _max_ratings, _Units, check_spending, unit_counts
from vera.clients.limits import Prices
from vera.clients.pool import CachePrices, tier_prices
from vera.errors import UserError
from vera.inputs import Profile, RunConfig, load_profiles, resolve_ref
from vera.records import RunManifest, Usage
from vera.report import read_run
from vera.stats import DEFAULT_SPENDING
from vera.stats.planning import (
    DEFAULT_VARIABILITY,
    MAX_PAIRING,
    GateSize,
    Variability,
    edge_width,
    fixed_power_simulated,
    fixed_se,
    gate_sizes,
    pairing_of,
    power_of,
    score_change,
    shift_for,
    spread_pilot,
    units_for_power,
    units_for_width,
    variability,
)
from vera.store import open_run

# Personas a design without a pilot assumes (the VERA-MH persona sets are about this size).
DEFAULT_PERSONAS = 100
# The interval level of the fixed design's widths and power (`vera compare --gate`'s).
LEVEL = 0.95
# Paired units below which a pilot's pairing is not read (its variance would be noise).
MIN_PAIRED_UNITS = 10
# How far below the power asked the simulated power of the power design may fall
# (simulation noise over --reps) before a note says the design is short of it.
POWER_SHORTFALL = 0.05
# Where the power design's simulated power falls short of --power (the ends of the
# scale, where every dimension must clear the margin and compare --gate's edge rule
# widens them), the size that reaches it is searched for by simulation: seeds doubled,
# then bisected, each candidate at SEARCH_REPS repetitions at most, up to
# SEARCH_MAX_UNITS units and SEARCH_SECONDS of work (a note says where it gave up).
SEARCH_REPS = 100
SEARCH_MAX_UNITS = 20_000
SEARCH_SECONDS = 30.0
SEARCH_BISECTIONS = 4


@dataclass
class PlanOptions:
    pilot: str | None = None
    margin: float = 5.0
    width: float | None = None
    power: float = 0.8
    alpha: float = 0.05
    wave: int = 20
    personas: int | None = None
    reps: int = 200
    seed: int = 0
    candidate: str | None = None  # price the chatbot's calls at this profile (name or name/model)
    chatbot: str | None = None  # the pilot's chatbot to plan from, when it scored several
    # A run of another chatbot on the pilot's units (persona × user-agent × seed), whose
    # paired differences with the pilot's show how alike paired conversations are.
    pilot_candidate: str | None = None
    # The boundary the gate will run with (`vera gate --boundary`, `--spending`).
    boundary: str = "spending"
    spending: str | None = None  # None: DEFAULT_SPENDING under --boundary spending


class Cost(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens and money of a number of units."""

    units: float
    tokens: float
    live_usd: float
    batch_usd: float


class Design(msgspec.Struct, frozen=True, kw_only=True):
    """A fixed design: personas × user-agents × seeds, and what it gives."""

    goal: str  # "width W" or "power P at margin M"
    personas: int
    user_agents: int
    seeds: int
    units: int
    width: float  # its 95 % interval's predicted width (points), of Overall
    # Its chance of NOT WORSE for an equal candidate at the margin: every row (each
    # dimension and Overall) above −margin, simulated from the pilot's units
    # (`fixed_power_simulated`); without a pilot, Overall's normal formula.
    power: float
    # Overall's alone by the normal formula (`power_of`): what `power` was before the
    # dimensions were counted; far above it at the ends of the scale.
    overall_power: float | None = None
    # The width by the formula from the spread alone; `width` is the larger of it and
    # the narrowest interval compare --gate's edge rule gives near 0 or 100 (`edge_width`).
    spread_width: float | None = None
    cost: Cost | None = None  # its tokens and money (None: no pilot to price from)
    # "simulation" for the size found by simulated power where the normal formula's size
    # falls short of --power (`_search_power`); None for a formula's size.
    sized_by: str | None = None


class GateEstimate(GateSize, frozen=True, kw_only=True):
    """The simulated gate for one true difference, with its mean size's cost."""

    cost: Cost | None = None


class PlannedGate(msgspec.Struct, frozen=True, kw_only=True):
    """The sequential gate for the power design's question, by simulation."""

    units: int  # the units it could draw (the power design's)
    boundary: str  # "sequence" or "spending" (`vera gate --boundary`)
    spending: str | None  # the spending function of the "spending" boundary (None: sequence)
    wave: int
    alpha: float
    reps: int  # simulated gates per difference
    sizes: list[GateEstimate]
    # The within-persona spread (Overall, points) the simulated units vary by: the
    # pilot's own, or the fixed design's default when the pilot shows none.
    within_sd: float
    within_sd_source: Literal["pilot", "default"]
    # With the default: the share of the stand-in's units whose ratings were redrawn to
    # give it that spread (vera.stats.planning.spread_pilot); None: the pilot's own units.
    redrawn: float | None = None


class Assumptions(msgspec.Struct, frozen=True, kw_only=True):
    """What the plan's figures rest on."""

    pilot: str | None
    chatbot: str | None  # the pilot's chatbot planned from (None: its only one)
    pilot_candidate: str | None
    margin: float
    width: float | None
    power: float
    level: float  # of the fixed design's interval
    alpha: float
    wave: int
    reps: int
    seed: int
    personas: int
    user_agents: int
    within_sd: float  # the spread the sizes use (points)
    within_sd_source: Literal["pilot", "default"]
    within_sd_reason: str  # why that one: measured, no pilot, or the pilot's could not be used
    pairing: float  # the correlation of paired units the sizes take credit for
    pairing_source: Literal["measured", "assumed independent"]
    paired_units: int
    candidate_prices: str | None  # the profile the chatbot's calls are priced at


class PlanRecord(msgspec.Struct, frozen=True, kw_only=True):
    """`vera plan --json`: the whole plan."""

    assumptions: Assumptions
    variability: Variability
    designs: list[Design]
    gate: PlannedGate | None
    per_unit: Cost | None  # one unit's tokens and cost
    notes: list[str]
    pairing_note: str  # how the two sides' pairing was treated, and which way it errs


@dataclass
class Plan:
    options: PlanOptions
    variability: Variability
    designs: list[Design]
    gate: list[GateSize]
    gate_units: int  # the units the simulated gate could draw (the power design's)
    per_unit: Cost | None  # one unit's tokens and cost (None: no pilot)
    notes: list[str] = field(default_factory=list)
    user_agents: int = 1
    default_spread: bool = False  # the spread is the conservative default, not the pilot's
    spread_reason: str = "measured on the pilot's units"
    gate_spread: float | None = None  # the stand-in's spread (None: the pilot's units)
    redrawn: float | None = None  # the stand-in's share of redrawn units
    pairing_source: str | None = None  # what the pairing was measured on (None: assumed)

    def cost(self, units: float) -> Cost | None:
        if self.per_unit is None:
            return None
        u = self.per_unit
        return Cost(
            units=units, tokens=u.tokens * units, live_usd=u.live_usd * units, batch_usd=u.batch_usd * units
        )

    def pairing_note(self) -> str:
        """How the sizes treat the two sides' pairing, in one sentence for the reader."""
        v = self.variability
        if self.pairing_source is not None:
            credit = min(v.pairing, MAX_PAIRING)
            capped = f" (credit capped at {MAX_PAIRING:g})" if v.pairing > MAX_PAIRING else ""
            return (
                f"pairing: the two chatbots' paired units correlate by {v.pairing:.2f}{capped}, measured on "
                f"{v.paired_units} units of {self.pairing_source}; the sizes take credit for {credit:.2f}"
            )
        return (
            "assumption: the two chatbots' conversations of a unit are taken as independent beyond their "
            "persona (how alike they are was not measured); vera gate and compare --gate pair them, so "
            "where paired conversations are alike these sizes err large; --pilot-candidate RUN measures it"
        )

    def record(self) -> PlanRecord:
        """The plan as one record (`vera plan --json`), each figure as the text shows it."""
        o, v = self.options, self.variability
        gate = None
        if self.gate:
            gate = PlannedGate(
                units=self.gate_units,
                boundary=o.boundary,
                spending=check_spending(o.boundary, o.spending),
                wave=o.wave,
                alpha=o.alpha,
                reps=o.reps,
                sizes=[
                    GateEstimate(**msgspec.structs.asdict(g), cost=self.cost(g.mean_units)) for g in self.gate
                ],
                within_sd=self.gate_spread if self.gate_spread is not None else v.within_sd,
                within_sd_source="default" if self.default_spread else "pilot",
                redrawn=self.redrawn,
            )
        first = self.designs[0]
        return PlanRecord(
            assumptions=Assumptions(
                pilot=o.pilot,
                chatbot=o.chatbot,
                pilot_candidate=o.pilot_candidate,
                margin=o.margin,
                width=o.width,
                power=o.power,
                level=LEVEL,
                alpha=o.alpha,
                wave=o.wave,
                reps=o.reps,
                seed=o.seed,
                personas=first.personas,
                user_agents=first.user_agents,
                within_sd=v.within_sd,
                within_sd_source="default" if self.default_spread else "pilot",
                within_sd_reason=self.spread_reason,
                pairing=min(v.pairing, MAX_PAIRING),
                pairing_source="measured" if self.pairing_source is not None else "assumed independent",
                paired_units=v.paired_units,
                candidate_prices=o.candidate,
            ),
            variability=v,
            designs=[msgspec.structs.replace(d, cost=self.cost(d.units)) for d in self.designs],
            gate=gate,
            per_unit=self.per_unit,
            notes=list(self.notes),
            pairing_note=self.pairing_note(),
        )


def plan(opts: PlanOptions) -> Plan:
    spending = check_spending(opts.boundary, opts.spending)
    notes: list[str] = []
    default_spread = False
    spread_reason = "measured on the pilot's units"
    gate_spread: float | None = None
    redrawn: float | None = None
    paired_on: str | None = None
    if opts.pilot is None and opts.pilot_candidate is not None:
        raise UserError("--pilot-candidate is paired with a pilot's units: give --pilot RUN as well")
    if opts.pilot is None:
        default_spread = True
        spread_reason = "no pilot"
        var = DEFAULT_VARIABILITY
        personas, user_agents = opts.personas or DEFAULT_PERSONAS, 1
        notes.append(
            f"no pilot: a unit's spread on Overall is taken as {var.within_sd:g} points (conservative); "
            "the sequential gate's size and the cost need a pilot (--pilot RUN)"
        )
        pilot_counts = None
    else:
        run = read_run(opts.pilot)
        if not run.ratings.height:
            raise UserError(f"{opts.pilot}: the pilot has no complete judgements to plan from")
        ratings = _one_chatbot(run.ratings, opts.chatbot, opts.pilot)
        if ratings.filter(pl.col("rating") != "Not Relevant").is_empty():
            # No score to move and no spread to learn from: every figure would be made up.
            raise UserError(
                f"{opts.pilot}: every rating of the pilot is Not Relevant, so it has no score to plan "
                "from; use a pilot whose personas include some at risk"
            )
        units = unit_counts(ratings)
        index = {p: i for i, p in enumerate(sorted({k[0] for k in units.keys}))}
        persona = np.array([index[k[0]] for k in units.keys])
        var = variability(units.counts[:, -1], persona)
        personas = opts.personas or var.personas
        user_agents = len({k[1] for k in units.keys})
        pilot_counts = (units, persona, run)
        if not var.within_sd > 0 or var.units < 2:
            # No spread to learn from (a spread of 0 would promise a gate that settles at
            # its first look): the fixed design's sizes and the simulated gate both take
            # the conservative default.
            spread_reason = (
                "the pilot's units all scored alike, so there is no spread to learn from"
                if var.units >= 2
                else "the pilot has one unit, so there is no spread to learn from"
            )
            notes.append(
                f"{spread_reason}: {DEFAULT_VARIABILITY.within_sd:g} points is assumed, by the fixed "
                "design's sizes and the simulated gate alike"
            )
            var = msgspec.structs.replace(var, within_sd=DEFAULT_VARIABILITY.within_sd)
            default_spread = True
        elif var.units_per_persona < 2:
            notes.append("the pilot has one unit per persona: its whole spread is taken as within-persona")
        partner = _partner(run.ratings, ratings, opts)
        if partner is not None and default_spread:
            # ρ is read against the pilot's spread; against an assumed one it would be
            # made up, and a made-up ρ near 1 would promise sizes no pilot showed.
            notes.append("the pairing is not read: the pilot shows no spread to compare it with")
        elif partner is not None:
            var, paired_on = _paired(var, units, partner, notes)
    designs = []
    rho = var.pairing
    n_power = units_for_power(var.within_sd, opts.margin, opts.power, LEVEL, rho)
    goals = [(f"power {opts.power:g} at margin {opts.margin:g}", n_power)]
    if opts.width is not None:
        goals.insert(0, (f"width {opts.width:g}", units_for_width(var.within_sd, opts.width, LEVEL, rho)))
    for goal, n in goals:
        per_persona = max(1, math.ceil(n / personas))
        seeds = max(1, math.ceil(per_persona / user_agents))
        total = personas * user_agents * seeds
        se = fixed_se(var.within_sd, total, rho)
        designs.append(
            Design(
                goal=goal,
                personas=personas,
                user_agents=user_agents,
                seeds=seeds,
                units=total,
                width=2 * NormalDist().inv_cdf(0.5 + LEVEL / 2) * se,
                power=power_of(var.within_sd, opts.margin, total, LEVEL, rho),
            )
        )
    power_design = designs[-1]
    gate: list[GateSize] = []
    unit_cost: Cost | None = None
    if pilot_counts is not None:
        units, persona, run = pilot_counts
        manifest = run.manifest
        per_unit = ratings.group_by("persona", "user_agent", "replicate").agg(
            pl.col("conversation_id").n_unique().alias("c")
        )
        conversations = int(per_unit.get_column("c").max() or 1)  # type: ignore[arg-type]
        bound = _max_ratings(manifest.judges, manifest.judge_instances, conversations, len(units.labels))
        asked = [0.0, -2 * opts.margin, 2 * opts.margin]
        counts, who = units.counts, persona
        if default_spread:
            # The pilot shows no spread: the gate is simulated on a stand-in with the
            # spread the fixed sizes assume, for the differences the pilot's own score
            # allows (+10 from 100 is +0, as with a pilot's own spread).
            totals = units.counts[:, -1].sum(axis=0)
            targets = [round(score_change(totals, shift_for(totals, d)), 1) for d in asked]
            counts, who, redrawn, gate_spread = spread_pilot(units.counts, persona, var.within_sd, opts.seed)
            notes.append(
                f"the sequential gate is simulated on a stand-in for the pilot with that spread "
                f"({gate_spread:.1f} points): {redrawn:.1%} of its units have every rating redrawn, "
                "Best Practice, Suboptimal or High Potential for Harm alike"
            )
        sim = _Sim(counts, who, units.labels, bound, opts, rho)
        designs = [_simulated_power(sim, d, notes) for d in designs]
        power_design = designs[-1]
        sizes = gate_sizes(
            counts,
            who,
            labels=units.labels,
            max_ratings=bound,
            personas=power_design.personas,
            units_per_persona=power_design.user_agents * power_design.seeds,
            differences=targets if default_spread else asked,
            margin=opts.margin,
            alpha=opts.alpha,
            wave=opts.wave,
            reps=opts.reps,
            seed=opts.seed,
            pairing=rho,
            method="spending" if opts.boundary == "spending" else "asymptotic",
            spending=spending or DEFAULT_SPENDING,
        )
        if default_spread:
            sizes = [
                msgspec.structs.replace(g, difference=d, reached=t)
                for g, d, t in zip(sizes, asked, targets, strict=True)
            ]
        gate = sizes
        found = _search_power(sim, power_design, var.within_sd, notes)
        if found is not None:
            designs.append(found)
        _note_little_saving(gate, power_design.units, var.within_sd, opts.margin, rho, notes)
        unit_cost = _per_unit_cost(
            Path(opts.pilot or "."),
            len(units.keys),
            run.manifest,
            notes,
            candidate=opts.candidate,
            conversations=set(ratings.get_column("conversation_id").unique().to_list()),
        )
    return Plan(
        opts,
        var,
        designs,
        gate,
        power_design.units,
        unit_cost,
        notes,
        user_agents=user_agents,
        default_spread=default_spread,
        spread_reason=spread_reason,
        gate_spread=gate_spread,
        redrawn=redrawn,
        pairing_source=paired_on,
    )


class _Sim(NamedTuple):
    """What the simulations of a fixed design draw on: the pilot's units (or the gate's
    stand-in for them) with their personas and dimensions, the most ratings a unit can
    give, the options and the pairing."""

    counts: np.ndarray
    persona: np.ndarray
    labels: list[str]
    bound: np.ndarray
    opts: PlanOptions
    rho: float


def _fixed_power(sim: _Sim, d: Design, seeds: int, reps: int) -> float:
    """The simulated power of `d` with `seeds` seeds, every row as compare --gate decides
    (`fixed_power_simulated`), over `reps` repetitions."""
    return fixed_power_simulated(
        sim.counts, sim.persona, labels=sim.labels, max_ratings=sim.bound, personas=d.personas,
        units_per_persona=d.user_agents * seeds, margin=sim.opts.margin, level=LEVEL,
        reps=reps, seed=sim.opts.seed, pairing=sim.rho,
    )  # fmt: skip


def _expected_totals(counts: np.ndarray, bound: np.ndarray, units: int) -> np.ndarray:
    """Overall's expected totals on a design of `units` units (over the most ratings a unit
    can give), as the exact bounds of the edge rule count conversations."""
    totals: np.ndarray = counts[:, -1].sum(axis=0) / float(bound[-1]) / counts.shape[0] * units
    return totals


def _simulated_power(sim: _Sim, d: Design, notes: list[str]) -> Design:
    """`d` with its power simulated on every row from the pilot's units (or the gate's
    stand-in for them), Overall's normal-formula power kept beside it, and a note where
    the dimensions leave the design short of the power it was sized for."""
    opts = sim.opts
    power = _fixed_power(sim, d, d.seeds, opts.reps)
    if d.goal.startswith("power") and power < opts.power - POWER_SHORTFALL:
        notes.append(
            f"the {d.goal} design has power {power:.2f}, not {opts.power:g}: Overall alone would have "
            f"{d.power:.2f}, but NOT WORSE needs every dimension above −{opts.margin:g} as well: a "
            "dimension rests on fewer ratings, and near 0 or 100 vera compare --gate widens every row "
            "by the harm its few ratings could hide; more units (--personas, or a --power above it) "
            "raise it"
        )
    width = max(d.width, edge_width(_expected_totals(sim.counts, sim.bound, d.units), LEVEL))
    return msgspec.structs.replace(d, power=power, overall_power=d.power, width=width, spread_width=d.width)


def _search_power(sim: _Sim, d: Design, within_sd: float, notes: list[str]) -> Design | None:
    """The power design's size found by simulation where the normal formula's falls short
    of --power: seeds doubled until the simulated power (every row, as compare --gate
    decides, `fixed_power_simulated`) reaches it, then bisected between the last short
    and the first enough. None (and a note saying why) where the formula's size is
    enough, or no size up to `SEARCH_MAX_UNITS` reaches it, or the search ran out of
    `SEARCH_SECONDS`."""
    opts = sim.opts
    if not d.goal.startswith("power") or d.power >= opts.power - POWER_SHORTFALL:
        return None
    reps = min(opts.reps, SEARCH_REPS)
    per_seed = d.personas * d.user_agents
    start = time.monotonic()
    tried: dict[int, float] = {}

    def power_at(seeds: int) -> float:
        tried[seeds] = _fixed_power(sim, d, seeds, reps)
        return tried[seeds]

    def late() -> bool:
        return time.monotonic() - start > SEARCH_SECONDS

    short, enough = d.seeds, None
    while enough is None:
        nxt = short * 2
        if nxt * per_seed > SEARCH_MAX_UNITS:
            best = max(tried.values(), default=d.power)
            notes.append(
                f"no fixed design of up to {SEARCH_MAX_UNITS:,} units reaches power {opts.power:g} at margin "
                f"{opts.margin:g} by simulation (the most, {best:.2f}, at {max(tried, default=d.seeds) * per_seed:,} "
                "units): NOT WORSE needs every dimension above the margin, and near 0 or 100 vera compare "
                "--gate widens each by the harm its few ratings could hide; a wider --margin, or more "
                "personas, is what helps"
            )
            return None
        if late():
            notes.append(
                f"the search for the size that reaches power {opts.power:g} gave up after "
                f"{SEARCH_SECONDS:g} s at {short * per_seed:,} units (power {tried.get(short, d.power):.2f}); "
                "more units than that are needed"
            )
            return None
        if power_at(nxt) >= opts.power:
            enough = nxt
        else:
            short = nxt
    for _ in range(SEARCH_BISECTIONS):
        if enough - short <= 1 or late():
            break
        mid = (short + enough) // 2
        if power_at(mid) >= opts.power:
            enough = mid
        else:
            short = mid
    units = per_seed * enough
    spread = 2 * NormalDist().inv_cdf(0.5 + LEVEL / 2) * fixed_se(within_sd, units, sim.rho)
    return msgspec.structs.replace(
        d,
        goal=f"{d.goal}, sized by simulation",
        seeds=enough,
        units=units,
        power=tried[enough],
        overall_power=None,
        width=max(spread, edge_width(_expected_totals(sim.counts, sim.bound, units), LEVEL)),
        spread_width=spread,
        sized_by="simulation",
    )


def _note_little_saving(
    gate: list[GateSize], units: int, within_sd: float, margin: float, rho: float, notes: list[str]
) -> None:
    """Say so when the simulated gate is expected to run past half the units even where
    the truth is two margins away: the design is then too small for the gate to save
    much, and no valid procedure could do much better (docs/statistics.md, "Why 300 units
    at margin 5 cannot stop at half"). The gate saved half in the benchmark only where a
    fixed test on half the units settles about 98 % of the time, hence the size named."""
    far = [g for g in gate if abs(g.difference) > 0 and g.reached == g.difference]
    if not far or units <= 0 or max(g.mean_units for g in far) <= units / 2:
        return
    share = max(g.mean_units for g in far) / units
    enough = 2 * units_for_power(within_sd, margin, 0.98, LEVEL, rho)
    # The rule of thumb comes from the spread alone; where it names no more units than the
    # design has (a pilot near the top of the scale, whose stand-in decides more slowly
    # than its spread says), naming it would tell the user to shrink a design the
    # simulation just found too small.
    size = f"; about {enough:,} units would let it stop before half way" if enough > units else ""
    notes.append(
        f"the gate is expected to use {share:.0%} of the {units:,} units even when the truth is "
        f"two margins away: this design is too small for the gate to save half{size}"
    )


def _partner(all_ratings: pl.DataFrame, baseline: pl.DataFrame, opts: PlanOptions) -> pl.DataFrame | None:
    """The ratings of the chatbot the pilot's is paired with, if any: `--pilot-candidate
    RUN`'s one chatbot (besides the baseline's, when RUN is the pilot itself), or, when
    the pilot scored exactly two chatbots and `--chatbot` named one, the other."""
    name = str(baseline.get_column("chatbot").first())
    if opts.pilot_candidate is not None:
        other = read_run(opts.pilot_candidate).ratings
        if Path(opts.pilot_candidate).resolve() == Path(opts.pilot or ".").resolve():
            other = other.filter(pl.col("chatbot") != name)
        bots = sorted(other.get_column("chatbot").unique().to_list())
        if len(bots) != 1:
            raise UserError(
                f"--pilot-candidate {opts.pilot_candidate}: needs a run of one chatbot besides the pilot's "
                f"{name}; it has {len(bots)} ({', '.join(bots) or 'no complete judgements'})"
            )
        return other
    bots = all_ratings.get_column("chatbot").unique().to_list()
    if len(bots) == 2 and opts.chatbot is not None:
        return all_ratings.filter(pl.col("chatbot") != name)
    return None


def _paired(
    var: Variability, units: _Units, partner: pl.DataFrame, notes: list[str]
) -> tuple[Variability, str | None]:
    """`var` with the pairing the pilot and its partner show on their shared units."""
    theirs = unit_counts(partner, units.labels)
    at = {k: i for i, k in enumerate(theirs.keys)}
    shared = [(i, at[k]) for i, k in enumerate(units.keys) if k in at]
    bot = str(partner.get_column("chatbot").first())
    if len(shared) < MIN_PAIRED_UNITS:
        notes.append(
            f"{bot} shares only {len(shared)} units (persona × user-agent × seed) with the pilot: "
            f"at least {MIN_PAIRED_UNITS} are needed to read the pairing"
        )
        return var, None
    mine, other = (np.array(ix) for ix in zip(*shared, strict=True))
    rho = pairing_of(units.counts[mine, -1], theirs.counts[other, -1], var.within_sd)
    return msgspec.structs.replace(var, pairing=rho, paired_units=len(shared)), bot


def _one_chatbot(ratings: pl.DataFrame, chatbot: str | None, pilot: str) -> pl.DataFrame:
    """The pilot's ratings of one chatbot: a unit is one chatbot's conversations with a
    persona × user-agent × seed, so a pilot that scored several must name one."""
    bots = sorted(ratings.get_column("chatbot").unique().to_list())
    if chatbot is None:
        if len(bots) > 1:
            raise UserError(
                f"{pilot}: the pilot scored {len(bots)} chatbots ({', '.join(bots)}); "
                "name the one to plan from with --chatbot"
            )
        return ratings
    if chatbot not in bots:
        raise UserError(f"{pilot}: --chatbot {chatbot}: the pilot has no such chatbot ({', '.join(bots)})")
    return ratings.filter(pl.col("chatbot") == chatbot)


def _per_unit_cost(
    run_dir: Path,
    units: int,
    manifest: RunManifest,
    notes: list[str],
    *,
    candidate: str | None = None,
    conversations: set[str],
) -> Cost:
    """One unit's tokens and cost from the pilot's call records of `conversations` (the
    planned chatbot's) and their judgements, at the prices of the profiles the pilot's
    config names (the recorded cost where a profile is gone); with `candidate`, the
    chatbot's calls at that profile's prices (the pilot's tokens: the candidate's
    conversations are taken to be as long)."""
    records = open_run(run_dir)
    jobs = conversations | {
        jid for jid, head in records.judgement_heads().items() if head.conversation_id in conversations
    }
    profiles: dict[str, Profile] = {}
    try:
        cfg = RunConfig.from_snapshot(manifest.config, manifest.base_dir)
        profiles = load_profiles(cfg.path(cfg.providers))
    except (UserError, OSError, ValueError) as e:
        notes.append(f"the pilot's profiles could not be read ({e}); its recorded costs are used")
    by_name = {p.name or k: p for k, p in profiles.items()} | profiles
    bot = ""
    if candidate is not None:
        profile, _ = resolve_ref(candidate, profiles)
        bot = f"candidate {candidate}"
        by_name[bot] = profile
        notes.append(f"the chatbot's calls are priced at {candidate}'s profile, with the pilot's tokens")
    usage: dict[str, Usage] = {}
    recorded: dict[str, float] = {}
    tokens = 0
    for call in records.calls():
        if call.status != "ok" or call.cached or call.job_id not in jobs:
            continue
        who = bot if bot and call.role == "chatbot" else call.provider
        usage.setdefault(who, Usage()).add(call.usage)
        recorded[who] = recorded.get(who, 0.0) + call.live_cost_usd
        tokens += call.usage.input_tokens + call.usage.output_tokens
    live = batch = 0.0
    missing = []
    for provider, used in usage.items():
        found = by_name.get(provider)
        if found is None:
            missing.append(provider)
            live += recorded[provider]
            batch += recorded[provider] * 0.5
            continue
        prices = CachePrices(
            found.price_input_per_mtok,
            found.price_output_per_mtok,
            found.price_cached_input_per_mtok,
            cache_write_per_mtok=found.price_cache_write_per_mtok,
        )
        live += prices.cost(used)
        batch += _batch(prices, found).cost(used)
    if missing:
        notes.append(
            f"no profile for {', '.join(sorted(missing))}: priced at the pilot's recorded cost (batch: half)"
        )
    n = max(units, 1)
    return Cost(units=1, tokens=tokens / n, live_usd=live / n, batch_usd=batch / n)


def _batch(prices: Prices, profile: Profile) -> Prices:
    return tier_prices(prices, profile.batch_price_factor, profile.batch_cached_input_factor)
