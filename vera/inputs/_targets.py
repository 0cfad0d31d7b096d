"""Targets: everything one risk area's evaluation is made of, as one named bundle.

A *target* bundles a rubric, one or more persona files, the simulated user's prompts and
the judge's prompts, and says how personas are grouped on the card and which persona
columns travel with the results. vera reads two kinds of target files:

* its own ``target.toml`` (vera's suicide-risk target, ``vera-si``, ships as one), naming
  a rubric, persona files and two prompt-set folders (``prompts.toml``);
* VERA-MH 2.0's ``manifest.json``, read unchanged from a user's checkout of the
  reference tool: ``rubric_file``, ``rubric_prompt_beginning_file``,
  ``question_prompt_file``, ``personas`` (a non-empty list) and
  ``persona_context_template_file`` are required, ``persona_annotation_columns``
  optional, every path relative to the manifest. As the reference tool does, the
  simulated user's prompt is the shared ``persona_prompt_template.txt`` in the folder
  above the target's, with the persona context filled in at ``{persona_context}``, and
  its per-turn reminder is the shared ``persona_prompt_reminder.txt`` beside it.

Every problem — a missing key or file, a template placeholder that is not a persona
column, an annotation column the personas lack — is one line naming the file (and line)
before any call is made. A target's persona files are combined into one set (the
reference tool reads only the first of them).

A run config names a target with ``target = "NAME|PATH"`` (or ``vera run --target``);
the target then supplies the config's ``rubric``, ``personas``, ``user_prompts`` and
``judge_prompts`` (see `apply_target`), so the rest of vera, resume included, works
with paths as before: for a VERA-MH manifest, both prompt fields are the manifest
itself, which `load_user_prompts` and `load_judge_prompts` read as the reference does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import msgspec

from vera.errors import ConfigError, DataError
from vera.inputs._defaults import data_root
from vera.inputs._personas import RISK_GROUPING, RISK_LONG, RISK_SHORT, Issue, read_persona_rows
from vera.inputs._prompts import (
    JudgePrompts,
    Template,
    UserPrompts,
    check_context_slot,
    load_judge_prompt_set,
    load_user_prompt_set,
)
from vera.inputs._refdir import REFERENCE_PREFIX, reference_folder
from vera.records import ArtifactVersion
from vera.text import decode

TARGET_TOML = "target.toml"
MANIFEST_JSON = "manifest.json"

# VERA-MH 2.0's manifest keys (facts of its format).
REQUIRED_KEYS = (
    "rubric_file",
    "rubric_prompt_beginning_file",
    "question_prompt_file",
    "personas",
    "persona_context_template_file",
)
ANNOTATION_KEY = "persona_annotation_columns"
# Shared by every target of a VERA-MH checkout, in the folder above the target folders.
SHARED_TEMPLATE = "persona_prompt_template.txt"
SHARED_REMINDER = "persona_prompt_reminder.txt"
# The marker the reference tool's simulated user writes to end a conversation (a
# constant of its code; its shared template tells the user to write it).
REFERENCE_END_MARKER = "<END OF CONVERSATION>"
# vera's own words for what the reference tool keeps in code: the simulated user's first
# instruction and the judge's correction after an answer that is not an option.
ADAPTER = "vera-mh"

ReferenceDir = Callable[[], Path]


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """A target resolved to files (absolute paths)."""

    name: str
    version: str
    path: str  # the target file (target.toml or manifest.json)
    sha256: str  # of the target file
    format: Literal["vera", "vera-mh"]
    rubric: str
    personas: tuple[str, ...]
    user_prompts: str  # a prompt-set folder, or (VERA-MH) the manifest
    judge_prompts: str
    title: str = ""
    annotation_columns: tuple[str, ...] = ()
    group_by: str | None = None  # None: decided from the personas (see `default_grouping`)
    locale: str = ""  # a locale pack (tag, or folder relative to the target file); "" = none
    # A manifest's keys vera does not read: each a warning ("file:line: ..."), never silent.
    warnings: tuple[str, ...] = ()


class TargetFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """vera's ``target.toml``: paths relative to the file."""

    name: str
    version: str = "unversioned"
    title: str = ""
    description: str = ""
    rubric: str
    personas: list[str]
    user_prompts: str
    judge_prompts: str
    group_by: str | None = None
    annotation_columns: list[str] = msgspec.field(default_factory=list)
    locale: str = ""  # a locale pack whose resources and identity the target's runs use


