"""OpenAI's Batch API on loopback, answering like the sweep server's live judge.

`BatchSweepServer` is `SweepServer` (the deterministic OpenAI-compatible server of
tests/fakes/sweep.py) plus the Files and Batches endpoints under /v1, with the rules and
the state machine OpenAI and Azure share (tests/fakes/files_batches.py): a call needs
the Bearer key, the batch's endpoint is /v1/chat/completions, a file may name any one
model.

Every line is answered by the live handler's own logic over the line's exact body
bytes, so a batched request gets the reply the same request gets live.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from vera.records import Message

from .answering import AnsweringAnthropic
from .files_batches import FilesBatches
from .protocols import TOKENS, Reply
from .rules import anthropic_problems
from .sweep import KEY, SweepServer


@dataclass
class BatchSweepServer(FilesBatches, SweepServer):
    ENDPOINT = "/v1/chat/completions"
    PREFIX = "/v1"

    polls_to_complete: int = 2
    expire_rate: float = 0.0
    max_requests: int = 50_000
    max_bytes: int = 200 * 1024 * 1024
    shuffle_seed: int = 0
    violations: list[str] = field(default_factory=list)
    fail_batches: int = 0  # the first N batches fail validation with fail_code on every line
    fail_code: str = "invalid_request"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._open_files_batches(self.shuffle_seed)

    def routes(self, app: web.Application) -> None:
        super().routes(app)
        self.batch_routes(app)

    def _refused(self, request: web.Request) -> web.Response | None:
        if request.headers.get("Authorization") != f"Bearer {KEY}":
            return self._batch_error(401, "bad key")
        return None

    def _batch_error(self, status: int, message: str) -> web.Response:
        return web.json_response(
            {"error": {"message": message, "type": "invalid_request_error"}}, status=status
        )

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
