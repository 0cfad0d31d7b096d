"""Where vera's built-in data lives: personas, rubrics, prompts, provider profiles, configs.

In a checkout (and an editable install) that is the repository itself, so editing
`personas/vera-personas.tsv` changes what `vera run` uses. A wheel carries the same
folders as package data under `vera/_data/` (see `[tool.hatch.build.targets.wheel.
force-include]` in pyproject.toml), found with `importlib.resources`: an installed vera has
its defaults without a source tree.

Runs are different: they belong to the user, so an installed vera writes them under the
working directory, never inside site-packages.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

# The folders that ship with vera; each is a top-level folder of the repository.
DATA_FOLDERS = ("personas", "rubrics", "providers", "configs", "targets", "locales", "resources")

# The checkout is the folder above the `vera` package.
_CHECKOUT = Path(str(importlib.resources.files("vera"))).resolve().parent


def _is_checkout(root: Path) -> bool:
    return (root / "pyproject.toml").is_file() and all((root / d).is_dir() for d in DATA_FOLDERS)


def data_root() -> Path:
    """The folder holding personas/, rubrics/, providers/, configs/, targets/, locales/
    and resources/."""
    if _is_checkout(_CHECKOUT):
        return _CHECKOUT
    return Path(str(importlib.resources.files("vera") / "_data"))


def runs_root() -> Path:
    """Where the built-in defaults put run directories: `runs/` in a checkout (as the
    README's `make eval` says), else `runs/` under the working directory."""
    return _CHECKOUT if _is_checkout(_CHECKOUT) else Path.cwd()


def builtin_config(name: str) -> Path | None:
    """A shipped config by name (`offline`, `recommended`, `vera-mh-v1.1`), so an
    installed vera can run `--config recommended` without knowing where it lives."""
    if not name or "/" in name or "\\" in name:
        return None
    p = data_root() / "configs" / (name if name.endswith(".toml") else f"{name}.toml")
    return p if p.is_file() else None
