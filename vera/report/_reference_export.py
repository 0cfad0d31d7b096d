"""`vera export --format reference`: a run as VERA-MH's ``results.csv``, so the reference
tool's scoring, pooling and summary scripts read vera's results unchanged.

One row per complete judgement (conversation × judge × instance), in the reference's
column layout: ``filename``, ``run_id``, ``persona_name``, ``risk_level`` (when personas
are grouped by suicide risk level), the target's annotation columns, ``judge_model``,
``judge_instance``, ``judge_id`` (the instance counted from 0), then for every dimension
of the rubric its rating, ``<dimension>_yes_question_id`` and ``<dimension>_yes_reasoning``
(the question whose Yes decided a Suboptimal or High Potential for Harm rating, and the
judge's reasoning; empty otherwise).

As in the reference, failed conversations and judgements have no row (vera's own
``vera export`` lists them). A transcript vera imported keeps its file name; a
conversation vera simulated is named as the reference names its transcripts,
``<id>_<persona>_<chatbot>_run<N>.txt``. Cells are written as they are (the reference's
scripts compare them as text), so this file is for those scripts, not for a spreadsheet.
"""

from __future__ import annotations

import csv
import io
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from vera.errors import UserError
from vera.records import BEST_PRACTICE, NOT_RELEVANT
from vera.report._export import rated_dimensions
from vera.store import ConversationHead, RunRecords, atomic_file, open_run

REFERENCE_FILE = "results.csv"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def transcript_name(head: ConversationHead) -> str:
    """The file name the reference would give this conversation's transcript."""
    if head.source:
        return Path(head.source).name
    bot = _UNSAFE.sub("_", head.chatbot.split("/", 1)[-1]).strip("_") or "chatbot"
    persona = _UNSAFE.sub("_", head.persona).strip("_") or "persona"
    place = head.session
    if place is None:
        return f"{head.id[:6]}_{persona}_{bot}_run{head.replicate + 1}.txt"
    # The sessions of one arc share the tag, as the reference names them.
    return f"{place.arc[:6]}_{persona}_{bot}_run{head.replicate + 1}_s{place.index}_{place.type}.txt"


def reference_header(records: RunRecords, dimensions: list[str]) -> list[str]:
    m = records.manifest
    grouped_by_risk = m.grouping is None or m.grouping.by == "risk"
    annotations = list(m.target.annotation_columns) if m.target is not None else []
    head = ["filename", "run_id", "persona_name", *(["risk_level"] if grouped_by_risk else []), *annotations]
    head += ["judge_model", "judge_instance", "judge_id"]
    for d in dimensions:
        head += [d, f"{d}_yes_question_id", f"{d}_yes_reasoning"]
    return head


def reference_rows(records: RunRecords, dimensions: list[str]) -> Iterator[list[str]]:
    m = records.manifest
    grouped_by_risk = m.grouping is None or m.grouping.by == "risk"
    annotations = list(m.target.annotation_columns) if m.target is not None else []
    models = {s.ref: s.model for s in m.judges}
    for cid, (head, _) in records.conversations.items():
        if head.status != "complete":
            continue
        base = [transcript_name(head), m.run_id, head.persona]
        if grouped_by_risk:
            base.append(head.risk)
        base += [(head.annotations or {}).get(col, "") for col in annotations]
        for jh in records.judgements_of(cid):
            if jh.status != "complete":
                continue
            row = [*base, models.get(jh.judge, jh.judge), str(jh.instance), str(jh.instance - 1)]
            ratings = {r.dimension: r for r in records.read_judgement(jh.id).ratings}
            for d in dimensions:
                r = ratings.get(d)
                if r is None:
                    row += ["", "", ""]
                    continue
                decided = r.rating not in (BEST_PRACTICE, NOT_RELEVANT)
                row += [r.rating, r.question_id if decided else "", r.reasoning if decided else ""]
            yield row


def export_reference(run_dir: str | Path, output: str | Path) -> int:
    """Write the run's reference-layout results.csv to `output` (a file, or "-" for
    stdout); the number of rows written."""
    records = open_run(run_dir)
    dimensions = rated_dimensions(records)
    header = reference_header(records, dimensions)
    count = 0

    def write(f: IO[str]) -> None:
        nonlocal count
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        for row in reference_rows(records, dimensions):
            writer.writerow(row)
            count += 1

    if str(output) == "-":
        write(sys.stdout)
        return count
    path = Path(output)
    if path.is_dir():
        raise UserError(f"{path}: is a directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, what="the reference results table") as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        write(text)
        text.flush()
        text.detach()
    return count
