"""Persona sets: load, validate, and render the user-agent's prompts.

A persona set is a TSV file, one persona per row, one column per field (spreadsheet
friendly). Our set and VERA-MH's ``personas.tsv`` share the column names, so one loader
reads both. An optional same-stem ``.toml`` sidecar carries the set's name and version.
Every column is available to prompt templates as ``{Column Name}``.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections import Counter
from pathlib import Path

import msgspec

from vera.errors import DataError
from vera.files import read_tsv_text, sidecar
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
    personas: tuple[Persona, ...]
    columns: tuple[str, ...]
    version: ArtifactVersion

    def by_name(self, name: str) -> Persona:
        for p in self.personas:
            if p.name.lower() == name.lower():
                return p
        known = ", ".join(p.name for p in self.personas[:12])
        raise DataError(self.version.path, f"no persona named {name!r} (e.g. {known})")

    def distribution(self) -> dict[str, int]:
        counts = Counter(p.risk for p in self.personas)
        return {level: counts.get(level, 0) for level in RISK_LEVELS}


class Issue(msgspec.Struct, frozen=True):
    line: int
    message: str
    severity: str = "error"  # or "warning"

    def render(self, path: str) -> str:
        where = f"{path}:{self.line}" if self.line else path
        return f"{where}: {self.severity}: {self.message}"


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


def read_persona_rows(path: str | Path) -> tuple[list[str], list[tuple[int, dict[str, str]]], bytes]:
    p = Path(path)
    raw, text = read_tsv_text(p, "personas")
    reader = csv.reader(text.splitlines(), delimiter="\t")
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise DataError(f"{p}:1", "empty file: expected a header row") from None
    missing = [
        c for c in REQUIRED_COLUMNS if c not in header and not (c == RISK_SHORT and RISK_LONG in header)
    ]
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


def check_personas(path: str | Path) -> tuple[PersonaSet | None, list[Issue]]:
    """Load and validate: required fields present, risk labels valid, duplicates,
    empty recommended fields. Returns the set (None if unusable) and every issue."""
    p = Path(path)
    header, rows, raw = read_persona_rows(p)
    issues: list[Issue] = []
    for col in RECOMMENDED_COLUMNS:
        if col not in header:
            issues.append(Issue(1, f"column {col!r} is missing (prompts cannot use it)", "warning"))
    personas: list[Persona] = []
    names: dict[str, int] = {}
    seeds: dict[str, int] = {}
    for lineno, fields in rows:
        name = fields.get(NAME, "")
        if not name:
            issues.append(Issue(lineno, f"empty {NAME}"))
            continue
        short = fields.get(RISK_SHORT, "")
        risk = normalise_risk(short) if short else normalise_risk(fields.get(RISK_LONG, ""))
        if risk is None:
            shown = short or fields.get(RISK_LONG, "")
            issues.append(
                Issue(lineno, f"{name}: risk level {shown[:40]!r} is not one of {', '.join(RISK_LEVELS)}")
            )
            continue
        long_value = fields.get(RISK_LONG)
        if long_value and normalise_risk(long_value) != risk:
            issues.append(
                Issue(
                    lineno,
                    f"{name}: {RISK_LONG!r} ({long_value[:40]!r}) does not start with the short "
                    f"level {risk!r}",
                    "warning",
                )
            )
        for col in RECOMMENDED_COLUMNS:
            if col in fields and not fields[col]:
                issues.append(Issue(lineno, f"{name}: empty {col!r}", "warning"))
        for col, value in fields.items():
            if m := _PLACEHOLDER.search(value):
                issues.append(
                    Issue(
                        lineno,
                        f"{name}: {col!r} still holds the template placeholder {m.group(0)}; "
                        "write the persona's own words there",
                    )
                )
        key = name.lower()
        if key in names:
            issues.append(Issue(lineno, f"duplicate name {name!r} (first on line {names[key]})"))
        names.setdefault(key, lineno)
        seed = fields.get(SEED_PHRASE, "").lower()
        if seed:
            if seed in seeds:
                issues.append(Issue(lineno, f"{name}: same seed phrase as line {seeds[seed]}", "warning"))
            seeds.setdefault(seed, lineno)
        personas.append(Persona(name=name, risk=risk, fields=fields, line=lineno))
    if not personas:
        issues.append(Issue(0, "no usable personas"))
    meta = sidecar(p)
    version = ArtifactVersion(
        name=str(meta.get("name", p.stem)),
        version=str(meta.get("version", "unversioned")),
        path=str(p),
        sha256=hashlib.sha256(raw).hexdigest(),
    )
    pset = PersonaSet(personas=tuple(personas), columns=tuple(h for h in header if h), version=version)
    return (pset if personas else None), issues


def load_personas(path: str | Path) -> PersonaSet:
    """Load a persona set for a run; any error-level issue is a DataError."""
    pset, issues = check_personas(path)
    errors = [i for i in issues if i.severity == "error"]
    if errors or pset is None:
        first = errors[0] if errors else Issue(0, "no usable personas")
        more = (
            f" (and {len(errors) - 1} more: run `vera validate personas {path}`)" if len(errors) > 1 else ""
        )
        raise DataError(f"{path}:{first.line}" if first.line else str(path), first.message + more)
    return pset


def check_templates(prompts: UserPrompts, columns: tuple[str, ...]) -> list[Issue]:
    """Every placeholder in the user-agent templates must resolve for this persona set."""
    allowed = set(columns) | set(UserPrompts.EXTRA_FIELDS)
    issues: list[Issue] = []
    for t in (prompts.system, prompts.reminder):
        for f in t.fields:
            if f not in allowed:
                issues.append(Issue(0, f"{t.path}: placeholder {{{f}}} is not a persona column"))
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
    return prompts.system.render(prompt_values(persona, prompts, min_turns=min_turns, max_turns=max_turns))


def render_user_reminder(persona: Persona, prompts: UserPrompts, *, min_turns: int, max_turns: int) -> str:
    return prompts.reminder.render(prompt_values(persona, prompts, min_turns=min_turns, max_turns=max_turns))
