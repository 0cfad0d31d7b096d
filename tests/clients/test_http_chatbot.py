"""A custom chatbot endpoint described by a request template."""

from __future__ import annotations

import pytest

from vera.clients.base import CallContext, ChatRequest
from vera.clients.http import lookup
from vera.errors import BadResponseError, ConfigError
from vera.inputs._profiles import Profile
from vera.records import Message

from ..fakes.protocols import Empty, FakeChatbot, Raw
from .conftest import make_profile, open_pool

BOT_TOKEN = "bot-token-abcdef123456"
HISTORY = (
    Message("system", "internal instructions"),
    Message("user", "hey"),
    Message("assistant", "Hi, how are you feeling today?"),
    Message("user", "not great. {{session_id}} lol"),
)
CONTEXT = CallContext(role="chatbot", conversation_id="conv-42")


@pytest.fixture
async def server():
    async with FakeChatbot(key=BOT_TOKEN) as server:
        yield server


@pytest.fixture(autouse=True)
def bot_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_BOT_TOKEN", BOT_TOKEN)


def chatbot(server: FakeChatbot, max_retries: int = 6, **http) -> Profile:
    http.setdefault("url", f"{server.root}/api/chat")
    http.setdefault("headers", {"Authorization": "Bearer ${MY_BOT_TOKEN}"})
    http.setdefault("response_path", "reply.text")
    return make_profile("bot", "http", "", http=http, max_retries=max_retries)


async def test_history_template_roles_and_env_header(server: FakeChatbot) -> None:
    profile = chatbot(
        server,
        body={
            "conversation": "{{messages}}",
            "meta": {"session": "{{session_id}}", "channel": "web"},
        },
        roles={"user": "human", "assistant": "bot", "role_key": "from", "content_key": "text"},
    )
    async with open_pool(profile) as pool:
        completion = await pool.client("bot").chat(ChatRequest(messages=HISTORY, context=CONTEXT))
    request = server.received[0]
    assert request.path == "/api/chat"
    assert request.headers["authorization"] == f"Bearer {BOT_TOKEN}"
    assert request.json == {
        "conversation": [
            {"from": "human", "text": "hey"},  # system turns are dropped by default
            {"from": "bot", "text": "Hi, how are you feeling today?"},
            {"from": "human", "text": "not great. {{session_id}} lol"},
        ],
        "meta": {"session": "conv-42", "channel": "web"},
    }
    assert completion.text == "Bot reply 1."
    assert completion.model == "bot"


async def test_last_message_and_session_in_url_and_body(server: FakeChatbot) -> None:
    profile = chatbot(
        server,
        url=f"{server.root}/api/sessions/{{{{session_id}}}}/reply",
        body={"message": "{{last_message}}", "session": "{{session_id}}"},
    )
    async with open_pool(profile) as pool:
        await pool.client("bot").chat(ChatRequest(messages=HISTORY, context=CONTEXT))
    request = server.received[0]
    assert request.path == "/api/sessions/conv-42/reply"
    # A placeholder inside the user's own words is left alone.
    assert request.json == {"message": "not great. {{session_id}} lol", "session": "conv-42"}


async def test_system_turns_are_sent_when_given_a_role_name(server: FakeChatbot) -> None:
    profile = chatbot(server, roles={"system": "system"})
    async with open_pool(profile) as pool:
        await pool.client("bot").chat(ChatRequest(messages=HISTORY, context=CONTEXT))
    assert server.received[0].json["messages"][0] == {
        "role": "system",
        "content": "internal instructions",
    }


async def test_method_put(server: FakeChatbot) -> None:
    async with open_pool(chatbot(server, method="PUT")) as pool:
        await pool.client("bot").chat(ChatRequest(messages=HISTORY, context=CONTEXT))
    assert server.received[0].method == "PUT"


async def test_plain_text_reply_without_response_path(server: FakeChatbot) -> None:
    server.script(Raw(b"  I'm here for you.  ", headers={"Content-Type": "text/plain"}))
    async with open_pool(chatbot(server, response_path="")) as pool:
        completion = await pool.client("bot").chat(ChatRequest(messages=HISTORY, context=CONTEXT))
    assert completion.text == "I'm here for you."


async def test_missing_path_or_empty_reply_is_a_bad_response(server: FakeChatbot) -> None:
    server.script(Raw(b'{"other": 1}'), Raw(b'{"other": 1}'), Empty(), Empty())
    async with open_pool(chatbot(server, max_retries=1)) as pool:
        client = pool.client("bot")
        with pytest.raises(BadResponseError, match=r"reply\.text"):
            await client.chat(ChatRequest(messages=HISTORY, context=CONTEXT))
        with pytest.raises(BadResponseError, match="empty reply"):
            await client.chat(ChatRequest(messages=HISTORY, context=CONTEXT))


async def test_structured_output_is_refused_with_a_config_error(server: FakeChatbot) -> None:
    async with open_pool(chatbot(server)) as pool:
        with pytest.raises(ConfigError, match="no structured output"):
            await pool.client("bot").chat(ChatRequest(messages=HISTORY, schema={"type": "object"}))
    assert server.received == []


async def test_missing_env_var_in_headers_is_named(server: FakeChatbot, monkeypatch) -> None:
    monkeypatch.delenv("MY_BOT_TOKEN")
    async with open_pool(chatbot(server)) as pool:
        with pytest.raises(ConfigError, match="MY_BOT_TOKEN"):
            pool.client("bot")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("reply.text", "a"),
        ("choices.0.message.content", "b"),
        ("messages.-1.text", "last"),
        ("choices.5.message", None),
        ("reply.missing", None),
    ],
)
def test_response_path_lookup(path: str, expected: object) -> None:
    data = {
        "reply": {"text": "a"},
        "choices": [{"message": {"content": "b"}}],
        "messages": [{"text": "first"}, {"text": "last"}],
    }
    assert lookup(data, path) == expected
