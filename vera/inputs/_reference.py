"""The reference tool's own data files, read from the user's checkout of them.

A config can take its rubric, personas and prompt templates from VERA-MH's ``data/``
folder (paths written ``reference:FILE``; see `vera.inputs._config.reference_folder`) so that
the paper's protocol runs on the authors' files, unchanged, while vera ships none of
their text. The config's ``[reference]`` table says which release those files are and
pins the content hash of each: a file that differs is refused before any call is made,
and the run's manifest and card name the release and the hash of every file used.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from vera.errors import ConfigError
from vera.inputs._config import RunConfig
from vera.inputs._refdir import REFERENCE_PREFIX
from vera.records import ReferenceData


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read reference data file: {exc.strerror or exc} "
            f"(is {path.parent} the reference tool's data/ folder?)"
        ) from None


def verify_pins(config: RunConfig) -> None:
    """Every file the config pins, checked before anything is loaded from the folder."""
    if not config.reference.sha256:
        return
    folder = config.reference_dir()
    for name, expected in sorted(config.reference.sha256.items()):
        actual = _sha256(folder / name)
        if actual != expected.lower():
            what = f"{config.reference.name} {config.reference.version}".strip() or "reference"
            raise ConfigError(
                f"{folder / name}: not the {what} file this config pins (sha256 {actual[:12]}, expected "
                f"{expected[:12]}); point --reference-data (or VERA_MH_DATA) at a checkout of {what}, or "
                "change [reference] in the config to run other data"
            )


def reads_reference(config: RunConfig) -> bool:
    """Whether the config names any input in the reference folder directly."""
    personas = [config.personas] if isinstance(config.personas, str) else config.personas
    paths = (config.target, config.rubric, *personas, config.user_prompts, config.judge_prompts)
    return any(p.startswith(REFERENCE_PREFIX) for p in paths)


def uses_reference(config: RunConfig, paths: Iterable[str | Path]) -> Path | None:
    """The reference folder if any of `paths` (the inputs actually read) lies in it."""
    try:
        folder = config.reference_dir()
    except ConfigError:
        return None  # no folder configured: nothing can have been read from one
    return folder if any(Path(p).resolve().is_relative_to(folder) for p in paths) else None


def reference_data(config: RunConfig, paths: Iterable[str | Path]) -> ReferenceData | None:
    """What the run read from the reference folder, with every pinned file checked.

    `paths` are the files the run's inputs were read from; those in the reference folder
    are hashed and recorded. Every file the config pins must exist and match, so a
    checkout of another release (or an edited file) is named before anything runs."""
    files_read = [Path(p) for p in paths]
    folder = uses_reference(config, files_read)
    if folder is None:
        return None
    ref = config.reference
    verify_pins(config)
    files = {
        p.resolve().relative_to(folder).as_posix(): _sha256(p)
        for p in sorted(files_read)
        if p.resolve().is_relative_to(folder)
    }
    return ReferenceData(
        name=ref.name or "reference data",
        version=ref.version or "unversioned",
        path=str(folder),
        files=files,
        pinned=bool(files) and all(name in ref.sha256 for name in files),
    )
