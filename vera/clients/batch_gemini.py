"""The Gemini API's batch mode on the wire (inline requests).

    POST /v1beta/models/{model}:batchGenerateContent
         {"batch": {"displayName", "inputConfig": {"requests": {"requests": [
             {"request": <a GenerateContentRequest>, "metadata": {"key": <custom_id>}}]}}}}
         -> a long-running operation {"name": "batches/...", "metadata": {"state", ...}}
    GET  /v1beta/batches/{id}
         -> {"name", "metadata": {"state": BATCH_STATE_PENDING | RUNNING | SUCCEEDED |
             FAILED | CANCELLED | EXPIRED, "output"}, "done", "response": {"inlinedResponses":
             {"inlinedResponses": [{"metadata": {"key"}, "response" | "error"}]}}}

The key goes in the `x-goog-api-key` header, as live. The model is in the URL, so a
batch holds one model (vera batches each judge model apart). vera sends the requests
inline, which the API takes up to 20 MB per create call: a bigger wave is cut into
several batches (the file variant, for waves of gigabytes, is not used). Each result
carries back its request's `metadata.key` (vera's custom_id) and comes in any order as
far as vera cares. A batch not done within 48 hours ends EXPIRED; its requests go to
the next wave like any request a batch did not answer. The `request` is the live
client's own generateContent body, so a batch asks what live mode asks, and each
`response` is read by the live client's parser.

The states are reported as the API names them, lower-cased without the prefix
(`pending`, `running`, `succeeded`, ...); the SDKs' JOB_STATE_* spelling is read too.
"""

from __future__ import annotations

from urllib.parse import quote

import aiohttp
import msgspec

from vera.clients._transport import decode, encode, send
from vera.clients.base import ChatRequest
from vera.clients.batch_openai import BatchState, ItemResult
from vera.clients.gemini import GeminiClient
from vera.records import Completion

# The inline limit is 20 MB for the whole create call: the lines, less the envelope.
MAX_BYTES = 20 * 1000 * 1000 - 64 * 1024
MAX_REQUESTS = 50_000


class _Key(msgspec.Struct):
    key: str = ""


class _Status(msgspec.Struct):
    code: int = 0
    message: str = ""


class _Inlined(msgspec.Struct):
    metadata: _Key | None = None
    response: msgspec.Raw = msgspec.Raw(b"null")
    error: _Status | None = None


class _InlinedList(msgspec.Struct, rename="camel"):
    inlined_responses: list[_Inlined] = []


class _Output(msgspec.Struct, rename="camel"):
    inlined_responses: _InlinedList | None = None
    responses_file: str | None = None


class _Metadata(msgspec.Struct, rename="camel"):
    state: str = ""
    output: _Output | None = None


class _Operation(msgspec.Struct):
    name: str
    metadata: _Metadata | None = None
    done: bool = False
    response: _Output | None = None
    error: _Status | None = None


def status_of(state: str) -> str:
    """`BATCH_STATE_SUCCEEDED` (or the SDKs' `JOB_STATE_SUCCEEDED`) -> `succeeded`."""
    return state.removeprefix("BATCH_STATE_").removeprefix("JOB_STATE_").lower() or "pending"


class GeminiBatchAPI:
    """The batch mode of one `gemini` profile and model; `live` is the same model's
    generateContent client (its headers, bodies and parser)."""

    __slots__ = ("_create", "_ended", "_headers", "_root", "_session", "live", "name")

    def __init__(self, session: aiohttp.ClientSession, base: str, live: GeminiClient) -> None:
        self._session = session
        self._root = f"{base}/v1beta"
        self._create = f"{self._root}/models/{quote(live.model, safe='')}:batchGenerateContent"
        self._headers = live.headers()
        self.live = live
        self.name = live.name
        # The last poll's results of each ended batch, for `results` (no second GET).
        self._ended: dict[str, dict[str, ItemResult]] = {}

    def __repr__(self) -> str:
        return f"GeminiBatchAPI(name={self.name!r}, url={self._create!r})"

    def line(self, custom_id: str, request: ChatRequest) -> bytes:
        return encode({"request": self.live.encode_request(request), "metadata": {"key": custom_id}})

    def body_key(self, request: ChatRequest) -> bytes:
        return encode(self.live.encode_request(request))

    def parse(self, body: bytes, request: ChatRequest) -> Completion:
        return self.live.decode_reply(body, request)

    async def submit(self, lines: list[bytes]) -> str:
        head = encode({"displayName": f"vera-{self.live.model}"})[:-1]  # the object, left open
        body = head + b',"inputConfig":{"requests":{"requests":[' + b",".join(lines) + b"]}}}"
        raw = await send(
            self._session, self._create, b'{"batch":' + body + b"}", headers=self._headers, provider=self.name
        )
        return decode(raw, _Operation, self.name).name

    async def state(self, batch_id: str) -> BatchState:
        raw = await send(
            self._session, f"{self._root}/{quote(batch_id, safe='/')}", b"", headers=self._headers,
            provider=self.name, method="GET",
        )  # fmt: skip
        op = decode(raw, _Operation, self.name)
        status = status_of(op.metadata.state if op.metadata else "")
        output = op.response or (op.metadata.output if op.metadata else None)
        if status in ("succeeded", "failed", "cancelled", "expired"):
            self._ended[batch_id] = _results(output)
        return BatchState(id=batch_id, status=status)

    async def results(self, state: BatchState) -> dict[str, ItemResult]:
        """The ended batch's answers by key (none for a failed, cancelled or expired one
        that returned none: its requests go to the next wave)."""
        return self._ended.pop(state.id, {})


def _results(output: _Output | None) -> dict[str, ItemResult]:
    out: dict[str, ItemResult] = {}
    listed = output.inlined_responses if output is not None else None
    for item in listed.inlined_responses if listed is not None else []:
        key = item.metadata.key if item.metadata is not None else ""
        if not key:
            continue  # not one of vera's: nothing to match it to
        body = bytes(item.response)
        if body != b"null" and item.error is None:
            out[key] = ItemResult(body=body)
        else:
            error = item.error or _Status()
            out[key] = ItemResult(error=f"error {error.code}: {error.message}".strip())
    return out
