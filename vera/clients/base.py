"""The one seam between vera and a model: `ChatClient.chat(ChatRequest) -> Completion`.

Every wire protocol (OpenAI, Anthropic, Gemini, a custom HTTP chatbot), every offline
stand-in and every middleware (limits, response cache, call recording; see
`vera.clients.stack`) implements this interface, so the simulation and judging code never
knows which one it is talking to. A request is one frozen value: a wrapper passes it on
unchanged, and adding a field to it touches no wrapper.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import msgspec

from vera.records import Completion, Message, Role


class CallContext(msgspec.Struct, frozen=True, kw_only=True):
    """Facts about the call that are not part of the wire request, and only those a
    real protocol client reads: `role`, `job_id` (ties the call to its accounting record
    and response-cache entry), `conversation_id` (the custom HTTP client's session id,
    OpenAI's prompt-cache key) and the session place the custom HTTP client sends. Nothing about the persona, the transcript or the rubric
    travels here: the offline stand-ins look those up by `conversation_id` in the facts
    they were built with (`vera.standins.StandInFacts`).
    """

    role: Role
    job_id: str = ""
    conversation_id: str = ""
    # The custom HTTP client's conversation across sessions (docs/sessions.md): the arc's
    # id (the conversation's own id when it has one session), the session type and its
    # 1-based place.
    arc_id: str = ""
    session: str = ""
    session_index: int = 0


class ChatRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One model call, as the engine asks for it.

    `messages` is the full context (system first when present). `params` are sampling
    parameters (temperature, max_tokens, seed, ...) merged over the profile's defaults.
    With `schema` (a JSON schema object), the client asks the server for structured
    output by the protocol's own mechanism and returns the decoded object in
    `Completion.parsed`; where the server has no such mechanism it falls back to
    instructions in the prompt and parses the text. `cache_prefix` is the number of
    leading messages that are identical across many calls (the judge's transcript), so
    protocols with explicit prompt caching can mark them. `context` says who is calling
    and for which job; it never reaches the wire except as a session or cache key.
    `reask` counts the times this same request was already asked for the same turn (the
    user-agent's empty reply is asked again as it is): a re-ask is a new call for the
    response cache, never the answer it is re-asking about, and a resumed run replays
    each attempt's own answer. It never reaches the wire.
    """

    messages: tuple[Message, ...]
    params: dict[str, Any] | None = None
    schema: dict[str, Any] | None = None
    cache_prefix: int = 0
    context: CallContext | None = None
    reask: int = 0


@runtime_checkable
class ChatClient(Protocol):
    """A model endpoint (or a wrapper around one) that answers chat requests."""

    name: str
    model: str

    async def chat(self, request: ChatRequest) -> Completion: ...


class OfflineModels(Protocol):
    """The offline models a `ClientPool` can build for the `offline` protocol, and the
    rubrics they refuse. `vera.standins.StandIns` is vera's own; the clients know the
    stand-ins only through this, so a new stand-in (a locale's, say) needs no change here.
    """

    def client(self, model: str, name: str) -> ChatClient:
        """The stand-in called `model`, named `name` on its calls; ConfigError if none is."""
        ...

    def rubric_refusal(self, model: str, rubric_key: str) -> str | None:
        """Why `model` cannot judge the rubric `rubric_key`; None when it can."""
        ...
