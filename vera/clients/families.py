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

Reasoning settings (`reasoning_problem`) are checked, not fitted: a setting the model
cannot take (an effort it does not know, a thinking budget out of its range, one
protocol's setting sent to another) is a mistake in the config, refused in one line
before any call, because dropping it would silently run another protocol than the one
configured. Extended thinking on Claude does fit the samplers: the API then takes
temperature 1 only, no top_k and top_p of at least 0.95, so the others are not sent.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Final


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
        "Gemini 3 and later",
        frozenset({"gemini"}),
        re.compile(r"^gemini-([3-9]|\d\d)"),
        refuses=frozenset({"temperature", "top_p", "top_k"}),
        note="Google asks for the default sampling (lower temperatures can loop or degrade the "
        "reasoning): temperature, top_p and top_k are not sent, as the reference does",
    ),
    Family(
        "Gemini",
        frozenset({"gemini"}),
        re.compile(r""),
        ranges={"temperature": (0.0, 2.0), "top_p": (0.0, 1.0)},
        note="temperature 0..2",
    ),
)


@functools.lru_cache(maxsize=1024)
def family_of(protocol: str, model: str) -> Family | None:
    """The first family of `protocol` whose pattern matches `model` (None: no rules).
    Remembered: every call's parameters are fitted, and the families never change."""
    for family in FAMILIES:
        if protocol in family.protocols and family.pattern.match(model):
            return family
    return None


