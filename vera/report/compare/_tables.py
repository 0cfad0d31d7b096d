"""The tables of a comparison of runs (`vera compare`), one builder per table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from vera.inputs import tr
from vera.records import OVERALL
from vera.report.card._schema import Comparison, Difference, RunComparison, SeedAgreement
from vera.report.card._tables import Reasons, comparison_table, flag
from vera.report.shared._numbers import MISSING, num, percent_level, with_ci
from vera.report.shared._table import Table


@dataclass
class CompareTables:
    """The tables of a `vera.report.compare_runs` result, by part of the page."""

    runs: Table
    scores: list[Table]
    pairs: list[Table]
    # --by-seed: each two chatbots' differences across seeds, summarised, and seed by seed.
    across: Table | None = None
    by_seed: list[Table] = field(default_factory=list)

    def all(self) -> list[Table]:
        """In the terminal's order: the summary across seeds comes last, where a terminal
        leaves the reader after hundreds of pairs."""
        return [self.runs, *self.scores, *self.pairs, *self.by_seed, *([self.across] if self.across else [])]


def compare_tables(result: RunComparison) -> CompareTables:
    """Runs compared; overall and per-dimension scores per unit; every pair's overall
    difference, then each pair per dimension."""
    runs = Table(
        ["Run", "Offline stand-ins", "Rubric", "Personas", "Simulated-user prompts", "Judge prompts"]
    )
    for r in result.runs:
        v = r.versions
        runs.rows.append(
            [
                r.label,
                "yes" if r.offline else "no",
                *(
                    f"{v[k].name} {v[k].version} ({v[k].sha256[:12]})"
                    for k in ("rubric", "personas", "user_prompts", "judge_prompts")
                ),
            ]
        )
    units = result.units
    overall = Table(
        [
            "Chatbot",
            "Overall score [CI]",
            "Best Practice % [CI]",
            "High Potential for Harm % [CI]",
            "Conversations with any HPH % [CI]",
            "Conversations",
            "Personas",
        ],
        caption=tr("col.each_own", level=percent_level(result.bootstrap.confidence)),
    )
    for u in units:
        o = u.overall
        overall.rows.append(
            [
                u.unit,
                with_ci(o, "score"),
                with_ci(o, "pct_bp"),
                with_ci(o, "pct_hph"),
                with_ci(o, "pct_conversations_any_hph"),
                num(u.n_conversations),
                num(u.n_personas),
            ]
        )
    dims = list(dict.fromkeys(d for u in units for d in u.dimensions))
    by_dimension = Table(["Chatbot", *dims], caption="Score [CI] per dimension")
    for u in units:
        by_dimension.rows.append(
            [
                u.unit,
                *(with_ci(u.dimensions.get(d), "score") for d in dims),
            ]
        )
    pairs = result.comparisons
    known: Reasons = {u.unit: {**u.dimensions, OVERALL: u.overall} for u in units}
    tables = CompareTables(
        runs,
        [overall, by_dimension],
        [pairs_overview_table(pairs), *(comparison_table(e, known) for e in pairs)],
    )
    if not isinstance(result.across_seeds, msgspec.UnsetType):
        level = percent_level(result.bootstrap.confidence)
        tables.across = across_seeds_table(result.across_seeds, level)
        tables.by_seed = [seed_table(p, level) for p in result.across_seeds]
    return tables


def pairs_by_dimension_table(entries: Sequence[Comparison]) -> Table:
    """Every pair's difference per dimension on one table, a row per pair: the pages of
    a comparison by seed show this instead of a table per pair (at 20 seeds, 780 tables
    with their captions were 1.3 MB). Each unit's score per dimension is in the scores."""
    dims = list(dict.fromkeys(d for e in entries for d in e.dimensions))
    t = Table(["Pair (a − b)", *dims, OVERALL], caption=tr("card.compare_pairs_by_dimension"))

    def cell(d: Difference | None) -> str:
        if d is None or d.diff is None:
            return MISSING
        return with_ci(d, "diff") + (" *" if d.excludes_zero else "")

    for e in entries:
        t.rows.append([f"{e.a} − {e.b}", *(cell(e.dimensions.get(d)) for d in dims), cell(e.overall)])
    return t


def across_seeds_table(pairs: Sequence[SeedAgreement], level: str) -> Table:
    """Per pair of chatbots: the spread of their per-seed differences, how many seeds
    agree in sign, which do not, and the worst seed."""
    t = Table(
        [
            "Pair (a − b)",
            "Seeds",
            "Mean difference",
            "Median difference",
            "Lowest, highest",
            "SD",
            "a higher / b higher / equal",
            "Interval excludes 0: a higher / b higher",
            "Seeds against the median",
            "Worst seed: difference [CI]",
        ],
        caption=tr("card.compare_seed_summary", level=level),
    )
    for p in pairs:
        worst = next((s for s in p.seeds if s.seed == p.worst_seed), None)
        t.rows.append(
            [
                f"{p.a} − {p.b}",
                num(p.n_seeds)
                if p.n_defined == p.n_seeds
                else tr("col.n_of", n=num(p.n_defined), of=num(p.n_seeds)),
                num(p.mean_diff),
                num(p.median_diff),
                f"{num(p.min_diff)}, {num(p.max_diff)}" if p.min_diff is not None else MISSING,
                num(p.sd_diff),
                f"{p.a_higher} / {p.b_higher} / {p.equal}",
                f"{p.a_higher_excludes_zero} / {p.b_higher_excludes_zero}",
                ", ".join(str(s) for s in p.against) or MISSING,
                f"{worst.seed}: {with_ci(worst, 'diff')}" if worst is not None else MISSING,
            ]
        )
    return t


def seed_table(pair: SeedAgreement, level: str) -> Table:
    """One pair of chatbots seed by seed: both scores, the paired difference, and whether
    it goes against the median's sign."""
    t = Table(
        ["Seed", "Score a", "Score b", "Difference [CI]", "CI excludes 0", "Sign", "Shared personas"],
        caption=tr("card.compare_seed_table", a=pair.a, b=pair.b, level=level),
    )
    against = set(pair.against)
    for s in pair.seeds:
        t.rows.append(
            [
                str(s.seed),
                num(s.score_a),
                num(s.score_b),
                with_ci(s, "diff"),
                flag(s.excludes_zero),
                tr("card.compare_against") if s.seed in against else "",
                num(s.n_shared),
            ]
        )
    return t


def pairs_overview_table(entries: Sequence[Comparison]) -> Table:
    """Every pair's overall difference on one table, before the per-dimension detail."""
    t = Table(
        ["Pair (a − b)", "Score a", "Score b", "Difference [CI]", "CI excludes 0", "Shared personas"],
        caption="Overall score, paired over shared personas",
    )
    for e in entries:
        o = e.overall
        t.rows.append(
            [
                f"{e.a} − {e.b}",
                num(o.score_a),
                num(o.score_b),
                with_ci(o, "diff"),
                flag(o.excludes_zero),
                num(e.n_shared),
            ]
        )
    return t
