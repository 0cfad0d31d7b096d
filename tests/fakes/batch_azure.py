"""Azure OpenAI global batch on loopback, answering like the live Azure fake.

`AzureBatchFake` is the answering Azure Chat Completions fake (`AnsweringOpenAI` with
`azure=True`) plus Azure's Files and Batches endpoints under the resource:

    POST /openai/files?api-version=V               multipart purpose=batch + file (JSONL)
    POST /openai/batches?api-version=V             {input_file_id, endpoint, completion_window}
    GET  /openai/batches/{id}?api-version=V        validating -> in_progress -> finalizing ->
                                                   completed (or expired) after `polls_to_complete`
    GET  /openai/files/{id}/content?api-version=V  the output or error JSONL

Azure's rules, as its global-batch guide documents them: the `api-key` header (a Bearer
token is not a key), an `api-version` on every call (2024-10-21 or later: older ones
have no batch API), purpose `batch`, endpoint `/chat/completions`, completion_window
`24h`; in the file, every line `{custom_id, method: POST, url: /chat/completions, body}`,
`custom_id` unique, `body.model` the name of a Global-Batch deployment of the resource
(`deployments`), one deployment per file, at most `max_requests` lines (100,000) and
`max_bytes` (200 MB), at most `max_files` batch files per resource (500). A request or
file that breaks one is refused (400/401/404 on the call) or fails the batch after
validation with the reason in its `errors`, as Azure does; each broken rule is kept in
`violations`.

Each line's body is checked by the live handler's own rules and answered by its own
logic (as if POSTed to /openai/deployments/{model}/chat/completions), so a batched
request gets the reply the same request gets live. Results come back shuffled. The
chatbot's and simulated user's replies are a checksum of their request (not the
server's request count, which interleaving judges and batches would shift), so a live
run and a batch run on two instances have the same transcripts to judge.
`expire_rate` expires a share of the requests (by a hash of their custom_id, on their
first submission only): the batch ends "expired", those in the error file.
"""

from __future__ import annotations

import hashlib
import random
import zlib
from collections import Counter
from typing import Any

import orjson
from aiohttp import web

from .answering import AnsweringOpenAI
from .protocols import TOKENS, Behaviour, Reply

ENDPOINT = "/chat/completions"
# The first GA api-version with the batch API; older ones answer 404 on /openai/batches.
FIRST_BATCH_VERSION = "2024-10-21"


