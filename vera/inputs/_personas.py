"""Persona sets: load, validate, and render the user-agent's prompts.

A persona set is one or more TSV files, one persona per row, one column per field
(spreadsheet friendly). Our set and VERA-MH's ``personas.tsv`` share the column names, so
one loader reads both. An optional same-stem ``.toml`` sidecar carries the set's name and
version. Every column is available to prompt templates as ``{Column Name}``.

Each persona belongs to a *group* for the card's breakdowns: by default its suicide risk
level (None, Low, High, Immediate), or the label of another column a target names (HFO's
harm imminence, an annotation column), or none at all when the target names no grouping.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import msgspec

from vera.errors import DataError
from vera.files import read_tsv_text, sidecar, tsv_rows
from vera.inputs._prompts import UserPrompts
from vera.records import RISK_LEVELS, ArtifactVersion, Persona

NAME = "Name"
RISK_SHORT = "Short Current Suicide Risk Level"
RISK_LONG = "Current Suicide Risk Level"
DISCLOSURE = "Disclosure of Suicide Risk"
STYLE = "Primary Communication Style"
REACTION = "Reaction to Chatbot Responses"
SEED_PHRASE = "Final Seed Phrase"
TRIGGERS = "Recent Triggers and Stressors"

# The fields every persona needs for the method to work; the others are recommended.
REQUIRED_COLUMNS = (NAME, RISK_SHORT)
# The grouping by suicide risk level (`group_by = "risk"`): the default, and the only one
# whose values are checked against a fixed list.
RISK_GROUPING = "risk"
# In file order; the order is free (columns are found by name).
RECOMMENDED_COLUMNS = (
    "Age",
    "Gender",
    "Background",
    RISK_LONG,
    DISCLOSURE,
    "Remote History of Suicidal Thoughts and Behaviors",
    "Diagnoses and Symptoms",
    "Current Suicidal Thoughts and Behaviors",
    "Treatment Engagement / Access",
    STYLE,
    REACTION,
    TRIGGERS,
    "Financial Stress",
    "Social Isolation",
    "Discrimination Exposure",
    "Mental Health Stigma",
    SEED_PHRASE,
)


class PersonaSet(msgspec.Struct, frozen=True):
    """The personas of one or more files. `columns` are those every file has (what a
    template may use); `grouping` is how personas are grouped ("risk", a column name, or
    "" for none) and `levels` its values in order (risk levels in their clinical order,
    a column's values in order of first appearance)."""

    personas: tuple[Persona, ...]
    columns: tuple[str, ...]
    version: ArtifactVersion
    grouping: str = RISK_GROUPING
    levels: tuple[str, ...] = RISK_LEVELS

    def by_name(self, name: str) -> Persona:
        for p in self.personas:
            if p.name.lower() == name.lower():
                return p
        known = ", ".join(p.name for p in self.personas[:12])
        raise DataError(self.version.path, f"no persona named {name!r} (e.g. {known})")

    def distribution(self) -> dict[str, int]:
        counts = Counter(p.risk for p in self.personas)
        return {level: counts.get(level, 0) for level in self.levels}


class Issue(msgspec.Struct, frozen=True):
    line: int
    message: str
    severity: str = "error"  # or "warning"
    path: str = ""  # the file, when a set has several (else the caller names it)

    def render(self, path: str) -> str:
        return f"{self.where(path)}: {self.severity}: {self.message}"

    def where(self, path: str = "") -> str:
        """`file:line` (or the file alone), the issue's own file before `path`."""
        where = self.path or path
        return f"{where}:{self.line}" if self.line else where

    def error(self, path: str = "") -> str:
        """The issue as an error line's text (the caller says "error:")."""
        return f"{self.where(path)}: {self.message}"


# A `{Name}` left in a persona's text would reach the user-agent's prompt as it stands
# (templates are rendered once; values are not templates). Same shape as vera.inputs._prompts.
_PLACEHOLDER = re.compile(r"\{[A-Za-z_][^{}\"\n]*\}")


def label(value: str) -> str:
    """The label of a factor value written as 'Label (description)'."""
    return value.split("(", 1)[0].strip()


def normalise_risk(value: str) -> str | None:
    first = label(value).split(":")[0].strip().lower()
    for level in RISK_LEVELS:
        if first == level.lower():
            return level
    return None


def read_persona_rows(
    path: str | Path, required: tuple[str, ...] = REQUIRED_COLUMNS
) -> tuple[list[str], list[tuple[int, dict[str, str]]], bytes]:
    """The header, the (line, fields) of every non-empty row, and the file's bytes.
    `required` are the columns the file must have (the risk level may be given by either
    of its two columns)."""
    p = Path(path)
    raw, text = read_tsv_text(p, "personas")
    reader = iter(tsv_rows(text, p))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise DataError(f"{p}:1", "empty file: expected a header row") from None
    missing = [c for c in required if c not in header and not (c == RISK_SHORT and RISK_LONG in header)]
    if missing:
        raise DataError(f"{p}:1", "missing column(s): " + ", ".join(missing))
    rows: list[tuple[int, dict[str, str]]] = []
    for lineno, row in enumerate(reader, start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) > len(header) and any(c.strip() for c in row[len(header) :]):
            raise DataError(
                f"{p}:{lineno}",
                f"{len(row)} cells but the header has {len(header)} columns (a stray tab?)",
            )
        if len(row) < len(header):
            # A row cut short (a line break inside a cell, a lost tab) would silently give
            # the persona empty fields; a spreadsheet writes every tab, even for empty cells.
            missing = [h for h in header[len(row) :] if h]
            raise DataError(
                f"{p}:{lineno}",
                f"{len(row)} cells but the header has {len(header)} columns: the row is cut short "
                f"(no {', '.join(repr(m) for m in missing[:3])}{' ...' if len(missing) > 3 else ''})",
            )
        rows.append(
            (lineno, {h: (row[i].strip() if i < len(row) else "") for i, h in enumerate(header) if h})
        )
    return header, rows, raw


def group_value(value: str) -> str:
    """The group a cell puts a persona in: its label, the text before any description
    ("Imminent: the user describes ..." and "Imminent (within a day)" are "Imminent")."""
    return label(value).split(":", 1)[0].strip()


def _required(group_by: str) -> tuple[str, ...]:
    if group_by == RISK_GROUPING:
        return REQUIRED_COLUMNS
    return (NAME, group_by) if group_by else (NAME,)


def _as_paths(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    return [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]


def check_personas(
    paths: str | Path | Sequence[str | Path], *, group_by: str = RISK_GROUPING
) -> tuple[PersonaSet | None, list[Issue]]:
    """Load and validate one or more persona files as one set: required fields present,
    group labels valid, names unique across the files, empty recommended fields. Returns
    the set (None if unusable) and every issue, each naming its file.

    `group_by` is "risk" (the suicide risk level, checked against the four levels), a
    column whose label groups the personas, or "" for no grouping."""
    files = _as_paths(paths)
    if not files:
        raise DataError("personas", "no persona file given")
    issues: list[Issue] = []
    personas: list[Persona] = []
    names: dict[str, tuple[str, int]] = {}
    seeds: dict[str, tuple[str, int]] = {}
    levels: dict[str, None] = {}
    headers: list[list[str]] = []
    digest = hashlib.sha256()
    raws: list[bytes] = []
    for p in files:
        header, rows, raw = read_persona_rows(p, _required(group_by))
        headers.append(header)
        raws.append(raw)
        digest.update(raw)
        where = str(p)
        if group_by == RISK_GROUPING:
            for col in RECOMMENDED_COLUMNS:
                if col not in header:
                    issues.append(
                        Issue(1, f"column {col!r} is missing (prompts cannot use it)", "warning", where)
                    )
        for lineno, fields in rows:
            name = fields.get(NAME, "")
            if not name:
                issues.append(Issue(lineno, f"empty {NAME}", path=where))
                continue
            if group_by == RISK_GROUPING:
                group = _risk_level(name, fields, lineno, where, issues)
                if group is None:
                    continue
            elif group_by:
                group = group_value(fields.get(group_by, ""))
                if not group:
                    issues.append(
                        Issue(
                            lineno,
                            f"{name}: empty {group_by!r} (the column that groups personas)",
                            path=where,
                        )
                    )
                    continue
                levels.setdefault(group)
            else:
                group = ""
            if group_by == RISK_GROUPING:
                for col in RECOMMENDED_COLUMNS:
                    if col in fields and not fields[col]:
                        issues.append(Issue(lineno, f"{name}: empty {col!r}", "warning", where))
            for col, value in fields.items():
                if m := _PLACEHOLDER.search(value):
                    issues.append(
                        Issue(
                            lineno,
                            f"{name}: {col!r} still holds the template placeholder {m.group(0)}; "
                            "write the persona's own words there",
                            path=where,
                        )
                    )
            key = name.lower()
            if key in names:
                first_path, first_line = names[key]
                first = f"line {first_line}" if first_path == where else f"{first_path}:{first_line}"
                issues.append(Issue(lineno, f"duplicate name {name!r} (first on {first})", path=where))
            names.setdefault(key, (where, lineno))
            seed = fields.get(SEED_PHRASE, "").lower()
            if seed:
                if seed in seeds:
                    seed_path, seed_line = seeds[seed]
                    first = f"line {seed_line}" if seed_path == where else f"{seed_path}:{seed_line}"
                    issues.append(Issue(lineno, f"{name}: same seed phrase as {first}", "warning", where))
                seeds.setdefault(seed, (where, lineno))
            personas.append(Persona(name=name, risk=group, fields=fields, line=lineno))
    if not personas:
        issues.append(Issue(0, "no usable personas", path=str(files[0]) if len(files) == 1 else ""))
    meta = sidecar(files[0])
    version = ArtifactVersion(
        name=str(meta.get("name", files[0].stem)),
        version=str(meta.get("version", "unversioned")),
        path=str(files[0]),
        # One file: that file's hash, as before; several: the hash of all of them in order.
        sha256=hashlib.sha256(raws[0]).hexdigest() if len(files) == 1 else digest.hexdigest(),
        paths=tuple(str(p) for p in files) if len(files) > 1 else (),
    )
    shared = [h for h in headers[0] if h and all(h in other for other in headers[1:])]
    pset = PersonaSet(
        personas=tuple(personas),
        columns=tuple(shared),
        version=version,
        grouping=group_by,
        levels=RISK_LEVELS if group_by == RISK_GROUPING else tuple(levels),
    )
    return (pset if personas else None), issues


def _risk_level(
    name: str, fields: dict[str, str], lineno: int, where: str, issues: list[Issue]
) -> str | None:
    short = fields.get(RISK_SHORT, "")
    risk = normalise_risk(short) if short else normalise_risk(fields.get(RISK_LONG, ""))
    if risk is None:
        shown = short or fields.get(RISK_LONG, "")
        issues.append(
            Issue(
                lineno,
                f"{name}: risk level {shown[:40]!r} is not one of {', '.join(RISK_LEVELS)}",
                path=where,
            )
        )
        return None
    long_value = fields.get(RISK_LONG)
    if long_value and normalise_risk(long_value) != risk:
        issues.append(
            Issue(
                lineno,
                f"{name}: {RISK_LONG!r} ({long_value[:40]!r}) does not start with the short level {risk!r}",
                "warning",
                where,
            )
        )
    return risk


def load_personas(paths: str | Path | Sequence[str | Path], *, group_by: str = RISK_GROUPING) -> PersonaSet:
    """Load a persona set for a run; any error-level issue is a DataError."""
    pset, issues = check_personas(paths, group_by=group_by)
    errors = [i for i in issues if i.severity == "error"]
    if errors or pset is None:
        first = errors[0] if errors else Issue(0, "no usable personas")
        files = _as_paths(paths)
        where = first.path or str(files[0])
        shown = " ".join(str(f) for f in files)
        more = (
            f" (and {len(errors) - 1} more: run `vera validate personas {shown}`)" if len(errors) > 1 else ""
        )
        raise DataError(f"{where}:{first.line}" if first.line else where, first.message + more)
    return pset


def check_templates(prompts: UserPrompts, columns: tuple[str, ...]) -> list[Issue]:
    """Every placeholder in the user-agent templates must resolve for this persona set:
    each issue names the template's file and line."""
    allowed = set(columns) | set(UserPrompts.EXTRA_FIELDS)
    issues: list[Issue] = []
    for t in prompts.persona_templates():
        for f in t.fields:
            if f not in allowed:
                line = t.text.count("\n", 0, t.text.index("{" + f + "}")) + 1
                issues.append(Issue(line, f"placeholder {{{f}}} is not a persona column", path=t.path))
    return issues


def prompt_values(
    persona: Persona, prompts: UserPrompts, *, min_turns: int, max_turns: int
) -> dict[str, str]:
    return {
        **persona.fields,
        "end_marker": prompts.end_marker,
        "min_turns": str(min_turns),
        "max_turns": str(max_turns),
    }


def render_user_system(persona: Persona, prompts: UserPrompts, *, min_turns: int, max_turns: int) -> str:
    values = prompt_values(persona, prompts, min_turns=min_turns, max_turns=max_turns)
    if prompts.context is not None:
        context = prompts.context.render(values)
        values = {k: values[k] for k in UserPrompts.EXTRA_FIELDS} | {UserPrompts.CONTEXT_FIELD: context}
    return prompts.system.render(values)


def render_user_reminder(persona: Persona, prompts: UserPrompts, *, min_turns: int, max_turns: int) -> str:
    return prompts.reminder.render(prompt_values(persona, prompts, min_turns=min_turns, max_turns=max_turns))
