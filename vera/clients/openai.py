"""OpenAI Chat Completions, and every server that speaks it.

`POST {base_url}/chat/completions` with `Authorization: Bearer KEY` covers OpenAI and
the OpenAI-compatible servers (vLLM, Ollama, llama.cpp, OpenRouter, Together, Groq,
LiteLLM). Azure OpenAI's variant (`azure_openai` profiles) puts the deployment in the
path, the API version in the query and the key in an `api-key` header.

Structured output, by the profile's `structured_output`:
- `json_schema`: `response_format: {type: json_schema, json_schema: {name, schema, strict}}`
- `json_object`: `response_format: {type: json_object}` plus the schema as instructions
  (the API insists the word JSON appears in the messages)
- `prompt`: instructions only; `none`: nothing asked. The reply is always read leniently.

Parameters pass through as given (`max_tokens` or `max_completion_tokens`, `seed`,
`temperature`, ...), so whatever a server accepts can be set in the profile, except
where the model's family refuses one (`families.py`: e.g. o-series and gpt-5 take only
`max_completion_tokens` and the default temperature). `reasoning_effort` passes through
too, checked against the levels the model documents before the run starts
(`families.reasoning_problem`); the reasoning tokens a reply reports
(`completion_tokens_details.reasoning_tokens`, a part of `completion_tokens`) are kept
as `Usage.reasoning_tokens`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import aiohttp
import msgspec

from vera.clients._provider import ProviderClient
from vera.clients._transport import decode, profile_headers
from vera.clients.base import CallContext, ChatRequest
from vera.clients.families import fit_params
from vera.clients.structured import (
    extract_json,
    merge_params,
    no_text_reason,
    schema_name,
    with_instructions,
)
from vera.errors import BadResponseError
from vera.inputs import AzureOptions, Profile, StructuredOutput
from vera.records import Completion, Message, Usage

_FINISH = {"stop": "stop", "length": "length", "content_filter": "filtered", "tool_calls": "tool"}


class _PromptDetails(msgspec.Struct):
    cached_tokens: int | None = 0


class _CompletionDetails(msgspec.Struct):
    reasoning_tokens: int | None = 0


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None


class _Message(msgspec.Struct):
    content: str | list[dict[str, Any]] | None = None
    refusal: str | None = None


class _Choice(msgspec.Struct):
    message: _Message | None = None
    finish_reason: str | None = None


class _Response(msgspec.Struct):
    choices: list[_Choice] = []
    usage: _Usage | None = None
    id: str | None = None
    model: str | None = None


class OpenAIClient(ProviderClient):
    """A `ChatClient` for Chat Completions endpoints.

    >>> client = OpenAIClient.from_profile(session, profile, "gpt-4o-mini", key)  # doctest: +SKIP
    >>> request = ChatRequest(messages=(Message("user", "Hello"),), params={"temperature": 0})  # doctest: +SKIP
    >>> await client.chat(request)  # doctest: +SKIP
    Completion(text='Hi! How can I help?', ...)
    """

    __slots__ = ("_cache_key", "_fitted", "_params", "_send_model", "_structured")

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        name: str,
        model: str,
        url: str,
        headers: dict[str, str],
        params: dict[str, Any] | None = None,
        structured: StructuredOutput = "json_schema",
        send_model: bool = True,
        cache_key: bool = False,
    ) -> None:
        super().__init__(session, name=name, model=model, url=url, headers=headers)
        self._params = dict(params or {})
        self._structured = structured
        self._send_model = send_model
        self._cache_key = cache_key
        # The fitted parameters by the call's own (a conversation asks with the same ones
        # every turn): fitting them to the model's family is pure, and cost a call 10 µs.
        self._fitted: dict[tuple[tuple[str, Any], ...], dict[str, Any]] = {}

    @classmethod
    def from_profile(
        cls, session: aiohttp.ClientSession, profile: Profile, model: str, key: str | None
    ) -> OpenAIClient:
        """Build the client an `openai` or `azure_openai` profile describes."""
        headers = profile_headers(profile)
        if profile.protocol == "azure_openai":
            azure = profile.azure or AzureOptions()
            deployment = azure_deployment(profile, model)
            url = (
                f"{profile.endpoint}/openai/deployments/{quote(deployment, safe='')}"
                f"/chat/completions?api-version={quote(azure.api_version, safe='')}"
            )
            if key:
                headers["api-key"] = key
        else:
            url = f"{profile.endpoint}/chat/completions"
            if key:
                headers["Authorization"] = f"Bearer {key}"
        return cls(
            session,
            name=profile.name,
            model=model,
            url=url,
            headers=headers,
            params=profile.params,
            structured=profile.structured,
            send_model=profile.protocol != "azure_openai",
            cache_key=profile.sends_prompt_cache_key,
        )

    def encode_request(self, request: ChatRequest) -> dict[str, Any]:
        """One Chat Completions call. `cache_prefix` needs nothing here: OpenAI caches
        identical prefixes automatically, and reports the hits as cached tokens; a
        `prompt_cache_key` per conversation and role (where the profile sends one) keeps
        a conversation's requests on the same cache."""
        return self.request_body(request.messages, request.params, request.schema, request.context)

    def decode_reply(self, raw: bytes, request: ChatRequest) -> Completion:
        return self.parse(raw, structured=request.schema is not None)

    def request_body(
        self,
        messages: Sequence[Message],
        params: dict[str, Any] | None,
        schema: dict[str, Any] | None,
        context: CallContext | None = None,
    ) -> dict[str, Any]:
        mode = self._structured if schema is not None else "none"
        if schema is not None and mode in ("json_object", "prompt"):
            messages = with_instructions(messages, schema)
        body: dict[str, Any] = {"model": self.model} if self._send_model else {}
        # Message structs encode as {"role", "content"} objects: no per-call dict building.
        body["messages"] = messages
        body.update(self._fit(params))
        if schema is not None and mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name(schema), "schema": schema, "strict": True},
            }
        elif schema is not None and mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        if self._cache_key and context is not None and context.conversation_id:
            # One key per conversation and role: the role's requests share one prefix.
            body["prompt_cache_key"] = f"vera-{context.role}-{context.conversation_id}"
        return body

    def _fit(self, params: dict[str, Any] | None) -> dict[str, Any]:
        """The profile's parameters with the call's over them, fitted to the model's
        family (not to be changed: it is remembered)."""
        key = tuple(params.items()) if params else ()
        try:
            return self._fitted[key]
        except KeyError:
            fitted = fit_params("openai", self.model, merge_params(self._params, params))[0]
            if len(self._fitted) < 4096:
                self._fitted[key] = fitted
            return fitted
        except TypeError:  # a value that cannot be a key (a list, a dict): fitted each time
            return fit_params("openai", self.model, merge_params(self._params, params))[0]

    def parse(self, raw: bytes, *, structured: bool) -> Completion:
        response = decode(raw, _Response, self.name)
        choice = response.choices[0] if response.choices else None
        message = choice.message if choice is not None else None
        if choice is None or message is None:
            raise BadResponseError(self.name, "response has no choices")
        finish = choice.finish_reason or "stop"
        usage = _usage(response.usage)
        text = _text(message.content)
        if not text:
            if message.refusal:
                return Completion(
                    text=message.refusal,
                    usage=usage,
                    finish_reason="refusal",
                    raw_id=response.id,
                    model=response.model or self.model,
                )
            why = no_text_reason(
                "empty content", f"finish_reason={finish}", usage, limit_reached=finish == "length"
            )
            raise BadResponseError(self.name, why)
        return Completion(
            text=text,
            parsed=extract_json(text) if structured else None,
            usage=usage,
            finish_reason=_FINISH.get(finish, finish),
            raw_id=response.id,
            model=response.model or self.model,
        )


def azure_deployment(profile: Profile, model: str) -> str:
    """The Azure deployment a `profile/model` reference calls: the deployment names the
    model on Azure; the profile's own model is its `[azure] deployment`, a `profile/model`
    ref names another."""
    azure = profile.azure or AzureOptions()
    return azure.deployment if azure.deployment and model == profile.model else model


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if isinstance(content, list):  # some compatible servers answer with content parts
        return "".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return content or ""


def _usage(usage: _Usage | None) -> Usage:
    """Reasoning tokens are reported inside `completion_tokens` (and billed as output):
    they are a part of the output here too, never added to it."""
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    output = usage.completion_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cached_input_tokens=(details.cached_tokens or 0) if details else 0,
        reasoning_tokens=(output.reasoning_tokens or 0) if output else 0,
    )


class _UsageOnly(msgspec.Struct):
    usage: _Usage | None = None


def reply_usage(raw: bytes, provider: str) -> Usage:
    """The usage a reply reports, whatever else it holds (a batch answer no request can
    take is billed all the same, and accounted for by it)."""
    return _usage(decode(raw, _UsageOnly, provider).usage)
