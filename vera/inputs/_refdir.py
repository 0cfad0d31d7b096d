"""Where the reference tool's data files are: a folder the user points vera at.

vera ships none of the reference tool's text; a path written ``reference:FILE`` names FILE
in the user's checkout of its ``data/`` folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from vera.errors import ConfigError

# A path written "reference:FILE" names FILE in the reference tool's data folder: the
# folder of `[reference] data`, else of this environment variable (`--reference-data`
# sets the former). vera ships none of that tool's files; users point at their checkout.
REFERENCE_PREFIX = "reference:"
REFERENCE_ENV = "VERA_MH_DATA"


def reference_folder(value: str = "", *, base: Path | None = None) -> Path:
    """The reference data folder: `value` (relative to `base`) or $VERA_MH_DATA
    (relative to the working directory). A ConfigError says how to give it."""
    raw, origin = (value, "[reference] data") if value else (os.environ.get(REFERENCE_ENV, ""), REFERENCE_ENV)
    if not raw:
        raise ConfigError(
            "the reference tool's data files are needed (a path starts with 'reference:') but no folder "
            f"is given: set {REFERENCE_ENV}=/path/to/VERA-MH/data or pass --reference-data DIR"
        )
    p = Path(raw).expanduser()
    if not p.is_absolute():
        p = (base or Path.cwd()) / p
    if not p.is_dir():
        raise ConfigError(f"{p}: reference data folder not found (from {origin})")
    return p.resolve()
