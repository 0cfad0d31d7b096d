"""Agreement between raters on nominal ratings, with missing values.

Four statistics, each from its textbook definition:

- `percent_agreement`: the share of agreeing rater pairs within an item, averaged over
  items (Fleiss' observed agreement; with two raters, the share of items they agree on).
- `krippendorff_alpha`: nominal alpha by the coincidence-matrix method of Krippendorff,
  "Computing Krippendorff's Alpha-Reliability" (2011).
- `gwet_ac1`: Gwet's AC1 for several raters with missing ratings (Gwet 2008; the
  missing-data form of his 2014 handbook).
- `cohen_kappa`: Cohen (1960) for two raters.

Undefined values. A chance-corrected statistic is 0/0 when the data show no variation
(every value in one category): then `value` is None, never 1.0, because such data cannot
tell reliable raters from raters who always say the same thing. Alpha and kappa are
undefined in that case; AC1 is not (its chance term vanishes and AC1 equals percent
agreement), and percent agreement is always defined when at least one item has two
ratings. With no usable item every statistic is None.

Not Relevant. Every function takes `nr`: "category" keeps Not Relevant as a rating like
the others; "exclude" treats it as a missing value (see docs/statistics.md).

Every statistic is computed from per-item *sufficient statistics* that add up across
items, so a bootstrap over items is one matrix product (`nominal_features`,
`kappa_features` and the `*_from_features` functions, used by `vera.stats.humans`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Literal

import msgspec
import numpy as np
import polars as pl

from vera.records import NOT_RELEVANT, RATINGS

NRTreatment = Literal["category", "exclude"]
NR_TREATMENTS: tuple[str, ...] = ("category", "exclude")

Units = Iterable[Iterable[Hashable | None]]


class Agreement(msgspec.Struct, frozen=True):
    """One agreement statistic. `value` is None where the statistic is undefined;
    `n_items` counts the items that entered it (items with at least two ratings; for
    Cohen's kappa, items rated by both raters)."""

    value: float | None
    n_items: int


class PairwiseKappa(msgspec.Struct, frozen=True):
    """Cohen's kappa between two raters over the items both rated (None: undefined)."""

    rater_a: str
    rater_b: str
    kappa: float | None
    n_items: int


class RaterBlock(msgspec.Struct, frozen=True):
    """Agreement among the raters on one dimension, or on all of them pooled.

    `n_items` counts items with at least two ratings; `unanimous` is the share of those
    on which every rater agreed; `mean_cohen_kappa` is Light's kappa (the mean of the
    defined pairwise kappas). The field order is the order of `vera agreement --json`.
    """

    krippendorff_alpha: float | None
    gwet_ac1: float | None
    percent_agreement: float | None
    n_items: int
    n_ratings: int
    n_raters: int
    unanimous: float | None
    mean_cohen_kappa: float | None
    cohen_kappa: list[PairwiseKappa]


class RaterAgreement(msgspec.Struct, frozen=True):
    """Agreement among raters per dimension and overall (each (item, dimension) one
    unit), with Not Relevant treated as `nr` says."""

    nr: NRTreatment
    overall: RaterBlock
    dimensions: dict[str, RaterBlock]


# ---------------------------------------------------------------------------------------
# Public functions on plain lists
# ---------------------------------------------------------------------------------------


def percent_agreement(units: Units, *, nr: NRTreatment = "category") -> Agreement:
    """Observed agreement in [0, 1]: per item, the share of rater pairs that agree;
    averaged over items with at least two ratings.

    >>> percent_agreement([["a", "a", "b"], ["a", "a"]]).value  # (1/3 + 1) / 2
    0.6666666666666666
    """
    counts, _ = tabulate(units, nr=nr)
    features = nominal_features(counts).sum(axis=0, keepdims=True)
    q = counts.shape[1]
    return Agreement(_value(pa_from_features(features, q)), _n_pairable(counts))


def krippendorff_alpha(units: Units, *, nr: NRTreatment = "category") -> Agreement:
    """Krippendorff's alpha for nominal data; each unit is the list of values it got
    (None = missing). Units with fewer than two values are unpairable and dropped.

    >>> round(krippendorff_alpha([["a", "a"], ["b", "b"], ["a", "b"]]).value, 3)
    0.444
    """
    counts, _ = tabulate(units, nr=nr)
    features = nominal_features(counts).sum(axis=0, keepdims=True)
    q = counts.shape[1]
    return Agreement(_value(alpha_from_features(features, q)), _n_pairable(counts))


def gwet_ac1(
    units: Units,
    *,
    categories: Sequence[Hashable] | None = None,
    nr: NRTreatment = "category",
) -> Agreement:
    """Gwet's AC1 for several raters with missing ratings.

    `categories` is the rating scale; its size q enters the chance term
    p_e = Σ π_k (1 − π_k) / (q − 1). Without it, q is the number of categories observed.
    The scale of vera's rubric is `vera.records.RATINGS` (q = 4, or 3 with nr="exclude").
    """
    counts, cats = tabulate(units, categories=categories, nr=nr)
    features = nominal_features(counts).sum(axis=0, keepdims=True)
    value = ac1_from_features(features, counts.shape[1], len(cats))
    return Agreement(_value(value), _n_pairable(counts))


def cohen_kappa(
    a: Iterable[Hashable | None],
    b: Iterable[Hashable | None],
    *,
    nr: NRTreatment = "category",
) -> Agreement:
    """Cohen's kappa between two raters; `a[i]` and `b[i]` rate item i (None = missing).
    Items missing either rating are dropped.

    >>> cohen_kappa(["x", "x", "y", "y"], ["x", "y", "y", "y"]).value  # (.75-.5)/(1-.5)
    0.5
    """
    a_list, b_list = list(a), list(b)
    if len(a_list) != len(b_list):
        raise ValueError(f"cohen_kappa: {len(a_list)} ratings from a, {len(b_list)} from b")
    to_value = _missing_if_nr(nr)
    pairs = [
        (x, y)
        for x, y in zip(map(to_value, a_list), map(to_value, b_list), strict=True)
        if x is not None and y is not None
    ]
    cats = _categories(itertools.chain.from_iterable(pairs), None)
    index = {c: i for i, c in enumerate(cats)}
    a_idx = np.fromiter((index[x] for x, _ in pairs), dtype=np.int64, count=len(pairs))
    b_idx = np.fromiter((index[y] for _, y in pairs), dtype=np.int64, count=len(pairs))
    features = kappa_features(a_idx, b_idx, len(cats)).sum(axis=0, keepdims=True)
    return Agreement(_value(kappa_from_features(features, len(cats))), len(pairs))


def units_from_long(long: pl.DataFrame, *, item: str = "item_id", rating: str = "rating") -> list[list[Any]]:
    """The per-item rating lists of a long frame (one row per rating), in item order."""
    grouped = long.group_by(item, maintain_order=True).agg(pl.col(rating))
    return grouped.get_column(rating).to_list()


# ---------------------------------------------------------------------------------------
# Counting
# ---------------------------------------------------------------------------------------


def tabulate(
    units: Units,
    *,
    categories: Sequence[Hashable] | None = None,
    nr: NRTreatment = "category",
) -> tuple[np.ndarray, list[Hashable]]:
    """The (items × categories) matrix of how many raters gave each item each category.

    Categories are `categories` in that order (with Not Relevant removed under
    nr="exclude"), else the observed values in order of first appearance."""
    to_value = _missing_if_nr(nr)
    rows = [[v for v in map(to_value, unit) if v is not None] for unit in units]
    cats = _categories(itertools.chain.from_iterable(rows), categories, nr=nr)
    index = {c: i for i, c in enumerate(cats)}
    counts = np.zeros((len(rows), len(cats)), dtype=np.float64)
    for i, row in enumerate(rows):
        for value in row:
            try:
                counts[i, index[value]] += 1
            except KeyError:
                raise ValueError(f"rating {value!r} is not one of {list(cats)!r}") from None
    return counts, cats


def counts_from_long(
    long: pl.DataFrame, unit: Sequence[str], categories: Sequence[str], rating: str = "rating"
) -> tuple[pl.DataFrame, np.ndarray]:
    """Vectorised `tabulate` for a long frame: the units (distinct values of the `unit`
    columns, sorted) and their (units × categories) count matrix."""
    unit = list(unit)
    if long.height == 0:
        return long.select(unit).clear(), np.zeros((0, len(categories)))
    cells = long.group_by([*unit, rating]).len()
    wide = cells.pivot(on=rating, index=unit, values="len").sort(unit)
    matrix = np.column_stack(
        [
            wide.get_column(c).fill_null(0).to_numpy().astype(np.float64)
            if c in wide.columns
            else np.zeros(wide.height)
            for c in categories
        ]
    )
    return wide.select(unit), matrix.reshape(wide.height, len(categories))


def _missing_if_nr(nr: NRTreatment) -> Callable[[Any], Any]:
    if nr not in NR_TREATMENTS:
        raise ValueError(f"nr must be one of {NR_TREATMENTS}, not {nr!r}")
    if nr == "exclude":
        return lambda v: None if v is None or v == NOT_RELEVANT else v
    return lambda v: v


def _categories(
    values: Iterable[Hashable],
    categories: Sequence[Hashable] | None,
    *,
    nr: NRTreatment = "category",
) -> list[Hashable]:
    if categories is not None:
        return [c for c in categories if not (nr == "exclude" and c == NOT_RELEVANT)]
    return list(dict.fromkeys(values))


def rubric_categories(nr: NRTreatment) -> list[str]:
    """The rating scale of the rubric under an NR treatment (4 ratings, or 3)."""
    return [r for r in RATINGS if not (nr == "exclude" and r == NOT_RELEVANT)]


def _n_pairable(counts: np.ndarray) -> int:
    return int((counts.sum(axis=1) >= 2).sum())


def _value(x: np.ndarray) -> float | None:
    v = float(x[0])
    return None if math.isnan(v) else v


# ---------------------------------------------------------------------------------------
# Sufficient statistics: per-item features that add up; statistics from their sums.
# Rows of a feature matrix can be summed over items, or weighted by bootstrap counts
# (weights @ features), and the statistic computed once per row of the result.
# ---------------------------------------------------------------------------------------


class NominalLayout:
    """Column positions in a `nominal_features` matrix for q categories."""

    __slots__ = ("match", "n_c", "pair_agree", "pairable", "rated", "share", "width")

    def __init__(self, q: int) -> None:
        self.n_c = slice(0, q)  # pairable values per category (margins of the coincidences)
        self.share = slice(q, 2 * q)  # r_ik / r_i: item i's distribution over categories
        self.match = 2 * q  # Σ_k r_ik (r_ik − 1) / (r_i − 1): diagonal coincidences
        self.pair_agree = 2 * q + 1  # Σ_k r_ik (r_ik − 1) / (r_i (r_i − 1))
        self.pairable = 2 * q + 2  # 1 if r_i >= 2
        self.rated = 2 * q + 3  # 1 if r_i >= 1
        self.width = 2 * q + 4


def nominal_features(counts: np.ndarray) -> np.ndarray:
    """Per-item sufficient statistics of alpha, AC1 and percent agreement, from the
    (items × q) count matrix. See `NominalLayout` for the columns."""
    n, q = counts.shape
    lay = NominalLayout(q)
    out = np.zeros((n, lay.width))
    m = counts.sum(axis=1)
    pairable = m >= 2
    rated = m >= 1
    same = (counts * (counts - 1)).sum(axis=1)
    out[pairable, lay.n_c] = counts[pairable]
    out[rated, lay.share] = counts[rated] / m[rated, None]
    out[pairable, lay.match] = same[pairable] / (m[pairable] - 1)
    out[pairable, lay.pair_agree] = same[pairable] / (m[pairable] * (m[pairable] - 1))
    out[:, lay.pairable] = pairable
    out[:, lay.rated] = rated
    return out


def alpha_from_features(features: np.ndarray, q: int) -> np.ndarray:
    """Nominal alpha per row of summed features: 1 − (n − 1) Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k."""
    lay = NominalLayout(q)
    n_c = features[:, lay.n_c]
    n = n_c.sum(axis=1)
    observed = n - features[:, lay.match]  # off-diagonal coincidences
    expected = n * n - (n_c * n_c).sum(axis=1)  # Σ_{c≠k} n_c n_k
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / expected
    # Counts are whole numbers, so "no variation" is an exact zero, not a rounding issue.
    return np.where(expected > 0, alpha, np.nan)


def pa_from_features(features: np.ndarray, q: int) -> np.ndarray:
    """Percent agreement (as a proportion) per row of summed features."""
    lay = NominalLayout(q)
    pairable = features[:, lay.pairable]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pairable > 0, features[:, lay.pair_agree] / pairable, np.nan)


