"""Comparing chatbots (or seeds, or runs) on a shared persona set.

A difference between two scores is only meaningful relative to its uncertainty, and the
two scores are not independent when both chatbots talked to the same personas: a hard
persona is hard for both. So the interval of a difference comes from a *paired* cluster
bootstrap: in each replicate one set of personas is drawn and both chatbots are scored
on it, and the interval is taken over the replicate differences. Personas that only one
side has cannot be paired and are left out of that pair (and counted).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import numpy as np
import polars as pl

from vera.records import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, OVERALL
from vera.stats.bootstrap import (
    MC_Z,
    MIN_RATED_PERSONAS,
    BootstrapSpec,
    ClusterCounts,
    card_intervals,
    cluster_counts,
    count_statistics,
    group_rng,
    make_spec,
    mover_difference,
    nan_to_null,
    near_edge,
    percentile_interval,
    quantile_mc_band,
    quantile_mc_error,
    replicate_correlation,
    resample_weights,
    spec_columns,
    summarise_counts,
)

# The inputs whose versions decide whether two runs' scores can be compared.
VERSIONED_INPUTS = ("rubric", "personas", "user_prompts", "judge_prompts")
# `compare_settled` multiplies the resamples by SETTLE_GROWTH while a decision is within
# Monte Carlo error of its threshold, up to MAX_SETTLE_RESAMPLES (64 times the default:
# the Monte Carlo error of an interval end is then an eighth of what it is by default).
SETTLE_GROWTH = 4
MAX_SETTLE_RESAMPLES = 64 * DEFAULT_RESAMPLES


def compare(
    frame: pl.DataFrame,
    *,
    unit: str | Sequence[str] = "chatbot",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    cluster: str = "persona",
    streams: Sequence[str] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Scores per `unit` and paired differences between every two units.

    `unit` names the column(s) that identify what is compared: "chatbot", "replicate" (seed replicates), or
    ["chatbot", "replicate"]. Returns `(table, pairs)`:

    - `table` is `summarise(frame, by=unit, ...)`: every unit on all its own personas.
    - `pairs` has one row per pair of units (in sorted order, a before b) and dimension
      (plus "Overall"): `<unit>_a`, `<unit>_b`, `dimension`, `score_a`, `score_b` (each
      on the shared personas only), `diff` = score_a − score_b, `diff_lo`, `diff_hi`,
      `excludes_zero` (the interval lies entirely above or below 0; null when a score is
      undefined), `diff_lo_mc`, `diff_hi_mc` (the Monte Carlo standard error of each
      interval end: how far it would move with other resamples; `quantile_mc_error`),
      `n_shared` (personas both have), `n_only_a`, `n_only_b` (personas left out), and the
      `bootstrap_*` settings columns.

    `streams` (default: the unit columns) seed each unit's resampling, as in
    `summarise`: pass the chatbot column when `unit` is a display label, so that a
    chatbot's interval here is the one on its own card.

    Every pair is many tests at once (one per dimension, and one per pair of units):
    with many units, expect some intervals to exclude 0 by chance (see
    docs/statistics.md).
    """
    spec = make_spec(n_resamples, confidence, seed, cluster)
    units = [unit] if isinstance(unit, str) else list(unit)
    counts = cluster_counts(frame, units, cluster, streams)
    table = summarise_counts(counts, spec, frame.schema)
    return table, _pairs(counts, units, frame, spec)


def compare_settled(
    frame: pl.DataFrame,
    *,
    above: float,
    unit: str | Sequence[str] = "chatbot",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    cluster: str = "persona",
    streams: Sequence[str] | None = None,
    max_resamples: int = MAX_SETTLE_RESAMPLES,
) -> pl.DataFrame:
    """`compare`'s pairs, for a decision on each pair's lower interval end,
    `diff_lo > above`, that does not depend on the bootstrap seed.

    The decision is *settled* when the order statistics `MC_Z` Monte Carlo standard
    errors either side of the end (`quantile_mc_band`) lie on the same side of `above`:
    other resamples would then put the end on that side all but about once in 1,000.
    While any decision is not settled, the resamples are raised (times `SETTLE_GROWTH`,
    up to `max_resamples`) and the pairs computed again, so a borderline case gets the
    precision it needs and a clear one costs nothing extra. The pairs come with a
    `settled` column, False where the end is still within Monte Carlo error of `above` at
    `max_resamples` (the ideal bootstrap interval itself touches it; an undefined
    difference counts as settled), and `bootstrap_resamples` says what was used.
    """
    units = [unit] if isinstance(unit, str) else list(unit)
    counts = cluster_counts(frame, units, cluster, streams)
    n = n_resamples
    while True:
        pairs = _pairs(counts, units, frame, make_spec(n, confidence, seed, cluster), above=above)
        if pairs.get_column("settled").all() or n >= max_resamples:
            return pairs
        n = min(n * SETTLE_GROWTH, max_resamples)


