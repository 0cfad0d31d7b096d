"""Prompt templates as data: the user-agent's and the judge's.

A template is a text file with ``{Placeholder}`` fields (persona column names, or names
like ``end_marker``). A prompt set is a folder with a ``prompts.toml`` naming its
templates and version; its hash covers every file, so a manifest pins exactly the words
the models saw. Unknown placeholders are an error at load time, not a surprise mid-run.

A prompt set can also run another tool's templates unchanged: a template named
``reference:FILE`` is read from the reference data folder (the user's checkout of
VERA-MH's ``data/``; see `vera.inputs._config.reference_folder`), and the set declares how
those templates are meant to be used: the judge's placeholder dialect and answer format,
the user-agent reminder's position. So ``prompts.toml`` and any text of ours stay in
this project, and the other tool's words stay in the user's checkout.
"""

from __future__ import annotations

import functools
import hashlib
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import msgspec

from vera.errors import DataError
from vera.inputs._refdir import REFERENCE_PREFIX, reference_folder
from vera.records import ArtifactVersion
from vera.text import decode, read_text

# Where a `reference:FILE` template is read from; called only when a set names one.
ReferenceDir = Callable[[], Path]

# A placeholder starts with a letter, so literal JSON such as {"answer": ...} passes through.
_FIELD = re.compile(r"\{([A-Za-z_][^{}\"\n]*)\}")


class Template(msgspec.Struct, frozen=True):
    path: str
    text: str

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.group(1) for m in _FIELD.finditer(self.text)))

    def check(self, allowed: Iterable[str]) -> None:
        allowed = set(allowed)
        for m in _FIELD.finditer(self.text):
            if m.group(1) not in allowed:
                line = self.text.count("\n", 0, m.start()) + 1
                raise DataError(f"{self.path}:{line}", f"unknown placeholder {{{m.group(1)}}}")

    def render(self, values: Mapping[str, str]) -> str:
        # The text between the placeholders is found once per template (`_pieces`), not
        # by a regular-expression pass over the whole text at each rendering: a persona
        # prompt is rendered once per persona in a sweep, and the pass with its callback
        # per placeholder cost ~16 µs for a 7 KB prompt.
        literals, fields = _pieces(self.text)
        out = [literals[0]]
        for (key, start), literal in zip(fields, literals[1:], strict=True):
            if key not in values:
                line = self.text.count("\n", 0, start) + 1
                raise DataError(f"{self.path}:{line}", f"no value for placeholder {{{key}}}")
            out.append(values[key])
            out.append(literal)
        return "".join(out)


