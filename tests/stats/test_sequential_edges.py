"""The sequential gate holds each look to `vera compare --gate`'s edge rule
(vera.stats.sequential.edge_interval): near 0 or 100 it does not call NOT WORSE what
compare of the same units leaves UNDECIDED; away from the edges nothing changes."""

from __future__ import annotations

import numpy as np
import pytest

from vera.stats import score_from_percentages
from vera.stats.sequential import NOT_WORSE, UNDECIDED, Method, edge_interval, gate_sequence

LABELS = ["Detects Potential Risk", "Overall"]


def _pilot_at_100(n: int = 50, rated: int = 40) -> np.ndarray:
    """The offline best-practice pilot's shape: every rated unit Best Practice in both
    rows, the rest (no-risk personas) Not Relevant; one unit a persona."""
    counts = np.zeros((n, 2, 3))
    counts[:rated, :, 0] = 1.0
    counts[:rated, :, 2] = 1.0
    return counts


def _looks(counts: np.ndarray, method: Method, edge_rule: bool, looks: list[int]) -> list:
    n = counts.shape[0]
    order = np.random.default_rng(0).permutation(n)
    return gate_sequence(
        counts, counts[order], order, persona=np.arange(n), labels=LABELS, max_ratings=[1.0, 1.0],
        looks=looks, margin=5.0, alpha=0.05, method=method, grid_points=401, edge_rule=edge_rule,
    )  # fmt: skip


def _compare_low(rated: int, alpha: float = 0.05) -> float:
    """compare --gate's low end for two sides at 100 with `rated` rated conversations
    each: the candidate's score at the exact upper bound of 0 harmful of `rated`
    (one-sided α/2, Clopper–Pearson, which Korn–Graubard is at 0), the baseline's at 100
    with no room above, MOVER with r = 0 (replicates that never move)."""
    h = 1.0 - (alpha / 2.0) ** (1.0 / rated)
    return float(score_from_percentages(100.0 * (1.0 - h), 100.0 * h)) - 100.0


@pytest.mark.parametrize("method", ["spending", "asymptotic", "betting"])
def test_a_candidate_at_100_against_itself_is_not_called_not_worse_where_compare_is_undecided(method) -> None:
    looks = [8, 16, 24, 32, 40, 48, 50]
    before = _looks(_pilot_at_100(), method, edge_rule=False, looks=looks)
    after = _looks(_pilot_at_100(), method, edge_rule=True, looks=looks)
    # Without the rule the gate settles NOT WORSE at margin 5 on these units (the bug) …
    assert any(look.verdict == NOT_WORSE for look in before)
    # … with it, no look does: compare of the same units leaves it UNDECIDED.
    assert all(look.verdict == UNDECIDED for look in after)
    for b, a in zip(before, after, strict=True):
        for rb, ra in zip(b.rows, a.rows, strict=True):
            # The rule only widens.
            assert ra.lo <= rb.lo and ra.hi >= rb.hi and ra.diff == rb.diff
    # With every unit in, the low end is compare --gate's on the full runs (40 rated).
    last = after[-1]
    for row in last.rows:
        assert row.edge and row.lo == pytest.approx(_compare_low(40), abs=1e-9)
    assert _compare_low(40) == pytest.approx(79.5 - 100.0, abs=0.05)  # the pilot card's [79.5, 100]


def test_the_edge_interval_counts_rated_units_and_applies_only_near_the_edges() -> None:
    units = _pilot_at_100()[:, :1]  # (T, 1, 3)
    drawn = units.transpose(1, 0, 2)
    lo, hi = edge_interval(drawn, drawn, np.arange(50), np.array([1.0]), [26, 50], 0.025, 0.025)
    # 26 units drawn, all rated: the bound of 0 of 26; 50 units: 40 rated.
    assert lo[0] == pytest.approx([_compare_low(26), _compare_low(40)])
    assert (hi[0] > 0).all()  # widened above too (the gate cuts it at 100 − baseline)
    # Mid-scale (BP 60 %, HPH 20 % over 200 ratings from 50 personas): no bound.
    mid = np.zeros((1, 200, 3))
    mid[0, :, 0], mid[0, :, 1], mid[0, :, 2] = 0.6, 0.2, 1.0
    lo, hi = edge_interval(mid, mid, np.arange(200) % 50, np.array([5.0]), [50, 200], 0.025, 0.025)
    assert np.isposinf(lo).all() and np.isneginf(hi).all()
    # Fewer personas than compare trusts: the rule applies, as compare's does.
    lo, _ = edge_interval(mid, mid, np.arange(200) % 5, np.array([5.0]), [50], 0.025, 0.025)
    assert np.isfinite(lo).all()


def test_away_from_the_edges_the_gate_is_unchanged() -> None:
    rng = np.random.default_rng(3)
    n = 200
    # Five ratings a unit (a judge's five slots), so that even the first look has more
    # than `RARE_EVENTS` of each kind: compare's rule looks at ratings, not units.
    kinds = rng.choice(3, size=(n, 2, 5), p=[0.55, 0.3, 0.15])  # BP, Suboptimal, HPH
    counts = np.stack([(kinds == 0).sum(-1), (kinds == 2).sum(-1), np.full((n, 2), 5)], axis=-1).astype(float)
    order = rng.permutation(n)
    args = dict(
        persona=np.arange(n) % 50, labels=LABELS, max_ratings=[5.0, 5.0], looks=[40, 80, 120, 160, 200],
        margin=5.0, alpha=0.05, method="spending",
    )  # fmt: skip
    with_rule = gate_sequence(counts, counts[order], order, edge_rule=True, **args)  # type: ignore[arg-type]
    without = gate_sequence(counts, counts[order], order, edge_rule=False, **args)  # type: ignore[arg-type]
    assert with_rule == without
    assert not any(r.edge for look in with_rule for r in look.rows)


def test_away_from_the_edges_sequence_md_keeps_its_bytes() -> None:
    from vera.report.card._sequence import GateLook, GateRecord, GateSettings, sequence_page

    rng = np.random.default_rng(4)
    n = 200
    kinds = rng.choice(3, size=(n, 2, 5), p=[0.55, 0.3, 0.15])
    counts = np.stack([(kinds == 0).sum(-1), (kinds == 2).sum(-1), np.full((n, 2), 5)], axis=-1).astype(float)
    order = rng.permutation(n)
    settings = GateSettings(
        baseline_run_id="base", baseline_path="base", candidate="c", baseline_chatbot="b", margin=5.0,
        alpha=0.05, wave=40, order_seed=0, max_conversations=None, method="spending",
        order=[("p", "u", i) for i in range(n)],
    )  # fmt: skip
    pages = []
    for rule in (False, True):
        seq = gate_sequence(
            counts, counts[order], order, persona=np.arange(n) % 50, labels=LABELS, max_ratings=[5.0, 5.0],
            looks=[40, 80, 120, 160, 200], margin=5.0, alpha=0.05, method="spending", edge_rule=rule,
        )  # fmt: skip
        looks = [
            GateLook(wave=i + 1, drawn=x.units, units=x.units, available=n, rows=x.rows, verdict=x.verdict)
            for i, x in enumerate(seq)
        ]
        pages.append(sequence_page(GateRecord(settings=settings, verdict=seq[-1].verdict), looks))
    assert pages[0] == pages[1] and "edge rule" not in pages[1]
