"""A run directory read for analysis (its manifest, conversation heads and ratings), as
comparison, the gate, agreement and ratings import read it: never written or repaired."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from vera.records import RunManifest
from vera.report.shared._outcome import RunStatus, run_status
from vera.report.shared._scoring import ratings_frame
from vera.store import ConversationHead, open_run


@dataclass
class Run:
    """A run directory read for analysis: its manifest, conversation heads and ratings."""

    path: Path
    manifest: RunManifest
    conversations: dict[str, ConversationHead]
    ratings: pl.DataFrame
    # What the run's records say of it, as its card would: complete, or why not (an
    # interrupted or stopped run, failed work beyond the run's --allow-failures).
    status: RunStatus


def read_run(run_dir: str | Path) -> Run:
    """Read a run's records as `RunStore` would (the last complete record of a job wins),
    without repairing or locking anything, one judgement at a time."""
    records = open_run(run_dir)
    ratings = ratings_frame(records.complete_pairs())
    conversations = records.conversation_heads()
    status = run_status(
        records.manifest,
        conversations,
        records.judgement_heads(),
        stopped=records.manifest.stopped,
        allow_failures=records.manifest.config.allow_failures,
    )
    return Run(records.root, records.manifest, conversations, ratings, status)
