"""Chat clients: one module per wire protocol, all implementing `ChatClient`, and the
middleware around them.

    from vera.clients import ChatRequest, ClientPool

    async with ClientPool(load_profiles("providers")) as pool:
        judge = pool.client("anthropic", "judge")
        completion = await judge.chat(ChatRequest(messages=(Message("user", "hello"),)))

`ClientPool` builds the client for a model reference: the protocol client (or offline
stand-in) wrapped in the middleware of `vera.clients.stack`. The protocol clients
(`OpenAIClient`, `AnthropicClient`, `GeminiClient`, `HttpChatbotClient`) speak one wire
format each and can be used on their own over any aiohttp session.

Imports here are plain: no module of this package imports the package itself, so
importing any one of them first is safe.
"""

from __future__ import annotations

from vera.clients.anthropic import AnthropicClient
from vera.clients.base import CallContext, ChatClient, ChatRequest, OfflineModels
from vera.clients.batching import BATCH_PROTOCOLS, JOURNAL_FILE, BatchJournal, BatchSettings
from vera.clients.gemini import GeminiClient
from vera.clients.http import HttpChatbotClient
from vera.clients.openai import OpenAIClient
from vera.clients.pool import ClientPool

__all__ = [
    "BATCH_PROTOCOLS",
    "JOURNAL_FILE",
    "AnthropicClient",
    "BatchJournal",
    "BatchSettings",
    "CallContext",
    "ChatClient",
    "ChatRequest",
    "ClientPool",
    "GeminiClient",
    "HttpChatbotClient",
    "OfflineModels",
    "OpenAIClient",
]
