"""Fake protocol servers: real aiohttp servers on 127.0.0.1 that speak OpenAI Chat
Completions (and Azure's variant), Anthropic Messages, Gemini generateContent and a
custom chatbot API, for the client tests and the end-to-end runs on fake servers.

Each server records what it received (`server.received`: path, query, headers, JSON
body, arrival time) and answers from a script of behaviours, then normally:

    async with FakeOpenAI(key="sk-test-123456") as server:
        server.script(Fail(429, retry_after="0.05"), Reply("hello"))
        ... point a profile at server.base_url ...
        assert server.received[-1].json["model"] == "gpt-4o"

Behaviours: `Reply` (normal; text, parsed tool input, usage, cached tokens, delay),
`Fail` (an HTTP error in the protocol's own error shape, optional Retry-After), `Slow`
(answer after a delay), `Reset` (close the connection mid-response), `Malformed`
(broken JSON), `Empty` (a well-formed reply without text), `Refusal` (the protocol's
refusal shape with text), `Filtered` (no text, a safety finish reason), `Raw` (any
bytes). Servers check what real APIs check (`rules.py`: headers, parameter names,
types and ranges per model family, role order, system placement, cache marks, schema
rules) and answer 400/401 in the real shape. Every broken rule is also kept in
`server.violations`, and the test fails at teardown if any server it started has one
(`tests/conftest.py`), so a request the real API would refuse can never pass unnoticed,
even where the client would have retried or swallowed the 400. A test that provokes a
violation on purpose sets `server.expect_violations = True` and asserts on the list.

Run one as a separate process for manual trials:

    python -m tests.fakes.protocols openai --port 0 --latency-ms 200 --rpm 600

The rate limit is `shared.RateBucket`, which the benchmark's lean OpenAI-only server
(`benchmarks/fake_server.py`, run by `vera bench`) uses too, so both answer 429 at the
same point.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import math
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer

from .rules import (
    anthropic_problems,
    claude_thinking_on,
    gemini_problems,
    gemini_thinking_problems,
    openai_problems,
)
from .shared import RateBucket, serve_until_interrupted

# Every server started in this process, for the teardown check in tests/conftest.py.
STARTED: list[FakeServer] = []

# Per-request storage of the request's size in tokens (a typed key where aiohttp has them).
TOKENS: Any = web.RequestKey("tokens", int) if hasattr(web, "RequestKey") else "tokens"

# ---------------------------------------------------------------------------------------
# Scripted behaviours
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A normal answer. `text` defaults to a canned reply (or, for structured requests,
    an object built from the schema); `parsed` is the tool input for Anthropic."""

    text: str | None = None
    parsed: Any = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    # Thinking before the answer, billed as output: OpenAI and Anthropic count it inside
    # the output tokens, Gemini beside them (thoughtsTokenCount).
    reasoning_tokens: int = 0
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    # OpenAI's finish_reason ("length": the text stopped at the output limit).
    finish: str = "stop"


@dataclass(frozen=True)
class Fail:
    """An HTTP error in the protocol's error shape."""

    status: int
    message: str = "scripted failure"
    retry_after: str | None = None
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Slow:
    """Answer normally, but only after `delay` seconds."""

    delay: float


@dataclass(frozen=True)
class Reset:
    """Start a 200 response, send a few bytes, then close the connection."""


@dataclass(frozen=True)
class Malformed:
    """A 200 response whose body is not JSON."""


@dataclass(frozen=True)
class Empty:
    """A well-formed 200 response with no text in it."""


@dataclass(frozen=True)
class Refusal:
    """The model declines, in words (a refusal with text is an ordinary completion)."""

    text: str = "I can't help with that request."


@dataclass(frozen=True)
class Filtered:
    """No text at all, with a safety finish reason (Gemini: `prompt=True` blocks the
    prompt itself via promptFeedback)."""

    prompt: bool = False


@dataclass(frozen=True)
class Raw:
    """Exactly these bytes, status and headers."""

    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


Behaviour = Reply | Fail | Slow | Reset | Malformed | Empty | Refusal | Filtered | Raw


@dataclass
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any
    at: float
    raw: bytes = b""  # the body's bytes as they arrived
    path_qs: str = ""  # the path with its query, as sent