def ac1_from_features(features: np.ndarray, q: int, q_scale: int) -> np.ndarray:
    """Gwet's AC1 per row of summed features; `q_scale` is the size of the rating scale.

    π_k averages each rated item's distribution over categories (items with a single
    rating count here, as in Gwet's missing-data form); p_a uses items with two or more.
    """
    lay = NominalLayout(q)
    pa = pa_from_features(features, q)
    rated = features[:, lay.rated]
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = features[:, lay.share] / rated[:, None]
    # A one-category scale has no chance disagreement to correct for: p_e = 0, AC1 = p_a.
    pe = (pi * (1 - pi)).sum(axis=1) / (q_scale - 1) if q_scale > 1 else np.zeros_like(pa)
    with np.errstate(divide="ignore", invalid="ignore"):
        ac1: np.ndarray = (pa - pe) / (1 - pe)
    return ac1


def kappa_features(a_idx: np.ndarray, b_idx: np.ndarray, q: int) -> np.ndarray:
    """Per-item sufficient statistics of Cohen's kappa from category indices of rater a
    and rater b: [agree, one-hot a (q), one-hot b (q), 1]."""
    n = len(a_idx)
    out = np.zeros((n, 2 * q + 2))
    rows = np.arange(n)
    out[:, 0] = a_idx == b_idx
    out[rows, 1 + a_idx] = 1
    out[rows, 1 + q + b_idx] = 1
    out[:, 2 * q + 1] = 1
    return out