def _pairs(
    counts: ClusterCounts,
    units: list[str],
    frame: pl.DataFrame,
    spec: BootstrapSpec,
    above: float | None = None,
) -> pl.DataFrame:
    """The paired differences of `compare` (and, given `above`, the `settled` column of
    `compare_settled`)."""
    d = len(counts.dimensions)
    labels = [*counts.dimensions, OVERALL]
    parts = []
    for a, b in itertools.combinations(range(counts.groups.height), 2):
        (a0, a1), (b0, b1) = counts.bounds(a), counts.bounds(b)
        shared, ia, ib = np.intersect1d(
            counts.cluster_ids[a0:a1],
            counts.cluster_ids[b0:b1],
            assume_unique=True,
            return_indices=True,
        )
        block_a, block_b = counts.matrix[a0 + ia], counts.matrix[b0 + ib]
        point_a = count_statistics(block_a.sum(axis=0, keepdims=True), d)
        point_b = count_statistics(block_b.sum(axis=0, keepdims=True), d)
        score_a, score_b = point_a["score"][0], point_b["score"][0]
        rng = group_rng(spec.seed, ("compare", counts.key(a), counts.key(b)))
        parts_a, parts_b = [], []
        for w in resample_weights(rng, len(shared), spec.n_resamples):
            parts_a.append(w @ block_a)
            parts_b.append(w @ block_b)
        reps_a = count_statistics(np.concatenate(parts_a), d)
        reps_b = count_statistics(np.concatenate(parts_b), d)
        reps = reps_a["score"] - reps_b["score"]
        lo, hi = percentile_interval(reps, spec.confidence)
        lo_mc, hi_mc = quantile_mc_error(reps, spec.confidence)
        band_lo = band_hi = np.full_like(lo, np.nan)
        if above is not None:
            band_lo, band_hi = quantile_mc_band(reps, (1.0 - spec.confidence) / 2.0)
        # The edge rule (as for calibrated scores, `vera.stats.ppi`): where either side's
        # BP % or HPH % is near 0 or 100 % or it has few personas, its own card interval
        # (exact for the percentages) carries into the difference through MOVER, the
        # pairing kept through the replicates' correlation.
        edge = _at_edge(point_a, len(shared)) | _at_edge(point_b, len(shared))
        if edge.any():
            own_a = card_intervals(block_a, point_a, reps_a, d, spec.confidence)
            own_b = card_intervals(block_b, point_b, reps_b, d, spec.confidence)
            m_lo, m_hi = mover_difference(
                score_b,
                (own_b["score_lo"], own_b["score_hi"]),
                score_a,
                (own_a["score_lo"], own_a["score_hi"]),
                replicate_correlation(reps_a["score"], reps_b["score"]),
            )
            # A MOVER end moves with the sides' ends it is built from (a's lower and b's
            # upper for the lower end, by at most their Monte Carlo errors together).
            err_a = quantile_mc_error(reps_a["score"], spec.confidence)
            err_b = quantile_mc_error(reps_b["score"], spec.confidence)
            use_lo, use_hi = edge & (m_lo < lo), edge & (m_hi > hi)
            lo, lo_mc = np.where(use_lo, m_lo, lo), np.where(use_lo, err_a[0] + err_b[1], lo_mc)
            hi, hi_mc = np.where(use_hi, m_hi, hi), np.where(use_hi, err_a[1] + err_b[0], hi_mc)
            band_lo = np.where(use_lo, lo - MC_Z * lo_mc, band_lo)
            band_hi = np.where(use_lo, lo + MC_Z * lo_mc, band_hi)
        row: dict[str, Any] = {}
        for name, value in zip(units, counts.values(a), strict=True):
            row[f"{name}_a"] = [value] * (d + 1)
        for name, value in zip(units, counts.values(b), strict=True):
            row[f"{name}_b"] = [value] * (d + 1)
        row |= {
            "dimension": labels,
            "score_a": score_a,
            "score_b": score_b,
            "diff": score_a - score_b,
            "diff_lo": lo,
            "diff_hi": hi,
            "diff_lo_mc": lo_mc,
            "diff_hi_mc": hi_mc,
            "n_shared": np.full(d + 1, len(shared)),
            "n_only_a": np.full(d + 1, a1 - a0 - len(shared)),
            "n_only_b": np.full(d + 1, b1 - b0 - len(shared)),
        }
        if above is not None:
            low, high = band_lo, band_hi
            # NaN (no defined replicate) compares False both ways: settled, nothing to decide.
            row["settled"] = ~np.isfinite(lo) | (low > above) | (high <= above)
        schema = {f"{u}_{side}": frame.schema[u] for side in "ab" for u in units}
        parts.append(pl.DataFrame(row, schema_overrides=schema))
    pairs = nan_to_null(pl.concat(parts)) if parts else _empty_pairs(frame, units, settled=above is not None)
    return pairs.with_columns(
        excludes_zero=(pl.col("diff_lo") > 0) | (pl.col("diff_hi") < 0),
        **spec_columns(spec),
    )


