"""Locale packs: vera's method in another language or country, as a folder, not a fork.

A pack (locales/README.md is the specification of its files; docs/locales.md says how to
write one) is a folder with a ``locale.toml`` naming it and any of: a persona set
(``personas.tsv``), the simulated user's prompts (``prompts/user/``), the judge's prompts
(``prompts/judge/``), the rubric's texts (``rubric.tsv``) and crisis resources
(``resources.toml``). Whatever a pack does not hold is vera's English base.

``--locale TAG|DIR`` (or ``locale =`` in a run config or a ``target.toml``) selects one:
a tag names vera's own pack (``locales/<tag>/``), anything else is a folder. `apply_locale`
points the config's files at the pack's, so the rest of vera (resume, manifest hashes)
works with paths as before; `load_locale` gives the pack's identity and resources, which
the manifest, the card and the offline stand-ins read.

`validate_locale` is ``vera validate locale DIR``: the pack against the base, each
problem one `Issue` naming the file, row and field.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import msgspec

from vera.errors import ConfigError, DataError
from vera.inputs._defaults import data_root
from vera.inputs._personas import Issue, check_personas, check_templates, label
from vera.inputs._prompts import load_judge_prompt_set, load_user_prompt_set
from vera.inputs._ui import ENGLISH, STRINGS_TOML, Strings, check_strings, strings_of
from vera.records import LocaleInfo, RunManifest
from vera.rubric import load_rubric, validate_rubric
from vera.text import decode

LOCALE_TOML = "locale.toml"
LOCALE_FORMAT = "vera-locale/1"
RESOURCES_FORMAT = "vera-resources/1"

# The pack's files, by the config field each replaces (a folder for the prompt sets).
PACK_FILES = {
    "personas": "personas.tsv",
    "rubric": "rubric.tsv",
    "user_prompts": "prompts/user",
    "judge_prompts": "prompts/judge",
}
RESOURCES_TOML = "resources.toml"

# The base each pack file is checked against (paths under vera's data root).
BASE_FILES = {
    "personas": "personas/vera-personas.tsv",
    "rubric": "rubrics/vera-si.tsv",
    "user_prompts": "personas/prompts",
    "judge_prompts": "rubrics/prompts",
}
BASE_FACTORS = "personas/factors.tsv"
BASE_RESOURCES = "resources/crisis-lines.toml"

# Persona columns that tell a story (written for the locale); every other column is a
# design factor whose canonical label must be the base design's, slot for slot.
NARRATIVE = frozenset(
    {
        "Name",
        "Background",
        "Current Suicidal Thoughts and Behaviors",
        "Recent Triggers and Stressors",
        "Final Seed Phrase",
    }
)
_NUMBER = re.compile(r"[0-9][0-9 -]*[0-9]|[0-9]")
_URL = re.compile(r"https?://\S+")


# ---------------------------------------------------------------------------------------
# Crisis resources
# ---------------------------------------------------------------------------------------


class Region(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    name_en: str
    emergency: str


class CrisisLine(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One line a person can call, with where its details were found and when."""

    region: str
    name: str
    name_en: str
    number: str
    kind: Literal["crisis", "emergency"]
    hours: str
    languages: list[str]
    source: str
    checked: datetime.date
    verified: bool
    notes: str
    source_more: list[str] = msgspec.field(default_factory=list)
    # Callable from every region of the file (an international text or chat service):
    # the offline judge then counts it for a user anywhere, not only in `region`.
    international: bool = False


