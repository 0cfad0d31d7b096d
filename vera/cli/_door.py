"""Values checked where they enter the command line.

Two kinds of guard, each defined once:

* `Number(RANGE)`: a click parameter type for a number in one of `vera.ranges`' ranges
  (the run config checks its fields against the same ranges), so `--seed`,
  `--bootstrap-seed` and `[stats] seed` refuse the same values in the same words.
* `guard(command)`: one pass over the command tree, run when the `vera` command is built,
  that makes every float option refuse NaN and the infinities, and every path or text
  option refuse an empty string. A new option is checked without anyone remembering
  to: `--confidence nan` or `--out ''` can never slip through again.
"""

from __future__ import annotations

import math
from typing import Any, get_args

import click

from vera.ranges import Range
from vera.records import RaterRule


class Number(click.ParamType[Any]):
    """A number in `kind`'s range (whole numbers only for a whole range)."""

    def __init__(self, kind: Range, name: str) -> None:
        self.kind = kind
        self.name = name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number: int | float
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = value
        else:
            text = str(value).strip()
            try:
                number = int(text) if self.kind.whole else float(text)
            except ValueError:
                self.fail(f"{value!r} is not {self.kind.describe()}", param, ctx)
        if self.kind.problem(number) is not None:
            self.fail(f"{value} is not {self.kind.describe()}", param, ctx)
        return number


class _Guarded(click.ParamType[Any]):
    """Another parameter type with a check of its own; help shows the other's name."""

    def __init__(self, inner: click.ParamType[Any]) -> None:
        self.inner = inner
        self.name = inner.name

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        return self.inner.get_metavar(param, ctx)


class _Finite(_Guarded):
    """A float type refusing NaN and the infinities after it has converted."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = self.inner.convert(value, param, ctx)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value} is not a number vera can use (give a finite number)", param, ctx)
        return number


class _NotEmpty(_Guarded):
    """A path or text type that refuses an empty (or blank) value before the inner one
    sees it: `--out ''` is not the current folder, `--providers ''` names no chatbot."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            what = "path" if isinstance(self.inner, click.Path) else "value"
            self.fail(f"an empty {what}; give one, or leave the option out", param, ctx)
        return self.inner.convert(value, param, ctx)


# Options where an empty value means something: `--limits-url ''` takes a resumed run
# off the shared Redis limits its config named.
EMPTY_MEANS_NONE = frozenset({"limits_url"})


def guard(command: click.Command) -> None:
    """Make every float parameter of `command` and its subcommands refuse NaN and the
    infinities, and every path or text parameter refuse an empty value."""
    for param in command.params:
        kind = param.type
        if isinstance(kind, click.types.FloatParamType):  # FLOAT and FloatRange
            param.type = _Finite(kind)
        elif (isinstance(kind, click.Path) or kind is click.STRING) and param.name not in EMPTY_MEANS_NONE:
            param.type = _NotEmpty(kind)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            guard(sub)


# The rules combining raters who disagree (vera.stats.humans.combine_raters).
RATER_RULES: tuple[str, ...] = get_args(RaterRule)
RATERS_OPTION = click.option(
    "--raters",
    type=click.Choice(RATER_RULES),
    help="How raters who disagree on a conversation become one rating for the calibrated scores: "
    "severest (the default: one rater seeing harm counts as harm), majority (ties: severest) "
    "or mean (rounded toward severe).",
)
