"""Which sampling parameters each model family accepts, and fitting parameters to them.

Providers refuse a whole request over one parameter the model does not take (OpenAI's
reasoning models answer 400 to `max_tokens` or a non-default temperature; the newer
Claude models to temperature together with top_p, Opus 4.7 to any temperature). A
role's parameters come from the run config and the profile, written once for many
models, so vera fits them to the model before sending: a parameter the family does not
accept is dropped (the pipeline warns once per role and model), a token limit is sent
under the name the family wants. docs/protocols.md has this table in words.

Patterns match the model id from its start; a minor version is followed by the end or
by "-" (so `claude-opus-4-20250514`, Opus 4.0, is not Opus 4.2). A model matching no
family is sent its parameters as given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Family:
    name: str
    protocols: frozenset[str]
    pattern: re.Pattern[str]
    # Parameters the family refuses outright (dropped).
    refuses: frozenset[str] = frozenset()
    # Of these, only the first given is kept (the family refuses them together).
    one_of: tuple[str, ...] = ()
    # The name its output-token limit goes by, where the family insists on one.
    token_limit: str = ""
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    note: str = ""


_OPENAI = frozenset({"openai", "azure_openai"})
_TOKEN_NAMES = ("max_tokens", "max_completion_tokens")

FAMILIES: tuple[Family, ...] = (
    Family(
        "OpenAI reasoning (o-series, gpt-5)",
        _OPENAI,
        re.compile(r"^(o\d|gpt-5)", re.IGNORECASE),
        refuses=frozenset({"temperature", "top_p", "presence_penalty", "frequency_penalty", "logprobs"}),
        token_limit="max_completion_tokens",
        note="only the default temperature/top_p; max_tokens is refused, max_completion_tokens required",
    ),
    Family(
        "OpenAI chat",
        _OPENAI,
        re.compile(r""),
        ranges={"temperature": (0.0, 2.0), "top_p": (0.0, 1.0)},
        note="temperature 0..2",
    ),
    Family(
        "Claude Opus 4.7 and later",
        frozenset({"anthropic"}),
        re.compile(r"^claude-opus-4-([7-9]|\d\d)(-|$)"),
        refuses=frozenset({"temperature", "top_p", "top_k"}),
        note="sampling parameters are deprecated: none is sent",
    ),
    Family(
        "Claude Opus 4.1+, Sonnet 4.5+, Haiku 4.5+",
        frozenset({"anthropic"}),
        re.compile(r"^claude-(opus-4-([1-9]|\d\d)|sonnet-4-([5-9]|\d\d)|haiku-4-([5-9]|\d\d))(-|$)"),
        one_of=("temperature", "top_p"),
        ranges={"temperature": (0.0, 1.0), "top_p": (0.0, 1.0)},
        note="temperature or top_p, not both; temperature 0..1",
    ),
    Family(
        "Claude",
        frozenset({"anthropic"}),
        re.compile(r""),
        ranges={"temperature": (0.0, 1.0), "top_p": (0.0, 1.0)},
        note="temperature 0..1",
    ),
    Family(
        "Gemini",
        frozenset({"gemini"}),
        re.compile(r""),
        ranges={"temperature": (0.0, 2.0), "top_p": (0.0, 1.0)},
        note="temperature 0..2",
    ),
)


def family_of(protocol: str, model: str) -> Family | None:
    """The first family of `protocol` whose pattern matches `model` (None: no rules)."""
    for family in FAMILIES:
        if protocol in family.protocols and family.pattern.match(model):
            return family
    return None


def fit_params(protocol: str, model: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`params` as `model` accepts them, and what was dropped and why (one phrase each).

    A token limit is renamed, not dropped, where the family insists on one name."""
    family = family_of(protocol, model)
    if family is None:
        return dict(params), []
    fitted: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in params.items():
        if key in family.refuses:
            dropped.append(f"{key} (not accepted by {family.name})")
            continue
        low, high = family.ranges.get(key, (None, None))
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if low is not None and high is not None and number and not low <= value <= high:
            dropped.append(f"{key}={value} (outside {low:g}..{high:g} for {family.name})")
            continue
        if family.token_limit and key in _TOKEN_NAMES:
            key = family.token_limit
            if key in fitted:
                continue
        fitted[key] = value
    kept = [k for k in family.one_of if k in fitted]
    for key in kept[1:]:
        del fitted[key]
        dropped.append(f"{key} ({family.name} take {kept[0]} or {key}, not both)")
    return fitted, dropped