class BadRequest(Exception):
    """The request is not what the real API accepts (answered as a 400)."""


# ---------------------------------------------------------------------------------------
# The common server
# ---------------------------------------------------------------------------------------


class FakeServer:
    """A scripted protocol server on 127.0.0.1 (a random free port unless given).

    `key=None` accepts any key. `latency` delays every answer; `rpm` enforces a
    requests-per-minute limit the way providers do (a bucket refilled continuously, with
    `burst_s` seconds of capacity), answering 429 with Retry-After when it is empty.
    `record=False` keeps only counts (for long benchmark runs)."""

    protocol = "base"

    def __init__(
        self,
        *,
        key: str | None = "sk-test-key-0123456789",
        latency: float = 0.0,
        rpm: float | None = None,
        burst_s: float = 2.0,
        port: int | None = None,
        record: bool = True,
    ) -> None:
        self.key = key
        self.record = record
        self.requests = 0
        self.latency = latency
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.completed = 0  # responses handed back (a request given up on is not one)
        self.rate_limited = 0
        self.violations: list[str] = []  # every documented rule a request broke
        self.expect_violations = False  # set by tests that send broken requests on purpose
        self._script: deque[Behaviour] = deque()
        self._counter = itertools.count(1)
        self._port = port
        self._bucket = RateBucket(rpm, burst_s) if rpm else None
        self._server: TestServer | None = None
        self.app = web.Application()
        self.routes(self.app)

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> Self:
        self._server = TestServer(self.app, host="127.0.0.1", port=self._port)
        await self._server.start_server()
        STARTED.append(self)
        return self

    async def close(self) -> None:
        if self._server is not None:
            await self._server.close()
            self._server = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def root(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.port}"

    @property
    def base_url(self) -> str:
        """What a profile's base_url should be to reach this server."""
        return self.root

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests, in order."""
        self._script.extend(behaviours)

    # -- request handling ----------------------------------------------------------------

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    async def handle(self, request: web.Request) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        raw = await request.read()
        request[TOKENS] = max(1, len(raw) // 4)  # about 4 bytes a token
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        self.requests += 1
        if self.record:
            self.received.append(
                Received(
                    request.method,
                    request.path,
                    dict(request.query),
                    {k.lower(): v for k, v in request.headers.items()},
                    body,
                    loop.time(),
                    raw,
                    request.path_qs,
                )
            )
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if (missing := self.missing_credentials(request)) is not None:
                self.violations.append(missing)
            if not self.authorized(request):
                return self.auth_failure()
            if self._bucket is not None and (wait := self._bucket.take(loop.time())) is not None:
                self.rate_limited += 1
                return self.error(429, "rate limit reached", retry_after=f"{wait:.3f}")
            if not isinstance(body, dict):
                self.violations.append("request body must be a JSON object")
                return self.error(400, "request body must be a JSON object")
            try:
                problems = self.problems(request, body)
                self.validate(request, body)
            except BadRequest as exc:
                problems = [str(exc)]
            if problems:
                self.violations.extend(f"{request.path}: {p}" for p in problems)
                return self.error(400, problems[0])
            behaviour = self._script.popleft() if self._script else Reply()
            delay = self.latency + (behaviour.delay if isinstance(behaviour, Slow | Reply) else 0)
            if delay:
                await asyncio.sleep(delay)
            response = await self.respond(request, body, behaviour)
            self.completed += 1
            return response
        finally:
            self.in_flight -= 1

    async def respond(
        self, request: web.Request, body: dict[str, Any], behaviour: Behaviour
    ) -> web.StreamResponse:
        if isinstance(behaviour, Fail):
            return self.error(
                behaviour.status,
                behaviour.message,
                retry_after=behaviour.retry_after,
                code=behaviour.code,
                headers=behaviour.headers,
            )
        if isinstance(behaviour, Raw):
            return web.Response(body=behaviour.body, status=behaviour.status, headers=behaviour.headers)
        if isinstance(behaviour, Malformed):
            return web.Response(body=b'{"id": "x", "choices": [', content_type="application/json")
        if isinstance(behaviour, Reset):
            return await self._reset(request)
        reply = behaviour if isinstance(behaviour, Reply) else Reply()
        payload = self.payload(request, body, behaviour, reply)
        return web.Response(
            body=orjson.dumps(payload), content_type="application/json", headers=reply.headers
        )

    async def _reset(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = 4096
        await response.prepare(request)
        await response.write(b'{"id": "partial", "cho')
        if request.transport is not None:
            request.transport.close()
        return response

    def json_error(self, status: int, payload: Any, headers: dict[str, str]) -> web.Response:
        return web.Response(
            body=orjson.dumps(payload),
            status=status,
            content_type="application/json",
            headers=headers,
        )

    def error(
        self,
        status: int,
        message: str,
        *,
        retry_after: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> web.Response:
        headers = dict(headers or {})
        if retry_after is not None:
            headers["Retry-After"] = retry_after
        return self.json_error(status, self.error_payload(status, message, code), headers)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._counter):06d}"

    # -- protocol hooks ------------------------------------------------------------------

    def authorized(self, request: web.Request) -> bool:
        raise NotImplementedError

    def auth_failure(self) -> web.Response:
        return self.error(401, "invalid authentication credentials")

    def validate(self, request: web.Request, body: dict[str, Any]) -> None:
        """Raise BadRequest where the real API would answer 400 (a subclass's extra rule)."""

    def problems(self, request: web.Request, body: dict[str, Any]) -> list[str]:
        """Every documented rule the request breaks (empty: the real API would accept it)."""
        return []

    def missing_credentials(self, request: web.Request) -> str | None:
        """The broken rule when the request carries no credentials at all (a wrong key
        is an ordinary 401, which tests provoke on purpose)."""
        return None

    def error_payload(self, status: int, message: str, code: str | None) -> Any:
        raise NotImplementedError

    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        raise NotImplementedError


def sample(schema: Any) -> Any:
    """A small value that satisfies a (simple) JSON schema."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        return {k: sample(v) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return []
    if kind == "string":
        return "ok"
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return True
    return None


DEFAULT_OBJECT = {"answer": "Yes", "reasoning": "A scripted answer from the fake server."}


def tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def _texts(value: Any) -> str:
    """All the text in a request, for a rough token count."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return " ".join(_texts(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_texts(v) for v in value)
    return ""


# ---------------------------------------------------------------------------------------
# OpenAI Chat Completions (and Azure OpenAI)
# ---------------------------------------------------------------------------------------


class FakeOpenAI(FakeServer):
    """`POST /v1/chat/completions` (base_url = root + /v1), or with `azure=True`
    `POST /openai/deployments/{deployment}/chat/completions?api-version=...`."""

    protocol = "openai"

    def __init__(self, *, azure: bool = False, **kwargs: Any) -> None:
        self.azure = azure
        super().__init__(**kwargs)

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self.handle)
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self.handle)

    @property
    def base_url(self) -> str:
        return self.root if self.azure else f"{self.root}/v1"

    def authorized(self, request: web.Request) -> bool:
        if self.key is None:
            return True
        if self.azure:
            return request.headers.get("api-key") == self.key
        return request.headers.get("Authorization") == f"Bearer {self.key}"

    def auth_failure(self) -> web.Response:
        shown = f"{self.key[:3]}…{self.key[-4:]}" if self.key else ""
        return self.error(401, f"Incorrect API key provided: {shown}.", code="invalid_api_key")

    def missing_credentials(self, request: web.Request) -> str | None:
        if self.key is None:
            return None
        header = "api-key" if self.azure else "Authorization"
        return None if request.headers.get(header) else f"missing {header} header"

    def problems(self, request: web.Request, body: dict[str, Any]) -> list[str]:
        problems: list[str] = []
        if self.azure or "deployment" in request.match_info:
            if "api-version" not in request.query:
                problems.append("api-version query parameter is required")
            model = request.match_info.get("deployment", "")
            if "model" in body and not isinstance(body["model"], str):
                problems.append("'model' must be a string")
        else:
            model = body["model"] if isinstance(body.get("model"), str) else ""
            if not model:
                problems.append("you must provide a model parameter")
        problems += openai_problems(body, model or "")
        fmt = body.get("response_format")
        wants_json = isinstance(fmt, dict) and fmt.get("type") == "json_object"
        if wants_json and "json" not in _texts(body.get("messages")).lower():
            problems.append("'messages' must contain the word 'json' to use json_object")
        return problems

    def error_payload(self, status: int, message: str, code: str | None) -> Any:
        kind = {429: "requests", 401: "invalid_request_error"}.get(status, "server_error")
        if 400 <= status < 500 and status not in (401, 429):
            kind = "invalid_request_error"
        default_code = "rate_limit_exceeded" if status == 429 else None
        return {"error": {"message": message, "type": kind, "param": None, "code": code or default_code}}

    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        fmt = body.get("response_format") or {}
        content: str | None
        refusal = None
        finish = reply.finish
        if isinstance(behaviour, Empty):
            content = ""
        elif isinstance(behaviour, Refusal):
            content, refusal = None, behaviour.text
        elif isinstance(behaviour, Filtered):
            content, finish = None, "content_filter"
        elif reply.text is not None:
            content = reply.text
        elif fmt.get("type") == "json_schema":
            content = orjson.dumps(sample(fmt["json_schema"]["schema"])).decode()
        elif fmt.get("type") == "json_object":
            content = orjson.dumps(DEFAULT_OBJECT).decode()
        else:
            content = f"Fake reply {self.requests}."
        prompt = reply.input_tokens or request[TOKENS]
        completion = (reply.output_tokens or tokens(content or refusal or "")) + reply.reasoning_tokens
        return {
            "id": self.next_id("chatcmpl-"),
            "object": "chat.completion",
            "created": 1700000000,
            "model": body.get("model") or request.match_info.get("deployment", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
            },
            "system_fingerprint": "fp_fake",
        }


