"""What a team's own chatbot received is what vera keeps: the recorder's `CallBody.wire`
(the rendered body, the method, the URL with the session id; never a header, a token in
the URL redacted), then `vera export --calls` and the viewer's calls page, byte for byte
against what a real loopback server read off the socket."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from vera.clients.base import ChatRequest
from vera.clients.stack import RecordingClient
from vera.records import CallBody, CallRecord, Message
from vera.report import export_calls
from vera.store import BodyReader
from vera.viewer.calls import body_html

from ..fakes.protocols import FakeChatbot
from .conftest import open_pool
from .runs import run_roles
from .test_http_chatbot import BOT_TOKEN, CONTEXT, HISTORY, bot_token, chatbot  # noqa: F401 (fixture)


@pytest.fixture
async def server():
    async with FakeChatbot(key=BOT_TOKEN) as server:
        yield server


async def test_the_recorder_keeps_the_request_the_service_received(server: FakeChatbot) -> None:
    profile = chatbot(
        server,
        url=f"{server.root}/api/sessions/{{{{session_id}}}}/reply?token=${{MY_BOT_TOKEN}}&v=1",
        body={"history": "{{messages}}", "message": "{{last_message}}", "session": "{{session_id}}"},
    )
    bodies: list[CallBody] = []
    records: list[CallRecord] = []
    async with open_pool(profile) as pool:
        client = RecordingClient(pool.client("bot"), records.append, role="chatbot", on_body=bodies.append)
        await client.chat(ChatRequest(messages=HISTORY, context=CONTEXT))
        await client.chat(
            ChatRequest(messages=(*HISTORY, Message("user", 'é \u2028 "quoted"')), context=CONTEXT)
        )
    assert len(bodies) == 2 and len(server.received) == 2
    for body, got in zip(bodies, server.received, strict=True):
        wire = body.wire
        assert wire is not None
        assert wire.method == got.method == "POST"
        assert wire.body.encode() == got.raw  # byte for byte
        # The session id is in the URL as sent; the token the template put there is not.
        assert got.path_qs == f"/api/sessions/conv-42/reply?token={BOT_TOKEN}&v=1"
        assert wire.url == f"{server.root}/api/sessions/conv-42/reply?token=****&v=1"
        assert BOT_TOKEN not in wire.url + wire.body
        assert "Bearer" not in wire.url + wire.body  # no header is ever kept


async def test_the_wire_protocols_keep_none(server: FakeChatbot) -> None:
    # Their kept messages, parameters and schema are what was sent: nothing to add.
    from vera.clients._provider import ProviderClient
    from vera.clients.http import HttpChatbotClient

    assert HttpChatbotClient.keeps_wire and not ProviderClient.keeps_wire


def _pre(html: str, cls: str) -> str:
    match = re.search(f'<pre class="{cls}">(.*?)</pre>', html, re.S)
    assert match is not None, cls
    return unescape(match.group(1))


def test_export_and_viewer_show_what_the_chatbot_received(tmp_path: Path) -> None:
    roles = {"chatbot": "http", "user_agent": "openai", "judge": "openai"}
    run = run_roles(tmp_path, roles)
    assert run.exit_code == 0, run.output
    received = run.servers["http"].received
    # Where the (now stopped) server listened, as the profile the run read names it.
    profile = (tmp_path / "providers" / "chatbot-http.toml").read_text()
    found = re.search(r'url = "(http://[^/"]+)/api/chat"', profile)
    assert found is not None
    root = found.group(1)
    assert len(received) >= 2  # the control: a conversation of several turns

    export_calls(run.out, tmp_path / "calls.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    sent = [r["request"]["wire"] for r in rows if r["call"]["role"] == "chatbot"]
    assert [w["body"].encode() for w in sent] == [r.raw for r in received]
    assert [w["url"] for w in sent] == [f"{root}{r.path_qs}" for r in received]
    assert {w["method"] for w in sent} == {"POST"}
    assert all(r["request"]["wire"] is None for r in rows if r["call"]["role"] != "chatbot")

    with BodyReader(run.out) as reader:
        every = list(reader.all())
    bodies = [b for b in every if b.call.role == "chatbot"]
    for body, got in zip(bodies, received, strict=True):
        html = body_html(1, body, "chatbot")
        assert _pre(html, "wire-body").encode() == got.raw
        assert _pre(html, "wire-line") == f"POST {root}{got.path_qs}"
        assert "sent to the service" in html
        # What was sent comes first, and the turns after it are said to be vera's, not
        # what the service received (one that keeps the history gets the newest only).
        assert html.index("wire-body") < html.index('<div class="msg"><div class="who">user')
        assert "the service was sent only the request above" in html
        # An http chatbot is named by its profile (its model is the profile's name): the
        # call's summary names it once, not "bot/bot".
        name = body.call.provider
        assert body.call.model == name and f"{name}/{name}" not in html and name in html
    other = next(b for b in every if b.call.role == "judge")
    assert "wire-body" not in body_html(1, other, "judge")


# A key the profile writes into the URL itself, shaped like no provider's key (so only
# its parameter's name can tell it is one).
LITERAL = "lit-0f3a9c2e7b"
SIGNED = "ZmFrZS1zaWduYXR1cmU"


def test_a_key_written_in_the_url_is_sent_as_written_and_kept_masked(tmp_path: Path) -> None:
    roles = {"chatbot": "http", "user_agent": "openai", "judge": "openai"}
    query = f"?api_key={LITERAL}&X-Amz-Signature={SIGNED}&v=2"
    run = run_roles(tmp_path, roles, http_query=query)
    assert run.exit_code == 0, run.output
    received = run.servers["http"].received
    assert len(received) >= 2
    # The service gets the URL as the profile writes it.
    assert {r.path_qs for r in received} == {f"/api/chat{query}"}

    export_calls(run.out, tmp_path / "calls.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    urls = {r["request"]["wire"]["url"] for r in rows if r["call"]["role"] == "chatbot"}
    assert len(urls) == 1 and urls.pop().endswith("/api/chat?api_key=****&X-Amz-Signature=****&v=2")
    with BodyReader(run.out) as reader:
        bodies = [b for b in reader.all() if b.call.role == "chatbot"]
    assert bodies and all(b.wire is not None and LITERAL not in b.wire.url for b in bodies)
    assert not any(LITERAL in body_html(1, b, "chatbot") for b in bodies)
    # Nowhere in the run directory, nor on the terminal.
    for path in run.out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert LITERAL.encode() not in data and SIGNED.encode() not in data, path
    assert LITERAL not in run.output + run.stderr


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("https://x.example/chat?api_key=abc&v=2", "https://x.example/chat?api_key=****&v=2"),
        ("https://x.example/chat?v=2&KEY=abc#top", "https://x.example/chat?v=2&KEY=****#top"),
        (
            "https://f.azurewebsites.net/api/bot?code=abc&session=s1",
            "https://f.azurewebsites.net/api/bot?code=****&session=s1",
        ),
        (
            "https://x/a?access_token=t&client-secret=s&sig=g",
            "https://x/a?access_token=****&client-secret=****&sig=****",
        ),
        (
            "https://x/a?subscription-key=k&apiKey=k&Password=p",
            "https://x/a?subscription-key=****&apiKey=****&Password=****",
        ),
        ("https://x/a?session=s1&model=m&token=", "https://x/a?session=s1&model=m&token="),
        ("https://x/a/token/abc", "https://x/a/token/abc"),
        ("https://bot:s3cr@t@x.example:8443/chat?v=2", "https://bot:****@x.example:8443/chat?v=2"),
        ("https://bot@x.example/chat", "https://bot@x.example/chat"),  # a name, no password
    ],
)
def test_credential_parameters_of_a_url_are_masked(url: str, masked: str) -> None:
    from vera.inputs import mask_url, redact

    assert mask_url(url) == masked
    # In any text that is printed or recorded: an error line, a log event.
    assert redact(f"cannot connect to {url}: refused") == f"cannot connect to {masked}: refused"
