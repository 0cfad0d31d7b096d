"""The ranges numbers must lie in where they enter vera, one definition per kind.

The command line (the parameter types in `vera.cli`) and the files (the run config's
check and the provider profiles in `vera.inputs`) take their numbers through these, so
`--seed`, `--seeds`, `--bootstrap-seed`, `[stats] seed`, `vera compare --seed`,
`vera ratings plan --seed` and `vera review --seed` take the same seeds and refuse
others in the same words. NaN and the infinities are in no range: a NaN compares false
with every bound, so a check written as `not low <= x <= high` would let it through
where `x < low` is asked, and a budget, a margin or a timeout of infinity holds nothing.

    problem = SEED.problem(value)     # None, or "must be a whole number from 0 to ..."

Imports nothing from vera: it sits at the bottom with `vera.records` and `vera.errors`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final


def _number(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) or x != int(x) else f"{int(x):,}"


@dataclass(frozen=True)
class Range:
    """An interval of numbers (whole numbers only when `whole`), finite, with the words
    that describe it. A bound that is None is no bound; `low_open` / `high_open` leave
    the bound itself out."""

    low: float | None = None
    high: float | None = None
    whole: bool = False
    low_open: bool = False
    high_open: bool = False
    unit: str = ""  # "seconds", "US dollars", "score points": how a value is read

    def describe(self) -> str:
        """The range in words: "a whole number from 0 to 4,294,967,295"."""
        kind = "a whole number" if self.whole else "a number"
        if self.unit:
            kind = f"{'a whole number' if self.whole else 'a number'} of {self.unit}"
        low, high = self.low, self.high
        if low is not None and high is not None:
            if self.low_open or self.high_open:
                left = "above" if self.low_open else "from"
                right = "below" if self.high_open else "up to"
                return f"{kind} {left} {_number(low)} and {right} {_number(high)}"
            return f"{kind} from {_number(low)} to {_number(high)}"
        if low is not None:
            return f"{kind} above {_number(low)}" if self.low_open else f"{kind}, {_number(low)} or more"
        if high is not None:
            return f"{kind} below {_number(high)}" if self.high_open else f"{kind}, {_number(high)} or less"
        return f"a finite {kind.removeprefix('a ')}"

    def problem(self, value: object) -> str | None:
        """Why `value` is not in the range, in words that follow a name ("must be a whole
        number from 0 to 4,294,967,295, not -1"); None when it is."""
        wrong = f"must be {self.describe()}, not {value!r}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return wrong
        if self.whole and not isinstance(value, int):
            return wrong
        if not math.isfinite(value):
            return f"must be {self.describe()}, not {value}"
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return wrong
        if self.high is not None and (value >= self.high if self.high_open else value > self.high):
            return wrong
        return None

    def contains(self, value: object) -> bool:
        return self.problem(value) is None


# Every seed vera takes: the run's seeds, the bootstrap's, a comparison's, a review
# sample's. 32 bits: the run's seeds are stored in 64-bit frame columns and shown by
# the viewer's JavaScript (exact to 2^53 only), and four billion replicates is plenty.
SEED_MAX: Final = 2**32 - 1
SEED: Final = Range(0, SEED_MAX, whole=True)

# A share of something, 0 to 1 (failures a run may have and still exit 0).
SHARE: Final = Range(0, 1)
# An interval's level: strictly between 0 and 1 (0.95).
LEVEL: Final = Range(0, 1, low_open=True, high_open=True)
# A wait that may be zero (a grace period, a backoff delay, a quiet time).
SECONDS: Final = Range(0, None, unit="seconds")
# A wait or a timeout that must pass some time (0 would never wait or always time out).
POSITIVE_SECONDS: Final = Range(0, None, low_open=True, unit="seconds")
# A budget: 0 means none.
DOLLARS: Final = Range(0, None, unit="US dollars")
# How many score points a candidate may lose before the release gate counts it worse;
# scores lie between 0 and 100, so a larger margin could never fail the gate.
MARGIN: Final = Range(0, 100, unit="score points")
# An interval's width, or a margin a design is sized for (`vera plan`): each divides a
# spread, and no design reaches a width of 0 or has power at a margin of 0.
POSITIVE_POINTS: Final = Range(0, 100, low_open=True, unit="score points")
# Bootstrap resamples: past 100,000 the Monte Carlo error of an interval end is far
# below its rounding, and the bootstrap only takes longer (docs/configuration.md).
MAX_RESAMPLES: Final = 100_000
RESAMPLES: Final = Range(1, MAX_RESAMPLES, whole=True)
# A latency a benchmark's fake server adds, in milliseconds (0: answer at once).
MILLISECONDS: Final = Range(0, None, unit="milliseconds")

# The sampling parameters every protocol shares, as a run config's `[ROLE.params]` or a
# profile's `[params]` gives them: a value of the wrong kind ("hot") would otherwise be
# sent and refused by the provider after the run has started. Parameters not listed are
# sent as given (each API has its own); `seed` may also be "auto" (vera.engine).
SAMPLING: Final[dict[str, Range]] = {
    "temperature": Range(0, 2),
    "top_p": Range(0, 1),
    "top_k": Range(1, None, whole=True),
    "max_tokens": Range(1, None, whole=True),
    "max_completion_tokens": Range(1, None, whole=True),
    "max_output_tokens": Range(1, None, whole=True),
    "presence_penalty": Range(-2, 2),
    "frequency_penalty": Range(-2, 2),
    "seed": Range(0, 2**63 - 1, whole=True),
}


def sampling_problems(params: dict[str, object], where: str) -> list[str]:
    """Each sampling parameter in `params` of the wrong kind or out of its range, and
    any other that holds NaN or an infinity (no API takes one), as "WHERE.NAME must be ..."."""
    problems = []
    for name, value in params.items():
        kind = SAMPLING.get(name)
        if kind is None:
            if (found := _not_finite(value)) is not None:
                problems.append(f"{where}.{name}{found[0]} must be a finite number, not {found[1]}")
            continue
        if name == "seed" and value == "auto":
            continue
        if (problem := kind.problem(value)) is not None:
            also = ' or "auto"' if name == "seed" else ""
            problems.append(f"{where}.{name} {problem.replace(', not', f'{also}, not', 1)}")
    return problems


def _not_finite(value: object, at: str = "") -> tuple[str, float] | None:
    """Where inside `value` (".key" / "[i]" steps) a NaN or an infinity is, and which;
    None if nowhere."""
    if isinstance(value, float) and not math.isfinite(value):
        return at, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        step = f".{key}" if isinstance(key, str) else f"[{key}]"
        if (found := _not_finite(inner, at + step)) is not None:
            return found
    return None
