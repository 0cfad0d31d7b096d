"""A user's own chatbot behind HTTP, described by a request template in its profile.

This is how a company evaluates its product rather than a raw model: vera sends what the
product's API expects and reads the reply text from where the product puts it.

    [http]
    url = "https://bot.example.com/api/sessions/{{session_id}}/reply"
    headers = { Authorization = "Bearer ${MY_BOT_TOKEN}" }
    body = { history = "{{messages}}", message = "{{last_message}}", session = "{{session_id}}" }
    response_path = "reply.text"

- `"{{messages}}"` (a whole string value) becomes the history: a list of
  `{role, content}` turns with the role names and keys of `[http.roles]`;
- `{{last_message}}` and `{{session_id}}` are replaced inside any string (and the URL);
  the session id is `CallContext.conversation_id`, one per simulated conversation,
  followed by the run's `session_tag` (`-1f2e3d4c`), so no two runs share a session;
- `{{turn}}` likewise: the chatbot's turn in the session, from 1, the same on a retry;
- `{{conversation_id}}`, `{{session}}` and `{{session_index}}` likewise: the id shared by
  every session of one persona's arc (the session id when the run has one session), the
  session type ("default" without sessions) and its 1-based place, so a product that
  keeps memory per user is tested as deployed (docs/sessions.md);
- `${VAR}` anywhere in the URL, headers or body is read from the environment once, when
  the client is built, and is redacted from every error.

There is no structured output: a chatbot is never the judge or the user-agent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from vera.clients._provider import ProviderClient
from vera.clients._transport import profile_headers, snippet
from vera.clients.base import ChatRequest
from vera.errors import BadResponseError, ConfigError
from vera.inputs import HttpOptions, Profile, expand_env, link_local_endpoint
from vera.records import Completion, Message, Usage

MESSAGES = "{{messages}}"
LAST_MESSAGE = "{{last_message}}"
SESSION_ID = "{{session_id}}"
CONVERSATION_ID = "{{conversation_id}}"
SESSION = "{{session}}"
SESSION_INDEX = "{{session_index}}"
TURN = "{{turn}}"
_PLACEHOLDER = re.compile(r"\{\{(?:last_message|session_id|conversation_id|session|session_index|turn)\}\}")


class HttpChatbotClient(ProviderClient):
    """A `ChatClient` for a chatbot endpoint described by an `[http]` profile table."""

    __slots__ = ("_body", "_options", "method", "session_tag")

    keeps_wire = True  # the rendered body and URL are not vera's messages: kept as sent

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        name: str,
        model: str,
        options: HttpOptions,
        headers: dict[str, str],
        url: str,
        body: dict[str, Any],
    ) -> None:
        super().__init__(session, name=name, model=model, url=url, headers=headers)
        self._options = options
        self.method = options.method
        self._body = body
        # The run's tag (RunManifest.session_tag), appended to the session and arc ids:
        # the conversation ids are the same in every run of one config and seed, and a
        # product that keeps history by session id would otherwise go on with an earlier
        # run's conversation. "" (a pool outside a run, a run from before the tag): bare.
        self.session_tag = ""

    @classmethod
    def from_profile(
        cls, session: aiohttp.ClientSession, profile: Profile, model: str, key: str | None
    ) -> HttpChatbotClient:
        """Build the client an `http` profile describes (env references expanded now)."""
        options = profile.http
        if options is None:
            raise ConfigError(f"profile {profile.name!r}: protocol 'http' needs an [http] table")
        headers = profile_headers(profile)
        for header, value in options.headers.items():
            headers[header] = expand_env(value, profile.name)
        url = expand_env(options.url, profile.name)
        if not profile.allow_link_local and (why := link_local_endpoint(url)):
            # Checked after the environment is read: the profile's own check cannot see it.
            raise ConfigError(f"profile {profile.name!r}: http.url from the environment: {why}")
        return cls(
            session,
            name=profile.name,
            model=model or profile.name,
            options=options,
            headers=headers,
            url=url,
            body=_expand(options.body, profile.name),
        )

    def __repr__(self) -> str:
        # Not the URL: a product's URL may carry a token expanded from the environment.
        return f"HttpChatbotClient(name={self.name!r}, method={self.method!r})"

    def encode_request(self, request: ChatRequest) -> Any:
        """The conversation so far; the reply is the text at `response_path`. `params`
        are ignored: a product chooses its own sampling."""
        if request.schema is not None:
            raise ConfigError(
                f"profile {self.name!r}: protocol 'http' has no structured output; "
                "use it as the chatbot under test, not as a judge or user-agent"
            )
        return self.request_body(request.messages, self._tagged(_session_id(request)), self._place(request))

    def url_for(self, request: ChatRequest) -> str:
        values = {
            SESSION_ID: self._tagged(_session_id(request)),
            TURN: turn_of(request.messages),
            **self._place(request),
        }
        return _PLACEHOLDER.sub(lambda m: quote(values.get(m.group(0), m.group(0)), safe=""), self._url)

    def _tagged(self, conversation_id: str) -> str:
        if conversation_id and self.session_tag:
            return f"{conversation_id}-{self.session_tag}"
        return conversation_id

    def _place(self, request: ChatRequest) -> dict[str, str]:
        place = _place(request)
        place[CONVERSATION_ID] = self._tagged(place[CONVERSATION_ID])
        return place

    def decode_reply(self, raw: bytes, request: ChatRequest) -> Completion:
        return Completion(text=self.reply_text(raw), usage=Usage(), model=self.model)

    def request_body(
        self, messages: Sequence[Message], session_id: str, place: dict[str, str] | None = None
    ) -> Any:
        roles = self._options.roles
        names = {"user": roles.user, "assistant": roles.assistant, "system": roles.system}
        history = [
            {roles.role_key: names[m.role], roles.content_key: m.content} for m in messages if names[m.role]
        ]
        last = next((m.content for m in reversed(messages) if m.role == "user"), "")
        values = {LAST_MESSAGE: last, SESSION_ID: session_id, TURN: turn_of(messages)}
        values.update(place or _place_of(session_id, "", "", 0))
        return _render(self._body, history, values)

    def reply_text(self, raw: bytes) -> str:
        path = self._options.response_path
        if not path:
            text = raw.decode("utf-8", "replace").strip()
        else:
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise BadResponseError(self.name, f"reply is not JSON: {snippet(raw)}") from None
            value = lookup(data, path)
            if value is None or isinstance(value, dict | list | bool):
                raise BadResponseError(self.name, f"no text at response_path {path!r} in {snippet(raw)}")
            text = str(value)
        if not text:
            raise BadResponseError(self.name, "empty reply")
        return text


def turn_of(messages: Sequence[Message]) -> str:
    """`{{turn}}`: the chatbot's turn in this session, from 1 (its replies so far, plus
    one). The same on every retry and every resume of that turn, so with the session id
    it is the key a product that keeps the history itself can recognise a turn it has
    already answered by: a retry after a 504 the product sent once it had stored the
    turn would otherwise put the user's message into its history twice."""
    return str(sum(1 for m in messages if m.role == "assistant") + 1)


