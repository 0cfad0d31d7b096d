"""A run directory read for analysis (its manifest, conversation heads and ratings), as
comparison, the gate, agreement and ratings import read it: never written or repaired."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from vera.records import RunManifest
from vera.report.shared._scoring import ratings_frame
from vera.store import ConversationHead, open_run


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
