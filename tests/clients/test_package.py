"""The `vera.clients` package: what it exports, and that every client module can be the
first one a program imports (no import cycle between the middleware and the pool)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import vera.clients
import vera.standins
from vera.clients.anthropic import AnthropicClient
from vera.clients.gemini import GeminiClient
from vera.clients.http import HttpChatbotClient
from vera.clients.openai import OpenAIClient
from vera.clients.pool import ClientPool

MODULES = (
    "vera.clients",
    "vera.clients.base",
    "vera.clients.pool",
    "vera.clients.openai",
    "vera.clients.anthropic",
    "vera.clients.gemini",
    "vera.clients.http",
    "vera.clients.limits",
    "vera.clients.limits._buckets",
    "vera.clients.limits._account",
    "vera.clients.limits._client",
    "vera.clients.cache",
    "vera.clients.meter",
    "vera.clients.stack",
    "vera.clients.shared_limits",
    "vera.standins",
    "vera.standins.lexical_judge",
    "vera.inputs._config",
    "vera.inputs._profiles",
    "vera.inputs._secrets",
)


def test_the_package_exports_the_pool_and_every_protocol_client() -> None:
    from vera.clients import ChatClient

    assert vera.clients.ClientPool is ClientPool
    exported = {
        "OpenAIClient": OpenAIClient,
        "AnthropicClient": AnthropicClient,
        "GeminiClient": GeminiClient,
        "HttpChatbotClient": HttpChatbotClient,
    }
    for name, cls in exported.items():
        assert getattr(vera.clients, name) is cls
        assert name in vera.clients.__all__
    assert set(vera.clients.__all__) >= {"ClientPool", "ChatClient", "ChatRequest", "CallContext"}
    assert ChatClient is vera.clients.base.ChatClient


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchClient"):
        _ = vera.clients.NoSuchClient  # type: ignore[attr-defined]


@pytest.mark.slow
def test_every_client_module_imports_first_in_a_fresh_interpreter() -> None:
    processes = {
        module: subprocess.Popen(
            [sys.executable, "-c", f"import {module}"], stderr=subprocess.PIPE, text=True
        )
        for module in MODULES
    }
    failures = {m: p.communicate(timeout=60)[1] for m, p in processes.items()}
    assert {m: err for m, err in failures.items() if processes[m].returncode != 0} == {}


def test_the_package_resolves_names_without_a_module_getattr() -> None:
    # Cycles are fixed, not worked around: every export is a plain import.
    assert "__getattr__" not in vars(vera.clients)
    assert "__getattr__" not in vars(vera.standins)