# ---------------------------------------------------------------------------------------
# Anthropic Messages
# ---------------------------------------------------------------------------------------


class FakeAnthropic(FakeServer):
    """`POST /v1/messages` (base_url = root)."""

    protocol = "anthropic"

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self.handle)

    def authorized(self, request: web.Request) -> bool:
        return self.key is None or request.headers.get("x-api-key") == self.key

    def missing_credentials(self, request: web.Request) -> str | None:
        if self.key is None or request.headers.get("x-api-key"):
            return None
        return "x-api-key: header is required"

    def problems(self, request: web.Request, body: dict[str, Any]) -> list[str]:
        return anthropic_problems(body, request.headers)

    def error_payload(self, status: int, message: str, code: str | None) -> Any:
        kinds = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }
        error: dict[str, Any] = {"type": kinds.get(status, "api_error"), "message": message}
        if code is not None:
            error["details"] = {"error_code": code}
        return {"type": "error", "error": error}

    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        content: list[dict[str, Any]]
        stop = "end_turn"
        choice = body.get("tool_choice") or {}
        if isinstance(behaviour, Empty):
            content = []
        elif isinstance(behaviour, Refusal):
            content, stop = [{"type": "text", "text": behaviour.text}], "refusal"
        elif isinstance(behaviour, Filtered):
            content, stop = [], "refusal"
        elif reply.text is None and (
            choice.get("type") == "tool" or (choice.get("type") == "auto" and body.get("tools"))
        ):
            # A forced tool is called; an offered one too (as a model asked to use it would).
            name = choice.get("name") or body["tools"][0]["name"]
            tool = next(t for t in body["tools"] if t["name"] == name)
            value = reply.parsed if reply.parsed is not None else sample(tool["input_schema"])
            content = [
                {
                    "type": "tool_use",
                    "id": self.next_id("toolu_"),
                    "name": tool["name"],
                    "input": value,
                }
            ]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": reply.text or f"Fake reply {self.requests}."}]
        if claude_thinking_on(body) and content:
            # Thinking comes first, signed; its tokens are inside output_tokens.
            thought = {"type": "thinking", "thinking": "Weighing the request first.", "signature": "c2ln"}
            content = [thought, *content]
        prompt = reply.input_tokens or request[TOKENS]
        uncached = max(0, prompt - reply.cached_tokens - reply.cache_write_tokens)
        return {
            "id": self.next_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": uncached,
                "cache_creation_input_tokens": reply.cache_write_tokens,
                "cache_read_input_tokens": reply.cached_tokens,
                "output_tokens": (reply.output_tokens or tokens(_texts(content))) + reply.reasoning_tokens,
            },
        }


