"""The tables of a comparison of runs (`vera compare`), one builder per table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vera.inputs import tr
from vera.records import OVERALL
from vera.report.card._schema import Comparison, RunComparison
from vera.report.card._tables import Reasons, comparison_table, flag
from vera.report.shared._numbers import num, percent_level, with_ci
from vera.report.shared._table import Table


@dataclass
class CompareTables:
    """The tables of a `vera.report.compare_runs` result, by part of the page."""

    runs: Table
    scores: list[Table]
    pairs: list[Table]

    def all(self) -> list[Table]:
        return [self.runs, *self.scores, *self.pairs]


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
    return CompareTables(
        runs,
        [overall, by_dimension],
        [pairs_overview_table(pairs), *(comparison_table(e, known) for e in pairs)],
    )


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
