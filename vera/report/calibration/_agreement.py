"""Agreement of a run's judges with human raters, item by item."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
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
    read_ratings_file,
)
from vera.stats.humans import FINGERPRINT_COLUMN, PROFILE_COLUMN
from vera.store import (
    OTHER_TRANSCRIPTS_OPTION,
    ConversationHead,
    RunRecords,
    check_transcripts,
    latest_human_ratings,
    open_run,
    other_transcript_problem,
    read_human_ratings_file,
    run_fingerprints,
)

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
    allow_other_transcripts: bool = False,
    on_collapsed: Callable[[list[int]], None] | None = None,
) -> HumanAgreementReport | JudgeConsensusReport:
    """Agreement among the human raters of a ratings file; with `against`, between
    their per-conversation consensus and the judges of that run (with bootstrap
    intervals over conversations), plus the humans' own agreement. Dimensions come in
    the order of the ratings file (the rubric's order). The consensus is the one rating
    the `raters` rule forms, severest by default as the calibrated scores and gate form
    it; `raters=None` sets the judges against the majority vote instead, ties handled
    by `ties`. A ratings file set against a run has its ratings' transcript fingerprints
    (a human_ratings.jsonl's, a CSV's optional column) checked against the run's
    transcripts: one made on another transcript is refused unless
    `allow_other_transcripts`. A CSV's rows that repeat an earlier row exactly count
    once, their lines handed to `on_collapsed`; two that disagree are refused
    (`read_ratings_file`, as `vera ratings import` reads the file)."""
    run = read_run(against) if against is not None else None
    dimensions = run.ratings.get_column("dimension").unique(maintain_order=True).to_list() if run else None
    # The run's rubric names the dimensions; without a run, the method's five.
    known = dimensions or list(CLINICIAN_DIMENSIONS.values())
    if is_jsonl(Path(ratings_file)):
        long = review_ratings(
            Path(ratings_file),
            known,
            against=open_run(run.path) if run is not None else None,
            allow_other_transcripts=allow_other_transcripts,
        )
    else:
        long, collapsed = read_ratings_file(
            ratings_file, known, with_lines=True, with_fingerprints=True, with_profiles=True
        )
        if collapsed and on_collapsed is not None:
            on_collapsed(collapsed)
        if run is not None:
            check_profiles(Path(ratings_file), long, run.path, run.conversations)
        if run is not None and not allow_other_transcripts:
            _check_csv_transcripts(Path(ratings_file), long, run.path, run.conversations)
        long = long.drop("line", FINGERPRINT_COLUMN, PROFILE_COLUMN)
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


def check_profiles(
    path: Path, long: pl.DataFrame, run_dir: Path, conversations: Mapping[str, ConversationHead]
) -> None:
    """A CSV row whose `user_profile` (the persona it says the conversation had) is not
    the persona of the run's conversation its item names is a `DataError` naming its
    line, what the row says and what the run says: the row rates another conversation
    than the one it names (an id mistyped or pasted into the wrong row), and would
    count for the wrong persona. Compared as persona names are (letter case aside);
    rows without one, and items no conversation of the run is, are not checked here
    (the callers name those)."""
    named = long.filter(pl.col(PROFILE_COLUMN).is_not_null())
    if named.height == 0:
        return
    personas: dict[str, set[str]] = {}
    for head in conversations.values():
        personas.setdefault(human_item_id(head), set()).add(head.persona)
    for row in named.iter_rows(named=True):
        theirs = personas.get(row["item_id"])
        said = row[PROFILE_COLUMN]
        if theirs and said.casefold() not in {p.casefold() for p in theirs}:
            raise DataError(
                f"{path}:{row['line']}",
                f"{PROFILE_COLUMN} {said!r}, but conversation {row['item_id']!r} of run {run_dir} is "
                f"persona {', '.join(sorted(theirs))!r}: does the row name the conversation it rates?",
            )


def _check_csv_transcripts(
    path: Path, long: pl.DataFrame, run_dir: Path, conversations: dict[str, ConversationHead]
) -> None:
    """A CSV row whose `transcript_sha256` is not the transcript of the run's
    conversation its item names is a `DataError` naming its line (as `vera ratings
    import` refuses it); rows without one are not checked."""
    stamped = long.filter(pl.col(FINGERPRINT_COLUMN).is_not_null())
    if stamped.height == 0:
        return
    items: dict[str, list[str]] = {}
    for cid, head in conversations.items():
        items.setdefault(human_item_id(head), []).append(cid)
    wanted = set(stamped.get_column("item_id").to_list())
    fingerprints = run_fingerprints(open_run(run_dir), (c for i in wanted for c in items.get(i, [])))
    for row in stamped.iter_rows(named=True):
        for cid in items.get(row["item_id"], []):
            ours = fingerprints[cid]
            if row[FINGERPRINT_COLUMN] != ours:
                raise DataError(
                    f"{path}:{row['line']}",
                    other_transcript_problem(
                        cid,
                        row["rater"],
                        row[FINGERPRINT_COLUMN],
                        ours,
                        f"nothing compared; {OTHER_TRANSCRIPTS_OPTION} compares them anyway if you know",
                    ),
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


def review_ratings(
    path: Path,
    dimensions: list[str],
    *,
    against: RunRecords | None = None,
    allow_other_transcripts: bool = False,
) -> pl.DataFrame:
    """The long frame `(item_id, rater, dimension, rating)` of a human_ratings.jsonl
    (`vera review`'s file, or `vera ratings import`'s): each rater's latest rating of a
    conversation, as `vera score` reads it, the item being the conversation id. A
    dimension not among `dimensions` is an error naming its line, and so, `against` a
    run, is a rating made on another transcript than the run's (unless allowed)."""
    numbered = read_human_ratings_file(path)
    if against is not None:
        check_transcripts(
            path,
            numbered,
            against,
            allow_other=allow_other_transcripts,
            hint=f"nothing compared; {OTHER_TRANSCRIPTS_OPTION} compares them anyway if you know",
        )
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
