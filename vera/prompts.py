"""Prompt templates as data: the user-agent's and the judge's.

A template is a text file with ``{Placeholder}`` fields (persona column names, or names
like ``end_marker``). A prompt set is a folder with a ``prompts.toml`` naming its
templates and version; its hash covers every file, so a manifest pins exactly the words
the models saw. Unknown placeholders are an error at load time, not a surprise mid-run.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

import msgspec

from vera.errors import DataError
from vera.records import ArtifactVersion

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
        def sub(m: re.Match[str]) -> str:
            key = m.group(1)
            if key not in values:
                line = self.text.count("\n", 0, m.start()) + 1
                raise DataError(f"{self.path}:{line}", f"no value for placeholder {{{key}}}")
            return values[key]

        return _FIELD.sub(sub, self.text)


def _read_template(folder: Path, name: str, manifest: Path) -> Template:
    p = folder / name
    try:
        return Template(path=str(p), text=p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataError(str(manifest), f"template {name!r}: {exc.strerror or exc}") from None


def _read_manifest(folder: Path) -> tuple[Path, dict]:
    manifest = folder / "prompts.toml"
    try:
        return manifest, tomllib.loads(manifest.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataError(str(manifest), f"cannot read prompt set: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise DataError(str(manifest), f"invalid TOML: {exc}") from None


def _require(meta: dict, key: str, manifest: Path) -> str:
    value = meta.get(key)
    if not isinstance(value, str) or not value:
        raise DataError(str(manifest), f"missing or empty string field {key!r}")
    return value


def _version(folder: Path, meta: dict, manifest: Path, templates: list[Template]) -> ArtifactVersion:
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
    """The user-agent's system prompt and per-turn reminder, and the end marker."""

    system: Template
    reminder: Template
    end_marker: str
    version: ArtifactVersion

    EXTRA_FIELDS = ("end_marker", "min_turns", "max_turns")


def load_user_prompts(folder: str | Path) -> UserPrompts:
    folder = Path(folder)
    manifest, meta = _read_manifest(folder)
    system = _read_template(folder, _require(meta, "system", manifest), manifest)
    reminder = _read_template(folder, _require(meta, "reminder", manifest), manifest)
    return UserPrompts(
        system=system,
        reminder=reminder,
        end_marker=_require(meta, "end_marker", manifest),
        version=_version(folder, meta, manifest, [system, reminder]),
    )


class JudgePrompts(msgspec.Struct, frozen=True):
    """The judge's system prompt (instructions + transcript: a stable prefix shared by
    every question about one conversation, so provider prompt caches apply) and the
    per-question template."""

    system: Template
    question: Template
    retry: Template
    version: ArtifactVersion

    SYSTEM_FIELDS = ("transcript",)
    QUESTION_FIELDS = ("question_id", "dimension", "question", "guidance", "options")
    RETRY_FIELDS = ("answer", "options")


def load_judge_prompts(folder: str | Path) -> JudgePrompts:
    folder = Path(folder)
    manifest, meta = _read_manifest(folder)
    system = _read_template(folder, _require(meta, "system", manifest), manifest)
    question = _read_template(folder, _require(meta, "question", manifest), manifest)
    retry = _read_template(folder, _require(meta, "retry", manifest), manifest)
    system.check(JudgePrompts.SYSTEM_FIELDS)
    question.check(JudgePrompts.QUESTION_FIELDS)
    retry.check(JudgePrompts.RETRY_FIELDS)
    return JudgePrompts(
        system=system,
        question=question,
        retry=retry,
        version=_version(folder, meta, manifest, [system, question, retry]),
    )
