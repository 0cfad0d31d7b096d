"""Screenshots from the browser tests: always into the test's tmp folder, and also into
$VERA_SCREENSHOTS when set (that is how docs/screenshots/ is made:
`VERA_SCREENSHOTS=docs/screenshots VERA_BROWSER_TESTS=required pytest tests/viewer -k browser`)."""

from __future__ import annotations

import os
from pathlib import Path


def shot(page, tmp_path: Path, name: str, *, full_page: bool = False) -> None:
    page.screenshot(path=tmp_path / f"{name}.png", full_page=full_page)
    target = os.environ.get("VERA_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=Path(target) / f"{name}.png", full_page=full_page)
