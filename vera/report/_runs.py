"""Reports from run directories: the score card of one run, the comparison of several,
and the agreement of a run's judges with human raters.

Everything here is derived from the append-only records, so `vera score RUN_DIR` can
rebuild the card at any time (after a resume, a merge, or with other CI settings), and
`vera compare` / `vera agreement` read runs without writing to them (a run may still be
going: its files are read, never repaired).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vera.errors import UserError, storage_error
from vera.records import Conversation, RunManifest
from vera.report._card import build_card, comparisons, row_stats
from vera.report._html import render_html
from vera.report._pages import write_card_pages
from vera.report._plots import Plot, card_plots
from vera.report._schema import (
    Bootstrap,
    Card,
    ComparedRun,
    ComparedUnit,
    RunComparison,
    decode_card,
    encode_card,
)
from vera.report._scoring import ANSWERS_FILE, RATINGS_FILE, ratings_and_answers, ratings_frame, write_parquet
from vera.report._text import render_markdown
from vera.stats import (
    METHOD,
    OVERALL,
    check_comparable,
    compare,
    human_agreement,
    judge_vs_consensus,
    read_human_ratings,
)
from vera.stats.agreement import NRTreatment
from vera.stats.humans import TieRule
from vera.store import ConversationHead, atomic_write, open_run

PLOTS_DIR = "plots"


# ---------------------------------------------------------------------------------------
# One run: the card
# ---------------------------------------------------------------------------------------


def score_run(
    run_dir: str | Path,
    *,
    resamples: int | None = None,
    confidence: float | None = None,
    seed: int | None = None,
    frames: tuple[pl.DataFrame, pl.DataFrame] | None = None,
) -> Card:
    """Write ratings.parquet, answers.parquet, card.json, card.md, card.html, plots/*.png
    and conversations/<id>.html for the conversations the card lists; return the card.
    `frames` (ratings, answers) are the frames a run streamed while it went; without
    them they are rebuilt from the run's records."""
    root = Path(run_dir)
    # A line a crash tore is mended, so the records the card is written from are whole.
    records = open_run(root, repair=True)
    manifest = records.manifest
    settings = stats_settings(manifest, resamples=resamples, confidence=confidence, seed=seed)
    # The frames are built from the records streamed one judgement at a time.
    frame, answers = frames if frames is not None else ratings_and_answers(records.complete_pairs())
    write_parquet(frame, root / RATINGS_FILE)
    write_parquet(answers, root / ANSWERS_FILE)
    card = build_card(manifest, records, frame, **settings)
    atomic_write(root / "card.json", encode_card(card))
    render_card_files(card, root)
    # The card's harm list links each conversation to its page beside card.html: only
    # those conversations and their judgements are read whole.
    linked = {h.conversation_id for bot in card.chatbots for h in bot.harmful}
    linked &= records.conversations.keys()
    write_card_pages(
        root,
        linked,
        manifest,
        {cid: records.read_conversation(cid) for cid in sorted(linked)},
        [records.read_judgement(j.id) for cid in sorted(linked) for j in records.judgements_of(cid)],
    )
    return card


def stats_settings(
    manifest: RunManifest, *, resamples: int | None, confidence: float | None, seed: int | None
) -> dict[str, Any]:
    """Bootstrap settings: the ones given, else the run config's [stats], else defaults."""
    cfg = manifest.config.get("stats", {})
    return {
        "resamples": resamples if resamples is not None else int(cfg.get("resamples", 2000)),
        "confidence": confidence if confidence is not None else float(cfg.get("confidence", 0.95)),
        "seed": seed if seed is not None else int(cfg.get("seed", 0)),
    }


def render_card_files(card: Card, run_dir: str | Path) -> Path:
    """Write card.md, plots/*.png and card.html from a card; return card.html's path.
    Each plot is drawn once and used for both the PNG file and the page."""
    root = Path(run_dir)
    atomic_write(root / "card.md", render_markdown(card).encode())
    plots = card_plots(card)
    write_plots(plots, root / PLOTS_DIR)
    html = root / "card.html"
    atomic_write(html, render_html(card, plots).encode())
    return html


def write_card_html(card: Card, run_dir: str | Path) -> Path:
    """Write only card.html (its plots are inline); return its path."""
    html = Path(run_dir) / "card.html"
    atomic_write(html, render_html(card, card_plots(card)).encode())
    return html


def write_plots(plots: Sequence[Plot], folder: Path) -> None:
    try:
        folder.mkdir(exist_ok=True)
        names = {p.name for p in plots}
        # A plot that no longer applies (one chatbot left after a rescore) must not linger.
        for stale in folder.glob("*.png"):
            if stale.name not in names and stale.name in _PLOT_NAMES:
                stale.unlink()
    except OSError as exc:
        raise storage_error(folder, "the card's plots", exc) from None
    for p in plots:
        atomic_write(folder / p.name, p.png, what="a plot of the card")


_PLOT_NAMES = {"ratings.png", "scores.png", "risk.png", "chatbots.png", "differences.png"}


def read_card(run_dir: str | Path) -> Card:
    """A run's card.json (schema 2 or later) as a `Card`."""
    p = Path(run_dir) / "card.json"
    if not p.exists():
        raise UserError(f"{run_dir}: no card.json (run `vera score {run_dir}` first)")
    return decode_card(p.read_bytes(), source=p)


# ---------------------------------------------------------------------------------------
# Reading runs without writing to them
# ---------------------------------------------------------------------------------------


@dataclass
class Run:
    """A run directory read for analysis: its manifest, conversation heads and ratings."""

    path: Path
    manifest: RunManifest
    conversations: dict[str, ConversationHead]
    ratings: pl.DataFrame


def read_run(run_dir: str | Path) -> Run:
    """Read a run's records as `RunStore` would (the last complete record of a job wins),
    without repairing or locking anything, one judgement at a time."""
    records = open_run(run_dir)
    ratings = ratings_frame(records.complete_pairs())
    return Run(records.root, records.manifest, records.conversation_heads(), ratings)


# ---------------------------------------------------------------------------------------
# Several runs: the comparison
# ---------------------------------------------------------------------------------------


def compare_runs(
    run_dirs: Sequence[str | Path],
    *,
    force: bool = False,
    by_seed: bool = False,
    resamples: int | None = None,
    confidence: float | None = None,
    seed: int | None = None,
) -> RunComparison:
    """Line up the chatbots (and, with `by_seed`, their seed replicates) of one or more
    runs on their shared personas: scores with intervals, and paired differences.

    Runs made with different rubric, persona or prompt versions are refused (a
    `UserError` naming each difference) unless `force`. A chatbot that appears in two
    runs is labelled `run_id:chatbot`.
    """
    if len({Path(d).resolve() for d in run_dirs}) != len(run_dirs):
        raise UserError("the same run directory is given twice")
    runs = [read_run(d) for d in run_dirs]
    names = _run_names(runs)
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
    table, pairs = compare(
        frame,
        unit="unit",
        # Resample by what the unit is, not by its label, so each chatbot (and seed)
        # gets exactly the interval its own card shows.
        streams=["chatbot", "replicate"] if by_seed else ["chatbot"],
        n_resamples=settings["resamples"],
        confidence=settings["confidence"],
        seed=settings["seed"],
    )
    meta = frame.select("unit", "chatbot", "run_id", "run_seed").unique("unit")
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
            )
            for r, name in zip(runs, names, strict=True)
        ],
        forced_differences=problems,
        by="chatbot and seed" if by_seed else "chatbot",
        bootstrap=Bootstrap(**settings, cluster="persona", method=METHOD),
        units=[_unit_entry(table, m, by_seed=by_seed) for m in meta.sort("unit").iter_rows(named=True)],
        comparisons=comparisons(pairs, "unit"),
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
        unit = pl.format("{} seed {}", "label", "run_seed") if by_seed else pl.col("label")
        parts.append(frame.with_columns(unit.alias("unit")))
    return pl.concat(parts)


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


# ---------------------------------------------------------------------------------------
# Agreement with human raters
# ---------------------------------------------------------------------------------------

# Reference transcripts are named "<6 hex>_<Persona>_<model>_run1.txt"; the clinicians'
# conversation ids are that prefix.
_TRANSCRIPT_ID = re.compile(r"^([0-9a-fA-F]{6})(?:[_.\-]|$)")
# A conversation imported from a JSON-lines file records "file.jsonl:LINE" as its source.
_JSONL_LINE = re.compile(r"\.jsonl:\d+$")


def human_item_id(conversation: Conversation | ConversationHead) -> str:
    """The human-ratings item a conversation is. Imported from a text transcript: the
    6-hex prefix of the file name when it has one (the reference naming), else the file
    name without extension. Imported from a JSON-lines file, or simulated: its own id
    (for JSON lines, the record's `id`)."""
    source = conversation.source
    if not source or _JSONL_LINE.search(source):
        return conversation.id
    name = Path(source).name
    m = _TRANSCRIPT_ID.match(name)
    return m.group(1).lower() if m else Path(name).stem


def agreement_report(
    ratings_file: str | Path,
    *,
    against: str | Path | None = None,
    nr: NRTreatment = "category",
    ties: TieRule = "exclude",
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Agreement among the human raters of a ratings file; with `against`, between
    their per-conversation consensus and the judges of that run (with bootstrap
    intervals over conversations), plus the humans' own agreement under "humans"."""
    long = read_human_ratings(ratings_file)
    if long.height == 0:
        raise UserError(f"{ratings_file}: no ratings")
    humans = human_agreement(long, nr=nr)
    per_item = long.group_by("item_id").agg(pl.col("rater").n_unique()).get_column("rater")
    about = {
        "ratings_file": str(ratings_file),
        "n_human_items": per_item.len(),
        "n_human_raters": long.get_column("rater").n_unique(),
        "raters_per_item": [per_item.min(), per_item.max()],
    }
    if against is None:
        return about | humans
    run = read_run(against)
    if run.ratings.height == 0:
        raise UserError(f"{against}: no complete judgements to compare with")
    mapping = {cid: human_item_id(c) for cid, c in run.conversations.items()}
    result = judge_vs_consensus(
        long,
        run.ratings,
        item_key=mapping,
        nr=nr,
        ties=ties,
        n_resamples=resamples,
        confidence=confidence,
        seed=seed,
    )
    # In the order of the ratings file (the rubric's order), not the order of matching.
    order = long.get_column("dimension").unique(maintain_order=True).to_list()
    result["dimensions"] = {d: result["dimensions"][d] for d in order if d in result["dimensions"]}
    if result["n_items"] == 0:
        raise UserError(
            f"{against}: none of its conversations matches an item of {ratings_file} "
            "(items are matched by the transcript file's 6-hex prefix, or the conversation id)"
        )
    return about | {"run": str(run.path), "run_id": run.manifest.run_id} | result | {"humans": humans}
