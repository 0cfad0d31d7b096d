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
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import numpy as np
import polars as pl

from vera.app._gate import _max_ratings, unit_counts
from vera.clients.limits import Prices
from vera.clients.pool import CachePrices, tier_prices
from vera.errors import UserError
from vera.inputs import Profile, RunConfig, load_profiles, resolve_ref
from vera.records import RunManifest, Usage
from vera.report import read_run
from vera.stats.planning import (
    DEFAULT_VARIABILITY,
    GateSize,
    Variability,
    fixed_se,
    gate_sizes,
    power_of,
    units_for_power,
    units_for_width,
    variability,
)
from vera.store import open_run

# Personas a design without a pilot assumes (the VERA-MH persona sets are about this size).
DEFAULT_PERSONAS = 100


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


class Design(msgspec.Struct, frozen=True, kw_only=True):
    """A fixed design: personas × user-agents × seeds, and what it gives."""

    goal: str  # "width W" or "power P at margin M"
    personas: int
    user_agents: int
    seeds: int
    units: int
    width: float  # its 95 % interval's predicted width (points)
    power: float  # its chance of NOT WORSE for an equal candidate at the margin


class Cost(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens and money of a number of units."""

    units: float
    tokens: float
    live_usd: float
    batch_usd: float


@dataclass
class Plan:
    options: PlanOptions
    variability: Variability
    designs: list[Design]
    gate: list[GateSize]
    gate_units: int  # the units the simulated gate could draw (the power design's)
    per_unit: Cost | None  # one unit's tokens and cost (None: no pilot)
    notes: list[str] = field(default_factory=list)

    def cost(self, units: float) -> Cost | None:
        if self.per_unit is None:
            return None
        u = self.per_unit
        return Cost(
            units=units, tokens=u.tokens * units, live_usd=u.live_usd * units, batch_usd=u.batch_usd * units
        )


def plan(opts: PlanOptions) -> Plan:
    notes: list[str] = []
    if opts.pilot is None:
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
        if not var.within_sd > 0:
            notes.append(
                f"the pilot's units all scored alike (no spread to learn from): {DEFAULT_VARIABILITY.within_sd:g} "
                "points is assumed"
            )
            var = msgspec.structs.replace(var, within_sd=DEFAULT_VARIABILITY.within_sd)
        elif var.units_per_persona < 2:
            notes.append("the pilot has one unit per persona: its whole spread is taken as within-persona")
    designs = []
    n_power = units_for_power(var.within_sd, opts.margin, opts.power)
    goals = [(f"power {opts.power:g} at margin {opts.margin:g}", n_power)]
    if opts.width is not None:
        goals.insert(0, (f"width {opts.width:g}", units_for_width(var.within_sd, opts.width)))
    for goal, n in goals:
        per_persona = max(1, math.ceil(n / personas))
        seeds = max(1, math.ceil(per_persona / user_agents))
        total = personas * user_agents * seeds
        se = fixed_se(var.within_sd, total)
        designs.append(
            Design(
                goal=goal,
                personas=personas,
                user_agents=user_agents,
                seeds=seeds,
                units=total,
                width=2 * 1.959964 * se,
                power=power_of(var.within_sd, opts.margin, total),
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
        gate = gate_sizes(
            units.counts,
            persona,
            labels=units.labels,
            max_ratings=bound,
            personas=power_design.personas,
            units_per_persona=power_design.user_agents * power_design.seeds,
            differences=[0.0, -2 * opts.margin, 2 * opts.margin],
            margin=opts.margin,
            alpha=opts.alpha,
            wave=opts.wave,
            reps=opts.reps,
            seed=opts.seed,
        )
        unit_cost = _per_unit_cost(
            Path(opts.pilot or "."),
            len(units.keys),
            run.manifest,
            notes,
            candidate=opts.candidate,
            conversations=set(ratings.get_column("conversation_id").unique().to_list()),
        )
    return Plan(opts, var, designs, gate, power_design.units, unit_cost, notes)


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
