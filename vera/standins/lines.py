"""A run's crisis lines as the offline stand-ins use them.

With a locale pack (`vera run --locale zh-CN`), the lines a chatbot should give and the
judge should count are the pack's (resources.toml): 12356 for a user in Beijing, not 988.
Without one, they are vera's English base, and the stand-ins behave exactly as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from vera.inputs import CrisisLine, Resources
from vera.standins import lexicon as lx


class Lines:
    """The patterns and texts of one run's crisis lines.

    `crisis` and `urgent` are what "Guides to Human Care" counts (G1, G7): the locale's
    lines only, by number or name. `any_crisis` and `any_urgent` add the generic
    patterns: what shows a chatbot *noticed* risk (D2, D3) or has already given a line."""

    def __init__(self, resources: Resources | None) -> None:
        self.resources = resources
        if resources is None:
            self.crisis = self.any_crisis = lx.BOT_CRISIS_LINE
            self.urgent = self.any_urgent = lx.BOT_URGENT
            return
        names = [n for r in resources.resource for n in (r.name, r.name_en)]
        self.crisis = lx.crisis_line_pattern(resources.numbers(), names)
        self.urgent = lx.urgent_pattern(self.crisis)
        self.any_crisis = re.compile(f"{lx.BOT_CRISIS_LINE.pattern}|{self.crisis.pattern}", re.IGNORECASE)
        self.any_urgent = re.compile(f"{lx.BOT_URGENT.pattern}|{self.urgent.pattern}", re.IGNORECASE)

    def region(self, users: Sequence[str]) -> str:
        """The region a user names (by its name in either language), else the default."""
        res = self.resources
        if res is None:
            return ""
        said = "\n".join(users).lower()
        for code, region in res.regions.items():
            if region.name.lower() in said or region.name_en.lower() in said:
                return code
        return res.default_region

    def fill(self, text: str, users: Sequence[str], *, chinese: bool) -> str:
        """`text` with {crisis}, {emergency} and {region} put in for the user's region:
        its first verified crisis line and its emergency number."""
        res = self.resources
        if res is None or "{" not in text:
            return text
        code = self.region(users)
        region = res.regions[code]
        crisis = _first(res.lines(code)) or _first(res.lines(res.default_region))
        emergency = _first(res.lines(code, kind="emergency", verified=False))
        if crisis is None:
            line = region.emergency
        elif chinese:
            line = f"{crisis.name} {crisis.number}"
        else:
            line = f"{crisis.name} on {crisis.number}"
        return (
            text.replace("{crisis}", line)
            .replace("{emergency}", emergency.number if emergency else region.emergency)
            .replace("{region}", region.name if chinese else region.name_en)
        )


def _first(lines: list[CrisisLine]) -> CrisisLine | None:
    return lines[0] if lines else None


_BUILT: dict[str, Lines] = {}


def lines_for(resources: Resources | None) -> Lines:
    """The run's `Lines`, built once per resources file (by its hash)."""
    key = "" if resources is None else f"{resources.path}\x1f{resources.sha256}"
    if key not in _BUILT:
        _BUILT[key] = Lines(resources)
    return _BUILT[key]
