"""The Gemini API's batch mode on the wire: inline requests for a small wave, a JSONL
file for a big one.

    POST /v1beta/models/{model}:batchGenerateContent
         {"batch": {"displayName", "inputConfig": {"requests": {"requests": [
             {"request": <a GenerateContentRequest>, "metadata": {"key": <custom_id>}}]}}}}
         or {"batch": {"displayName", "inputConfig": {"fileName": "files/..."}}}
         -> a long-running operation {"name": "batches/...", "metadata": {"state", ...}}
    GET  /v1beta/batches/{id}
         -> {"name", "metadata": {"state": BATCH_STATE_PENDING | RUNNING | SUCCEEDED |
             FAILED | CANCELLED | EXPIRED, "output"}, "done", "response": {"inlinedResponses":
             {"inlinedResponses": [{"metadata": {"key"}, "response" | "error"}]}} or
             {"responsesFile": "files/..."}}
    GET  /download/v1beta/files/{id}:download?alt=media    the responses file (JSONL)

The key goes in the `x-goog-api-key` header, as live. The model is in the URL, so a
batch holds one model (vera batches each judge model apart). The API takes inline
requests up to 20 MB per create call, and recommends a file for more: a wave that fits
goes inline, a bigger one is uploaded through the File API's resumable upload (`POST
/upload/v1beta/files`, start then `upload, finalize`; lines `{"key", "request"}`, up to
2 GB a file) and named by `fileName`. Each result carries back its request's key
(vera's custom_id); one that comes back without it is matched by its position (the API
documents the results in the order of the requests; `results`). A batch not done within 48 hours ends
EXPIRED; its requests go to the next wave like any request a batch did not answer. The
`request` is the live client's own generateContent body, so a batch asks what live mode
asks, and each `response` is read by the live client's parser.

The states are reported as the API names them, lower-cased without the prefix
(`pending`, `running`, `succeeded`, ...); the SDKs' JOB_STATE_* spelling is read too.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit, urlunsplit

import aiohttp
import msgspec

from vera.clients._transport import decode, encode, error_from_response, send
from vera.clients.base import ChatRequest
from vera.clients.batch_openai import BatchResults, BatchState, ItemResult
from vera.clients.gemini import GeminiClient, reply_usage
from vera.errors import BadResponseError, ConnectError, ProviderError
from vera.inputs import redact
from vera.records import Completion, Usage

# Inline requests: at most 20 MB for the whole create call (the lines, less the envelope).
INLINE_BYTES = 20 * 1000 * 1000 - 64 * 1024
# A file of requests: at most 2 GB.
MAX_BYTES = 2 * 1000 * 1000 * 1000
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


class _FileLine(msgspec.Struct):
    """A line of the requests file (vera writes `line`s in this form) or of the
    responses file."""

    key: str = ""
    request: msgspec.Raw = msgspec.Raw(b"null")
    response: msgspec.Raw = msgspec.Raw(b"null")
    error: _Status | None = None


class _File(msgspec.Struct):
    name: str


class _Uploaded(msgspec.Struct):
    file: _File


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

    __slots__ = ("_base", "_create", "_ended", "_headers", "_root", "_session", "live", "name")

    def __init__(self, session: aiohttp.ClientSession, base: str, live: GeminiClient) -> None:
        self._session = session
        self._base = base
        self._root = f"{base}/v1beta"
        self._create = f"{self._root}/models/{quote(live.model, safe='')}:batchGenerateContent"
        self._headers = live.headers()
        self.live = live
        self.name = live.name
        # The output of each batch a poll found ended, for `results`.
        self._ended: dict[str, _Output | None] = {}

    def __repr__(self) -> str:
        return f"GeminiBatchAPI(name={self.name!r}, url={self._create!r})"

    def line(self, custom_id: str, request: ChatRequest) -> bytes:
        """The request as a line of a requests file, `{"key", "request"}` (re-wrapped as
        `{"request", "metadata": {"key"}}` when the wave goes inline)."""
        return encode({"key": custom_id, "request": self.live.encode_request(request)})

    def body_key(self, request: ChatRequest) -> bytes:
        return encode(self.live.encode_request(request))

    def parse(self, body: bytes, request: ChatRequest) -> Completion:
        return self.live.decode_reply(body, request)

    def usage(self, body: bytes) -> Usage:
        return reply_usage(body, self.name)

    async def submit(self, lines: list[bytes]) -> str:
        display = encode(f"vera-{self.live.model}")
        if sum(len(line) + 16 for line in lines) <= INLINE_BYTES:
            items = []
            for text in lines:
                line = msgspec.json.decode(text, type=_FileLine)
                items.append(
                    b'{"request":' + bytes(line.request) + b',"metadata":{"key":' + encode(line.key) + b"}}"
                )
            source = b'{"requests":{"requests":[' + b",".join(items) + b"]}}"
        else:
            source = b'{"fileName":' + encode(await self._upload(b"\n".join(lines) + b"\n")) + b"}"
        body = b'{"batch":{"displayName":' + display + b',"inputConfig":' + source + b"}}"
        raw = await send(self._session, self._create, body, headers=self._headers, provider=self.name)
        return decode(raw, _Operation, self.name).name

    async def _upload(self, content: bytes) -> str:
        """Upload a requests file (the File API's resumable upload, in one piece); its
        name, `files/...`."""
        start = {
            **self._headers,
            "X-Goog-Upload-Protocol": "resumable",
            "X-Goog-Upload-Command": "start",
            "X-Goog-Upload-Header-Content-Length": str(len(content)),
            "X-Goog-Upload-Header-Content-Type": "application/jsonl",
        }
        body = encode({"file": {"displayName": f"vera-{self.live.model}-requests"}})
        headers, _ = await self._request(f"{self._base}/upload/v1beta/files", body, start)
        url = headers.get("x-goog-upload-url")
        if not url:
            raise BadResponseError(self.name, "the File API gave no upload URL")
        # The upload URL on the profile's host (as the SDKs do): a proxy's base URL holds.
        base = urlsplit(self._base)
        url = urlunsplit(urlsplit(url)._replace(scheme=base.scheme, netloc=base.netloc))
        finish = {
            **self._headers,
            "X-Goog-Upload-Command": "upload, finalize",
            "X-Goog-Upload-Offset": "0",
            "Content-Type": "application/jsonl",
        }
        _, raw = await self._request(url, content, finish)
        return decode(raw, _Uploaded, self.name).file.name

    async def _request(self, url: str, body: bytes, headers: dict[str, str]) -> tuple[dict[str, str], bytes]:
        try:
            async with self._session.post(url, data=body, headers=headers) as response:
                raw = await response.read()
                if response.status >= 300:
                    raise error_from_response(self.name, response.status, response.headers, raw)
                return {k.lower(): v for k, v in response.headers.items()}, raw
        except ProviderError:
            raise
        except (aiohttp.ClientError, OSError) as exc:
            raise ConnectError(self.name, f"{type(exc).__name__}: {redact(str(exc))}") from None

    async def state(self, batch_id: str) -> BatchState:
        raw = await send(
            self._session, f"{self._root}/{quote(batch_id, safe='/')}", b"", headers=self._headers,
            provider=self.name, method="GET",
        )  # fmt: skip
        op = decode(raw, _Operation, self.name)
        status = status_of(op.metadata.state if op.metadata else "")
        reason, final = "", False
        if status in ("succeeded", "failed", "cancelled", "expired"):
            self._ended[batch_id] = op.response or (op.metadata.output if op.metadata else None)
            if op.error is not None and (op.error.code or op.error.message):
                reason = redact(f"error {op.error.code}: {op.error.message}".strip())[:600]
                final = op.error.code in _REFUSED
        return BatchState(id=batch_id, status=status, reason=reason, final=final)

    async def results(self, state: BatchState, order: list[str]) -> BatchResults:
        """The ended batch's answers, inline or from its responses file (none for a
        failed, cancelled or expired batch that returned none: its requests go to the
        next wave, or, refused as invalid, nowhere).

        Each answer carries its request's key back. The service has been seen to drop
        `metadata` from inline answers; the API documents both inline answers and the
        responses file as in the order of the requests, so an answer without a key is
        matched by its position in `order` (the custom_ids as submitted), with a warning
        naming how many were. Answers that can be matched neither way are returned as
        `unmatched`: they are billed, so they are accounted for."""
        out = BatchResults()
        if state.status == "failed" and state.reason:
            refused = ItemResult(error=f"batch {state.id} failed: {state.reason}", final=state.final)
            out.items.update(dict.fromkeys(order, refused))
        output = self._ended.pop(state.id, None)
        if output is None:
            return out
        answers: list[tuple[str, bytes, _Status | None]] = []
        listed = output.inlined_responses
        for inlined in listed.inlined_responses if listed is not None else []:
            key = inlined.metadata.key if inlined.metadata is not None else ""
            answers.append((key, bytes(inlined.response), inlined.error))
        if output.responses_file:
            url = f"{self._base}/download/v1beta/{quote(output.responses_file, safe='/')}:download?alt=media"
            raw = await send(self._session, url, b"", headers=self._headers, provider=self.name, method="GET")
            for text in raw.splitlines():
                if text.strip():
                    line = decode(text, _FileLine, self.name)
                    answers.append((line.key, bytes(line.response), line.error))
        by_position = len(answers) == len(order) and _in_order(answers, order)
        guessed = 0
        for i, (key, body, error) in enumerate(answers):
            if not key and by_position:
                key, guessed = order[i], guessed + 1
            if key:
                out.items[key] = _answer(body, error)
            elif body != b"null" and error is None:
                out.unmatched.append(body)
        out.by_position = guessed
        if guessed:
            out.warnings.append(
                f"batch {state.id}: {guessed} of {len(answers)} answers came back without their key "
                "(metadata.key); matched by their position, which the API documents as the order of the requests"
            )
        if out.unmatched:
            why = (
                "the answers that kept their key are out of the order of the requests"
                if len(answers) == len(order)
                else f"{len(answers)} answers for {len(order)} requests"
            )
            out.warnings.append(
                f"batch {state.id}: {len(out.unmatched)} answers came back without their key and cannot "
                f"be matched by position ({why}): they are billed and recorded, their requests asked again"
            )
        return out


def _in_order(answers: list[tuple[str, bytes, _Status | None]], order: list[str]) -> bool:
    """Whether the answers that kept their key stand where their requests stood: only
    then is the position of those that lost theirs evidence of which request they
    answer. (With no key at all there is no evidence either way, and the API's word
    on the order is taken.)"""
    return all(not key or key == order[i] for i, (key, _, _) in enumerate(answers))


# google.rpc codes (and HTTP statuses) of a request refused as it is: INVALID_ARGUMENT,
# FAILED_PRECONDITION, NOT_FOUND, PERMISSION_DENIED.
_REFUSED = frozenset({3, 9, 5, 7, 400, 403, 404})


def _answer(body: bytes, error: _Status | None) -> ItemResult:
    if body != b"null" and error is None:
        return ItemResult(body=body)
    error = error or _Status()
    return ItemResult(error=f"error {error.code}: {error.message}".strip(), final=error.code in _REFUSED)
