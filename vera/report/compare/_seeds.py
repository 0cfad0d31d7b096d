"""A comparison by seed, summarised per pair of chatbots: is their difference the same
at every seed? At 20 seeds `vera compare --by-seed` lists 780 pairs, most of them a
chatbot against another at a different seed; what a reader asks first is only the 20
same-seed pairs of each two chatbots, and whether their differences agree."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Literal

from vera.report.card._build import round_number
from vera.report.card._schema import Comparison, SeedAgreement, SeedDifference


def across_seeds(entries: Sequence[Comparison], units: Mapping[str, tuple[str, int]]) -> list[SeedAgreement]:
    """Per pair of chatbots (in the order their pairs come), the entries of `entries`
    that compare them at the same seed, summarised. `units` names each unit's chatbot
    label and seed; a pair of one chatbot's own seeds, or of two chatbots at different
    seeds, is left out (it stays in the comparison's full list)."""
    groups: dict[tuple[str, str], list[SeedDifference]] = {}
    for e in entries:
        (label_a, seed_a), (label_b, seed_b) = units[e.a], units[e.b]
        if label_a == label_b or seed_a != seed_b:
            continue
        o = e.overall
        groups.setdefault((label_a, label_b), []).append(
            SeedDifference(
                seed=seed_a,
                score_a=o.score_a,
                score_b=o.score_b,
                diff=o.diff,
                diff_ci=o.diff_ci,
                excludes_zero=o.excludes_zero,
                n_shared=e.n_shared,
            )
        )
    return [_summary(a, b, sorted(seeds, key=lambda s: s.seed)) for (a, b), seeds in groups.items()]


def _summary(a: str, b: str, seeds: list[SeedDifference]) -> SeedAgreement:
    defined = [s for s in seeds if s.diff is not None]
    diffs = [s.diff for s in defined if s.diff is not None]
    median = statistics.median(diffs) if diffs else None
    direction: Literal["a", "b", "none"] = "none" if not median else ("a" if median > 0 else "b")
    sign = {"a": 1, "b": -1, "none": 0}[direction]
    against = [s.seed for s in defined if s.diff is not None and s.diff * sign < 0]
    worst = None
    if defined:
        # Least favourable to the median's sign; with no sign, the largest in size. The
        # first such seed on a tie (min/max keep the first).
        if sign:
            pick = min(defined, key=lambda s: (s.diff or 0.0) * sign)
        else:
            pick = max(defined, key=lambda s: abs(s.diff or 0.0))
        worst = pick.seed if (sign or pick.diff) else None
    return SeedAgreement(
        a=a,
        b=b,
        n_seeds=len(seeds),
        n_defined=len(defined),
        mean_diff=round_number(statistics.fmean(diffs)) if diffs else None,
        median_diff=round_number(median),
        min_diff=min(diffs) if diffs else None,
        max_diff=max(diffs) if diffs else None,
        sd_diff=round_number(statistics.stdev(diffs)) if len(diffs) > 1 else None,
        a_higher=sum(d > 0 for d in diffs),
        b_higher=sum(d < 0 for d in diffs),
        equal=sum(d == 0 for d in diffs),
        a_higher_excludes_zero=sum(1 for s in defined if s.excludes_zero and (s.diff or 0) > 0),
        b_higher_excludes_zero=sum(1 for s in defined if s.excludes_zero and (s.diff or 0) < 0),
        direction=direction,
        against=against,
        worst_seed=worst,
        seeds=seeds,
    )