def _at_edge(point: dict[str, np.ndarray], personas: int) -> np.ndarray:
    """Per dimension (+ Overall): whether the side's BP % or HPH % is near 0 or 100 %
    (`near_edge`) or the side has fewer than `MIN_RATED_PERSONAS` personas."""
    units = point["n_rated"][0]  # ratings (Overall: every dimension's), as for calibrated scores
    edge = near_edge(point["pct_hph"][0], units) | near_edge(point["pct_bp"][0], units)
    return np.asarray(edge | (personas < MIN_RATED_PERSONAS), dtype=bool)


def _empty_pairs(frame: pl.DataFrame, units: list[str], *, settled: bool = False) -> pl.DataFrame:
    schema: dict[str, Any] = {f"{u}_{side}": frame.schema[u] for side in "ab" for u in units}
    schema |= {
        "dimension": pl.Utf8,
        **dict.fromkeys(
            ("score_a", "score_b", "diff", "diff_lo", "diff_hi", "diff_lo_mc", "diff_hi_mc"), pl.Float64
        ),
        **dict.fromkeys(("n_shared", "n_only_a", "n_only_b"), pl.Int64),
    }
    if settled:
        schema["settled"] = pl.Boolean
    return pl.DataFrame(schema=schema)


def check_comparable(
    manifests: Sequence[Mapping[str, Any] | msgspec.Struct],
    names: Sequence[str] | None = None,
) -> list[str]:
    """What differs between runs in the versions of their rubric, personas, user prompts
    and judge prompts; empty when they may be compared.

    Each manifest is a run manifest (`vera.records.RunManifest` or its dict form) whose
    `rubric`, `personas`, `user_prompts` and `judge_prompts` each hold `version` and
    `sha256`. `names` label the runs in the messages (default "run 1", "run 2", ...).
    Scores are comparable only within one version of each, so the CLI refuses to compare
    unless forced, and prints these lines.
    """
    records = [m if isinstance(m, Mapping) else msgspec.to_builtins(m) for m in manifests]
    labels = list(names) if names is not None else [f"run {i + 1}" for i in range(len(records))]
    if len(labels) != len(records):
        raise ValueError(f"{len(records)} manifests but {len(labels)} names")
    problems: list[str] = []
    # The locale pack first: when it differs, every file below differs because of it,
    # and "rubric differs: version 1.2.0, version 1.2.0" alone would not say why.
    packs = [_locale(record.get("locale")) for record in records]
    for label, pack in zip(labels[1:], packs[1:], strict=True):
        if pack != packs[0]:
            problems.append(f"locale differs: {labels[0]} used {packs[0]}, {label} used {pack}")
    for key in VERSIONED_INPUTS:
        entries = [record.get(key) for record in records]
        identities = [_identity(e) for e in entries]
        # Names are shown only when they differ (vera-si and vera-si-zh-CN): the same
        # name twice adds nothing to the versions and hashes.
        named = len({_name(e) for e in entries}) > 1
        first = identities[0] if identities else None
        for label, entry, identity in zip(labels[1:], entries[1:], identities[1:], strict=True):
            if identity != first:
                problems.append(
                    f"{key} differs: {labels[0]} used {_describe(first, _name(entries[0]) if named else '')}, "
                    f"{label} used {_describe(identity, _name(entry) if named else '')}"
                )
    return problems


def _locale(entry: Any) -> str:
    if not isinstance(entry, Mapping) or not entry.get("tag"):
        return "no locale pack (vera's English base)"
    return f"locale pack {entry['tag']} {entry.get('version') or '?'}"


def _name(entry: Any) -> str:
    return str(entry.get("name") or "") if isinstance(entry, Mapping) else ""


def _identity(entry: Any) -> tuple[str, str] | None:
    if not isinstance(entry, Mapping):
        return None
    return str(entry.get("version", "")), str(entry.get("sha256", ""))


def _describe(identity: tuple[str, str] | None, name: str = "") -> str:
    if identity is None:
        return "no recorded version"
    version, sha = identity
    return f"{name + ' ' if name else ''}version {version or '?'} (sha256 {sha[:12] or '?'})"
