"""Shared helpers for the client tests: profiles pointing at fake servers, and a pool
with fast retries that collects its CallRecords."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest

from vera.clients.pool import ClientPool
from vera.inputs._profiles import Profile
from vera.records import CallRecord
from vera.standins import StandIns

KEY = "sk-test-key-0123456789"
KEY_ENV = "VERA_TEST_KEY"
# A judge's answer as a structured-output schema, for the protocols' request tests.
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "enum": ["Yes", "No"]},
        "reasoning": {"type": "string"},
    },
    "required": ["answer", "reasoning"],
}
# The same with a title (OpenAI names the response format after it) and closed to
# other keys (what OpenAI's strict mode asks of a schema).
STRICT_ANSWER_SCHEMA: dict[str, Any] = {
    "title": "Judge answer",
    **ANSWER_SCHEMA,
    "additionalProperties": False,
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Every test runs in an empty directory (no stray .env) with the test key set."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, KEY)


def make_profile(name: str, protocol: str, base_url: str, **fields: Any) -> Profile:
    """A validated profile, as if read from `providers/<name>.toml`."""
    fields.setdefault("model", "test-model" if protocol != "http" else "")
    fields.setdefault("api_key_env", KEY_ENV if protocol != "http" else "")
    data = {"name": name, "protocol": protocol, "base_url": base_url, **fields}
    return msgspec.convert(data, Profile)


@asynccontextmanager
async def open_pool(
    *profiles: Profile, records: list[CallRecord] | None = None, **options: Any
) -> AsyncIterator[ClientPool]:
    """A pool over `profiles` whose retries wait milliseconds, not seconds."""
    options.setdefault("retry_base_delay", 0.005)
    options.setdefault("retry_max_delay", 0.05)
    options.setdefault("stand_ins", StandIns())
    on_call = records.append if records is not None else None
    async with ClientPool({p.name: p for p in profiles}, on_call=on_call, **options) as pool:
        yield pool