def fit_params(protocol: str, model: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`params` as `model` accepts them, and what was dropped and why (one phrase each).

    The reference's shorthands are first written as the API takes them
    (`translate_shorthands`). A token limit is renamed, not dropped, where the family
    insists on one name."""
    params = translate_shorthands(protocol, model, params)
    family = family_of(protocol, model)
    if family is None:
        return dict(params), []
    fitted, dropped = _fit_family(family, params)
    if protocol == "anthropic" and claude_thinks(fitted):
        for key, value in list(fitted.items()):
            low_top_p = key == "top_p" and isinstance(value, int | float) and value < 0.95
            if (key == "temperature" and value != 1) or key == "top_k" or low_top_p:
                del fitted[key]
                dropped.append(
                    f"{key}={value} (extended thinking takes temperature 1, no top_k, top_p >= 0.95)"
                )
    return fitted, dropped


def _fit_family(family: Family, params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
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


# ---------------------------------------------------------------------------------------
# Reasoning settings: OpenAI's reasoning_effort, Claude's thinking, Gemini's thinkingConfig
# ---------------------------------------------------------------------------------------

ANTHROPIC_DEFAULT_MAX_TOKENS: Final = 2048  # sent when a Claude role sets no max_tokens
ANTHROPIC_MIN_THINKING_BUDGET: Final = 1024

_EFFORTS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh")
# The efforts each OpenAI reasoning model documents (first match wins); a reasoning model
# not listed (codex, pro, chat variants) may take any of _EFFORTS, the server decides.
_OPENAI_EFFORTS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"^o\d"), ("low", "medium", "high")),
    (re.compile(r"^gpt-5(-mini|-nano)?(-\d{4}-\d\d-\d\d)?$"), ("minimal", "low", "medium", "high")),
    (re.compile(r"^gpt-5\.1(-mini|-nano)?(-\d{4}-\d\d-\d\d)?$"), ("none", "low", "medium", "high")),
    (
        re.compile(r"^gpt-5\.([2-9]|\d\d)(-mini|-nano)?(-\d{4}-\d\d-\d\d)?$"),
        ("none", "low", "medium", "high", "xhigh"),
    ),
)
_OPENAI_REASONING = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)
# Chat models known not to reason: reasoning_effort is refused there. Other ids on
# OpenAI-compatible servers (gpt-oss on vLLM, ...) are left to the server.
_OPENAI_NOT_REASONING = re.compile(r"^(gpt-4|gpt-3\.5|chatgpt-)", re.IGNORECASE)

# Claude: extended thinking from 3.7 Sonnet and the 4 family on; Opus 4.7 and later
# think only in adaptive mode; adaptive mode from the 4.6 models on.
_CLAUDE_NO_THINKING = re.compile(r"^claude-(instant|2|3-(?!7)|3-5)")
_CLAUDE_ADAPTIVE_ONLY = re.compile(r"^claude-opus-4-([7-9]|\d\d)(-|$)")
_CLAUDE_ADAPTIVE = re.compile(r"^claude-(opus|sonnet|haiku)-(4-([6-9]|\d\d)|[5-9])(-|$)")

# Gemini: thinkingBudget for 2.5 (a range per model, -1 = dynamic), thinkingLevel for 3.
_GEMINI_NO_THINKING = re.compile(r"^gemini-(1\.|2\.0)")
_GEMINI_LEVELS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"^gemini-3(\.\d+)?-pro"), ("low", "high")),
    (re.compile(r"^gemini-3(\.\d+)?-flash"), ("minimal", "low", "medium", "high")),
    (re.compile(r"^gemini-([3-9]|\d\d)"), ("minimal", "low", "medium", "high")),
)
_GEMINI_BUDGETS: tuple[tuple[re.Pattern[str], int, int, bool], ...] = (
    # pattern, lowest and highest budget, whether 0 (thinking off) is allowed
    (re.compile(r"^gemini-2\.5-pro"), 128, 32768, False),
    (re.compile(r"^gemini-2\.5-flash-lite"), 512, 24576, True),
    (re.compile(r"^gemini-2\.5-flash"), 1, 24576, True),
)
_GEMINI_THINKING_KEYS = frozenset({"thinkingBudget", "thinkingLevel", "includeThoughts"})

# ---------------------------------------------------------------------------------------
# The reference tool's shorthands (its -uep/-pep/-jep and per-model config keys)
# ---------------------------------------------------------------------------------------

# Claude's `thinking_effort` (not an Anthropic field): on models with adaptive thinking it
# becomes adaptive thinking at that effort (`output_config.effort`), as the reference
# sends it; on older thinking models a thinking budget, vera's numbers for each level.
CLAUDE_EFFORTS: Final = ("low", "medium", "high", "max")
CLAUDE_EFFORT_BUDGETS: Final = {"low": 1024, "medium": 4096, "high": 16384, "max": 32000}
# Gemini's `thinking_level` (Gemini 3) and `thinking_budget` (2.5) are the SDK's names of
# thinkingConfig's fields.
_GEMINI_SHORTHANDS = {"thinking_level": "thinkingLevel", "thinking_budget": "thinkingBudget"}


def translate_shorthands(protocol: str, model: str, params: dict[str, Any]) -> dict[str, Any]:
    """`params` with the reference's shorthands written as each API takes them. One the
    model cannot take is left as it is, for `reasoning_problem` to name."""
    if protocol == "anthropic" and "thinking_effort" in params and "thinking" not in params:
        effort = params["thinking_effort"]
        if effort not in CLAUDE_EFFORTS or _CLAUDE_NO_THINKING.match(model):
            return params
        out = {k: v for k, v in params.items() if k != "thinking_effort"}
        if _CLAUDE_ADAPTIVE.match(model):
            out["thinking"] = {"type": "adaptive"}
            out["output_config"] = {**(out.get("output_config") or {}), "effort": effort}
            return out
        budget = CLAUDE_EFFORT_BUDGETS[effort]
        out["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if not (out.get("max_tokens") or out.get("max_completion_tokens")):
            # The budget comes out of max_tokens: leave the answer vera's usual room.
            out["max_tokens"] = budget + ANTHROPIC_DEFAULT_MAX_TOKENS
        return out
    if protocol == "gemini" and any(k in params for k in _GEMINI_SHORTHANDS):
        out = {k: v for k, v in params.items() if k not in _GEMINI_SHORTHANDS}
        config = (
            dict(out.get("thinkingConfig") or {})
            if isinstance(out.get("thinkingConfig"), dict | None)
            else None
        )
        if config is None:
            return params
        for short, name in _GEMINI_SHORTHANDS.items():
            if short in params:
                config.setdefault(name, params[short])
        out["thinkingConfig"] = config
        return out
    return params


# Each protocol's reasoning setting, and where it is not understood.
_SETTINGS = {
    "reasoning_effort": "openai",
    "thinking": "anthropic",
    "thinking_effort": "anthropic",
    "thinkingConfig": "gemini",
    "thinking_level": "gemini",
    "thinking_budget": "gemini",
}
_PROTOCOL_OF = {"openai": "openai", "azure_openai": "openai", "anthropic": "anthropic", "gemini": "gemini"}
_SAY = {
    "openai": "reasoning_effort (OpenAI)",
    "anthropic": "thinking (Anthropic)",
    "gemini": "thinkingConfig (Gemini)",
}


def claude_thinks(params: dict[str, Any]) -> bool:
    """Whether Claude's `thinking` parameter turns thinking on (enabled or adaptive)."""
    thinking = params.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def reasoning_problem(protocol: str, model: str, params: dict[str, Any]) -> str | None:
    """What is wrong with the reasoning settings in `params` for `model`, as
    "field: problem", or None. `params` are the role's, fitted (`fit_params`)."""
    own = _PROTOCOL_OF.get(protocol)
    if own is None:
        return None
    for key, owner in _SETTINGS.items():
        if key in params and owner != own:
            what = (
                f"the reference's shorthand for {_SAY[owner]}"
                if key in ("thinking_effort", "thinking_level", "thinking_budget")
                else f"{_SAY[owner]}'s setting"
            )
            return f"{key}: is {what}; {model} speaks {protocol}, which takes {_SAY[own]}"
    if own == "openai" and "reasoning_effort" in params:
        return _openai_effort(model, params["reasoning_effort"])
    if own == "anthropic" and "thinking_effort" in params:
        effort = params["thinking_effort"]
        if "thinking" in params:
            return "thinking_effort: give thinking_effort (the reference's shorthand) or thinking, not both"
        if effort not in CLAUDE_EFFORTS:
            return f"thinking_effort: {effort!r} is not one of {_one_of(CLAUDE_EFFORTS)}"
        return f"thinking_effort: {model} has no extended thinking (Claude 3.7 Sonnet and the Claude 4 models have)"
    if own == "anthropic" and "thinking" in params:
        return _claude_thinking(model, params)
    if own == "gemini" and "thinkingConfig" in params:
        return _gemini_thinking(model, params["thinkingConfig"])
    return None


def _one_of(values: tuple[str, ...]) -> str:
    return ", ".join(repr(v) for v in values)


def _openai_effort(model: str, effort: Any) -> str | None:
    if _OPENAI_NOT_REASONING.match(model):
        return f"reasoning_effort: {model} is not a reasoning model (o-series, gpt-5) and refuses it"
    allowed = _EFFORTS
    if _OPENAI_REASONING.match(model):
        allowed = next((efforts for pattern, efforts in _OPENAI_EFFORTS if pattern.match(model)), _EFFORTS)
    if effort not in allowed:
        return f"reasoning_effort: {effort!r} is not accepted by {model} (one of: {_one_of(allowed)})"
    return None


def _claude_thinking(model: str, params: dict[str, Any]) -> str | None:
    thinking = params["thinking"]
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind not in ("enabled", "adaptive", "disabled"):
        return (
            'thinking: a table such as {type = "enabled", budget_tokens = 2048} '
            '(type "enabled", "adaptive" or "disabled")'
        )
    if kind == "disabled":
        return None
    if _CLAUDE_NO_THINKING.match(model):
        return f"thinking: {model} has no extended thinking (Claude 3.7 Sonnet and the Claude 4 models have)"
    if kind == "adaptive":
        if not _CLAUDE_ADAPTIVE.match(model):
            return f'thinking: {model} has no adaptive thinking; use {{type = "enabled", budget_tokens = N}}'
        return None
    if _CLAUDE_ADAPTIVE_ONLY.match(model):
        return f'thinking: {model} thinks only in adaptive mode; use {{type = "adaptive"}}'
    budget = thinking.get("budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < ANTHROPIC_MIN_THINKING_BUDGET:
        return f"thinking.budget_tokens: a whole number of at least {ANTHROPIC_MIN_THINKING_BUDGET}, not {budget!r}"
    limit = params.get("max_tokens") or params.get("max_completion_tokens") or ANTHROPIC_DEFAULT_MAX_TOKENS
    if isinstance(limit, int) and budget >= limit:
        return (
            f"thinking.budget_tokens: {budget} must be less than max_tokens ({limit}); "
            "the answer is written from what the thinking leaves"
        )
    return None


def _gemini_thinking(model: str, config: Any) -> str | None:
    if not isinstance(config, dict):
        return 'thinkingConfig: a table such as {thinkingBudget = 1024} or {thinkingLevel = "low"}'
    unknown = sorted(set(config) - _GEMINI_THINKING_KEYS)
    if unknown:
        return f"thinkingConfig.{unknown[0]}: not known (thinkingBudget, thinkingLevel, includeThoughts)"
    if _GEMINI_NO_THINKING.match(model):
        return f"thinkingConfig: {model} does not think (Gemini 2.5 and 3 models do)"
    level, budget = config.get("thinkingLevel"), config.get("thinkingBudget")
    if level is not None and budget is not None:
        return "thinkingConfig: thinkingLevel and thinkingBudget cannot both be set (level for Gemini 3, budget for 2.5)"
    if level is not None:
        levels = next((lv for pattern, lv in _GEMINI_LEVELS if pattern.match(model)), None)
        if levels is None:
            return f"thinkingConfig.thinkingLevel: {model} takes thinkingBudget (thinkingLevel is for Gemini 3 models)"
        if level not in levels:
            return f"thinkingConfig.thinkingLevel: {level!r} is not accepted by {model} (one of: {_one_of(levels)})"
    if budget is not None:
        if isinstance(budget, bool) or not isinstance(budget, int):
            return f"thinkingConfig.thinkingBudget: a whole number of tokens (-1 = dynamic), not {budget!r}"
        for pattern, low, high, off in _GEMINI_BUDGETS:
            if pattern.match(model) and budget != -1 and not (low <= budget <= high or (off and budget == 0)):
                zero = "0 (off), " if off else ""
                return f"thinkingConfig.thinkingBudget: {budget} is outside {model}'s range ({zero}{low}..{high}, or -1 = dynamic)"
    return None
