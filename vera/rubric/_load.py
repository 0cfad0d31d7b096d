"""Reading a rubric file, ours or VERA-MH's, into a `Rubric` (flow problems are left
to validation)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from vera.errors import DataError
from vera.files import read_tsv_text, sidecar, tsv_rows
from vera.rubric._model import Goto, Option, Question, Rubric

# Column aliases: our header names first, then VERA-MH's.
_COLUMNS: dict[str, tuple[str, ...]] = {
    "id": ("id", "question id"),
    "dimension": ("dimension",),
    "severity": ("severity",),
    "risk": ("risk", "risk type"),
    "question": ("question",),
    "guidance": ("guidance", "examples"),
    "option": ("option", "answer"),
    "goto": ("goto",),
    "title": ("label", "title"),
    "auto": ("auto answer", "auto"),
    "option_text": ("option_text",),
}
# What an ``Auto Answer`` cell may say; anything else is a validation problem.
AUTO_TRUE = "true"
AUTO_FALSE = ("", "false")
_REQUIRED = ("id", "dimension", "severity", "question", "option", "goto")


def load_rubric(path: str | Path) -> Rubric:
    """Read a rubric file in our format or VERA-MH's. Raises DataError for a file that
    cannot be read as a rubric at all (missing, no header, missing columns); flow
    problems are left to `validate_rubric`."""
    p = Path(path)
    raw, text = read_tsv_text(p, "rubric")
    rows = tsv_rows(text, p)
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise DataError(f"{p}:1", "empty file: expected a header row")
    header = [h.strip().lower() for h in rows[0]]
    cols: dict[str, int] = {}
    for key, aliases in _COLUMNS.items():
        for alias in aliases:
            if alias in header:
                cols[key] = header.index(alias)
                break
    missing = [k for k in _REQUIRED if k not in cols]
    if missing:
        raise DataError(
            f"{p}:1",
            "missing column(s) " + ", ".join(missing) + " (expected our header "
            "'id dimension severity risk question guidance option goto' or VERA-MH's "
            "'Question ID ... Answer GOTO')",
        )
    fmt: Literal["vera", "vera-mh"] = "vera-mh" if "question id" in header else "vera"

    def cell(row: list[str], key: str) -> str:
        i = cols.get(key)
        return row[i].strip() if i is not None and i < len(row) else ""

    questions: list[Question] = []
    problems: list[tuple[int, str]] = []
    current: dict[str, Any] | None = None
    width = len(header)
    for lineno, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) > width and any(c.strip() for c in row[width:]):
            # Text past the last column belongs to no field: a stray tab moved it there.
            problems.append((lineno, f"{len(row)} cells but the header has {width} columns (a stray tab?)"))
        qid = cell(row, "id")
        option, goto = cell(row, "option"), cell(row, "goto")
        if qid:
            if current is not None:
                questions.append(_freeze(current))
            severity = cell(row, "severity")
            current = {
                "id": qid,
                "dimension": cell(row, "dimension"),
                "severity_raw": severity,
                "risk": cell(row, "risk"),
                "text": cell(row, "question"),
                "guidance": cell(row, "guidance"),
                "title": cell(row, "title"),
                "auto_raw": cell(row, "auto"),
                "options": [],
                "line": lineno,
            }
        elif current is None:
            problems.append((lineno, "answer option before the first question"))
            continue
        if option or goto:
            current["options"].append(Option(option, Goto.parse(goto), lineno, cell(row, "option_text")))
    if current is not None:
        questions.append(_freeze(current))

    meta = sidecar(p)
    declared = tuple(meta.get("dimensions", ()))
    seen: list[str] = []
    for q in questions:
        if q.dimension and q.dimension not in seen:
            seen.append(q.dimension)
    dimensions = declared or tuple(seen)
    return Rubric(
        name=str(meta.get("name", p.stem)),
        version=str(meta.get("version", "unversioned")),
        path=str(p),
        sha256=hashlib.sha256(raw).hexdigest(),
        format=fmt,
        questions=tuple(questions),
        dimensions=dimensions,
        declared_dimensions=declared,
        header_problems=tuple(problems),
    )


def _freeze(q: dict[str, Any]) -> Question:
    sev = q["severity_raw"]
    return Question(
        id=q["id"],
        dimension=q["dimension"],
        severity=sev.capitalize() if sev else None,
        risk=q["risk"],
        text=q["text"],
        guidance=q["guidance"],
        options=tuple(q["options"]),
        line=q["line"],
        title=q["title"],
        auto=q["auto_raw"].lower() == AUTO_TRUE,
        auto_raw=q["auto_raw"],
    )
