"""`vera export --format reference`: a run as VERA-MH's ``results.csv``, so the reference
tool's scoring, pooling and summary scripts read vera's results unchanged.

One file per chatbot, because the reference scores a ``results.csv`` as one chatbot's
(its evaluation folders hold one chatbot each): ``<folder>/<chatbot>/results.csv``. One
row per complete judgement (conversation × judge × instance), in the reference's column
layout: ``filename``, ``run_id``, ``persona_name``, ``risk_level`` (the persona's risk
level, or for a target grouped by another column that column's label, as every target's
rows carry one), the target's annotation columns, ``judge_model``, ``judge_instance``,
``judge_id`` (the instance counted from 0), then for every dimension of the rubric its
rating, ``<dimension>_yes_question_id`` and ``<dimension>_yes_reasoning`` (the question
whose Yes decided a Suboptimal or High Potential for Harm rating, and the judge's
reasoning; empty otherwise).

As in the reference, failed conversations and judgements have no row (vera's own
``vera export`` lists them). A transcript vera imported keeps its file name; a
conversation vera simulated is named as the reference names its transcripts,
``<tag>_<persona>_<user-agent model>_run<N>.txt`` (the user-agent's model where the
reference puts its persona model, which is where vera's importer reads it back).
``judge_model`` is the judge's model as the reference names a model (its model factory
picks the provider from the name); a model whose name does not say its provider is
written ``<provider>/<model>``, vera's profile, so the row still says who judged. Cells
are written as they are (the reference's scripts compare them as text), so this file is
for those scripts, not for a spreadsheet.
"""

from __future__ import annotations

import csv
import io
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import msgspec

from vera.errors import UserError, storage_error
from vera.records import BEST_PRACTICE, NOT_RELEVANT, ModelSpec
from vera.report.exports._results import rated_dimensions
from vera.store import ConversationHead, RunRecords, atomic_file, open_run

REFERENCE_FILE = "results.csv"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


# The reference's model factory routes a model by these words in its name.
_ROUTED = ("claude", "gpt", "openai", "gemini", "google", "llama", "ollama")


def _slug(text: str, fallback: str) -> str:
    return _UNSAFE.sub("_", text).strip("_") or fallback


def transcript_name(head: ConversationHead, user_agent_model: str = "") -> str:
    """The file name the reference would give this conversation's transcript: its tag,
    the persona, the user-agent's model (the reference's persona model) and the run."""
    if head.source:
        return Path(head.source).name
    model = _slug(user_agent_model or head.user_agent.split("/", 1)[-1], "user-agent")
    persona = _slug(head.persona, "persona")
    place = head.session
    if place is None:
        return f"{head.id[:6]}_{persona}_{model}_run{head.replicate + 1}.txt"
    # The sessions of one arc share the tag, as the reference names them.
    return f"{place.arc[:6]}_{persona}_{model}_run{head.replicate + 1}_s{place.index}_{place.type}.txt"


def reference_model_name(spec: ModelSpec) -> str:
    """A model as the reference writes it: the name its factory routes by; a name that
    does not say its provider keeps vera's profile in front."""
    if any(word in spec.model.lower() for word in _ROUTED):
        return spec.model
    return f"{spec.provider}/{spec.model}"


def reference_header(records: RunRecords, dimensions: list[str]) -> list[str]:
    m = records.manifest
    annotations = list(m.target.annotation_columns) if m.target is not None else []
    head = ["filename", "run_id", "persona_name", "risk_level", *annotations]
    head += ["judge_model", "judge_instance", "judge_id"]
    for d in dimensions:
        head += [d, f"{d}_yes_question_id", f"{d}_yes_reasoning"]
    return head


def reference_rows(
    records: RunRecords, dimensions: list[str], chatbot: str | None = None
) -> Iterator[list[str]]:
    """The rows of one chatbot's file (every chatbot's with None)."""
    m = records.manifest
    annotations = list(m.target.annotation_columns) if m.target is not None else []
    judges = {s.ref: reference_model_name(s) for s in m.judges}
    agents = {s.ref: s.model for s in m.user_agents}
    for cid, (head, _) in records.conversations.items():
        if head.status != "complete" or (chatbot is not None and head.chatbot != chatbot):
            continue
        name = transcript_name(head, agents.get(head.user_agent, ""))
        base = [name, m.run_id, head.persona, head.risk]
        base += [(head.annotations or {}).get(col, "") for col in annotations]
        for jh in records.judgements_of(cid):
            if jh.status != "complete":
                continue
            row = [*base, judges.get(jh.judge, jh.judge), str(jh.instance), str(jh.instance - 1)]
            ratings = {r.dimension: r for r in records.read_judgement(jh.id).ratings}
            for d in dimensions:
                r = ratings.get(d)
                if r is None:
                    row += ["", "", ""]
                    continue
                decided = r.rating not in (BEST_PRACTICE, NOT_RELEVANT)
                row += [r.rating, r.question_id if decided else "", r.reasoning if decided else ""]
            yield row


class ReferenceFile(msgspec.Struct, frozen=True):
    chatbot: str
    path: str  # "-" for standard output
    rows: int


def chatbot_folder(ref: str) -> str:
    """The folder one chatbot's results.csv is written to (its ref, made a file name)."""
    return _slug(ref.replace("/", "__"), "chatbot")


def export_reference(
    run_dir: str | Path, output: str | Path | None = None, *, chatbot: str | None = None
) -> list[ReferenceFile]:
    """Write the run's reference-layout results: one ``results.csv`` per chatbot under the
    folder `output` (default ``RUN_DIR/reference``), as ``<chatbot>/results.csv``. With
    one chatbot (the run's only one, or `chatbot`), `output` may instead name the file,
    or be "-" for standard output."""
    records = open_run(run_dir)
    dimensions = rated_dimensions(records)
    header = reference_header(records, dimensions)
    bots = [s.ref for s in records.manifest.chatbots]
    if chatbot is not None:
        if chatbot not in bots:
            raise UserError(f"--chatbot {chatbot}: not a chatbot of this run ({', '.join(bots)})")
        bots = [chatbot]
    target = Path(run_dir) / "reference" if output is None else Path(output)
    single = str(output) == "-" or (output is not None and target.suffix.lower() == ".csv")
    if single and len(bots) > 1:
        raise UserError(
            f"{output}: this run has {len(bots)} chatbots ({', '.join(bots)}) and the reference scores "
            "one chatbot per results.csv; give a folder (one file per chatbot) or --chatbot REF"
        )
    written = []
    for bot in bots:
        rows = reference_rows(records, dimensions, bot)
        if str(output) == "-":
            written.append(ReferenceFile(bot, "-", _write(sys.stdout, header, rows)))
            continue
        path = target if single else target / chatbot_folder(bot) / REFERENCE_FILE
        if path.is_dir():
            raise UserError(f"{path}: is a directory")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            # A folder vera cannot make (read-only, or a file in its way) is the user's to
            # fix: one line naming the file, as atomic_file names its own failures.
            raise storage_error(path, "the reference results table", exc) from None
        with atomic_file(path, what="the reference results table") as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            count = _write(text, header, rows)
            text.flush()
            text.detach()
        written.append(ReferenceFile(bot, str(path), count))
    return written


def _write(f: IO[str], header: list[str], rows: Iterator[list[str]]) -> int:
    writer = csv.writer(f, lineterminator="\n")
    writer.writerow(header)
    count = 0
    for row in rows:
        writer.writerow(row)
        count += 1
    return count