class Resources(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A `vera-resources/1` file: crisis lines by region (ISO 3166 code)."""

    format: str
    locale: str
    version: str
    default_region: str
    regions: dict[str, Region]
    resource: list[CrisisLine]
    path: str = ""
    sha256: str = ""

    def lines(self, region: str = "", *, kind: str = "crisis", verified: bool = True) -> list[CrisisLine]:
        """The region's lines of `kind` (the default region's when none is given)."""
        where = region or self.default_region
        return [
            r for r in self.resource if r.region == where and r.kind == kind and (r.verified or not verified)
        ]

    def numbers(self) -> list[str]:
        """Every number in the file (crisis and emergency, every region), as written."""
        found = [r.number for r in self.resource]
        for region in self.regions.values():
            found += re.findall(r"\d+", region.emergency)
        return list(dict.fromkeys(found))


_OPTIONAL = frozenset({"source_more", "international"})
_FIELDS = tuple(f for f in CrisisLine.__struct_fields__ if f not in _OPTIONAL)


def check_resources(path: str | Path) -> list[Issue]:
    """Every problem of a resources file, one line each naming the entry and field."""
    p = Path(path)
    try:
        text = decode(p.read_bytes(), p, "crisis resources")
    except OSError as exc:
        return [Issue(0, f"cannot read: {exc.strerror or exc}", path=str(p))]
    try:
        raw: dict[str, Any] = msgspec.toml.decode(text)
    except msgspec.DecodeError as exc:
        return [Issue(0, f"invalid TOML: {exc}", path=str(p))]
    issues: list[Issue] = []

    def bad(message: str, key: str = "", at: int = 0) -> None:
        issues.append(Issue(at or (_line_of(text, key) if key else 0), message, path=str(p)))

    if raw.get("format") != RESOURCES_FORMAT:
        bad(f"format must be {RESOURCES_FORMAT!r}", "format")
    for key in ("locale", "version", "default_region"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            bad(f"{key}: missing or empty", key)
    regions = raw.get("regions")
    if not isinstance(regions, dict) or not regions:
        bad("regions: give one [regions.XX] table per region")
        regions = {}
    for code, region in regions.items():
        for key in ("name", "name_en", "emergency"):
            if not isinstance(region, dict) or not isinstance(region.get(key), str) or not region[key]:
                bad(f"[regions.{code}]: {key} missing or empty", f"[regions.{code}]")
    if raw.get("default_region") and raw["default_region"] not in regions:
        bad(f"default_region {raw['default_region']!r} is not a key of [regions]", "default_region")
    entries = raw.get("resource")
    if not isinstance(entries, list) or not entries:
        bad("no [[resource]] entries")
        entries = []
    starts = [n for n, line in enumerate(text.splitlines(), start=1) if line.strip() == "[[resource]]"]
    for i, e in enumerate(entries, start=1):
        where = f"[[resource]] {i} ({e.get('name', '?') if isinstance(e, dict) else '?'})"
        at = starts[i - 1] if i <= len(starts) else 0
        if not isinstance(e, dict):
            bad(f"{where}: not a table", at=at)
            continue
        for key in _FIELDS:
            value = e.get(key)
            if value is None or value == "" or value == []:
                bad(f"{where}: {key} missing or empty", at=at)
        if e.get("region") and e["region"] not in regions:
            bad(f"{where}: region {e['region']!r} is not a key of [regions]", at=at)
        if e.get("kind") and e["kind"] not in ("crisis", "emergency"):
            bad(f"{where}: kind must be 'crisis' or 'emergency', not {e['kind']!r}", at=at)
        if isinstance(e.get("source"), str) and e["source"] and not _URL.fullmatch(e["source"]):
            bad(
                f"{where}: source must be the public page (http:// or https://) the details were found on",
                at=at,
            )
        if isinstance(e.get("number"), str) and e["number"] and not _NUMBER.fullmatch(e["number"]):
            bad(f"{where}: number {e['number']!r} may hold only digits, spaces and hyphens", at=at)
        if "international" in e and not isinstance(e["international"], bool):
            bad(f"{where}: international must be true or false", at=at)
        if "checked" in e and not isinstance(e["checked"], datetime.date):
            bad(f"{where}: checked must be a TOML date (2026-12-06)", at=at)
        if e.get("verified") is False and len(str(e.get("notes", ""))) <= 20:
            bad(f"{where}: verified = false: say in notes why it could not be confirmed", at=at)
    for code in regions:
        if not any(
            isinstance(e, dict)
            and e.get("region") == code
            and e.get("kind") == "crisis"
            and e.get("verified")
            for e in entries
        ):
            bad(f"[regions.{code}]: no verified crisis line", f"[regions.{code}]")
    if not issues:
        try:
            msgspec.convert(raw, Resources)
        except msgspec.ValidationError as exc:
            bad(str(exc))
    return issues


def load_resources(path: str | Path) -> Resources:
    """The resources in `path`, checked (`check_resources`): DataError on the first problem."""
    p = Path(path)
    issues = check_resources(p)
    if issues:
        raise DataError(issues[0].where(), issues[0].message)
    raw = p.read_bytes()
    res = msgspec.convert(msgspec.toml.decode(decode(raw, p, "crisis resources")), Resources)
    return msgspec.structs.replace(res, path=str(p.resolve()), sha256=hashlib.sha256(raw).hexdigest())


def base_resources() -> Resources:
    """The crisis lines of vera's English base (988 and the US first)."""
    return load_resources(data_root() / BASE_RESOURCES)


