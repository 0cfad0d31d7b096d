"""Structured output where a server gives none: instructions in the prompt, and a lenient
reader that finds the JSON object in whatever text comes back.

Also the small request-building helpers every protocol needs (parameter merging, the
name a schema goes by on the wire).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import orjson

from vera.records import Message, Usage

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_DECODER = json.JSONDecoder()
# Bounded so a long reply full of braces cannot cost quadratic time.
_MAX_SCAN_STARTS = 32


def instructions(schema: dict[str, Any]) -> str:
    """The text that asks a model without structured output to answer in JSON."""
    return (
        "Respond with a single JSON object that conforms to this JSON schema, and nothing "
        "else (no prose, no code fences):\n" + orjson.dumps(schema).decode()
    )


def with_instructions(messages: Sequence[Message], schema: dict[str, Any]) -> list[Message]:
    """`messages` with the JSON instructions appended to the last user message.

    Appending (rather than adding to the system prompt) keeps the shared prefix of judge
    calls byte-identical, so prompt caching still applies."""
    text = instructions(schema)
    if messages and messages[-1].role == "user":
        last = messages[-1]
        return [*messages[:-1], Message("user", f"{last.content}\n\n{text}")]
    return [*messages, Message("user", text)]


def extract_json(text: str) -> Any:
    """The first JSON object (or array) in `text`, or None.

    Accepts bare JSON, JSON in a Markdown fence, and JSON surrounded by prose, which is
    how models answer when nothing enforces a format."""
    stripped = text.strip()
    if not stripped:
        return None
    try:
        return orjson.loads(stripped)
    except orjson.JSONDecodeError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return orjson.loads(block.strip())
        except orjson.JSONDecodeError:
            continue
    starts = [i for i, ch in enumerate(stripped) if ch in "{["][:_MAX_SCAN_STARTS]
    for start in starts:
        try:
            value, _ = _DECODER.raw_decode(stripped, start)
        except ValueError:
            continue
        if isinstance(value, dict | list):
            return value
    return None


def schema_name(schema: dict[str, Any], default: str = "response") -> str:
    """A wire-safe name for the schema (OpenAI and Anthropic allow `[A-Za-z0-9_-]{1,64}`)."""
    title = schema.get("title")
    name = _NAME_CHARS.sub("_", title).strip("_") if isinstance(title, str) else ""
    return (name or default)[:64]


def merge_params(defaults: dict[str, Any], params: dict[str, Any] | None) -> dict[str, Any]:
    """Call parameters over profile defaults; a None value removes a default."""
    if not params:
        return dict(defaults)
    merged = {**defaults, **params}
    return {k: v for k, v in merged.items() if v is not None}


def no_text_reason(what: str, finish: str, usage: Usage, *, limit_reached: bool) -> str:
    """Why a reply has no text, in words: when the output limit was reached after
    reasoning, the reasoning took it (a reasoning model's limit covers its thinking too),
    and the remedy is a higher `max_tokens`."""
    if limit_reached and usage.reasoning_tokens:
        return (
            f"{what}: the output limit was reached after {usage.reasoning_tokens} reasoning tokens "
            f"({finish}); raise max_tokens, which covers the reasoning as well as the answer"
        )
    return f"{what} ({finish})"
