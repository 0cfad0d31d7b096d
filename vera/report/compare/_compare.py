"""Several runs side by side: paired differences of their scores. Runs are read,
never written or repaired (one may still be going)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from vera.errors import UserError
from vera.records import RunManifest
from vera.report.card._build import comparisons, row_stats
from vera.report.card._schema import (
    Bootstrap,
    ComparedRun,
    ComparedUnit,
    RunComparison,
    SeedAgreement,
)
from vera.report.card._score import stats_settings
from vera.report.card._sequence import sequential_card
from vera.report.compare._seeds import across_seeds
from vera.report.shared._runs import Run, read_run
from vera.stats import (
    METHOD,
    OVERALL,
    check_comparable,
    compare,
)


def compare_runs(
    run_dirs: Sequence[str | Path],
    *,
    force: bool = False,
    by_seed: bool = False,
    resamples: int | None = None,
    confidence: float | None = None,
    seed: int | None = None,
    read: Callable[[str | Path], Run] = read_run,
) -> RunComparison:
    """Line up the chatbots (and, with `by_seed`, their seed replicates) of one or more
    runs on their shared personas: scores with intervals, and paired differences.

    Runs made with different rubric, persona or prompt versions are refused (a
    `UserError` naming each difference) unless `force`. A chatbot that appears in two
    runs is labelled `run_id:chatbot`. `read` reads a run (the viewer passes one that
    remembers: it compares the same runs by chatbot and by seed).
    """
    if len({Path(d).resolve() for d in run_dirs}) != len(run_dirs):
        raise UserError("the same run directory is given twice")
    runs = [read(d) for d in run_dirs]
    names = _run_names(runs)
    refuse_mixed_semantics([r.manifest for r in runs], names)
    problems = check_comparable([r.manifest for r in runs], names=names)
    if problems and not force:
        raise UserError(
            "runs are not comparable: " + "; ".join(problems) + " (use --force to compare anyway)"
        )
    settings = stats_settings(runs[0].manifest, resamples=resamples, confidence=confidence, seed=seed)
    frame = _units_frame(runs, names, by_seed=by_seed)
    units = frame.select("unit").unique()
    if units.height < 2:
        only = units.get_column("unit").to_list()
        raise UserError(
            f"nothing to compare: the runs hold one chatbot with ratings ({', '.join(only) or 'none'})"
        )
    # By seed, the units are (label, seed) pairs, so they and their pairs come in the
    # seeds' order (seed 2 before seed 10), not their labels' ("seed 10" before "seed 2").
    table, pairs = compare(
        frame,
        unit=["label", "run_seed"] if by_seed else "unit",
        # Resample by what the unit is, not by its label, so each chatbot (and seed)
        # gets exactly the interval its own card shows.
        streams=["chatbot", "replicate"] if by_seed else ["chatbot"],
        n_resamples=settings.resamples,
        confidence=settings.confidence,
        seed=settings.seed,
    )
    if by_seed:
        table = table.with_columns(_seed_unit("label", "run_seed").alias("unit"))
        pairs = pairs.with_columns(
            _seed_unit(f"label_{x}", f"run_seed_{x}").alias(f"unit_{x}") for x in ("a", "b")
        )
    meta = frame.select("unit", "label", "chatbot", "run_id", "run_seed").unique("unit")
    entries = comparisons(pairs, "unit")
    seeds: list[SeedAgreement] | msgspec.UnsetType = msgspec.UNSET
    if by_seed:
        named = {m["unit"]: (m["label"], m["run_seed"]) for m in meta.iter_rows(named=True)}
        seeds = across_seeds(entries, named)
    return RunComparison(
        runs=[
            ComparedRun(
                run_id=r.manifest.run_id,
                label=name,
                path=str(r.path),
                offline=r.manifest.offline,
                versions={
                    "rubric": r.manifest.rubric,
                    "personas": r.manifest.personas,
                    "user_prompts": r.manifest.user_prompts,
                    "judge_prompts": r.manifest.judge_prompts,
                },
                sequential=sequential_card(r.path),
            )
            for r, name in zip(runs, names, strict=True)
        ],
        forced_differences=problems,
        by="chatbot and seed" if by_seed else "chatbot",
        bootstrap=Bootstrap(
            resamples=settings.resamples,
            confidence=settings.confidence,
            seed=settings.seed,
            cluster="persona",
            method=METHOD,
        ),
        units=[
            _unit_entry(table, m, by_seed=by_seed)
            for m in meta.sort(["label", "run_seed"] if by_seed else "unit").iter_rows(named=True)
        ],
        comparisons=entries,
        across_seeds=seeds,
    )


def refuse_mixed_semantics(manifests: Sequence[RunManifest], names: Sequence[str]) -> None:
    """Runs judged with different terminal semantics are never compared, not even with
    --force: the same answers give other ratings under each (docs/rubric.md)."""
    used = [m.terminal_semantics for m in manifests]
    if len(set(used)) > 1:
        each = ", ".join(f"{n} {u!r}" for n, u in zip(names, used, strict=True))
        raise UserError(
            f"runs judged with different terminal semantics ({each}) cannot be compared: "
            "judge them again with the same [judge] terminal_semantics"
        )


def _run_names(runs: Sequence[Run]) -> list[str]:
    ids = [r.manifest.run_id for r in runs]
    # Two runs with the same id (copies in two folders) are told apart by their path.
    return ids if len(set(ids)) == len(ids) else [str(r.path) for r in runs]


def _units_frame(runs: Sequence[Run], names: Sequence[str], *, by_seed: bool) -> pl.DataFrame:
    refs = [set(r.ratings.get_column("chatbot").unique().to_list()) for r in runs]
    shared = {ref for i, a in enumerate(refs) for b in refs[i + 1 :] for ref in a & b}
    parts = []
    for run, name in zip(runs, names, strict=True):
        seeds = run.manifest.seeds
        label = (
            pl.when(pl.col("chatbot").is_in(list(shared)))
            .then(pl.format("{}:{}", pl.lit(name), "chatbot"))
            .otherwise(pl.col("chatbot"))
        )
        # `replicate` indexes the run's seeds; the frame's `seed` is per conversation.
        run_seed = pl.col("replicate").replace_strict(list(range(len(seeds))), seeds, default=None)
        frame = run.ratings.with_columns(
            label.alias("label"), pl.lit(name).alias("run_id"), run_seed.cast(pl.Int64).alias("run_seed")
        )
        unit = _seed_unit("label", "run_seed") if by_seed else pl.col("label")
        parts.append(frame.with_columns(unit.alias("unit")))
    return pl.concat(parts)


def _seed_unit(label: str, seed: str) -> pl.Expr:
    """A seed replicate's name: "<chatbot> seed <n>"."""
    return pl.format("{} seed {}", label, seed)


def _unit_entry(table: pl.DataFrame, meta: dict[str, Any], *, by_seed: bool) -> ComparedUnit:
    rows = table.filter(pl.col("unit") == meta["unit"]).to_dicts()
    overall = next(r for r in rows if r["dimension"] == OVERALL)
    return ComparedUnit(
        unit=meta["unit"],
        chatbot=meta["chatbot"],
        run_id=meta["run_id"],
        seed=meta["run_seed"] if by_seed else None,
        n_conversations=overall["n_conversations"],
        n_judgements=overall["n_judgements"],
        n_personas=overall["n_clusters"],
        overall=row_stats(overall),
        dimensions={r["dimension"]: row_stats(r) for r in rows if r["dimension"] != OVERALL},
    )