# ---------------------------------------------------------------------------------------
# Gemini generateContent
# ---------------------------------------------------------------------------------------


class FakeGemini(FakeServer):
    """`POST /v1beta/models/{model}:generateContent` (base_url = root)."""

    protocol = "gemini"
    _STATUS: ClassVar[dict[int, str]] = {
        400: "INVALID_ARGUMENT",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1beta/models/{call}", self.handle)

    def authorized(self, request: web.Request) -> bool:
        given = request.headers.get("x-goog-api-key") or request.query.get("key")
        return self.key is None or given == self.key

    def missing_credentials(self, request: web.Request) -> str | None:
        if self.key is None or request.headers.get("x-goog-api-key") or request.query.get("key"):
            return None
        return "no API key (x-goog-api-key header or key= parameter)"

    def auth_failure(self) -> web.Response:
        # The real API answers a bad key with 400 INVALID_ARGUMENT / API_KEY_INVALID.
        payload = self.error_payload(400, "API key not valid. Please pass a valid API key.", None)
        payload["error"]["details"] = [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
        ]
        return self.json_error(400, payload, {})

    def error(
        self,
        status: int,
        message: str,
        *,
        retry_after: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> web.Response:
        # Gemini says how long to wait in the body (RetryInfo), not in a header.
        payload = self.error_payload(status, message, code)
        if retry_after is not None:
            payload["error"]["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": f"{retry_after}s",
                }
            ]
        return self.json_error(status, payload, dict(headers or {}))

    def problems(self, request: web.Request, body: dict[str, Any]) -> list[str]:
        if not request.match_info["call"].endswith(":generateContent"):
            return [f"unknown method {request.match_info['call']!r}"]
        model = request.match_info["call"].split(":")[0]
        return gemini_problems(body) + gemini_thinking_problems(body.get("generationConfig") or {}, model)

    def error_payload(self, status: int, message: str, code: str | None) -> Any:
        return {
            "error": {
                "code": status,
                "message": message,
                "status": self._STATUS.get(status, "UNKNOWN"),
            }
        }

    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        model = request.match_info["call"].split(":")[0]
        config = body.get("generationConfig") or {}
        prompt = reply.input_tokens or request[TOKENS]
        usage: dict[str, Any] = {"promptTokenCount": prompt}
        if reply.cached_tokens:
            usage["cachedContentTokenCount"] = reply.cached_tokens
        common = {
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": self.next_id("resp-"),
        }
        if isinstance(behaviour, Filtered) and behaviour.prompt:
            usage["totalTokenCount"] = prompt
            return {"promptFeedback": {"blockReason": "SAFETY"}, **common}
        if isinstance(behaviour, Filtered):
            candidate: dict[str, Any] = {"finishReason": "SAFETY", "index": 0}
            usage["totalTokenCount"] = prompt
            return {"candidates": [candidate], **common}
        if isinstance(behaviour, Empty):
            text = ""
        elif isinstance(behaviour, Refusal):
            text = behaviour.text
        elif reply.text is not None:
            text = reply.text
        elif "responseJsonSchema" in config or "responseSchema" in config:
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            text = orjson.dumps(sample(schema)).decode()
        elif config.get("responseMimeType") == "application/json":
            text = orjson.dumps(DEFAULT_OBJECT).decode()
        else:
            text = f"Fake reply {self.requests} from {model}."
        out = reply.output_tokens or tokens(text)
        usage.update(candidatesTokenCount=out, totalTokenCount=prompt + out + reply.reasoning_tokens)
        if reply.reasoning_tokens:
            usage["thoughtsTokenCount"] = reply.reasoning_tokens
        parts: list[dict[str, object]] = [{"text": text}] if text else []
        if text and (config.get("thinkingConfig") or {}).get("includeThoughts"):
            parts.insert(0, {"text": "Weighing the request first.", "thought": True})
        return {
            "candidates": [
                {"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}
            ],
            **common,
        }


# ---------------------------------------------------------------------------------------
# A custom chatbot API
# ---------------------------------------------------------------------------------------


class FakeChatbot(FakeServer):
    """A product's chat API: `POST /api/chat` or `/api/sessions/{id}/reply`, bearer auth,
    answering `{"reply": {"text": ...}, "session": ...}`.

    With `contract` (body field -> "history" or "text"), the body must be exactly what the
    product documents, as `providers/my-chatbot-http.toml` describes it: those fields and
    no others, a history of `{role, content}` turns with the product's two role names,
    opening with the user and alternating, and text fields non-empty, the latest user
    message among them."""

    protocol = "http"
    PRODUCT: ClassVar[dict[str, str]] = {"session": "text", "history": "history", "message": "text"}

    def __init__(self, *, contract: dict[str, str] | None = None, **kwargs: Any) -> None:
        self.contract = contract
        super().__init__(**kwargs)

    def missing_credentials(self, request: web.Request) -> str | None:
        if self.key is None or request.headers.get("Authorization"):
            return None
        return "missing Authorization header"

    def problems(self, request: web.Request, body: dict[str, Any]) -> list[str]:
        if self.contract is None:
            return []
        problems = [f"unknown field {k!r}" for k in body if k not in self.contract]
        problems += [f"missing field {k!r}" for k in self.contract if k not in body]
        for key, kind in self.contract.items():
            if key not in body:
                continue
            value = body[key]
            if kind == "text" and (not isinstance(value, str) or not value):
                problems.append(f"{key}: a non-empty string")
            elif kind == "history":
                problems += _history_problems(key, value)
        return problems

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/api/chat", self.handle)
        app.router.add_post("/api/sessions/{session}/reply", self.handle)
        app.router.add_put("/api/chat", self.handle)

    def authorized(self, request: web.Request) -> bool:
        return self.key is None or request.headers.get("Authorization") == f"Bearer {self.key}"

    def error_payload(self, status: int, message: str, code: str | None) -> Any:
        return {"detail": message}

    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        if isinstance(behaviour, Empty | Filtered):
            return {"reply": {"text": ""}}
        if isinstance(behaviour, Refusal):
            text = behaviour.text
        else:
            text = reply.text or f"Bot reply {self.requests}."
        return {"reply": {"text": text}, "session": body.get("session")}


def _history_problems(key: str, history: Any) -> list[str]:
    if not isinstance(history, list) or not history:
        return [f"{key}: a non-empty list of turns"]
    problems = []
    previous = None
    for i, turn in enumerate(history):
        if not isinstance(turn, dict) or set(turn) != {"role", "content"}:
            problems.append(f"{key}[{i}]: a {{role, content}} object")
            continue
        role = turn["role"]
        if role not in ("user", "assistant"):
            problems.append(f"{key}[{i}].role: 'user' or 'assistant', got {role!r}")
        if (i == 0 and role != "user") or role == previous:
            problems.append(f"{key}[{i}]: turns open with the user and alternate")
        if not isinstance(turn["content"], str) or not turn["content"]:
            problems.append(f"{key}[{i}].content: a non-empty string")
        previous = role
    return problems


@contextlib.contextmanager
def serve_in_thread(*servers: FakeServer) -> Iterator[tuple[FakeServer, ...]]:
    """Run `servers` on their own event loop in a background thread.

    For tests that drive vera through its CLI: the command runs its own loop in the
    test's thread, so servers on the test's loop would never get to answer. Read the
    servers' counters once the command has returned."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fake-servers", daemon=True)
    thread.start()
    try:
        for server in servers:
            asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)
        yield servers
    finally:
        for server in servers:
            asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


SERVERS: dict[str, type[FakeServer]] = {
    "openai": FakeOpenAI,
    "anthropic": FakeAnthropic,
    "gemini": FakeGemini,
    "http": FakeChatbot,
}


async def _serve(args: argparse.Namespace) -> None:
    server = SERVERS[args.protocol](
        key=args.key or None,
        latency=args.latency_ms / 1000,
        rpm=args.rpm,
        port=args.port or None,
        record=False,
    )
    await server.start()
    print(server.base_url, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.close()


def main(argv: list[str] | None = None) -> None:
    """Serve one fake protocol until interrupted; prints its base URL first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("protocol", choices=sorted(SERVERS))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--rpm", type=float, default=None)
    parser.add_argument("--key", default="", help="required key (default: accept any)")
    args = parser.parse_args(argv)
    serve_until_interrupted(_serve(args))


if __name__ == "__main__":
    main()