@functools.lru_cache(maxsize=256)
def _pieces(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """A template's text cut at its placeholders: the literal pieces (one more than the
    placeholders) and each placeholder's name and offset, in order, as `_FIELD.sub` would
    meet them."""
    literals: list[str] = []
    fields: list[tuple[str, int]] = []
    pos = 0
    for m in _FIELD.finditer(text):
        literals.append(text[pos : m.start()])
        fields.append((m.group(1), m.start()))
        pos = m.end()
    literals.append(text[pos:])
    return tuple(literals), tuple(fields)


def _read_template(folder: Path, name: str, manifest: Path, reference: ReferenceDir) -> Template:
    p = (
        reference() / name.removeprefix(REFERENCE_PREFIX)
        if name.startswith(REFERENCE_PREFIX)
        else folder / name
    )
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise DataError(str(manifest), f"template {name!r}: {exc.strerror or exc}") from None
    return Template(path=str(p), text=decode(raw, p, "prompt template"))


def _choice(meta: dict[str, Any], key: str, choices: tuple[str, ...], manifest: Path) -> Any:
    """An optional setting that must be one of `choices` (the first is the default)."""
    value = meta.get(key, choices[0])
    if value not in choices:
        raise DataError(str(manifest), f"{key} = {value!r}: must be one of {', '.join(map(repr, choices))}")
    return value


def _read_manifest(folder: Path) -> tuple[Path, dict[str, Any]]:
    manifest = folder / "prompts.toml"
    try:
        return manifest, tomllib.loads(read_text(manifest, "prompt set")[1])
    except tomllib.TOMLDecodeError as exc:
        raise DataError(str(manifest), f"invalid TOML: {exc}") from None


def _require(meta: dict[str, Any], key: str, manifest: Path) -> str:
    value = meta.get(key)
    if not isinstance(value, str) or not value:
        raise DataError(str(manifest), f"missing or empty string field {key!r}")
    return value


def _version(
    folder: Path, meta: dict[str, Any], manifest: Path, templates: list[Template]
) -> ArtifactVersion:
    h = hashlib.sha256(manifest.read_bytes())
    for t in templates:
        h.update(b"\0" + t.text.encode())
    return ArtifactVersion(
        name=str(meta.get("name", folder.name)),
        version=str(meta.get("version", "unversioned")),
        path=str(folder),
        sha256=h.hexdigest(),
    )


class UserPrompts(msgspec.Struct, frozen=True):
    """The user-agent's system prompt and per-turn reminder, and the end marker.

    `reminder_position`: where the reminder goes in the user-agent's newest message,
    after the chatbot's words ("after", vera's prompts) or before them ("before", for a
    reminder that ends by introducing the chatbot's message, as VERA-MH's does).
    `opening`: the user-agent's first message when the user speaks first and nothing
    has been said yet (empty = the reminder), sent as written.
    `context`: a persona *context template* (VERA-MH 2.0's targets): filled from the
    persona's columns and placed at ``{persona_context}`` of the system prompt, so one
    shared system prompt serves targets whose personas have different columns."""

    system: Template
    reminder: Template
    end_marker: str
    version: ArtifactVersion
    reminder_position: Literal["after", "before"] = "after"
    opening: str = ""
    context: Template | None = None
    # A locale pack's texts for the engine's two neutral scene-setting lines (empty: the
    # engine's English ones). Unlike `opening`, the user's opener still carries the
    # reminder, so the flow is the base's (locales/README.md).
    opener: str = ""
    chatbot_opener: str = ""

    EXTRA_FIELDS = ("end_marker", "min_turns", "max_turns")
    CONTEXT_FIELD = "persona_context"

    def templates(self) -> tuple[Template, ...]:
        """Every template the simulated user's prompts are made of."""
        return (self.system, self.reminder, *((self.context,) if self.context is not None else ()))

    def persona_templates(self) -> tuple[Template, ...]:
        """The templates filled from persona columns."""
        return (self.context, self.reminder) if self.context is not None else (self.system, self.reminder)


def load_user_prompt_set(folder: str | Path, reference: ReferenceDir = reference_folder) -> UserPrompts:
    folder = Path(folder)
    manifest, meta = _read_manifest(folder)
    system = _read_template(folder, _require(meta, "system", manifest), manifest, reference)
    reminder = _read_template(folder, _require(meta, "reminder", manifest), manifest, reference)
    templates = [system, reminder]
    opening = ""
    if "opening" in meta:
        first = _read_template(folder, _require(meta, "opening", manifest), manifest, reference)
        first.check(())  # sent as written: a placeholder there would reach the model unfilled
        templates.append(first)
        opening = first.text.strip()
    context = None
    if "context" in meta:
        context = _read_template(folder, _require(meta, "context", manifest), manifest, reference)
        check_context_slot(system, context)
        templates.append(context)
    openers = {}
    for key in ("opener", "chatbot_opener"):
        if key in meta:
            line = _read_template(folder, _require(meta, key, manifest), manifest, reference)
            line.check(())  # sent as written
            templates.append(line)
            openers[key] = line.text.strip()
    return UserPrompts(
        system=system,
        reminder=reminder,
        end_marker=_require(meta, "end_marker", manifest),
        version=_version(folder, meta, manifest, templates),
        reminder_position=_choice(meta, "reminder_position", ("after", "before"), manifest),
        opening=opening,
        context=context,
        opener=openers.get("opener", ""),
        chatbot_opener=openers.get("chatbot_opener", ""),
    )


def check_context_slot(system: Template, context: Template) -> None:
    """A system prompt used with a context template takes the filled context at
    ``{persona_context}`` and nothing else from the persona (the context template has
    the persona's columns); the slot must be there, or the persona never reaches the
    model."""
    slot = UserPrompts.CONTEXT_FIELD
    if slot not in system.fields:
        raise DataError(
            system.path,
            f"has no {{{slot}}} placeholder, so the persona context from {context.path} would never "
            "reach the simulated user",
        )
    system.check((slot, *UserPrompts.EXTRA_FIELDS))


JudgeDialect = Literal["vera", "vera-mh"]
AnswerFormat = Literal["json", "labelled"]


class JudgePrompts(msgspec.Struct, frozen=True):
    """The judge's system prompt (instructions + transcript: a stable prefix shared by
    every question about one conversation, so provider prompt caches apply), the
    per-question template and the correction sent after an answer that is not an option.

    `placeholders` is the templates' dialect: "vera" (ours: {transcript}; {question_id},
    {dimension}, {question}, {guidance}, {options} as "A | B") or "vera-mh" (VERA-MH's:
    {conversation}; {question}, {examples_section}, {options} as "A, B").
    `answer_format` is what the templates ask the judge to write: "json" (an object with
    reasoning and answer) or "labelled" ("ANSWER: ..." and "REASONING: ..." lines; a
    JSON object is accepted too). `structured_output` asks providers for the JSON object
    by their own mechanism as well, as VERA-MH's judge does with its labelled prompts."""

    system: Template
    question: Template
    retry: Template
    version: ArtifactVersion
    placeholders: JudgeDialect = "vera"
    answer_format: AnswerFormat = "json"
    structured_output: bool = True

    SYSTEM_FIELDS: ClassVar[dict[str, tuple[str, ...]]] = {
        "vera": ("transcript",),
        "vera-mh": ("conversation",),
    }
    QUESTION_FIELDS: ClassVar[dict[str, tuple[str, ...]]] = {
        "vera": ("question_id", "dimension", "question", "guidance", "options"),
        "vera-mh": ("question", "examples_section", "options"),
    }
    RETRY_FIELDS = ("answer", "options")


def load_judge_prompt_set(folder: str | Path, reference: ReferenceDir = reference_folder) -> JudgePrompts:
    folder = Path(folder)
    manifest, meta = _read_manifest(folder)
    system = _read_template(folder, _require(meta, "system", manifest), manifest, reference)
    question = _read_template(folder, _require(meta, "question", manifest), manifest, reference)
    retry = _read_template(folder, _require(meta, "retry", manifest), manifest, reference)
    dialect = _choice(meta, "placeholders", ("vera", "vera-mh"), manifest)
    system.check(JudgePrompts.SYSTEM_FIELDS[dialect])
    question.check(JudgePrompts.QUESTION_FIELDS[dialect])
    retry.check(JudgePrompts.RETRY_FIELDS)
    structured = meta.get("structured_output", True)
    if not isinstance(structured, bool):
        raise DataError(str(manifest), f"structured_output = {structured!r}: must be true or false")
    return JudgePrompts(
        system=system,
        question=question,
        retry=retry,
        version=_version(folder, meta, manifest, [system, question, retry]),
        placeholders=dialect,
        answer_format=_choice(meta, "answer_format", ("json", "labelled"), manifest),
        structured_output=structured,
    )
