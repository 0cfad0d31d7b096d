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
from collections.abc import Callable
from typing import Any, TypeVar, get_args

import click

from vera.ranges import LEVEL, MARGIN, MAX_RESAMPLES, SEED, Range
from vera.records import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, RaterRule
from vera.stats import DEFAULT_SPENDING

F = TypeVar("F", bound=Callable[..., Any])


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
            # A required option or an argument cannot be left out: say only "give one".
            required = isinstance(param, click.Argument) or bool(getattr(param, "required", False))
            advice = "give one" if required else "give one, or leave the option out"
            self.fail(f"an empty {what}; {advice}", param, ctx)
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


# Options several commands share, declared once so that their names, types, defaults and
# help stay the same everywhere (`vera gate`, `vera plan`, `vera compare`, `vera view`,
# and the bootstrap's `--resamples` and `--confidence` of compare, agreement, score, pool).
# Each is a factory: a command may give its own default or help where it means something
# else by the same flag (`vera compare --margin` is 0 unless --gate asks for more).

MARGIN_HELP = "Score points the candidate may lose before it counts as worse."


def margin_option(default: float = 5.0, help: str = MARGIN_HELP, points: Range = MARGIN) -> Callable[[F], F]:
    """`--margin POINTS`: how much worse than the baseline still passes a gate (`points`:
    the values allowed; `vera plan` sizes for a margin above 0)."""
    return click.option(
        "--margin", type=Number(points, "points"), default=default, show_default=True, help=help
    )


ALPHA = 0.05  # the gates' error rate unless --alpha says otherwise


def alpha_option(help: str, *, default: float | None = ALPHA) -> Callable[[F], F]:
    """`--alpha ALPHA`: the gates' error rate (default 0.05). `default=None` lets a
    command tell a given --alpha from none (`vera compare` takes it only with --gate)."""
    return click.option(
        "--alpha", type=Number(LEVEL, "alpha"), default=default, show_default=default is not None, help=help
    )


def wave_option(help: str) -> Callable[[F], F]:
    """`--wave N`: the sequential gate's units per wave (default 20)."""
    return click.option("--wave", type=click.IntRange(min=1), default=20, show_default=True, help=help)


BOUNDARY_HELP = (
    "spending (the default): a group-sequential α-spending boundary, valid at the gate's own "
    "waves and sooner to stop; sequence: a confidence sequence, valid however often and "
    "whenever it is read (see docs/statistics.md)."
)
SPENDING_HELP = (
    "The spending function of the spending boundary: obf (Lan–DeMets O'Brien–Fleming), "
    f"pocock (Lan–DeMets Pocock) or hsd:GAMMA (Hwang–Shih–DeCani); default {DEFAULT_SPENDING}."
)


def boundary_options(resumed: str = "") -> Callable[[F], F]:
    """`--boundary spending|sequence` and `--spending FUNCTION`: the sequential gate's
    boundary, declared once so `vera gate` and `vera plan` (which sizes that gate) offer
    the same choices in the same words (`resumed`: what a command adds of a resumed
    gate). The spending function is checked where it is used
    (`vera.app._gate.check_spending`), so a bad one, or one with --boundary sequence, is
    one line from either command."""

    def apply(f: F) -> F:
        # No defaults in click: a --spending given with --boundary sequence is refused, not
        # ignored, and a resumed gate tells a --boundary not given (it keeps the boundary it
        # was started with) from one given (checked against it); the commands resolve them.
        f = click.option("--spending", metavar="FUNCTION", help=SPENDING_HELP)(f)
        return click.option(
            "--boundary",
            type=click.Choice(["spending", "sequence"]),
            help=BOUNDARY_HELP + (f" {resumed}" if resumed else ""),
        )(f)

    return apply


def seed_option(help: str, default: int | None = 0) -> Callable[[F], F]:
    """`--seed SEED`: a seed in vera's seed range (`None`: no default, the config's)."""
    return click.option(
        "--seed", type=Number(SEED, "seed"), default=default, show_default=default is not None, help=help
    )


LOCALE_HELP = (
    "A locale pack: a tag (zh-CN, en-GB) or a pack folder. Its personas, prompts, "
    "rubric texts and crisis resources replace the English base where it holds them "
    "(docs/locales.md)."
)


def locale_option(help: str = LOCALE_HELP) -> Callable[[F], F]:
    """`--locale TAG|DIR`: a locale pack, by one of vera's tags or a pack folder (checked
    where it is used: `vera.inputs.find_locale`)."""
    return click.option("--locale", help=help)


def _bootstrap_help(what: str, default_from: str | None, scope: str | None) -> str:
    notes = [n for n in (scope, default_from and f"default: {default_from}") if n]
    return f"{what} ({'; '.join(notes)})." if notes else f"{what}."


def resamples_option(
    default_from: str | None = None, scope: str | None = None, default: int = DEFAULT_RESAMPLES
) -> Callable[[F], F]:
    """`--resamples N`: the bootstrap's resamples, 1 to `MAX_RESAMPLES`. Its default is
    `default` (`DEFAULT_RESAMPLES` unless a command runs many bootstraps and says why in
    `scope`), or with `default_from` none: the command then takes them from where that
    says (a run's config); `scope` says when or how it applies ("with --against")."""
    return click.option(
        "--resamples",
        type=click.IntRange(1, MAX_RESAMPLES),
        default=None if default_from else default,
        show_default=not default_from,
        help=_bootstrap_help("Bootstrap resamples", default_from, scope),
    )


def confidence_option(default_from: str | None = None, scope: str | None = None) -> Callable[[F], F]:
    """`--confidence C`: the intervals' level, strictly between 0 and 1; default
    `DEFAULT_CONFIDENCE` unless `default_from` (as `resamples_option`)."""
    return click.option(
        "--confidence",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=None if default_from else DEFAULT_CONFIDENCE,
        show_default=not default_from,
        help=_bootstrap_help("Interval level between 0 and 1, e.g. 0.95", default_from, scope),
    )


def serve_options(page: str, exposure: str) -> Callable[[F], F]:
    """The options of a command that serves pages from this machine: `--port`,
    `--host`, `--allow-remote` (what serving to the network would expose: `exposure`),
    `--allowed-host` and `--open` (the `page` in the default browser)."""

    def decorate(command: F) -> F:
        for option in reversed(
            [
                click.option(
                    "--port",
                    type=click.IntRange(0, 65535),
                    default=0,
                    show_default=True,
                    help="Port to listen on; 0 picks a free one.",
                ),
                click.option(
                    "--host",
                    default="127.0.0.1",
                    show_default=True,
                    help="Address to listen on; anything but a loopback address needs --allow-remote as well.",
                ),
                click.option(
                    "--allow-remote",
                    is_flag=True,
                    help=f"Allow a --host other machines can reach ({exposure}); the address "
                    "printed then carries a key, and only --host and --allowed-host names are answered.",
                ),
                click.option(
                    "--allowed-host",
                    "allowed_hosts",
                    multiple=True,
                    metavar="NAME",
                    help="A host name (or address) other machines reach the server by; repeatable. "
                    "Requests naming any other host are refused (DNS rebinding). Needed with "
                    "--allow-remote and a --host such as 0.0.0.0.",
                ),
                click.option(
                    "--open", "open_browser", is_flag=True, help=f"Open the {page} in the default browser."
                ),
            ]
        ):
            command = option(command)
        return command

    return decorate
