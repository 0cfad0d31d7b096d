"""Agreement of a run's judges with human raters, item by item."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from vera.errors import DataError, UserError
from vera.records import Conversation
from vera.report.shared._runs import read_run
from vera.stats import (
    CLINICIAN_DIMENSIONS,
    DEFAULT_CONFIDENCE,
    DEFAULT_RATER_RULE,
    DEFAULT_RESAMPLES,
    ConsensusAgreement,
    NRTreatment,
    RaterAgreement,
    RaterRule,
    TieRule,
    human_agreement,
    judge_vs_consensus,
    read_human_ratings,
)
from vera.store import ConversationHead, latest_human_ratings, read_human_ratings_file

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


class RatingsFile(msgspec.Struct, frozen=True):
    """What a human ratings file holds: items, raters, and the fewest and most raters
    any item has."""

    path: str
    n_items: int
    n_raters: int
    raters_per_item: tuple[int, int]

    def to_builtins(self) -> dict[str, Any]:
        return {
            "ratings_file": self.path,
            "n_human_items": self.n_items,
            "n_human_raters": self.n_raters,
            "raters_per_item": list(self.raters_per_item),
        }


class HumanAgreementReport(msgspec.Struct, frozen=True):
    """`vera agreement RATINGS_FILE`: the raters' agreement with one another."""

    ratings: RatingsFile
    humans: RaterAgreement

    def to_builtins(self) -> dict[str, Any]:
        """The one flat JSON object of `vera agreement --json`."""
        humans: dict[str, Any] = msgspec.to_builtins(self.humans)
        return self.ratings.to_builtins() | humans


class JudgeConsensusReport(msgspec.Struct, frozen=True):
    """`vera agreement RATINGS_FILE --against RUN_DIR`: the judges of a run against the
    raters' consensus, and the raters' own agreement for reference."""

    ratings: RatingsFile
    run: str
    run_id: str
    judges: ConsensusAgreement
    humans: RaterAgreement

    def to_builtins(self) -> dict[str, Any]:
        """The one flat JSON object of `vera agreement --against RUN_DIR --json`."""
        judges: dict[str, Any] = msgspec.to_builtins(self.judges)
        return (
            self.ratings.to_builtins()
            | {"run": self.run, "run_id": self.run_id}
            | judges
            | {"humans": msgspec.to_builtins(self.humans)}
        )


def agreement_report(
    ratings_file: str | Path,
    *,
    against: str | Path | None = None,
    nr: NRTreatment = "category",
    ties: TieRule = "exclude",
    raters: RaterRule | None = DEFAULT_RATER_RULE,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> HumanAgreementReport | JudgeConsensusReport:
    """Agreement among the human raters of a ratings file; with `against`, between
    their per-conversation consensus and the judges of that run (with bootstrap
    intervals over conversations), plus the humans' own agreement. Dimensions come in
    the order of the ratings file (the rubric's order). The consensus is the one rating
    the `raters` rule forms, severest by default as the calibrated scores and gate form
    it; `raters=None` sets the judges against the majority vote instead, ties handled
    by `ties`."""
    run = read_run(against) if against is not None else None
    dimensions = run.ratings.get_column("dimension").unique(maintain_order=True).to_list() if run else None
    # The run's rubric names the dimensions; without a run, the method's five.
    known = dimensions or list(CLINICIAN_DIMENSIONS.values())
    if is_jsonl(Path(ratings_file)):
        long = review_ratings(Path(ratings_file), known)
    else:
        long = read_human_ratings(ratings_file, known)
    if long.height == 0:
        raise UserError(f"{ratings_file}: no ratings")
    humans = human_agreement(long, nr=nr)
    per_item = long.group_by("item_id").agg(pl.col("rater").n_unique()).get_column("rater").to_list()
    about = RatingsFile(
        path=str(ratings_file),
        n_items=len(per_item),
        n_raters=long.get_column("rater").n_unique(),
        raters_per_item=(min(per_item), max(per_item)),
    )
    if run is None:
        return HumanAgreementReport(ratings=about, humans=humans)
    if run.ratings.height == 0:
        raise UserError(f"{against}: no complete judgements to compare with")
    mapping = {cid: human_item_id(c) for cid, c in run.conversations.items()}
    result = judge_vs_consensus(
        long,
        run.ratings,
        item_key=mapping,
        nr=nr,
        ties=ties,
        raters=raters,
        n_resamples=resamples,
        confidence=confidence,
        seed=seed,
    )
    if result.n_items == 0:
        raise UserError(
            f"{against}: none of its conversations matches an item of {ratings_file} "
            "(items are matched by the transcript file's 6-hex prefix, or the conversation id)"
        )
    # In the order of the ratings file (the rubric's order), not the order of matching.
    order = long.get_column("dimension").unique(maintain_order=True).to_list()
    confusion = result.confusion
    result = msgspec.structs.replace(
        result,
        dimensions={d: result.dimensions[d] for d in order if d in result.dimensions},
        confusion=msgspec.structs.replace(
            confusion, dimensions={d: confusion.dimensions[d] for d in order if d in confusion.dimensions}
        ),
    )
    return JudgeConsensusReport(
        ratings=about, run=str(run.path), run_id=run.manifest.run_id, judges=result, humans=humans
    )


def is_jsonl(path: Path) -> bool:
    """A human_ratings.jsonl (its lines are JSON objects), not a CSV: told by its first
    character that is not white space."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False  # the CSV reader names the problem
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")


def review_ratings(path: Path, dimensions: list[str]) -> pl.DataFrame:
    """The long frame `(item_id, rater, dimension, rating)` of a human_ratings.jsonl
    (`vera review`'s file, or `vera ratings import`'s): each rater's latest rating of a
    conversation, as `vera score` reads it, the item being the conversation id. A
    dimension not among `dimensions` is an error naming its line."""
    numbered = read_human_ratings_file(path)
    known = set(dimensions)
    for line, rating in numbered:
        unknown = sorted(set(rating.ratings) - known)
        if unknown:
            raise DataError(
                f"{path}:{line}", f"dimension {unknown[0]!r} is not one of ({', '.join(dimensions)})"
            )
    rows = [
        (r.conversation_id, r.rater, d, r.ratings[d])
        for r in latest_human_ratings([r for _, r in numbered])
        for d in dimensions
        if d in r.ratings
    ]
    return pl.DataFrame(rows, schema=["item_id", "rater", "dimension", "rating"], orient="row")