def _line_of(text: str, key: str) -> int:
    for n, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith(key):
            return n
    return 0


# ---------------------------------------------------------------------------------------
# Finding and loading a pack
# ---------------------------------------------------------------------------------------


class LocaleFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A pack's ``locale.toml``."""

    format: str = LOCALE_FORMAT
    tag: str
    version: str
    language: str  # ISO 639-1 code of the texts ("zh", "en"): what the stand-ins speak
    title: str = ""
    description: str = ""


class LocalePack(msgspec.Struct, frozen=True, kw_only=True):
    """A pack resolved to files (absolute paths; "" for what falls back to the base)."""

    tag: str
    version: str
    language: str
    title: str
    path: str  # the pack's folder
    files: dict[str, str]  # config field -> the pack's file or folder, for those it holds
    resources: Resources


def builtin_locales() -> dict[str, Path]:
    """vera's own packs, by tag (``locales/<tag>/locale.toml``)."""
    folder = data_root() / "locales"
    return {p.parent.name: p.parent for p in sorted(folder.glob(f"*/{LOCALE_TOML}"))}


def find_locale(selection: str, *, base: Path | None = None) -> Path:
    """The pack folder `selection` names: a folder holding ``locale.toml`` (relative to
    `base`, then the working directory), or the tag of one of vera's own packs."""
    text = selection.strip()
    if not text:
        raise ConfigError("locale: empty (give a locale tag such as zh-CN, or a pack folder)")
    raw = Path(text).expanduser()
    candidates = [raw] if raw.is_absolute() else [*([base / raw] if base else []), Path.cwd() / raw]
    for c in candidates:
        try:
            found = (c / LOCALE_TOML).is_file()
        except OSError as exc:  # a folder the user may not enter: its locale.toml is unknown
            raise DataError(str(c / LOCALE_TOML), f"cannot read: {exc.strerror or exc}") from None
        if found:
            return c.resolve()
        if c.is_file() and c.name == LOCALE_TOML:
            return c.parent.resolve()
        if c.is_dir() and ("/" in text or "\\" in text or text.startswith(".")):
            raise ConfigError(f"{c}: not a locale pack (no {LOCALE_TOML}; see docs/locales.md)")
    own = {k.lower(): v for k, v in builtin_locales().items()}
    if text.lower() in own:
        return own[text.lower()].resolve()
    known = ", ".join(builtin_locales()) or "none"
    raise ConfigError(f"locale {text!r}: no such pack folder, and not one of vera's packs ({known})")


def read_locale_file(folder: Path) -> LocaleFile:
    p = folder / LOCALE_TOML
    try:
        text = decode(p.read_bytes(), p, "locale pack")
    except OSError as exc:
        raise DataError(str(p), f"cannot read: {exc.strerror or exc}") from None
    try:
        spec = msgspec.toml.decode(text, type=LocaleFile)
    except msgspec.ValidationError as exc:
        raise DataError(str(p), str(exc)) from None
    except msgspec.DecodeError as exc:
        raise DataError(str(p), f"invalid TOML: {exc}") from None
    if spec.format != LOCALE_FORMAT:
        raise DataError(f"{p}:{_line_of(text, 'format')}", f"format must be {LOCALE_FORMAT!r}")
    return spec


