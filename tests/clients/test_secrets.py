"""Keys never appear in reprs, errors, records or model specs."""

from __future__ import annotations

import msgspec
import pytest

from vera.clients.base import ChatRequest
from vera.errors import ProviderError
from vera.inputs._secrets import redact, remember_secret
from vera.records import CallRecord, Message

from ..fakes.protocols import Fail, FakeAnthropic, FakeGemini, FakeOpenAI
from .conftest import KEY, make_profile, open_pool

HELLO = (Message("user", "hello"),)


def test_redact_scrubs_remembered_secrets_and_key_shapes() -> None:
    remember_secret("my-very-secret-value")
    text = (
        "token my-very-secret-value; header Bearer abc.def-ghi; "
        "openai sk-proj-AbCdEf123456 and google AIzaSyA1234567890abcdefghijklmnop"
    )
    scrubbed = redact(text)
    for secret in ("my-very-secret-value", "abc.def-ghi", "sk-proj-AbCdEf123456", "AIzaSyA123"):
        assert secret not in scrubbed
    assert scrubbed.count("****") == 4
    assert redact("nothing to hide here") == "nothing to hide here"


@pytest.mark.parametrize("fake", [FakeOpenAI, FakeAnthropic, FakeGemini])
async def test_a_server_echoing_the_key_does_not_leak_it(fake) -> None:
    records: list[CallRecord] = []
    async with fake(key=KEY) as server:
        server.script(Fail(400, f"the key {KEY} is not allowed for this model"))
        protocol = {FakeOpenAI: "openai", FakeAnthropic: "anthropic", FakeGemini: "gemini"}[fake]
        profile = make_profile("p", protocol, server.base_url)
        async with open_pool(profile, records=records) as pool:
            client = pool.client("p")
            with pytest.raises(ProviderError) as caught:
                await client.chat(ChatRequest(messages=HELLO))
            spec = pool.spec("p")
    error = caught.value
    for text in (str(error), repr(error), error.message, *map(str, error.args), records[0].error):
        assert KEY not in (text or "")
    assert "****" in str(error)
    assert KEY not in repr(client) and KEY not in repr(client.inner)  # type: ignore[attr-defined]
    assert KEY not in msgspec.json.encode(spec).decode()
    assert KEY not in msgspec.json.encode(records).decode()


async def test_profile_repr_holds_only_the_variable_name() -> None:
    profile = make_profile("p", "openai", "https://api.example.com/v1")
    assert KEY not in repr(profile) and "VERA_TEST_KEY" in repr(profile)


async def test_connection_errors_do_not_chain_aiohttp_exceptions() -> None:
    async with FakeOpenAI(key=KEY) as server:
        base_url = server.base_url
    async with open_pool(make_profile("p", "openai", base_url, max_retries=0)) as pool:
        with pytest.raises(ProviderError) as caught:
            await pool.client("p").chat(ChatRequest(messages=HELLO))
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert KEY not in str(caught.value)
