"""OpenAI's Batch API on loopback, answering like the sweep server's live judge.

`BatchSweepServer` is `SweepServer` (the deterministic OpenAI-compatible server of
tests/fakes/sweep.py) plus the Files and Batches endpoints:

    POST /v1/files                multipart purpose=batch + file (JSONL)
    POST /v1/batches              {input_file_id, endpoint, completion_window}
    GET  /v1/batches/{id}         validating -> in_progress -> finalizing -> completed,
                                  after `polls_to_complete` polls (or expired, failed)
    GET  /v1/files/{id}/content   the output or error JSONL

It keeps the rules OpenAI documents, and a file that breaks one makes the batch
*failed* with the reason in its `errors` (as the real API does after validating), and is
noted in `violations`: custom_id unique within the file, one model per file, every
line's method POST and url the batch's endpoint, at most `max_requests` lines and
`max_bytes` bytes, purpose "batch", completion_window "24h", endpoint
/v1/chat/completions.

Every line is answered by the live handler's own logic over the line's exact body
bytes, so a batched request gets the reply the same request gets live. Results come back
shuffled (order is not guaranteed). `expire_rate` makes a share of the requests (by a
hash of their custom_id, on their first submission only) expire: the batch ends
"expired", those requests in the error file with code batch_expired.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson
from aiohttp import web

from vera.records import Message

from .answering import AnsweringAnthropic
from .protocols import TOKENS, Reply
from .rules import anthropic_problems
from .sweep import KEY, SweepServer

ENDPOINT = "/v1/chat/completions"


class _Line(msgspec.Struct, forbid_unknown_fields=True):
    custom_id: str
    method: str
    url: str
    body: msgspec.Raw


@dataclass
class FakeBatch:
    id: str
    file_id: str
    lines: list[_Line]
    status: str = "validating"
    polls: int = 0
    errors: list[str] = field(default_factory=list)
    output_file_id: str | None = None
    error_file_id: str | None = None


@dataclass
class BatchSweepServer(SweepServer):
    polls_to_complete: int = 2
    expire_rate: float = 0.0
    max_requests: int = 50_000
    max_bytes: int = 200 * 1024 * 1024
    shuffle_seed: int = 0
    files: dict[str, bytes] = field(default_factory=dict)
    purposes: dict[str, str] = field(default_factory=dict)
    batches: dict[str, FakeBatch] = field(default_factory=dict)
    created: list[tuple[str, list[str]]] = field(default_factory=list)  # (batch id, custom_ids) in order
    submitted: Counter[str] = field(default_factory=Counter)  # custom_id -> times in a created batch
    polls: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._batch_lock = threading.Lock()
        self._shuffle = random.Random(self.shuffle_seed)

    def routes(self, app: web.Application) -> None:
        super().routes(app)
        app.router.add_post("/v1/files", self.upload)
        app.router.add_post("/v1/batches", self.create)
        app.router.add_get("/v1/batches/{id}", self.retrieve)
        app.router.add_get("/v1/files/{id}/content", self.content)

    # -- the endpoints -----------------------------------------------------------------

    def _refused(self, request: web.Request) -> web.Response | None:
        if request.headers.get("Authorization") != f"Bearer {KEY}":
            return _error(401, "bad key")
        return None

    async def upload(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        form = await request.post()
        purpose, upload = form.get("purpose"), form.get("file")
        if not isinstance(purpose, str) or not isinstance(upload, web.FileField):
            return _error(400, "purpose and file are required")
        with self._batch_lock:
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = upload.file.read()
            self.purposes[file_id] = purpose
        return web.json_response({"id": file_id, "object": "file", "purpose": purpose})

    async def create(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        body = await request.json()
        file_id = body.get("input_file_id")
        if file_id not in self.files:
            return _error(400, f"no file {file_id!r}")
        problems = []
        if body.get("endpoint") != ENDPOINT:
            problems.append(f"endpoint {body.get('endpoint')!r} is not supported")
        if body.get("completion_window") != "24h":
            problems.append("completion_window must be 24h")
        if self.purposes[file_id] != "batch":
            problems.append("the input file's purpose is not batch")
        raw = self.files[file_id]
        lines: list[_Line] = []
        problems += self._validate(raw, lines)
        with self._batch_lock:
            batch = FakeBatch(id=f"batch_{len(self.batches) + 1}", file_id=file_id, lines=lines)
            self.batches[batch.id] = batch
            if problems:
                batch.errors = problems
                self.violations.extend(problems)
            else:
                ids = [line.custom_id for line in lines]
                self.created.append((batch.id, ids))
                self.submitted.update(ids)
        return web.json_response(self._object(batch))

    def _validate(self, raw: bytes, lines: list[_Line]) -> list[str]:
        problems = []
        if len(raw) > self.max_bytes:
            problems.append(f"file of {len(raw)} bytes is over {self.max_bytes}")
        models: set[str] = set()
        seen: set[str] = set()
        for n, text in enumerate(raw.splitlines(), 1):
            try:
                line = msgspec.json.decode(text, type=_Line)
            except msgspec.DecodeError as exc:
                problems.append(f"line {n}: {exc}")
                continue
            if line.custom_id in seen:
                problems.append(f"line {n}: duplicate custom_id {line.custom_id}")
            seen.add(line.custom_id)
            if line.method != "POST" or line.url != ENDPOINT:
                problems.append(f"line {n}: {line.method} {line.url} is not the batch's endpoint")
            models.add(orjson.loads(bytes(line.body)).get("model", ""))
            lines.append(line)
        if len(lines) > self.max_requests:
            problems.append(f"{len(lines)} requests, over {self.max_requests}")
        if len(models) > 1:
            problems.append(f"more than one model in one file: {sorted(models)}")
        return problems

    async def retrieve(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, "no such batch")
        with self._batch_lock:
            self.polls[batch.id] += 1
            batch.polls += 1
            if batch.errors:
                batch.status = "failed"
            elif batch.status not in ("completed", "expired"):
                if batch.polls >= self.polls_to_complete:
                    self._finish(batch)
                else:
                    batch.status = ("validating", "in_progress", "finalizing")[min(batch.polls - 1, 2)]
        return web.json_response(self._object(batch))

    async def content(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        raw = self.files.get(request.match_info["id"])
        if raw is None:
            return _error(404, "no such file")
        return web.Response(body=raw, content_type="application/octet-stream")

    # -- answering ---------------------------------------------------------------------

    def _finish(self, batch: FakeBatch) -> None:
        """Answer every line as the live endpoint would (expiring some), in shuffled order."""
        out: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for line in batch.lines:
            raw = bytes(line.body)
            if self._expires(line.custom_id):
                self.expired.append(line.custom_id)
                errors.append(
                    {
                        "id": f"batch_req_{len(errors)}",
                        "custom_id": line.custom_id,
                        "response": None,
                        "error": {"code": "batch_expired", "message": "not completed within the window"},
                    }
                )
                continue
            out.append(
                {
                    "id": f"batch_req_{len(out)}",
                    "custom_id": line.custom_id,
                    "response": self._answer(raw),
                    "error": None,
                }
            )
        self._shuffle.shuffle(out)
        batch.status = "expired" if errors else "completed"
        if out:
            batch.output_file_id = self._store(out)
        if errors:
            batch.error_file_id = self._store(errors)

    def _expires(self, custom_id: str) -> bool:
        if not self.expire_rate or self.submitted[custom_id] > 1:
            return False
        h = int(hashlib.sha256(custom_id.encode()).hexdigest()[:8], 16)
        return h / 0xFFFFFFFF < self.expire_rate

    def _answer(self, raw: bytes) -> dict[str, Any]:
        body = orjson.loads(raw)
        key = hashlib.sha256(raw).hexdigest()
        model = body["model"]
        with self._lock:
            self.requests[key] += 1
            self.by_role[model] += 1
        messages = [Message(m["role"], m["content"]) for m in body["messages"]]
        text = self.reply(model, messages, key)
        return {
            "status_code": 200,
            "request_id": f"req-{key[:12]}",
            "body": self.completion(f"resp-{key[:12]}-{self.requests[key]}", model, text, raw, body),
        }

    def _store(self, rows: list[dict[str, Any]]) -> str:
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = b"".join(orjson.dumps(r) + b"\n" for r in rows)
        self.purposes[file_id] = "batch_output"
        return file_id

    def _object(self, batch: FakeBatch) -> dict[str, Any]:
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": ENDPOINT,
            "input_file_id": batch.file_id,
            "completion_window": "24h",
            "status": batch.status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "errors": {"data": [{"message": e} for e in batch.errors]} if batch.errors else None,
            "request_counts": {"total": len(batch.lines), "completed": 0, "failed": 0},
        }


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "invalid_request_error"}}, status=status)


_CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class AnthropicBatchFake(AnsweringAnthropic):
    """Anthropic's Message Batches on top of the answering Messages fake:

        POST /v1/messages/batches              {"requests": [{"custom_id", "params"}]}
        GET  /v1/messages/batches/{id}         processing_status in_progress -> ended
        GET  /v1/messages/batches/{id}/results JSONL, shuffled

    Each request's `params` is checked by the same rules as a live Messages request and
    answered by the same logic; `custom_id` must be unique in the batch and match
    [A-Za-z0-9_-]{1,64}; at most `max_requests` requests. A batch that breaks a rule is
    refused with 400 and the rule goes to `violations`."""

    def __init__(self, *, polls_to_complete: int = 2, max_requests: int = 100_000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.polls_to_complete = polls_to_complete
        self.max_requests = max_requests
        self.batches: dict[str, dict[str, Any]] = {}
        self.created: list[tuple[str, list[str]]] = []
        self.submitted: Counter[str] = Counter()
        self._shuffle = random.Random(0)

    def routes(self, app: web.Application) -> None:
        super().routes(app)
        app.router.add_post("/v1/messages/batches", self.create_batch)
        app.router.add_get("/v1/messages/batches/{id}", self.retrieve_batch)
        app.router.add_get("/v1/messages/batches/{id}/results", self.batch_results)

    async def create_batch(self, request: web.Request) -> web.Response:
        if not self.authorized(request):
            return self.auth_failure()
        body = await request.json()
        items = body.get("requests")
        problems = [] if isinstance(items, list) and items else ["requests must be a non-empty list"]
        seen: set[str] = set()
        for n, item in enumerate(items or []):
            cid = item.get("custom_id", "")
            if not _CUSTOM_ID.match(cid):
                problems.append(f"requests[{n}].custom_id {cid!r} does not match [A-Za-z0-9_-]{{1,64}}")
            if cid in seen:
                problems.append(f"requests[{n}]: duplicate custom_id {cid}")
            seen.add(cid)
            problems += [
                f"requests[{n}].params: {p}"
                for p in anthropic_problems(item.get("params") or {}, request.headers)
            ]
        if len(items or []) > self.max_requests:
            problems.append(f"{len(items)} requests, over {self.max_requests}")
        if problems:
            self.violations.extend(problems)
            return self.error(400, problems[0])
        batch_id = self.next_id("msgbatch_")
        self.batches[batch_id] = {"requests": items, "polls": 0, "results": None}
        ids = [item["custom_id"] for item in items]
        self.created.append((batch_id, ids))
        self.submitted.update(ids)
        return web.json_response(self._batch_object(request, batch_id))

    async def retrieve_batch(self, request: web.Request) -> web.Response:
        if not self.authorized(request):
            return self.auth_failure()
        batch_id = request.match_info["id"]
        batch = self.batches.get(batch_id)
        if batch is None:
            return self.error(404, "no such batch")
        batch["polls"] += 1
        if batch["results"] is None and batch["polls"] >= self.polls_to_complete:
            rows = [
                {
                    "custom_id": item["custom_id"],
                    "result": {"type": "succeeded", "message": self._message(item["params"])},
                }
                for item in batch["requests"]
            ]
            self._shuffle.shuffle(rows)
            batch["results"] = b"".join(orjson.dumps(r) + b"\n" for r in rows)
        return web.json_response(self._batch_object(request, batch_id))

    async def batch_results(self, request: web.Request) -> web.Response:
        if not self.authorized(request):
            return self.auth_failure()
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch["results"] is None:
            return self.error(404, "results are not ready")
        return web.Response(body=batch["results"], content_type="application/binary")

    def _message(self, params: dict[str, Any]) -> Any:
        """The reply a live request with these params gets."""
        raw = orjson.dumps(params)
        self.requests += 1
        return self.payload(_Stand({TOKENS: max(1, len(raw) // 4)}), params, Reply(), Reply())  # type: ignore[arg-type]

    def _batch_object(self, request: web.Request, batch_id: str) -> dict[str, Any]:
        ended = self.batches[batch_id]["results"] is not None
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "results_url": f"{self.root}/v1/messages/batches/{batch_id}/results" if ended else None,
        }


class _Stand(dict):
    """What `payload` reads of a live request: its token count."""