def kappa_from_features(features: np.ndarray, q: int) -> np.ndarray:
    """Cohen's kappa per row of summed features: (p_o − p_e) / (1 − p_e)."""
    total = features[:, 2 * q + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        po = features[:, 0] / total
        pa = features[:, 1 : 1 + q] / total[:, None]
        pb = features[:, 1 + q : 1 + 2 * q] / total[:, None]
        pe = (pa * pb).sum(axis=1)
        kappa = (po - pe) / (1 - pe)
    # p_e = 1 only when both raters used one and the same category throughout.
    return np.where((total > 0) & (1 - pe > 1e-12), kappa, np.nan)


# ---------------------------------------------------------------------------------------
# Reports over a long frame of several dimensions
# ---------------------------------------------------------------------------------------


def rater_agreement(long: pl.DataFrame, *, nr: NRTreatment = "category") -> RaterAgreement:
    """Agreement among the raters of a long frame `(item_id, rater, dimension, rating)`,
    per dimension and overall. "Overall" pools the dimensions: each (item, dimension) is
    one unit."""
    _missing_if_nr(nr)
    if nr == "exclude":
        long = long.filter(pl.col("rating") != NOT_RELEVANT)
    cats = _scale(long, nr)
    dimensions = long.get_column("dimension").unique(maintain_order=True).to_list()
    return RaterAgreement(
        nr=nr,
        overall=_agreement_block(long, ["item_id", "dimension"], cats),
        dimensions={
            d: _agreement_block(long.filter(pl.col("dimension") == d), ["item_id"], cats) for d in dimensions
        },
    )


def judge_agreement(ratings: pl.DataFrame, *, nr: NRTreatment = "category") -> RaterAgreement:
    """Inter-judge agreement on a ratings frame: every (judge, instance) is a rater,
    every conversation an item. Same shape as `rater_agreement`."""
    return rater_agreement(judges_as_raters(ratings), nr=nr)


def judges_as_raters(ratings: pl.DataFrame) -> pl.DataFrame:
    """A ratings frame as a long rater frame: rater "judge#instance", item conversation."""
    return ratings.select(
        pl.col("conversation_id").alias("item_id"),
        pl.format("{}#{}", "judge", "instance").alias("rater"),
        "dimension",
        "rating",
    )


def _scale(long: pl.DataFrame, nr: NRTreatment) -> list[str]:
    observed = long.get_column("rating").unique(maintain_order=True).to_list()
    scale = rubric_categories(nr)
    return scale + [r for r in observed if r not in scale]


def _agreement_block(long: pl.DataFrame, unit: list[str], cats: list[str]) -> RaterBlock:
    q = len(cats)
    _, counts = counts_from_long(long, unit, cats)
    features = nominal_features(counts).sum(axis=0, keepdims=True)
    pairable = counts.sum(axis=1) >= 2
    # With fewer than two ratings per item nothing is pairable: no share to take (and
    # numpy would warn on the empty mean).
    unanimous = (
        float((counts[pairable].max(axis=1) == counts[pairable].sum(axis=1)).mean())
        if pairable.any()
        else None
    )
    pairs = pairwise_kappa(long, unit, cats)
    defined = [p.kappa for p in pairs if p.kappa is not None]
    return RaterBlock(
        krippendorff_alpha=_value(alpha_from_features(features, q)),
        gwet_ac1=_value(ac1_from_features(features, q, q)),
        percent_agreement=_value(pa_from_features(features, q)),
        n_items=int(pairable.sum()),
        n_ratings=long.height,
        n_raters=long.get_column("rater").n_unique(),
        unanimous=unanimous,
        mean_cohen_kappa=float(np.mean(defined)) if defined else None,
        cohen_kappa=pairs,
    )


def pairwise_kappa(long: pl.DataFrame, unit: Sequence[str], categories: Sequence[str]) -> list[PairwiseKappa]:
    """Cohen's kappa for every pair of raters over the units both rated."""
    unit = list(unit)
    code = {c: i for i, c in enumerate(categories)}
    coded = long.select(
        *unit, "rater", pl.col("rating").replace_strict(code, return_dtype=pl.Int64).alias("k")
    )
    both = coded.join(coded, on=unit, suffix="_b").filter(pl.col("rater") < pl.col("rater_b"))
    out: list[PairwiseKappa] = []
    if both.height == 0:
        return out
    q = len(categories)
    for part in both.sort("rater", "rater_b").partition_by(["rater", "rater_b"], maintain_order=True):
        a_idx = part.get_column("k").to_numpy()
        b_idx = part.get_column("k_b").to_numpy()
        features = kappa_features(a_idx, b_idx, q).sum(axis=0, keepdims=True)
        out.append(
            PairwiseKappa(
                rater_a=part.item(0, "rater"),
                rater_b=part.item(0, "rater_b"),
                kappa=_value(kappa_from_features(features, q)),
                n_items=part.height,
            )
        )
    return out
