"""Anthropic Messages: `POST {base_url}/v1/messages`.

System messages go to the top-level `system`; `max_tokens` is required by the API and
defaults to `DEFAULT_MAX_TOKENS`. Generic parameters are translated (`stop` →
`stop_sequences`, `max_completion_tokens` → `max_tokens`) and `seed`, which the API does
not have, is dropped; so are sampling parameters the model's family refuses
(`families.py`); anything else passes through.

Structured output (`tool`, the default) forces a single tool whose `input_schema` is the
schema; the tool call's `input` is the parsed object. `prompt` and `none` work as for
the other protocols.

Extended thinking (`thinking = {type = "enabled", budget_tokens = N}` or `{type =
"adaptive"}` in a role's parameters) changes three things the API insists on: the
samplers are fitted (temperature 1 only, no top_k; `families.py`), a tool may not be
forced, so the answer's tool is offered with `tool_choice: auto` and the JSON
instructions added to the prompt (a reply in text is read as JSON), and the reply opens
with `thinking` (or `redacted_thinking`) blocks, which are never part of the text.

Prompt caching is explicit here: with `cache_prefix=n`, the system block (when it lies in
the prefix) and the message at index n-1 get `cache_control: {type: ephemeral}` (two
breakpoints at most, of the four the API allows). The judge marks its system prompt with
the transcript; the user-agent its persona prompt and the conversation up to its own
last line; the chatbot its whole view, which the next turn extends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiohttp
import msgspec

from vera.clients._provider import ProviderClient
from vera.clients._transport import decode, encode, profile_headers
from vera.clients.base import ChatRequest
from vera.clients.families import ANTHROPIC_DEFAULT_MAX_TOKENS, claude_thinks, fit_params
from vera.clients.structured import extract_json, merge_params, schema_name, with_instructions
from vera.errors import BadResponseError
from vera.inputs import Profile, StructuredOutput
from vera.records import Completion, Message, Usage

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = ANTHROPIC_DEFAULT_MAX_TOKENS
_EPHEMERAL = {"type": "ephemeral"}
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "stop",  # the forced tool call is the answer
    "max_tokens": "length",
    "refusal": "refusal",
}


class _Block(msgspec.Struct):
    type: str
    text: str | None = None
    name: str | None = None
    input: Any = None


class _Usage(msgspec.Struct):
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cache_creation_input_tokens: int | None = 0
    cache_read_input_tokens: int | None = 0


class _Response(msgspec.Struct):
    content: list[_Block] = []
    stop_reason: str | None = None
    usage: _Usage | None = None
    id: str | None = None
    model: str | None = None


class AnthropicClient(ProviderClient):
    """A `ChatClient` for the Anthropic Messages API."""

    __slots__ = ("_params", "_structured")

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        name: str,
        model: str,
        url: str,
        headers: dict[str, str],
        params: dict[str, Any] | None = None,
        structured: StructuredOutput = "tool",
    ) -> None:
        super().__init__(session, name=name, model=model, url=url, headers=headers)
        self._params = dict(params or {})
        self._structured = structured

    @classmethod
    def from_profile(
        cls, session: aiohttp.ClientSession, profile: Profile, model: str, key: str | None
    ) -> AnthropicClient:
        """Build the client an `anthropic` profile describes."""
        headers = {"anthropic-version": API_VERSION, **profile_headers(profile)}
        if key:
            headers["x-api-key"] = key
        return cls(
            session,
            name=profile.name,
            model=model,
            url=f"{profile.endpoint}/v1/messages",
            headers=headers,
            params=profile.params,
            structured=profile.structured,
        )

    def encode_request(self, request: ChatRequest) -> dict[str, Any]:
        """One Messages call (see the module docstring for caching and tools)."""
        return self.request_body(request.messages, request.params, request.schema, request.cache_prefix)

    def decode_reply(self, raw: bytes, request: ChatRequest) -> Completion:
        return self.parse(raw, structured=request.schema is not None)

    def request_body(
        self,
        messages: Sequence[Message],
        params: dict[str, Any] | None,
        schema: dict[str, Any] | None,
        cache_prefix: int = 0,
    ) -> dict[str, Any]:
        mode = self._structured if schema is not None else "none"
        options = fit_params("anthropic", self.model, merge_params(self._params, params))[0]
        thinks = claude_thinks(options)
        if schema is not None and (mode == "prompt" or (mode == "tool" and thinks)):
            messages = with_instructions(messages, schema)
        system: list[dict[str, Any]] = []
        turns: list[dict[str, Any]] = []
        cache_system = False
        for index, message in enumerate(messages):
            in_prefix = index < cache_prefix
            if message.role == "system":
                system.append({"type": "text", "text": message.content})
                cache_system = in_prefix
            elif index == cache_prefix - 1:
                block = {"type": "text", "text": message.content, "cache_control": _EPHEMERAL}
                turns.append({"role": message.role, "content": [block]})
            else:
                turns.append({"role": message.role, "content": message.content})

        max_tokens = options.pop("max_tokens", None) or options.pop("max_completion_tokens", None)
        options.pop("max_completion_tokens", None)
        options.pop("seed", None)  # the Messages API has no seed
        if "stop" in options:
            stop = options.pop("stop")
            options["stop_sequences"] = [stop] if isinstance(stop, str) else stop

        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
            "messages": turns,
        }
        if system:
            if cache_system:
                system[-1]["cache_control"] = _EPHEMERAL
                body["system"] = system
            else:
                body["system"] = "\n\n".join(block["text"] for block in system)
        body.update(options)
        if schema is not None and mode == "tool":
            name = schema_name(schema, "record_answer")
            body["tools"] = [
                {
                    "name": name,
                    "description": "Record your answer. The input is your complete answer.",
                    "input_schema": schema,
                }
            ]
            # Thinking may not be combined with a forced tool: the tool is only offered.
            body["tool_choice"] = {"type": "auto"} if thinks else {"type": "tool", "name": name}
        return body

    def parse(self, raw: bytes, *, structured: bool) -> Completion:
        response = decode(raw, _Response, self.name)
        stop = response.stop_reason or "end_turn"
        usage = _usage(response.usage)
        text, parsed = "", None
        for block in response.content:
            if block.type == "tool_use" and block.input is not None:
                text, parsed = encode(block.input).decode(), block.input
                break
        else:
            text = "".join(b.text or "" for b in response.content if b.type == "text")
            if not text:
                thought = any(b.type in ("thinking", "redacted_thinking") for b in response.content)
                if stop == "max_tokens" and thought:
                    raise BadResponseError(
                        self.name,
                        "response has no text: the output limit was reached while thinking "
                        "(stop_reason=max_tokens); raise max_tokens above the thinking budget",
                    )
                raise BadResponseError(self.name, f"response has no text (stop_reason={stop})")
            parsed = extract_json(text) if structured else None
        return Completion(
            text=text,
            parsed=parsed,
            usage=usage,
            finish_reason=_FINISH.get(stop, stop),
            raw_id=response.id,
            model=response.model or self.model,
        )


def _usage(usage: _Usage | None) -> Usage:
    """Anthropic reports uncached input, cache writes and cache reads separately; vera's
    `input_tokens` is their sum, and the reads are its cached part."""
    if usage is None:
        return Usage()
    read = usage.cache_read_input_tokens or 0
    written = usage.cache_creation_input_tokens or 0
    return Usage(
        input_tokens=(usage.input_tokens or 0) + read + written,
        output_tokens=usage.output_tokens or 0,
        cached_input_tokens=read,
        cache_write_tokens=written,
    )


class _UsageOnly(msgspec.Struct):
    usage: _Usage | None = None


def reply_usage(raw: bytes, provider: str) -> Usage:
    """The usage a reply reports, whatever else it holds (a batch answer no request can
    take is billed all the same, and accounted for by it)."""
    return _usage(decode(raw, _UsageOnly, provider).usage)
