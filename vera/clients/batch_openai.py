"""OpenAI's Batch API on the wire: the JSONL input file, the batch object, the result files.

A batch is four kinds of request, all under the profile's base URL (`.../v1`):

    POST /files                 multipart: purpose=batch, file=<JSONL>   -> {"id": "file-..."}
    POST /batches               {"input_file_id", "endpoint", "completion_window": "24h"}
    GET  /batches/{id}          {"status", "output_file_id", "error_file_id", "request_counts"}
    GET  /files/{id}/content    the output (or error) JSONL

Each input line is `{"custom_id", "method": "POST", "url": "/v1/chat/completions",
"body": <the Chat Completions body a live call would send>}`. The provider's rules, which
`vera.clients.batching` keeps: `custom_id` unique within a file, one model per file, at
most 50,000 requests and 200 MB per file. Results come back in any order, one line per
request, matched by `custom_id`: `{"custom_id", "response": {"status_code", "body"},
"error"}` in the output file, failed and expired requests in the error file.

A batch's statuses: validating, in_progress, finalizing, completed, and the ends
failed (the file was refused), expired (not done within the window: what finished is in
the output file, the rest in the error file), cancelling, cancelled.

The request bodies are the live client's own (`OpenAIClient.request_body`), so a batch
asks exactly what live mode asks, and the replies are read by the live client's parser.

Azure OpenAI's global batch (`azure_openai` profiles) is the same API under the
resource, with three differences: every path is `{resource}/openai/...` with the
profile's `?api-version=` (2024-10-21 or later), the key goes in an `api-key` header, and
a line's (and the batch's) endpoint is `/chat/completions`, its `body.model` the name of
a Global-Batch deployment (the live body names none: the deployment is in the live URL).
Azure's limits: at most 100,000 requests and 200 MB per file, 500 batch files per
resource; statuses as OpenAI's.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import aiohttp
import msgspec

from vera.clients._transport import JSON_HEADERS, decode, encode, error_from_response, send
from vera.clients.base import ChatRequest
from vera.clients.openai import OpenAIClient, azure_deployment, reply_usage
from vera.errors import ConnectError, ProviderError
from vera.inputs import AzureOptions, Profile, redact
from vera.records import Completion, Usage

ENDPOINT = "/v1/chat/completions"
AZURE_ENDPOINT = "/chat/completions"
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
AZURE_MAX_REQUESTS = 100_000
# A batch's final statuses: OpenAI's (and Azure's), Anthropic's one "ended"
# (vera.clients.batch_anthropic) and Gemini's "succeeded" (vera.clients.batch_gemini).
ENDED = frozenset({"completed", "failed", "expired", "cancelled", "ended", "succeeded"})


# The codes of a failed batch's `errors.data` that a later batch may get past: the
# enqueued-token quota (Azure) and the service's own trouble. Any other code means the
# file or its lines were refused as they are (`invalid_request`, `model_not_found`,
# `invalid_json_line`, `duplicate_custom_id`, ...): sent again, they are refused again.
RETRYABLE_CODES = frozenset(
    {"token_limit_exceeded", "quota_exceeded", "server_error", "internal_error", "rate_limit_exceeded"}
)


# A line of the error file with one of these codes was not refused, only not done.
_REQUEUED_LINE_CODES = frozenset({None, "batch_expired", "batch_cancelled"}) | RETRYABLE_CODES


class _ErrorLine(msgspec.Struct):
    code: str | None = None
    message: str | None = None
    line: int | None = None


class _Errors(msgspec.Struct):
    data: list[_ErrorLine] = []


class BatchState(msgspec.Struct, kw_only=True):
    """What `GET /batches/{id}` says of a batch (the fields vera reads). `reason` is the
    provider's own account of a failed batch (OpenAI's and Azure's `errors.data`, a
    Gemini operation's `error`), "" when it gave none; `final` says that sending the
    same requests again cannot succeed (the batch failed validation)."""

    id: str
    status: str
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: _Errors | None = None
    reason: str = ""
    final: bool = False


def failure(state: BatchState) -> BatchState:
    """`state` with `reason` and `final` read from its `errors.data`: the first few
    distinct (code, message) pairs, each with how many lines it names."""
    lines = state.errors.data if state.errors is not None else []
    if not lines:
        return state
    seen: dict[tuple[str, str], int] = {}
    for e in lines:
        key = (e.code or "error", (e.message or "").strip())
        seen[key] = seen.get(key, 0) + 1
    parts = [
        f"{code}: {message}" + (f" ({n} lines)" if n > 1 else "")
        for (code, message), n in list(seen.items())[:3]
    ]
    if len(seen) > 3:
        parts.append(f"and {len(seen) - 3} more")
    final = all(code not in RETRYABLE_CODES for code, _ in seen)
    return msgspec.structs.replace(state, reason=redact("; ".join(parts))[:600], final=final)


class _File(msgspec.Struct):
    id: str


class _Response(msgspec.Struct):
    status_code: int = 0
    body: msgspec.Raw = msgspec.Raw(b"null")


class _Error(msgspec.Struct):
    code: str | None = None
    message: str | None = None


class _Line(msgspec.Struct):
    custom_id: str
    response: _Response | None = None
    error: _Error | None = None


class ItemResult(msgspec.Struct, frozen=True):
    """One request's result in a batch: its reply body, or why there is none. `final`:
    the provider refused the request as it is (a 4xx inside the batch, a batch that
    failed validation), so it is not sent in a batch again."""

    body: bytes | None = None
    error: str = ""
    final: bool = False


class BatchResults(msgspec.Struct):
    """Every result of an ended batch: by custom_id, and the answers that arrived without
    a custom_id vera can match (billed all the same, so they are accounted for);
    `warnings` say what the results lacked (e.g. keys matched by position)."""

    items: dict[str, ItemResult] = msgspec.field(default_factory=dict)
    unmatched: list[bytes] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)
    by_position: int = 0  # answers without their key, matched by their position


class OpenAIBatchAPI:
    """The Batch API of one `openai` (or `azure_openai`) profile and model; `live` is the
    same model's Chat Completions client, which encodes the bodies and parses the replies."""

    __slots__ = ("_base", "_endpoint", "_headers", "_model", "_query", "_session", "live", "name")

    def __init__(
        self,
        session: aiohttp.ClientSession,
        profile: Profile,
        live: OpenAIClient,
        key: str | None,
        *,
        model: str = "",
    ) -> None:
        self._session = session
        self._headers = dict(JSON_HEADERS)
        if profile.protocol == "azure_openai":
            azure = profile.azure or AzureOptions()
            self._base = f"{profile.endpoint}/openai"
            self._query = f"?api-version={quote(azure.api_version, safe='')}"
            self._endpoint = AZURE_ENDPOINT
            # Each line names its Global-Batch deployment, which the live body leaves out:
            # `[azure] batch_deployment` for the profile's own model, else the live one's.
            model = model or profile.model
            own = azure.batch_deployment if azure.batch_deployment and model == profile.model else ""
            self._model: str | None = own or azure_deployment(profile, model)
            if key:
                self._headers["api-key"] = key
        else:
            self._base = profile.endpoint
            self._query = ""
            self._endpoint = ENDPOINT
            self._model = None
            if key:
                self._headers["Authorization"] = f"Bearer {key}"
        self.live = live
        self.name = profile.name

    def __repr__(self) -> str:
        return f"OpenAIBatchAPI(name={self.name!r}, base={self._base!r})"

    def _url(self, path: str) -> str:
        return f"{self._base}{path}{self._query}"

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        body = self.live.encode_request(request)
        if self._model is not None:
            body = {"model": self._model, **body}
        return body

    def line(self, custom_id: str, request: ChatRequest) -> bytes:
        """The input-file line for one request (no newline)."""
        return encode(
            {"custom_id": custom_id, "method": "POST", "url": self._endpoint, "body": self._body(request)}
        )

    def body_key(self, request: ChatRequest) -> bytes:
        """What identifies a request: its wire body (the custom_id is a hash of it)."""
        return encode(self._body(request))

    def parse(self, body: bytes, request: ChatRequest) -> Completion:
        return self.live.decode_reply(body, request)

    async def submit(self, lines: list[bytes]) -> str:
        """Upload one input file and create its batch; returns the batch id."""
        data = aiohttp.FormData()
        data.add_field("purpose", "batch")
        data.add_field(
            "file", b"\n".join(lines) + b"\n", filename="vera-batch.jsonl", content_type="application/jsonl"
        )
        headers = {k: v for k, v in self._headers.items() if k != "Content-Type"}
        raw = await self._request("POST", self._url("/files"), data=data, headers=headers)
        file_id = decode(raw, _File, self.name).id
        body = encode({"input_file_id": file_id, "endpoint": self._endpoint, "completion_window": "24h"})
        raw = await send(
            self._session, self._url("/batches"), body, headers=self._headers, provider=self.name
        )
        return decode(raw, BatchState, self.name).id

    def usage(self, body: bytes) -> Usage:
        return reply_usage(body, self.name)

    async def state(self, batch_id: str) -> BatchState:
        raw = await send(
            self._session, self._url(f"/batches/{quote(batch_id, safe='')}"), b"", headers=self._headers,
            provider=self.name, method="GET",
        )  # fmt: skip
        return failure(decode(raw, BatchState, self.name))

    async def results(self, state: BatchState, order: list[str]) -> BatchResults:
        """Every result of an ended batch by custom_id: replies from the output file,
        failures (expired, refused, a non-2xx answer) from both files. A failed batch
        has neither: each of its requests gets the batch's reason."""
        out: dict[str, ItemResult] = {}
        if state.status == "failed" and state.reason:
            error = ItemResult(error=f"batch {state.id} failed: {state.reason}", final=state.final)
            return BatchResults(items=dict.fromkeys(order, error))
        for file_id in (state.output_file_id, state.error_file_id):
            if not file_id:
                continue
            raw = await send(
                self._session, self._url(f"/files/{quote(file_id, safe='')}/content"), b"", headers=self._headers,
                provider=self.name, method="GET",
            )  # fmt: skip
            for text in raw.splitlines():
                if not text.strip():
                    continue
                line = decode(text, _Line, self.name)
                out[line.custom_id] = _item(line)
        return BatchResults(items=out)

    async def _request(self, method: str, url: str, *, data: Any, headers: dict[str, str]) -> bytes:
        try:
            async with self._session.request(method, url, data=data, headers=headers) as response:
                raw = await response.read()
                if response.status >= 300:
                    raise error_from_response(self.name, response.status, response.headers, raw)
                return raw
        except ProviderError:
            raise
        except (aiohttp.ClientError, OSError) as exc:
            raise ConnectError(self.name, f"{type(exc).__name__}: {redact(str(exc))}") from None


def _item(line: _Line) -> ItemResult:
    response = line.response
    if response is not None and 200 <= response.status_code < 300:
        return ItemResult(body=bytes(response.body))
    status = response.status_code if response is not None else 0
    # A 4xx the request will meet again (not a rate limit, a timeout or a conflict).
    final = 400 <= status < 500 and status not in (408, 409, 425, 429)
    if line.error is not None:
        error = f"{line.error.code or 'error'}: {line.error.message or ''}".strip()
        return ItemResult(error=error, final=final or line.error.code not in _REQUEUED_LINE_CODES)
    detail = _response_error(response)
    return ItemResult(error=f"HTTP {status} inside the batch{detail}", final=final)


def _response_error(response: _Response | None) -> str:
    """The message of an error reply inside a batch (`response.body.error.message`)."""
    if response is None:
        return ""
    try:
        body = msgspec.json.decode(bytes(response.body), type=_ErrorBody)
    except msgspec.DecodeError:
        return ""
    error = body.error
    return f": {redact(error.message)[:300]}" if error is not None and error.message else ""


class _ErrorBody(msgspec.Struct):
    error: _Error | None = None