def lookup(data: Any, path: str) -> Any:
    """The value at a dotted path (`reply.text`, `choices.0.message.content`,
    `messages.-1.text`), or None where the path does not exist."""
    for part in path.split("."):
        if isinstance(data, list):
            try:
                data = data[int(part)]
            except (ValueError, IndexError):
                return None
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return None
    return data


def _render(value: Any, history: list[dict[str, str]], values: dict[str, str]) -> Any:
    if isinstance(value, str):
        if value == MESSAGES:
            return history
        if "{{" in value:
            # One pass, so a user message that happens to contain a placeholder stays as is.
            return _PLACEHOLDER.sub(lambda m: values[m.group(0)], value)
        return value
    if isinstance(value, dict):
        return {k: _render(v, history, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, history, values) for v in value]
    return value


def _expand(value: Any, profile: str) -> Any:
    if isinstance(value, str):
        return expand_env(value, profile)
    if isinstance(value, dict):
        return {k: _expand(v, profile) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, profile) for v in value]
    return value


def _session_id(request: ChatRequest) -> str:
    """One session per simulated conversation."""
    return request.context.conversation_id if request.context is not None else ""


def _place(request: ChatRequest) -> dict[str, str]:
    c = request.context
    if c is None:
        return _place_of("", "", "", 0)
    return _place_of(c.conversation_id, c.arc_id, c.session, c.session_index)


def _place_of(session_id: str, arc_id: str, session: str, index: int) -> dict[str, str]:
    """The arc placeholders' values: without sessions the conversation is its own arc,
    its one session the "default" one (the reference's name for it)."""
    return {
        CONVERSATION_ID: arc_id or session_id,
        SESSION: session or "default",
        SESSION_INDEX: str(index or 1),
    }
