"""Every relative link in the README, docs/, benchmarks/ and the folders' READMEs leads somewhere.

The docs cross-reference each other by section (`docs/statistics.md#the-sequential-gate-
vera-gate`); a renamed heading silently breaks every link to it, and a user following the
README lands at the top of a 1,600-line page. Anchors are derived as GitHub derives them
from headings: lower-cased, punctuation other than `-` and `_` dropped, spaces made `-`,
and a repeated heading numbered `-1`, `-2`, ...
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if m := HEADING.match(line):
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
        found.update(re.findall(r'<a (?:name|id)="([^"]+)"', line))
    return found


PAGES = sorted(
    {
        ROOT / "README.md",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "benchmarks").glob("*.md"),
        *ROOT.glob("*/README.md"),  # providers/, locales/, configs/, ...
    }
)


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target} (no such heading)")
    return broken


def test_the_pages_are_found() -> None:
    assert len(PAGES) >= 10


def test_anchors_follow_githubs_rule() -> None:
    assert slug("The sequential gate (`vera gate`)") == "the-sequential-gate-vera-gate"
    assert (
        slug("Why 300 units at margin 5 cannot stop at half")
        == "why-300-units-at-margin-5-cannot-stop-at-half"
    )
    assert slug("Issue 31 item 3: the whole of it, measured properly") == (
        "issue-31-item-3-the-whole-of-it-measured-properly"
    )


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert not broken_links(page), f"{page.relative_to(ROOT)}: broken links: {broken_links(page)}"


def headless_tables(page: Path) -> list[int]:
    """Lines that start a table without a header: Markdown renders their rows as plain
    text full of pipes (a paragraph dropped into a table cuts it in two so)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, fenced = [], False
    for i, line in enumerate(lines):
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or not line.startswith("|") or (i and lines[i - 1].startswith("|")):
            continue
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if not re.match(r"^\|\s*:?-{3,}", following):
            found.append(i + 1)
    return found


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_table_has_its_header(page: Path) -> None:
    assert not headless_tables(page), (
        f"{page.relative_to(ROOT)}: tables without a header at lines {headless_tables(page)}"
    )