# ---------------------------------------------------------------------------------------
# Finding and loading a target
# ---------------------------------------------------------------------------------------


def builtin_targets() -> dict[str, Path]:
    """The targets that ship with vera, by name (``targets/<name>/target.toml``)."""
    folder = data_root() / "targets"
    return {p.parent.name: p for p in sorted(folder.glob(f"*/{TARGET_TOML}"))}


def find_target(
    selection: str, *, base: Path | None = None, reference: ReferenceDir = reference_folder
) -> Path:
    """The target file `selection` names: ``reference:SI`` (a folder or manifest in the
    reference data folder), a path (a target file, or a folder holding one; relative to
    `base`, then the working directory), or the name of a built-in target."""
    text = selection.strip()
    if not text:
        raise ConfigError("target: empty (give a target name, folder or manifest file)")
    if text.startswith(REFERENCE_PREFIX):
        candidates = [reference() / text.removeprefix(REFERENCE_PREFIX)]
    else:
        raw = Path(text).expanduser()
        candidates = [raw] if raw.is_absolute() else [*([base / raw] if base else []), Path.cwd() / raw]
    # Absolute but not resolved: a message names the target's files the way the user
    # reaches them, not where a symlink points (the manifest records resolved paths).
    for c in candidates:
        try:
            found = _target_file(c)
        except OSError as exc:  # a folder the user may not enter: what it holds is unknown
            where = exc.filename if isinstance(exc.filename, str) else str(c)
            raise DataError(where, f"cannot read target: {exc.strerror or exc}") from None
        if found is not None:
            return found
    builtin = {k.lower(): v for k, v in builtin_targets().items()}
    if text.lower() in builtin:
        return builtin[text.lower()]
    known = ", ".join(builtin_targets()) or "none"
    raise ConfigError(
        f"target {text!r}: no such file or folder, and not a built-in target (built in: {known}; "
        f"a VERA-MH checkout's targets are reference:SI, reference:HFO, ...)"
    )


def _target_file(c: Path) -> Path | None:
    """The target file at or in `c`, None when nothing is there. Path.is_file raises on
    EACCES (a folder the user may not enter), which the caller names."""
    if c.is_file():
        return c.absolute()
    for name in (TARGET_TOML, MANIFEST_JSON):
        if (c / name).is_file():
            return (c / name).absolute()
    if c.is_dir():
        raise ConfigError(f"{c}: target folder holds neither {TARGET_TOML} nor {MANIFEST_JSON}")
    return None


