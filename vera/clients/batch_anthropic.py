"""Anthropic's Message Batches on the wire.

    POST /v1/messages/batches               {"requests": [{"custom_id", "params": <a Messages body>}]}
    GET  /v1/messages/batches/{id}          {"processing_status": in_progress | canceling | ended,
                                             "results_url"}
    GET  {results_url}                      JSONL: {"custom_id", "result": {"type": succeeded |
                                             errored | canceled | expired, "message" | "error"}}

No file upload: the requests travel in the create call (at most 100,000 requests and
256 MB per batch). `custom_id` is unique within a batch and matches `[A-Za-z0-9_-]{1,64}`
(vera's `vera-` + 40 hex digits does). Results come in any order. `params` is the live
client's own Messages body, cache marks included, so a batch asks what live mode asks.
"""

from __future__ import annotations

import aiohttp
import msgspec

from vera.clients._transport import decode, encode, send
from vera.clients.anthropic import AnthropicClient, reply_usage
from vera.clients.base import ChatRequest
from vera.clients.batch_openai import BatchResults, BatchState, ItemResult
from vera.inputs import redact
from vera.records import Completion, Usage

MAX_REQUESTS = 100_000
MAX_BYTES = 256 * 1024 * 1024


class _Batch(msgspec.Struct):
    id: str
    processing_status: str
    results_url: str | None = None


class _Result(msgspec.Struct):
    type: str
    message: msgspec.Raw = msgspec.Raw(b"null")
    error: msgspec.Raw = msgspec.Raw(b"null")


class _Line(msgspec.Struct):
    custom_id: str
    result: _Result


class AnthropicBatchAPI:
    """The Message Batches API of one `anthropic` profile and model; `live` is the same
    model's Messages client (its headers, its bodies, its parser)."""

    __slots__ = ("_base", "_headers", "_session", "live", "name")

    def __init__(self, session: aiohttp.ClientSession, base: str, live: AnthropicClient) -> None:
        self._session = session
        self._base = f"{base}/v1/messages/batches"
        self._headers = live.headers()
        self.live = live
        self.name = live.name

    def __repr__(self) -> str:
        return f"AnthropicBatchAPI(name={self.name!r}, url={self._base!r})"

    def line(self, custom_id: str, request: ChatRequest) -> bytes:
        return encode({"custom_id": custom_id, "params": self.live.encode_request(request)})

    def body_key(self, request: ChatRequest) -> bytes:
        return encode(self.live.encode_request(request))

    def parse(self, body: bytes, request: ChatRequest) -> Completion:
        return self.live.decode_reply(body, request)

    def usage(self, body: bytes) -> Usage:
        return reply_usage(body, self.name)

    async def submit(self, lines: list[bytes]) -> str:
        body = b'{"requests":[' + b",".join(lines) + b"]}"
        raw = await send(self._session, self._base, body, headers=self._headers, provider=self.name)
        return decode(raw, _Batch, self.name).id

    async def state(self, batch_id: str) -> BatchState:
        raw = await send(
            self._session, f"{self._base}/{batch_id}", b"", headers=self._headers,
            provider=self.name, method="GET",
        )  # fmt: skip
        batch = decode(raw, _Batch, self.name)
        # "ended" whatever became of each request: the results say, line by line.
        return BatchState(id=batch.id, status=batch.processing_status, output_file_id=batch.results_url)

    async def results(self, state: BatchState, order: list[str]) -> BatchResults:
        if not state.output_file_id:
            return BatchResults()
        raw = await send(
            self._session, state.output_file_id, b"", headers=self._headers, provider=self.name, method="GET"
        )
        out: dict[str, ItemResult] = {}
        for text in raw.splitlines():
            if text.strip():
                line = decode(text, _Line, self.name)
                result = line.result
                if result.type == "succeeded":
                    out[line.custom_id] = ItemResult(body=bytes(result.message))
                else:
                    error = bytes(result.error)
                    out[line.custom_id] = ItemResult(
                        error=f"{result.type}: {redact(error.decode(errors='replace'))[:300]}",
                        # the request itself was refused: it is refused again if resent
                        final=result.type == "errored" and b"invalid_request_error" in error,
                    )
        return BatchResults(items=out)