def load_locale(folder: str | Path) -> LocalePack:
    """The pack in `folder`: its identity, the files it holds, and its resources (the
    base's when it has none)."""
    folder = Path(folder).resolve()
    spec = read_locale_file(folder)
    files = {field: str(folder / name) for field, name in PACK_FILES.items() if (folder / name).exists()}
    own = folder / RESOURCES_TOML
    resources = load_resources(own) if own.is_file() else base_resources()
    return LocalePack(
        tag=spec.tag,
        version=spec.version,
        language=spec.language,
        title=spec.title,
        path=str(folder),
        files=files,
        resources=resources,
    )


def apply_locale(cfg: Any, selection: str, *, keep: tuple[str, ...] = ()) -> LocalePack:
    """Point `cfg`'s persona, prompt and rubric fields at the pack's files where it holds
    them (not the fields in `keep`, which the user named); the rest stay as they are, the
    base unless the config said otherwise. Returns the pack."""
    base = Path(cfg.base_dir) if cfg.base_dir else None
    pack = load_locale(find_locale(selection, base=base))
    cfg.locale = selection
    for field, path in pack.files.items():
        if field not in keep:
            setattr(cfg, field, path)
    return pack


def ui_strings(tag: str, path: str) -> Strings:
    """The page and terminal strings of the pack a run used (its `LocaleInfo`): from its
    folder, or from vera's own pack of that tag when the folder is gone or holds none (a
    card read on another machine); English when neither has any."""
    for folder in (Path(path), builtin_locales().get(tag)):
        if folder is not None and (folder / STRINGS_TOML).is_file():
            try:
                return strings_of(folder, tag)
            except DataError:
                continue  # a damaged file: the card still renders, in English
    return ENGLISH


def locale_strings(selection: str) -> Strings:
    """The page and terminal strings of the pack `selection` names (a tag of vera's own
    or a pack folder, as `--locale` takes it): for a command with no run to take them from."""
    folder = find_locale(selection)
    return strings_of(folder, read_locale_file(folder).tag)


def run_strings(manifests: Iterable[RunManifest | None]) -> Strings:
    """The strings of the runs' locale pack when they all used the same one (English
    when any used none, or they differ)."""
    packs = {
        (m.locale.tag, m.locale.path) if m is not None and isinstance(m.locale, LocaleInfo) else None
        for m in manifests
    }
    if len(packs) != 1 or (only := packs.pop()) is None:
        return ENGLISH
    return ui_strings(*only)


# ---------------------------------------------------------------------------------------
# `vera validate locale DIR`
# ---------------------------------------------------------------------------------------