def load_target(path: str | Path) -> Target:
    """The target in `path` (``target.toml`` or a VERA-MH ``manifest.json``), every file
    it names checked to exist."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise DataError(str(p), f"cannot read target: {exc.strerror or exc}") from None
    if p.suffix.lower() == ".json":
        return _load_manifest(p, raw)
    return _load_toml(p, raw)


def _load_toml(p: Path, raw: bytes) -> Target:
    text = decode(raw, p, "target")
    try:
        spec = msgspec.toml.decode(text, type=TargetFile)
    except msgspec.ValidationError as exc:
        raise DataError(str(p), str(exc)) from None
    except msgspec.DecodeError as exc:
        raise DataError(str(p), f"invalid TOML: {exc}") from None
    if not spec.personas:
        raise DataError(_at(p, text, "personas"), "personas must list at least one persona file")
    folder = p.parent

    def file(key: str, value: str, *, folder_ok: bool = False) -> str:
        return _existing(p, text, key, folder / value, folder_ok=folder_ok)

    return Target(
        name=spec.name,
        version=spec.version,
        title=spec.title,
        path=str(p.resolve()),
        sha256=hashlib.sha256(raw).hexdigest(),
        format="vera",
        rubric=file("rubric", spec.rubric),
        personas=tuple(file("personas", v) for v in spec.personas),
        user_prompts=file("user_prompts", spec.user_prompts, folder_ok=True),
        judge_prompts=file("judge_prompts", spec.judge_prompts, folder_ok=True),
        annotation_columns=_columns(p, text, spec.annotation_columns, "annotation_columns"),
        group_by=spec.group_by,
        locale=_locale_of(folder, spec.locale),
    )


def _locale_of(folder: Path, selection: str) -> str:
    """A target's locale as a config can name it from anywhere: a tag stays a tag, a
    folder becomes absolute (relative to the target file)."""
    if not selection or not (folder / selection).is_dir():
        return selection
    return str((folder / selection).resolve())


def _load_manifest(p: Path, raw: bytes) -> Target:
    text = _manifest_text(p, raw)
    data = _manifest_data(p, text)
    folder = p.parent
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise DataError(str(p), "missing required key(s): " + ", ".join(missing))

    def path_of(key: str, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise DataError(_at(p, text, key), f"{key} must be a file name (a non-empty string)")
        return _existing(p, text, key, folder / value)

    personas = data["personas"]
    if not isinstance(personas, list) or not personas:
        raise DataError(_at(p, text, "personas"), "personas must be a non-empty list of file names")
    annotations = data.get(ANNOTATION_KEY, [])
    if not isinstance(annotations, list):
        raise DataError(_at(p, text, ANNOTATION_KEY), f"{ANNOTATION_KEY} must be a list of column names")
    for key in ("rubric_prompt_beginning_file", "question_prompt_file", "persona_context_template_file"):
        path_of(key, data[key])
    known = (*REQUIRED_KEYS, ANNOTATION_KEY)
    unknown = tuple(
        f"{_at(p, text, key)}: unknown key {key!r} in the target manifest, ignored (vera reads: {', '.join(known)})"
        for key in data
        if key not in known
    )
    return Target(
        warnings=unknown,
        name=folder.name,
        version="unversioned",
        path=str(p.resolve()),
        sha256=hashlib.sha256(raw).hexdigest(),
        format="vera-mh",
        rubric=path_of("rubric_file", data["rubric_file"]),
        personas=tuple(path_of("personas", v) for v in personas),
        user_prompts=str(p.resolve()),
        judge_prompts=str(p.resolve()),
        annotation_columns=_columns(p, text, annotations, ANNOTATION_KEY),
    )


def _manifest_text(p: Path, raw: bytes) -> str:
    return decode(raw, p, "target manifest")


def _manifest_data(p: Path, text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{p}:{exc.lineno}", f"invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise DataError(str(p), "a target manifest must be a JSON object")
    return data


def _columns(p: Path, text: str, values: Any, key: str) -> tuple[str, ...]:
    if not all(isinstance(v, str) and v.strip() for v in values):
        raise DataError(_at(p, text, key), f"{key} must list non-empty column names")
    return tuple(v.strip() for v in values)


def _at(p: Path, text: str, key: str) -> str:
    """`file:line` of the line where `key` is set (the file alone when it is not)."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        if stripped.startswith((f'"{key}"', f"{key} ", f"{key}=")):
            return f"{p}:{lineno}"
    return str(p)


def _existing(p: Path, text: str, key: str, file: Path, *, folder_ok: bool = False) -> str:
    if file.is_file() or (folder_ok and file.is_dir()):
        return str(file.resolve())
    what = "file or folder" if folder_ok else "file"
    raise DataError(_at(p, text, key), f"{key}: no such {what}: {file}")


def default_grouping(columns: list[str], annotations: tuple[str, ...] | list[str]) -> str:
    """How personas are grouped when neither the target nor the config says: by suicide
    risk level when the files have its columns, else by the first annotation column,
    else not at all (the card then says so)."""
    if RISK_SHORT in columns or RISK_LONG in columns:
        return RISK_GROUPING
    return annotations[0] if annotations else ""


def persona_header(path: str | Path) -> list[str]:
    header, _, _ = read_persona_rows(path, ())
    return header


def check_annotations(files: list[Path], annotations: tuple[str, ...] | list[str], where: str) -> list[Issue]:
    """An annotation column that is not a column of every persona file is a warning
    naming the target file (and its line) and the files that lack it: the authors'
    own HFO manifest names a column its personas do not have, and a published target
    runs as it is. The run goes on without that column (`present_annotations`) and the
    card says it is absent. `where` is the target file that names the columns, or the
    config field."""
    issues = []
    headers = [(f, persona_header(f)) for f in files]
    for col in annotations:
        lacking = [f.name for f, header in headers if col not in header]
        if lacking:
            at = (
                _at(Path(where), Path(where).read_text(encoding="utf-8", errors="replace"), ANNOTATION_KEY)
                if Path(where).is_file()
                else where
            )
            named_by = Path(where).name if Path(where).is_file() else where
            issues.append(
                Issue(
                    0,
                    f"annotation column {col!r} named by {named_by} is not a column of the personas "
                    f"({', '.join(lacking)}); the run goes on without it and the card says it is absent",
                    severity="warning",
                    path=at,
                )
            )
    return issues


