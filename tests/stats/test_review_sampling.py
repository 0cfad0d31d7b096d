"""The sample `vera review` draws and each rater's order: stratified, random, the same for
a given seed, and a different order for each rater."""

from __future__ import annotations

from collections import Counter

import pytest

from vera.stats.sampling import Unit, allocate, draw_sample, proposed_size, rater_order, sample_sizes

GROUPS = {"None": 10, "Low": 30, "High": 30, "Immediate": 30}


def population(chatbots: tuple[str, ...] = ("bot-a", "bot-b"), groups: dict[str, int] = GROUPS) -> list[Unit]:
    return [
        Unit(f"{bot}-{group}-{i:03d}", bot, group)
        for bot in chatbots
        for group, n in groups.items()
        for i in range(n)
    ]


def test_the_proposed_size_is_the_normal_interval_at_its_widest_with_the_population_correction():
    # z² / w²: 1.96² / 0.2² = 96.04 → 97 when the population is large.
    assert proposed_size(0.2, 1_000_000) == 97
    assert proposed_size(0.1, 10**9) == 385
    assert proposed_size(0.1, 1_000_000) == 384  # 384.15 / (1 + 383.15 / 10⁶)
    # 96.04 / (1 + 95.04 / 100) = 49.2 → 50: a small run needs fewer.
    assert proposed_size(0.2, 100) == 50
    assert proposed_size(0.01, 30) == 30  # never more than there are
    assert proposed_size(1.0, 1000) == 4
    assert proposed_size(0.2, 0) == 0
    with pytest.raises(ValueError):
        proposed_size(0.0, 100)


def test_allocation_is_proportional_and_a_larger_size_only_adds():
    assert allocate(GROUPS, 10) == {"None": 1, "Low": 3, "High": 3, "Immediate": 3}
    assert allocate(GROUPS, 20) == {"None": 2, "Low": 6, "High": 6, "Immediate": 6}
    assert allocate(GROUPS, 500) == GROUPS  # capped at what each stratum holds
    previous = dict.fromkeys(GROUPS, 0)
    for n in range(1, 101):
        seats = allocate(GROUPS, n)
        assert sum(seats.values()) == n
        assert all(seats[g] >= previous[g] for g in GROUPS), n
        assert all(abs(seats[g] - n * GROUPS[g] / 100) < 1 for g in GROUPS), (n, seats)
        previous = seats


def test_the_sample_is_stratified_by_chatbot_and_group():
    units = population()
    sizes = sample_sizes(units, size=40)
    assert sizes == {"bot-a": 20, "bot-b": 20}
    sample = draw_sample(units, sizes, seed=1)
    counts = Counter(u.stratum for u in sample)
    for bot in ("bot-a", "bot-b"):
        assert {g: counts[(bot, g)] for g in GROUPS} == {"None": 2, "Low": 6, "High": 6, "Immediate": 6}
    assert len(set(sample)) == 40
    by_width = sample_sizes(units, width=0.2)
    assert by_width == {"bot-a": 50, "bot-b": 50}


def test_the_sample_is_the_same_for_a_seed_and_random_across_seeds():
    units = population(("bot",))
    sizes = {"bot": 10}
    assert draw_sample(units, sizes, 7) == draw_sample(
        list(reversed(units)), sizes, 7
    )  # file order does not matter
    assert draw_sample(units, sizes, 7) != draw_sample(units, sizes, 8)
    # Each unit's chance to be drawn is its stratum's share: 3 of 30, 1 of 10.
    seen: Counter[str] = Counter()
    trials = 400
    for seed in range(trials):
        seen.update(u.id for u in draw_sample(units, sizes, seed))
    for u in units:
        assert 0.03 < seen[u.id] / trials < 0.2, (u, seen[u.id])


def test_a_larger_sample_contains_the_smaller_one_and_new_units_do_not_reshuffle_it():
    units = population(("bot",))
    small = set(draw_sample(units, {"bot": 20}, 3))
    large = set(draw_sample(units, {"bot": 40}, 3))
    assert small <= large
    # A conversation judged later joins a stratum; the others keep their places.
    grown = [*units, *(Unit(f"late-{i}", "bot", "Low") for i in range(3))]
    again = draw_sample(grown, {"bot": 20}, 3)
    assert len(small & set(again)) >= 18


def test_each_rater_has_their_own_order_of_the_same_sample():
    sample = draw_sample(population(), {"bot-a": 20, "bot-b": 20}, 1)
    ada = rater_order(sample, "Ada", 1)
    ben = rater_order(sample, "Ben", 1)
    assert sorted(ada) == sorted(sample) == sorted(ben)
    assert ada == rater_order(sample, "Ada", 1)  # deterministic
    assert ada != ben
    assert ada != rater_order(sample, "Ada", 2)


@pytest.mark.parametrize("rater", ["Ada", "Ben", "Dr. Chen", "rater 4"])
def test_every_start_of_a_raters_order_is_itself_stratified(rater):
    sample = draw_sample(population(), {"bot-a": 30, "bot-b": 30}, 5)
    share = {s: n / len(sample) for s, n in Counter(u.stratum for u in sample).items()}
    order = rater_order(sample, rater, 5)
    for k in range(1, len(order) + 1):
        counts = Counter(u.stratum for u in order[:k])
        for stratum, p in share.items():
            assert abs(counts[stratum] - k * p) < 2, (k, stratum, counts[stratum], k * p)
