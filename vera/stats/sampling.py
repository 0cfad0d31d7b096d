"""The sample of conversations people rate in `vera review`, and each rater's order.

A human-rated subset calibrates the judge's scores (prediction-powered inference) only
if it is a random sample of the judged conversations, so nothing here is chosen by a
person or by the judge's ratings:

- **Strata**: a unit's stratum is its chatbot and persona group (the card's breakdowns).
- **How many**: a given size, or one proposed from the width wanted for a 95 % interval
  (`proposed_size`), per chatbot.
- **Allocation**: each stratum gets a share of its chatbot's size in proportion to how
  many units it has (Webster's method, seat by seat, so a larger size only ever adds to
  a stratum: the sample for size 40 is part of the sample for size 60).
- **Which ones**: in each stratum, the units with the smallest keyed hash of
  (seed, id). The same seed gives every rater the same sample, and a unit added to the
  run later does not reshuffle the others.
- **Each rater's order**: the sample again ordered by a hash keyed by (seed, rater), with
  the strata interleaved evenly, so whatever a rater has done when they stop (the first
  k of their order) is itself a stratified random sample, and two raters meet the
  conversations in different orders (fatigue and anchoring do not line up).

Everything is a pure function of its arguments (docs/viewer.md, "vera review").
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import NamedTuple, TypeVar

from vera.records import DEFAULT_CONFIDENCE

__all__ = [
    "STRATUM_COLUMNS",
    "Unit",
    "allocate",
    "draw_sample",
    "judging_sample",
    "proposed_size",
    "rater_order",
    "sample_sizes",
]


K = TypeVar("K", str, tuple[str, str])

# A unit's stratum as columns of a ratings frame, so the calibrated estimator finds the
# same strata at scoring time (`vera.stats.ppi.stratum_weights`): the chatbot and the
# persona group, which a run records in the `risk` field (`Unit.group` is read from it).
STRATUM_COLUMNS = ("chatbot", "risk")


class Unit(NamedTuple):
    """One judged conversation as the sampler sees it."""

    id: str
    chatbot: str
    group: str

    @property
    def stratum(self) -> tuple[str, str]:
        """(chatbot, group): the ratings frame's `STRATUM_COLUMNS` of this unit."""
        return (self.chatbot, self.group)


def proposed_size(width: float, population: int, *, confidence: float = DEFAULT_CONFIDENCE) -> int:
    """How many of `population` units to rate so that a share estimated from the human
    ratings alone has a `confidence` interval at most `width` wide (a fraction, 0.2 =
    20 percentage points): n0 = z² / width² (the normal interval of a proportion at its
    widest, p = ½), shrunk by the finite-population correction n0 / (1 + (n0 − 1) / N).
    A judge that agrees with the raters makes the calibrated interval narrower than
    this, so it is an upper bound on what is needed."""
    if not 0 < width <= 1:
        raise ValueError(f"width must be in (0, 1], not {width}")
    if population <= 0:
        return 0
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    n0 = z * z / (width * width)
    n = n0 / (1 + (n0 - 1) / population)
    return max(1, min(population, math.ceil(n - 1e-9)))


def allocate(sizes: Mapping[K, int], n: int) -> dict[K, int]:
    """Split `n` over strata in proportion to `sizes` (Webster / Sainte-Laguë, one seat
    at a time: the next seat goes to the stratum with the largest size / (seats + ½);
    ties go to the first in sorted order). Never more than a stratum holds."""
    seats: dict[K, int] = dict.fromkeys(sizes, 0)
    n = min(n, sum(sizes.values()))
    order = sorted(sizes)
    for _ in range(n):
        best = max(
            (s for s in order if seats[s] < sizes[s]),
            key=lambda s: sizes[s] / (seats[s] + 0.5),
        )
        seats[best] += 1
    return seats


def sample_sizes(
    units: Iterable[Unit], *, size: int | None = None, width: float | None = None
) -> dict[str, int]:
    """How many units of each chatbot to sample: `size` split over the chatbots in
    proportion to their units, or `proposed_size(width)` for each chatbot."""
    per_chatbot: dict[str, int] = {}
    for u in units:
        per_chatbot[u.chatbot] = per_chatbot.get(u.chatbot, 0) + 1
    if size is not None and width is None:
        return allocate(per_chatbot, size)
    if width is not None and size is None:
        return {bot: proposed_size(width, n) for bot, n in per_chatbot.items()}
    raise ValueError("give exactly one of size and width")


def _key(*parts: str) -> bytes:
    return hashlib.sha256("\0".join(parts).encode()).digest()


def draw_sample(units: Sequence[Unit], per_chatbot: Mapping[str, int], seed: int) -> list[Unit]:
    """The sample: each chatbot's size allocated over its groups (`allocate`), and in
    each stratum the units with the smallest hash of (seed, id). Sorted by stratum,
    then by that hash."""
    strata: dict[tuple[str, str], list[Unit]] = {}
    for u in units:
        strata.setdefault(u.stratum, []).append(u)
    out: list[Unit] = []
    for bot in sorted(per_chatbot):
        groups = {s: len(members) for s, members in strata.items() if s[0] == bot}
        for stratum, k in sorted(allocate(groups, per_chatbot[bot]).items()):
            members = sorted(strata[stratum], key=lambda u: _key("sample", str(seed), u.id))
            out.extend(members[:k])
    return out


def judging_sample(ids: Iterable[str], size: int, seed: int) -> list[str]:
    """The `size` ids with the smallest hash keyed by (seed, id) (`vera judge --sample`).
    Nested: the sample of a larger size holds the smaller one's, so judging a larger
    sample judges only the extra conversations; an id added later reshuffles none."""
    return sorted(ids, key=lambda i: _key("judge", str(seed), i))[: max(0, size)]


def rater_order(sample: Sequence[Unit], rater: str, seed: int) -> list[Unit]:
    """The order in which `rater` meets the sample. Within a stratum, by a hash keyed
    by (seed, rater, id); the strata interleaved by systematic spacing: the i-th of a
    stratum's m units sits at (i + u) / m, u a keyed offset in [0, 1), so the first k
    of the order hold each stratum's share of k, off by less than two."""
    strata: dict[tuple[str, str], list[Unit]] = {}
    for u in sample:
        strata.setdefault(u.stratum, []).append(u)
    placed: list[tuple[float, bytes, Unit]] = []
    for stratum, members in strata.items():
        members.sort(key=lambda u: _key("order", str(seed), rater, u.id))
        offset = int.from_bytes(_key("offset", str(seed), rater, *stratum)[:8], "big") / 2**64
        m = len(members)
        for i, u in enumerate(members):
            placed.append(((i + offset) / m, _key("tie", str(seed), rater, *stratum), u))
    placed.sort(key=lambda t: (t[0], t[1]))
    return [u for _, _, u in placed]
