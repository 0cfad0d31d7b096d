"""Google Gemini: `POST {base_url}/v1beta/models/{model}:generateContent`.

The key goes in the `x-goog-api-key` header (never in the URL, where it would end up in
logs). System messages become `systemInstruction`; the assistant's turns have role
`model`. Generic parameters are translated into `generationConfig` (`max_tokens` →
`maxOutputTokens`, `top_p` → `topP`, `stop` → `stopSequences`, `seed`, `temperature`);
anything else passes into `generationConfig` verbatim, so native keys
(`thinkingConfig`, ...) can be set in the profile.

Structured output: `json_schema` sets `responseMimeType: application/json` with the
schema in `responseJsonSchema` (or `responseSchema`, per the profile's `[gemini]`
table, cut down to the OpenAPI subset that field documents); `json_object` sets only the MIME type and adds instructions; `prompt` adds
instructions. A blocked prompt or a candidate without text (safety, recitation, ...) is a
`BadResponseError` naming the reason; a refusal written as text is an ordinary reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import aiohttp
import msgspec

from vera.clients._provider import ProviderClient
from vera.clients._transport import decode, profile_headers
from vera.clients.base import ChatRequest
from vera.clients.families import fit_params
from vera.clients.structured import extract_json, merge_params, no_text_reason, with_instructions
from vera.errors import BadResponseError
from vera.inputs import GeminiOptions, Profile, StructuredOutput
from vera.records import Completion, Message, Usage

_CONFIG_NAMES = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_tokens": "maxOutputTokens",
    "max_completion_tokens": "maxOutputTokens",
    "max_output_tokens": "maxOutputTokens",
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
}
# What `responseSchema` (an OpenAPI 3.0 subset) knows; any other key, such as the
# `additionalProperties` every judge schema carries, is refused there as an unknown name.
# `responseJsonSchema` takes JSON Schema as it is.
_OPENAPI_SUBSET = frozenset(
    {
        "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
        "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
        "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
        "maximum",
    }
)  # fmt: skip
_FILTERED = ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "LANGUAGE")


class _Part(msgspec.Struct):
    text: str | None = None
    thought: bool | None = None


class _Content(msgspec.Struct):
    parts: list[_Part] = []


class _Candidate(msgspec.Struct, rename="camel"):
    content: _Content | None = None
    finish_reason: str | None = None


class _Feedback(msgspec.Struct, rename="camel"):
    block_reason: str | None = None


class _UsageMetadata(msgspec.Struct, rename="camel"):
    prompt_token_count: int | None = 0
    candidates_token_count: int | None = 0
    thoughts_token_count: int | None = 0
    cached_content_token_count: int | None = 0


class _Response(msgspec.Struct, rename="camel"):
    candidates: list[_Candidate] = []
    prompt_feedback: _Feedback | None = None
    usage_metadata: _UsageMetadata | None = None
    response_id: str | None = None
    model_version: str | None = None


class GeminiClient(ProviderClient):
    """A `ChatClient` for the Gemini API's `generateContent`."""

    __slots__ = ("_options", "_params", "_structured")

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
        options: GeminiOptions | None = None,
    ) -> None:
        super().__init__(session, name=name, model=model, url=url, headers=headers)
        self._params = dict(params or {})
        self._structured = structured
        self._options = options or GeminiOptions()

    @classmethod
    def from_profile(
        cls, session: aiohttp.ClientSession, profile: Profile, model: str, key: str | None
    ) -> GeminiClient:
        """Build the client a `gemini` profile describes."""
        headers = profile_headers(profile)
        if key:
            headers["x-goog-api-key"] = key
        model_id = model.removeprefix("models/")
        return cls(
            session,
            name=profile.name,
            model=model_id,
            url=f"{profile.endpoint}/v1beta/models/{quote(model_id, safe='')}:generateContent",
            headers=headers,
            params=profile.params,
            structured=profile.structured,
            options=profile.gemini,
        )

    def encode_request(self, request: ChatRequest) -> dict[str, Any]:
        """One generateContent call. Gemini caches shared prefixes implicitly, so
        `cache_prefix` needs no marking; hits come back as `cachedContentTokenCount`."""
        return self.request_body(request.messages, request.params, request.schema)

    def decode_reply(self, raw: bytes, request: ChatRequest) -> Completion:
        return self.parse(raw, structured=request.schema is not None)

    def request_body(
        self,
        messages: Sequence[Message],
        params: dict[str, Any] | None,
        schema: dict[str, Any] | None,
    ) -> dict[str, Any]:
        mode = self._structured if schema is not None else "none"
        if schema is not None and mode in ("json_object", "prompt"):
            messages = with_instructions(messages, schema)
        system = [{"text": m.content} for m in messages if m.role == "system"]
        contents = [
            {"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.content}]}
            for m in messages
            if m.role != "system"
        ]
        config: dict[str, Any] = {}
        for key, value in fit_params("gemini", self.model, merge_params(self._params, params))[0].items():
            if key == "stop":
                config["stopSequences"] = [value] if isinstance(value, str) else value
            else:
                config[_CONFIG_NAMES.get(key, key)] = value
        if schema is not None and mode in ("json_schema", "json_object"):
            config["responseMimeType"] = "application/json"
            if mode == "json_schema":
                field = self._options.schema_field
                config[field] = openapi_subset(schema) if field == "responseSchema" else schema
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": system}
        if config:
            body["generationConfig"] = config
        if self._options.safety_settings:
            body["safetySettings"] = self._options.safety_settings
        return body

    def parse(self, raw: bytes, *, structured: bool) -> Completion:
        response = decode(raw, _Response, self.name)
        if not response.candidates:
            feedback = response.prompt_feedback
            reason = feedback.block_reason if feedback else None
            why = f"prompt blocked (blockReason={reason})" if reason else "response has no candidates"
            raise BadResponseError(self.name, why)
        candidate = response.candidates[0]
        finish = candidate.finish_reason or "STOP"
        parts = candidate.content.parts if candidate.content else []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        usage = _usage(response.usage_metadata)
        if not text:
            why = no_text_reason(
                "candidate has no text", f"finishReason={finish}", usage, limit_reached=finish == "MAX_TOKENS"
            )
            raise BadResponseError(self.name, why)
        return Completion(
            text=text,
            parsed=extract_json(text) if structured else None,
            usage=usage,
            finish_reason=_finish(finish),
            raw_id=response.response_id,
            model=response.model_version or self.model,
        )


def openapi_subset(schema: Any) -> Any:
    """`schema` with only the keys `responseSchema` accepts, at every level."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _OPENAPI_SUBSET:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: openapi_subset(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = openapi_subset(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [openapi_subset(sub) for sub in value]
        else:
            out[key] = value
    return out


def _finish(reason: str) -> str:
    if reason == "STOP":
        return "stop"
    if reason == "MAX_TOKENS":
        return "length"
    return "filtered" if reason in _FILTERED else reason.lower()


def _usage(meta: _UsageMetadata | None) -> Usage:
    """Thinking tokens are reported apart from the answer's (`thoughtsTokenCount`) and
    billed as output, so they are added to the output here, and kept as its reasoning
    part."""
    if meta is None:
        return Usage()
    thoughts = meta.thoughts_token_count or 0
    return Usage(
        input_tokens=meta.prompt_token_count or 0,
        output_tokens=(meta.candidates_token_count or 0) + thoughts,
        cached_input_tokens=meta.cached_content_token_count or 0,
        reasoning_tokens=thoughts,
    )


class _UsageOnly(msgspec.Struct, rename="camel"):
    usage_metadata: _UsageMetadata | None = None


def reply_usage(raw: bytes, provider: str) -> Usage:
    """The usage a reply reports, whatever else it holds (a batch answer no request can
    take is billed all the same, and accounted for by it)."""
    return _usage(decode(raw, _UsageOnly, provider).usage_metadata)