class LineRequest(dict[Any, int]):
    """What the live handler reads of a request, for one line of a batch: its token
    count (as a mapping key), match_info, query and headers."""

    def __init__(self, raw: bytes, match_info: dict[str, str], query: dict[str, str]) -> None:
        super().__init__({TOKENS: max(1, len(raw) // 4)})
        self.match_info = match_info
        self.query = query
        self.headers: dict[str, str] = {}


def stable_reply(body: dict[str, Any], reply: Reply) -> Reply:
    """A reply text that depends on the request alone (see the module docstring)."""
    if reply.text is not None or reply.parsed is not None:
        return reply
    return Reply(text=f"Fake reply {zlib.crc32(orjson.dumps(body)) % 100_000}.")


class AzureBatchFake(AnsweringOpenAI):
    def __init__(
        self,
        *,
        deployments: tuple[str, ...] = ("gpt-4o",),
        polls_to_complete: int = 2,
        expire_rate: float = 0.0,
        max_requests: int = 100_000,
        max_bytes: int = 200 * 1024 * 1024,
        max_files: int = 500,
        **kwargs: Any,
    ) -> None:
        super().__init__(azure=True, **kwargs)
        self.deployments = deployments
        self.polls_to_complete = polls_to_complete
        self.expire_rate = expire_rate
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.files: dict[str, bytes] = {}
        self.purposes: dict[str, str] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.created: list[tuple[str, list[str]]] = []  # (batch id, custom_ids) in order
        self.submitted: Counter[str] = Counter()  # custom_id -> times in a created batch
        self.polls: Counter[str] = Counter()
        self.expired: list[str] = []
        self.batch_calls: list[
            tuple[str, str, dict[str, str], dict[str, str]]
        ] = []  # method, path, query, headers
        self._shuffle = random.Random(0)

    def routes(self, app: web.Application) -> None:
        super().routes(app)
        app.router.add_post("/openai/files", self.upload)
        app.router.add_post("/openai/batches", self.create)
        app.router.add_get("/openai/batches/{id}", self.retrieve)
        app.router.add_get("/openai/files/{id}/content", self.content)

    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        if body.get("response_format") is None:
            reply = stable_reply(body, reply)
        return super().payload(request, body, behaviour, reply)

    # -- the endpoints -----------------------------------------------------------------

    def _refused(self, request: web.Request) -> web.Response | None:
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.batch_calls.append((request.method, request.path, dict(request.query), headers))
        if not request.headers.get("api-key"):
            self.violations.append(f"{request.path}: missing api-key header")
            return self.error(401, "Access denied due to invalid subscription key or wrong API endpoint.")
        if request.headers.get("api-key") != self.key:
            return self.auth_failure()
        version = request.query.get("api-version", "")
        if not version:
            self.violations.append(f"{request.path}: api-version query parameter is required")
            return self.error(404, "Resource not found")
        if version < FIRST_BATCH_VERSION:
            self.violations.append(f"{request.path}: api-version {version} has no batch API")
            return self.error(404, "Resource not found")
        return None

    async def upload(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        form = await request.post()
        purpose, upload = form.get("purpose"), form.get("file")
        if not isinstance(purpose, str) or not isinstance(upload, web.FileField):
            self.violations.append("upload: purpose and file are required")
            return self.error(400, "purpose and file are required")
        if sum(1 for p in self.purposes.values() if p == "batch") >= self.max_files:
            self.violations.append(f"upload: over {self.max_files} batch files in the resource")
            return self.error(400, f"the resource holds {self.max_files} batch files already")
        file_id = f"file-{len(self.files) + 1:04d}"
        self.files[file_id] = upload.file.read()
        self.purposes[file_id] = purpose
        return web.json_response({"id": file_id, "object": "file", "purpose": purpose, "status": "processed"})

    async def create(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        body = await request.json()
        file_id = body.get("input_file_id")
        if file_id not in self.files:
            self.violations.append(f"create: no file {file_id!r}")
            return self.error(404, f"no file {file_id!r}")
        problems = []
        if body.get("endpoint") != ENDPOINT:
            problems.append(f"endpoint {body.get('endpoint')!r} is not {ENDPOINT}")
        if body.get("completion_window") != "24h":
            problems.append("completion_window must be 24h")
        if self.purposes[file_id] != "batch":
            problems.append("the input file's purpose is not batch")
        lines: list[dict[str, Any]] = []
        problems += self._validate(self.files[file_id], lines)
        batch_id = f"batch_{len(self.batches) + 1:04d}"
        batch = {"id": batch_id, "file": file_id, "lines": lines, "status": "validating", "polls": 0,
                 "errors": problems, "output_file_id": None, "error_file_id": None}  # fmt: skip
        self.batches[batch_id] = batch
        if problems:
            self.violations.extend(problems)
        else:
            ids = [line["custom_id"] for line in lines]
            self.created.append((batch_id, ids))
            self.submitted.update(ids)
        return web.json_response(self._object(batch))

    def _validate(self, raw: bytes, lines: list[dict[str, Any]]) -> list[str]:
        problems = []
        if len(raw) > self.max_bytes:
            problems.append(f"file of {len(raw)} bytes is over {self.max_bytes}")
        models: set[str] = set()
        seen: set[str] = set()
        for n, text in enumerate(raw.splitlines(), 1):
            try:
                line = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                problems.append(f"line {n}: {exc}")
                continue
            if set(line) != {"custom_id", "method", "url", "body"}:
                problems.append(f"line {n}: fields {sorted(line)} are not custom_id, method, url, body")
                continue
            if line["custom_id"] in seen:
                problems.append(f"line {n}: duplicate custom_id {line['custom_id']}")
            seen.add(line["custom_id"])
            if line["method"] != "POST" or line["url"] != ENDPOINT:
                problems.append(f"line {n}: {line['method']} {line['url']} is not POST {ENDPOINT}")
            model = line["body"].get("model") if isinstance(line["body"], dict) else None
            if model not in self.deployments:
                problems.append(f"line {n}: body.model {model!r} is not a Global-Batch deployment")
            models.add(str(model))
            lines.append(line)
        if len(lines) > self.max_requests:
            problems.append(f"{len(lines)} requests, over {self.max_requests}")
        if len(models) > 1:
            problems.append(f"more than one deployment in one file: {sorted(models)}")
        return problems

    async def retrieve(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return self.error(404, "no such batch")
        self.polls[batch["id"]] += 1
        batch["polls"] += 1
        if batch["errors"]:
            batch["status"] = "failed"
        elif batch["status"] not in ("completed", "expired"):
            if batch["polls"] >= self.polls_to_complete:
                self._finish(batch)
            else:
                batch["status"] = ("validating", "in_progress", "finalizing")[min(batch["polls"] - 1, 2)]
        return web.json_response(self._object(batch))

    async def content(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        raw = self.files.get(request.match_info["id"])
        if raw is None:
            return self.error(404, "no such file")
        return web.Response(body=raw, content_type="application/octet-stream")

    # -- answering ---------------------------------------------------------------------

    def _finish(self, batch: dict[str, Any]) -> None:
        out: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for line in batch["lines"]:
            cid = line["custom_id"]
            if self._expires(cid):
                self.expired.append(cid)
                error = {"code": "batch_expired", "message": "not completed within the 24h window"}
                errors.append(
                    {"id": f"req-{len(errors)}", "custom_id": cid, "response": None, "error": error}
                )
                continue
            out.append(
                {
                    "id": f"req-{len(out)}",
                    "custom_id": cid,
                    "response": self._answer(line["body"]),
                    "error": None,
                }
            )
        self._shuffle.shuffle(out)
        batch["status"] = "expired" if errors else "completed"
        if out:
            batch["output_file_id"] = self._store(out)
        if errors:
            batch["error_file_id"] = self._store(errors)

    def _expires(self, custom_id: str) -> bool:
        if not self.expire_rate or self.submitted[custom_id] > 1:
            return False
        h = int(hashlib.sha256(custom_id.encode()).hexdigest()[:8], 16)
        return h / 0xFFFFFFFF < self.expire_rate

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The live handler's answer to this body, POSTed to its deployment."""
        raw = orjson.dumps(body)
        stand: Any = LineRequest(raw, {"deployment": body["model"]}, {"api-version": FIRST_BATCH_VERSION})
        problems = self.problems(stand, body)
        if problems:
            self.violations.extend(f"line body: {p}" for p in problems)
            return {"status_code": 400, "body": self.error_payload(400, problems[0], None)}
        self.requests += 1
        return {
            "status_code": 200,
            "request_id": f"r-{self.requests}",
            "body": self.payload(stand, body, Reply(), Reply()),
        }

    def _store(self, rows: list[dict[str, Any]]) -> str:
        file_id = f"file-{len(self.files) + 1:04d}"
        self.files[file_id] = b"".join(orjson.dumps(r) + b"\n" for r in rows)
        self.purposes[file_id] = "batch_output"
        return file_id

    def _object(self, batch: dict[str, Any]) -> dict[str, Any]:
        errors = batch["errors"]
        return {
            "id": batch["id"],
            "object": "batch",
            "endpoint": ENDPOINT,
            "input_file_id": batch["file"],
            "completion_window": "24h",
            "status": batch["status"],
            "output_file_id": batch["output_file_id"],
            "error_file_id": batch["error_file_id"],
            "errors": {"object": "list", "data": [{"message": e} for e in errors]} if errors else None,
            "request_counts": {"total": len(batch["lines"]), "completed": 0, "failed": 0},
        }