def validate_locale(folder: str | Path) -> list[Issue]:
    """Every problem of the pack in `folder` against vera's base: encoding; the persona
    set's columns, design and risk mix; the prompts' placeholders; the rubric's flow;
    the resources' fields. Empty when the pack is sound."""
    folder = Path(folder)
    root = data_root()
    try:
        spec = read_locale_file(folder)
    except DataError as exc:
        return [Issue(0, exc.problem, path=exc.where)]
    issues = _encoding(folder)
    encoding = len(issues)
    files = {field: folder / name for field, name in PACK_FILES.items() if (folder / name).exists()}
    checks = {
        "personas": _personas,
        "user_prompts": _user_prompts,
        "judge_prompts": _judge_prompts,
        "rubric": _rubric,
    }
    for field, path in files.items():
        try:
            issues += checks[field](path, root / BASE_FILES[field])
        except DataError as exc:
            issues.append(Issue(0, exc.problem, path=exc.where))
    if "personas" in files and "user_prompts" in files:
        try:
            pset, _ = check_personas(files["personas"])
            prompts = load_user_prompt_set(files["user_prompts"])
            if pset is not None:
                issues += [
                    Issue(i.line, i.message, i.severity, i.path or str(files["user_prompts"]))
                    for i in check_templates(prompts, pset.columns)
                ]
        except DataError as exc:
            issues.append(Issue(0, exc.problem, path=exc.where))
    strings = folder / STRINGS_TOML
    if strings.is_file():
        try:
            issues += [
                Issue(0, f"{key}: {message}", path=str(strings)) for key, message in check_strings(strings)
            ]
        except DataError as exc:
            issues.append(Issue(0, exc.problem, path=exc.where))
    resources = folder / RESOURCES_TOML
    if resources.is_file():
        issues += check_resources(resources)
        if not issues:
            tag = load_resources(resources).locale
            if tag != spec.tag:
                issues.append(
                    Issue(0, f"locale {tag!r} is not the pack's tag {spec.tag!r}", path=str(resources))
                )
    # A file that cannot be read is said once: by the first check that reads it for its
    # content, in its words, when there is one; the encoding check's line otherwise.
    first: dict[str, Issue] = {}
    for issue in issues[encoding:]:
        if issue.message.startswith("cannot read"):
            first.setdefault(issue.path, issue)
    issues = [
        i for i in issues if not (i.message.startswith("cannot read") and first.get(i.path, i) is not i)
    ]
    return issues


def _encoding(folder: Path) -> list[Issue]:
    out = []
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.suffix not in {".tsv", ".toml", ".txt", ".md"}:
            continue
        try:
            raw = p.read_bytes()
        except OSError as exc:  # one problem among the others, not a traceback
            out.append(Issue(0, f"cannot read: {exc.strerror or exc}", path=str(p)))
            continue
        if raw.startswith(b"\xef\xbb\xbf"):
            out.append(Issue(1, "starts with a byte-order mark (save as UTF-8 without BOM)", path=str(p)))
        if b"\r" in raw:
            line = raw.count(b"\n", 0, raw.index(b"\r")) + 1
            out.append(Issue(line, "carriage return (save with \\n line ends)", path=str(p)))
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            out.append(Issue(line, "not UTF-8", path=str(p)))
    return out


def _tsv(path: Path) -> list[list[str]]:
    try:
        with path.open(encoding="utf-8", newline="") as f:
            return [r for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE) if any(r)]
    except OSError as exc:
        raise DataError(str(path), f"cannot read: {exc.strerror or exc}") from None


def _personas(path: Path, base: Path) -> list[Issue]:
    rows, base_rows = _tsv(path), _tsv(base)
    if rows[0] != base_rows[0]:
        missing = [c for c in base_rows[0] if c not in rows[0]]
        what = f"lacks column {missing[0]!r}" if missing else "columns are not the base set's, in its order"
        return [Issue(1, f"{what} ({base.name} has {len(base_rows[0])} columns)", path=str(path))]
    pset, issues = check_personas(path)
    out = [Issue(i.line, i.message, i.severity, i.path or str(path)) for i in issues if i.severity == "error"]
    if pset is None:
        return out
    want, _ = check_personas(base)
    if want is not None and pset.distribution() != want.distribution():
        out.append(
            Issue(
                0,
                f"risk mix {pset.distribution()} is not the base set's {want.distribution()}",
                path=str(path),
            )
        )
    factors = _tsv(base.parent / Path(BASE_FACTORS).name)
    header = rows[0]
    design = [dict(zip(factors[0], r, strict=False)) for r in factors[1:]]
    if len(rows) - 1 != len(design):
        out.append(Issue(0, f"{len(rows) - 1} personas; the base design has {len(design)}", path=str(path)))
        return out
    for n, (row, slot) in enumerate(zip(rows[1:], design, strict=True), start=2):
        cells = dict(zip(header, row, strict=False))
        for column, value in slot.items():
            if column == "Slot" or column in NARRATIVE or column not in cells:
                continue
            want_labels = [label(v) for v in value.split(" | ")]
            got_labels = [label(v) for v in cells[column].split(" | ")]
            if want_labels != got_labels:
                out.append(
                    Issue(
                        n,
                        f"{column}: {' | '.join(got_labels)!r} is not the base design's "
                        f"{' | '.join(want_labels)!r} (slot {slot['Slot']}; keep the English label before ' (')",
                        path=str(path),
                    )
                )
    return out