def present_annotations(
    files: list[Path], annotations: tuple[str, ...] | list[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The annotation columns every persona file has, and those some file lacks."""
    headers = [set(persona_header(f)) for f in files]
    present = tuple(c for c in annotations if all(c in h for h in headers))
    return present, tuple(c for c in annotations if c not in present)


# ---------------------------------------------------------------------------------------
# A VERA-MH manifest's prompts
# ---------------------------------------------------------------------------------------


def load_user_prompts(path: str | Path, reference: ReferenceDir = reference_folder) -> UserPrompts:
    """The simulated user's prompts: a prompt-set folder (``prompts.toml``), or a
    VERA-MH 2.0 target manifest (its context template in the shared template)."""
    p = Path(path)
    if p.suffix.lower() != ".json":
        return load_user_prompt_set(p, reference)
    data = _manifest_data(p, _manifest_text(p, _read(p)))
    shared = p.parent.parent
    system = _template(p, shared / SHARED_TEMPLATE, "the shared persona prompt template")
    context = _template(
        p, p.parent / str(data.get("persona_context_template_file", "")), "the context template"
    )
    reminder = _template(p, shared / SHARED_REMINDER, "the shared per-turn reminder")
    check_context_slot(system, context)
    opening = _template(p, data_root() / "targets" / ADAPTER / "opening.txt", "vera's opening")
    opening.check(())
    templates = [system, context, reminder, opening]
    return UserPrompts(
        system=system,
        reminder=reminder,
        end_marker=REFERENCE_END_MARKER,
        version=_manifest_version(p, "user-agent prompts", templates, REFERENCE_END_MARKER),
        reminder_position="before",  # the reference puts it before the chatbot's message
        opening=opening.text.strip(),
        context=context,
    )


def load_judge_prompts(path: str | Path, reference: ReferenceDir = reference_folder) -> JudgePrompts:
    """The judge's prompts: a prompt-set folder, or a VERA-MH 2.0 target manifest (its
    conversation prompt and question prompt, in the reference's placeholders)."""
    p = Path(path)
    if p.suffix.lower() != ".json":
        return load_judge_prompt_set(p, reference)
    data = _manifest_data(p, _manifest_text(p, _read(p)))
    system = _template(p, p.parent / str(data.get("rubric_prompt_beginning_file", "")), "the judge prompt")
    question = _template(p, p.parent / str(data.get("question_prompt_file", "")), "the question prompt")
    retry = _template(p, data_root() / "targets" / ADAPTER / "judge_retry.txt", "vera's judge retry")
    system.check(JudgePrompts.SYSTEM_FIELDS["vera-mh"])
    question.check(JudgePrompts.QUESTION_FIELDS["vera-mh"])
    retry.check(JudgePrompts.RETRY_FIELDS)
    return JudgePrompts(
        system=system,
        question=question,
        retry=retry,
        version=_manifest_version(p, "judge prompts", [system, question, retry], "labelled"),
        placeholders="vera-mh",
        # Their question prompt asks for ANSWER:/REASONING: lines and their judge also
        # asks for a structured object; both are read.
        answer_format="labelled",
        structured_output=True,
    )


def _read(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except OSError as exc:
        raise DataError(str(p), f"cannot read target: {exc.strerror or exc}") from None


def _template(manifest: Path, path: Path, what: str) -> Template:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(str(manifest), f"{what} {path}: {exc.strerror or exc}") from None
    return Template(path=str(path), text=decode(raw, path, what))


def _manifest_version(p: Path, what: str, templates: list[Template], settings: str) -> ArtifactVersion:
    h = hashlib.sha256(p.read_bytes())
    for t in templates:
        h.update(b"\0" + t.text.encode())
    h.update(b"\0" + settings.encode())
    return ArtifactVersion(
        name=f"{p.parent.name} {what}", version="unversioned", path=str(p), sha256=h.hexdigest()
    )
