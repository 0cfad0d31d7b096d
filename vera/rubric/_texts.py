"""The question texts of the rubric a run was judged with, if that file is still there.

A run stores its judges' answers by question id; the texts live in the rubric file whose
path and sha256 the manifest records. Texts are shown only when the file at that path
still has that hash: a rubric edited since the run could put words beside an answer
that the judge never saw. Otherwise the reader is told why and sees the ids alone.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

import msgspec

from vera.errors import UserError
from vera.records import RunManifest
from vera.rubric._load import load_rubric
from vera.rubric._model import Rubric

# Why a run's rubric file gives no texts, in vera's English; a page in a locale pack's
# words says the same from `RubricMissing.kind` (vera.report's `questions_note`).
_WHY = {
    "absent": "rubric file {path} is not there",
    "unreadable": "rubric file {path} cannot be read ({detail})",
    "changed": "rubric file {path} has changed since this run (its sha256 differs from the manifest's)",
    "invalid": "{detail}",
}


class RubricMissing(msgspec.Struct, frozen=True):
    """Why the rubric a run was judged with cannot give its texts: `kind` names the case,
    `path` the file, `detail` the error (unreadable: the OS's reason; invalid: the
    loader's message)."""

    kind: Literal["absent", "unreadable", "changed", "invalid"]
    path: str
    detail: str = ""

    def english(self) -> str:
        return _WHY[self.kind].format(path=self.path, detail=self.detail)


class QuestionTexts(msgspec.Struct, frozen=True):
    """Question id → text, the rubric's dimensions in order, and why the texts are
    missing when they are (`note` is None when they are the run's own)."""

    texts: dict[str, str]
    dimensions: tuple[str, ...] = ()
    note: str | None = None
    # Question id → option label → its display text, where a locale pack's rubric gives
    # one (option_text): the answer a judge gave (its label) shown in the pack's words.
    options: dict[str, dict[str, str]] = {}
    # Why the texts are missing, as data (`note` is its English): for a page to say it in
    # its own words.
    missing: RubricMissing | None = None

    def text(self, question_id: str) -> str:
        return self.texts.get(question_id, "")

    def option(self, question_id: str, label: str) -> str:
        """An answer's display text: the pack's for this question, else the pack's text
        for the same label on another question (a pack writes 是 / 否 once, on the
        questions that list their options; the others take Yes / No by default), else
        the label as the judge gave it."""
        return self.options.get(question_id, {}).get(label) or self.any_option(label)

    def any_option(self, label: str) -> str:
        """An option's display text from whichever question has it (the risk level a
        judge chose is one of the risk question's options), else the label."""
        return next((o[label] for o in self.options.values() if o.get(label)), label)


def run_rubric(manifest: RunManifest, run_dir: Path | None = None) -> tuple[Rubric | None, str | None]:
    """(the rubric a run was judged with, None) when its file is there unchanged (its
    sha256 is the manifest's), else (None, why not). A relative path is looked up from
    the current directory, then from the run directory."""
    got = _checked_rubric(manifest, run_dir)
    return (None, got.english()) if isinstance(got, RubricMissing) else (got, None)


def _checked_rubric(manifest: RunManifest, run_dir: Path | None) -> Rubric | RubricMissing:
    recorded = manifest.rubric
    path = _find(Path(recorded.path), run_dir)
    if path is None:
        return RubricMissing("absent", recorded.path)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as e:
        return RubricMissing("unreadable", str(path), str(e.strerror))
    if digest != recorded.sha256:
        return RubricMissing("changed", str(path))
    try:
        return load_rubric(path)
    except UserError as e:
        return RubricMissing("invalid", str(path), str(e))


def question_texts(manifest: RunManifest, run_dir: Path | None = None) -> QuestionTexts:
    """The texts of the run's rubric, checked against the manifest's sha256 (`run_rubric`)."""
    rubric = _checked_rubric(manifest, run_dir)
    if isinstance(rubric, RubricMissing):
        return QuestionTexts({}, note=f"{rubric.english()}: question ids only", missing=rubric)
    options = {q.id: {o.label: o.text for o in q.options if o.text} for q in rubric.questions}
    return QuestionTexts(
        {q.id: q.text for q in rubric.questions},
        dimensions=rubric.dimensions,
        options={k: v for k, v in options.items() if v},
    )


def _find(path: Path, run_dir: Path | None) -> Path | None:
    candidates = [path] if path.is_absolute() else [path, *([run_dir / path] if run_dir else [])]
    return next((p for p in candidates if p.is_file()), None)