def _fields_differ(part: str, got: Any, want: Any, path: str) -> list[Issue]:
    if set(got.fields) == set(want.fields):
        return []
    missing = sorted(set(want.fields) - set(got.fields))
    extra = sorted(set(got.fields) - set(want.fields))
    say = "; ".join(
        [
            *(f"placeholder {{{m}}} missing" for m in missing),
            *(f"placeholder {{{e}}} not in the base" for e in extra),
        ]
    )
    return [Issue(0, f"{part}: {say}", path=got.path or path)]


def _user_prompts(path: Path, base: Path) -> list[Issue]:
    got, want = load_user_prompt_set(path), load_user_prompt_set(base)
    out = _fields_differ("system prompt", got.system, want.system, str(path))
    out += _fields_differ("reminder", got.reminder, want.reminder, str(path))
    if got.end_marker != want.end_marker:
        out.append(
            Issue(0, f"end_marker {got.end_marker!r} is not the base's {want.end_marker!r}", path=str(path))
        )
    if bool(got.opening) != bool(want.opening):
        out.append(
            Issue(0, "opening: the base has none (use `opener`, which keeps the reminder)", path=str(path))
        )
    return out


def _judge_prompts(path: Path, base: Path) -> list[Issue]:
    got, want = load_judge_prompt_set(path), load_judge_prompt_set(base)
    out: list[Issue] = []
    for part in ("system", "question", "retry"):
        out += _fields_differ(f"judge {part} prompt", getattr(got, part), getattr(want, part), str(path))
    if (got.placeholders, got.answer_format) != (want.placeholders, want.answer_format):
        out.append(Issue(0, "placeholders and answer_format must be the base's", path=str(path)))
    return out


def _rubric(path: Path, base: Path) -> list[Issue]:
    got, want = load_rubric(path), load_rubric(base)
    out = [Issue(p.line, p.message, path=str(path)) for p in validate_rubric(got)]
    if got.dimensions != want.dimensions:
        out.append(
            Issue(0, f"dimensions {got.dimensions} are not the base's {want.dimensions}", path=str(path))
        )
    ids = [q.id for q in got.questions]
    want_ids = [q.id for q in want.questions]
    if ids != want_ids:
        extra = [i for i in ids if i not in want_ids] + [i for i in want_ids if i not in ids]
        out.append(
            Issue(
                0,
                f"question ids differ from the base rubric's (first: {extra[:1] or ids[:1]})",
                path=str(path),
            )
        )
        return out
    for q, b in zip(got.questions, want.questions, strict=True):
        for field in ("dimension", "severity", "risk", "auto"):
            if getattr(q, field) != getattr(b, field):
                out.append(
                    Issue(
                        q.line,
                        f"question {q.id}: {field} {getattr(q, field)!r} is not the base's {getattr(b, field)!r}",
                        path=str(path),
                    )
                )
        got_opts = [(o.label, o.goto) for o in q.options]
        want_opts = [(o.label, o.goto) for o in b.options]
        if got_opts != want_opts:
            out.append(
                Issue(
                    q.line,
                    f"question {q.id}: options and GOTOs differ from the base's "
                    "(keep the English option and its GOTO; put the text in option_text)",
                    path=str(path),
                )
            )
    rows = _tsv(path)
    header = rows[0]
    if "option_text" in header:
        for n, row in enumerate(rows[1:], start=2):
            cells = dict(zip(header, row, strict=False))
            if bool(cells.get("option")) != bool(cells.get("option_text")):
                out.append(
                    Issue(
                        n,
                        f"{cells.get('id', '?')}: option and option_text must be given together",
                        path=str(path),
                    )
                )
    return out
