"""Chat clients: one module per wire protocol, all implementing `ChatClient`.

    from vera.clients import ClientPool

    async with ClientPool(load_profiles("providers")) as pool:
        judge = pool.client("anthropic", "judge")

`ClientPool` builds the limited client for a model reference; the protocol clients
(`OpenAIClient`, `AnthropicClient`, `GeminiClient`, `HttpChatbotClient`) speak one wire
format each and can be used on their own over any aiohttp session.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from vera.clients.base import CallContext, ChatClient

if TYPE_CHECKING:
    from vera.clients.anthropic import AnthropicClient
    from vera.clients.gemini import GeminiClient
    from vera.clients.http import HttpChatbotClient
    from vera.clients.openai import OpenAIClient
    from vera.clients.pool import ClientPool

# Imported on first use. `vera.limits` imports `vera.clients.base`, and the pool imports
# `vera.limits`: importing the pool here would make that a cycle. Laziness also keeps
# aiohttp out of programs that only need the interface (the offline stand-ins).
_LAZY = {
    "AnthropicClient": "vera.clients.anthropic",
    "ClientPool": "vera.clients.pool",
    "GeminiClient": "vera.clients.gemini",
    "HttpChatbotClient": "vera.clients.http",
    "OpenAIClient": "vera.clients.openai",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AnthropicClient",
    "CallContext",
    "ChatClient",
    "ClientPool",
    "GeminiClient",
    "HttpChatbotClient",
    "OpenAIClient",
]
