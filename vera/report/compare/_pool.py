"""Pooling the scores of separate runs of one chatbot (`vera pool`), and scoring the
reference tool's own ``results.csv`` (`vera score FILE.csv`).

The reference pools by concatenating the rows of several evaluations (its
``pool_vera_scores.py``: two user-agent suites, or two judges over the same
conversations) and scoring the whole. vera does the same with the ratings of complete
judgements of complete conversations of each run, and scores them as the card does:
the formula per dimension and pooled overall, with persona-clustered bootstrap
intervals (`vera.stats.summarise`), a persona's conversations from every run in one
cluster. `vera merge` is for shards of one run; this is for runs that stand alone
(same chatbot, other user-agents, judges or seeds).

A reference ``results.csv`` becomes the same ratings frame: one judgement per row
(``filename`` the conversation, ``judge_model`` and ``judge_instance`` the judge), the
persona from ``persona_name`` or, in the v1.1 layout, from the file name; a rating cell
left empty is no rating, as the reference's scoring drops it.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from vera.errors import DataError, UserError
from vera.records import RATINGS
from vera.report.shared._scoring import ratings_frame
from vera.stats.bootstrap import summarise
from vera.store import open_run
from vera.text import read_text

# The reference's transcript names: <tag>_<persona>_<model>_run<N>.
_NAME = re.compile(r"^[0-9a-f]+_(?P<persona>[^_]+)_")
_HEAD = ("filename", "judge_model", "judge_instance")


class PooledRow(msgspec.Struct, frozen=True, gc=False):
    dimension: str
    n_rated: int
    pct_bp: float | None
    pct_sub: float | None
    pct_hph: float | None
    score: float | None
    score_lo: float | None
    score_hi: float | None


class Pooled(msgspec.Struct, frozen=True, kw_only=True):
    """Scores of pooled ratings: per dimension and "Overall"."""

    chatbot: str
    sources: list[str]
    rows_per_source: list[int]  # judgements from each source
    n_judgements: int
    n_personas: int
    resamples: int
    confidence: float
    rows: list[PooledRow]


def run_ratings(run_dir: str | Path, chatbot: str | None) -> tuple[pl.DataFrame, str]:
    """A run's ratings frame for one chatbot (the run's only one, or `chatbot`)."""
    records = open_run(run_dir)
    bots = [s.ref for s in records.manifest.chatbots]
    if chatbot is None:
        if len(bots) != 1:
            raise UserError(
                f"{run_dir}: holds {len(bots)} chatbots ({', '.join(bots)}); name one with --chatbot"
            )
        chatbot = bots[0]
    elif chatbot not in bots:
        raise UserError(f"{run_dir}: --chatbot {chatbot} is not a chatbot of this run ({', '.join(bots)})")
    frame = ratings_frame(records.complete_pairs())
    return frame.filter(pl.col("chatbot") == chatbot), chatbot


def results_csv_ratings(path: str | Path) -> pl.DataFrame:
    """The reference's results.csv as a ratings frame (one rating per row and dimension)."""
    p = Path(path)
    text = read_text(p, "results.csv")[1]
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [c for c in _HEAD if c not in header]
    if missing:
        raise DataError(f"{p}:1", f"not the reference's results.csv: no column {', '.join(missing)}")
    dims = [c for c in header if f"{c}_yes_question_id" in header]
    if not dims:
        raise DataError(f"{p}:1", "no dimension columns (each with a <dimension>_yes_question_id beside it)")
    rows: dict[str, list[Any]] = {
        k: []
        for k in ("conversation_id", "persona", "judge", "instance", "dimension", "rating", "question_id")
    }
    for lineno, row in enumerate(reader, start=2):
        name = row["filename"]
        persona = row.get("persona_name") or ((m := _NAME.match(name)) and m.group("persona")) or name
        try:
            instance = int(row["judge_instance"] or 1)
        except ValueError:
            raise DataError(
                f"{p}:{lineno}", f"judge_instance {row['judge_instance']!r} is not a whole number"
            ) from None
        for d in dims:
            rating = (row.get(d) or "").strip()
            if not rating:
                continue  # the reference drops an empty rating
            if rating not in RATINGS:
                raise DataError(
                    f"{p}:{lineno}", f"{d}: {rating!r} is not a rating (one of {', '.join(RATINGS)})"
                )
            for key, value in (
                ("conversation_id", name),
                ("persona", persona),
                ("judge", row["judge_model"]),
                ("instance", instance),
                ("dimension", d),
                ("rating", rating),
                ("question_id", row.get(f"{d}_yes_question_id") or ""),
            ):
                rows[key].append(value)
    return pl.DataFrame(rows, schema_overrides={"instance": pl.Int64})


def pool_scores(
    frames: Sequence[pl.DataFrame],
    *,
    chatbot: str,
    sources: Sequence[str],
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Pooled:
    """Concatenate the ratings (as the reference concatenates rows) and score them."""
    columns = ["conversation_id", "persona", "judge", "instance", "dimension", "rating"]
    pooled = pl.concat([f.select(columns) for f in frames], how="vertical")
    if pooled.height == 0:
        raise UserError("nothing to pool: no complete judgement in " + ", ".join(sources))
    summary = summarise(pooled, n_resamples=resamples, confidence=confidence, seed=seed)
    rows = [
        PooledRow(
            dimension=r["dimension"],
            n_rated=int(r["n_rated"]),
            pct_bp=r["pct_bp"],
            pct_sub=r["pct_sub"],
            pct_hph=r["pct_hph"],
            score=r["score"],
            score_lo=r["score_lo"],
            score_hi=r["score_hi"],
        )
        for r in summary.iter_rows(named=True)
    ]
    per_source = [
        f.select(pl.struct("conversation_id", "judge", "instance").n_unique()).item() for f in frames
    ]
    return Pooled(
        chatbot=chatbot,
        sources=list(sources),
        rows_per_source=per_source,
        # Every source's judgements, as they are scored: a judgement id found in two
        # sources (the same run given twice, or two runs of one config and seed) is
        # pooled twice, as the reference's concatenated rows are.
        n_judgements=sum(per_source),
        n_personas=pooled.get_column("persona").n_unique(),
        resamples=resamples,
        confidence=confidence,
        rows=rows,
    )


def pooled_text(p: Pooled) -> str:
    """The pooled scores as a plain table for the terminal."""

    def num(x: float | None) -> str:
        return "—" if x is None else f"{x:.1f}"

    lines = [
        f"{p.chatbot}: {p.n_judgements} judgements of {p.n_personas} personas from {len(p.sources)} source(s) "
        f"({', '.join(f'{s}: {n}' for s, n in zip(p.sources, p.rows_per_source, strict=True))})",
        f"{'dimension':<28} {'rated':>6} {'BP %':>6} {'Sub %':>6} {'HPH %':>6} {'score':>6}  {int(p.confidence * 100)}% interval",
    ]
    for r in p.rows:
        interval = f"[{num(r.score_lo)}, {num(r.score_hi)}]"
        lines.append(
            f"{r.dimension:<28} {r.n_rated:>6} {num(r.pct_bp):>6} {num(r.pct_sub):>6} {num(r.pct_hph):>6} {num(r.score):>6}  {interval}"
        )
    return "\n".join(lines) + "\n"
