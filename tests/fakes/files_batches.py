"""The Files + Batches state machine OpenAI and Azure OpenAI share, for loopback fakes.

`FilesBatches` is a mixin: a fake server class (tests/fakes/batch.py `BatchSweepServer`,
tests/fakes/batch_azure.py `AzureBatchFake`) adds it before its live server and gets,
under its `PREFIX` (`/v1`, `/openai`):

    POST {PREFIX}/files                multipart purpose=batch + file (JSONL)
    POST {PREFIX}/batches              {input_file_id, endpoint, completion_window}
    GET  {PREFIX}/batches/{id}         validating -> in_progress -> finalizing -> completed,
                                       after `polls_to_complete` polls (or expired, failed)
    GET  {PREFIX}/files/{id}/content   the output or error JSONL

The rules both services document: purpose "batch", completion_window "24h", the batch's
endpoint `ENDPOINT`; in the file, every line exactly `{custom_id, method, url, body}`
with method POST and url `ENDPOINT`, custom_id unique within the file, one model per
file, at most `max_requests` lines and `max_bytes` bytes. A call that breaks one is
refused (400/404); a file that breaks one makes the batch *failed* after validating,
with the reasons in its `errors.data`, each `{code, message, line}` with the code the
services document (`too_many_tasks`, `duplicate_custom_id`, `model_mismatch`,
`invalid_request`, ...), as the real APIs do. Each broken rule is kept in `violations`.

`fail_batches` / `fail_code` make the first N batches fail after validating with that
code on every line, as Azure does with `invalid_request` when the lines name a
deployment that is not a Global-Batch one, or with `token_limit_exceeded` when the
resource's enqueued tokens are used up (which a later batch may get past).

Results come back shuffled (order is not guaranteed). `expire_rate` makes a share of the
requests (by a hash of their custom_id, on their first submission only) expire: the
batch ends "expired", those requests in the error file with code batch_expired.

What differs between the services is a hook the fake supplies: `_refused` (how a call
authenticates), `_model_problem` (which models a line may name), `_upload_refused` (a
limit on the files a resource holds), `_batch_error` (the service's error body) and
`_answer` (the live handler's reply to one line's body).
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections import Counter
from typing import Any, ClassVar, TypedDict

import msgspec
import orjson
from aiohttp import web


class BatchLine(msgspec.Struct, forbid_unknown_fields=True):
    custom_id: str
    method: str
    url: str
    body: msgspec.Raw  # the exact bytes, so a line is answered as the same bytes POSTed live


_FIELDS = {"custom_id", "method", "url", "body"}


class FakeBatch(TypedDict):
    id: str
    file: str  # the input file's id
    lines: list[BatchLine]
    status: str
    polls: int
    errors: list[dict[str, Any]]  # errors.data: {code, message, line}
    output_file_id: str | None
    error_file_id: str | None


class FilesBatches:
    ENDPOINT: ClassVar[str]  # what the batch's endpoint and every line's url must be
    PREFIX: ClassVar[str]  # where the Files and Batches endpoints live
    MODEL: ClassVar[str] = "model"  # what the service calls the model a line names

    # set by the fake (its constructor's options; a test may change polls_to_complete)
    polls_to_complete: int
    expire_rate: float
    max_requests: int
    max_bytes: int
    violations: list[str]
    fail_batches: int = 0
    fail_code: str = "invalid_request"

    def _open_files_batches(self, shuffle_seed: int = 0) -> None:
        """The state; the fake calls this from its constructor."""
        self.files: dict[str, bytes] = {}
        self.purposes: dict[str, str] = {}
        self.batches: dict[str, FakeBatch] = {}
        self.created: list[tuple[str, list[str]]] = []  # (batch id, custom_ids) in order
        self.submitted: Counter[str] = Counter()  # custom_id -> times in a created batch
        self.polls: Counter[str] = Counter()
        self.expired: list[str] = []
        self.refused: list[str] = []  # custom_ids in batches that failed validation
        # the fake's server thread and the test's thread both touch the state
        self._batch_lock = threading.Lock()
        self._shuffle = random.Random(shuffle_seed)

    def batch_routes(self, app: web.Application) -> None:
        app.router.add_post(f"{self.PREFIX}/files", self.upload)
        app.router.add_post(f"{self.PREFIX}/batches", self.create)
        app.router.add_get(f"{self.PREFIX}/batches/{{id}}", self.retrieve)
        app.router.add_get(f"{self.PREFIX}/files/{{id}}/content", self.content)

    # -- hooks ---------------------------------------------------------------------------

    def _refused(self, request: web.Request) -> web.Response | None:
        """The refusal of a call that does not authenticate as the service wants, or None."""
        raise NotImplementedError

    def _batch_error(self, status: int, message: str) -> web.Response:
        raise NotImplementedError

    def _model_problem(self, model: object) -> str | None:
        """Why a line may not name this model (None: any model, one per file)."""
        return None

    def _upload_refused(self) -> web.Response | None:
        """The refusal of an upload over a limit on the resource's files, or None."""
        return None

    def _answer(self, raw: bytes) -> dict[str, Any]:
        """The `response` of one line: the live handler's answer to these body bytes."""
        raise NotImplementedError

    def _bad_call(self, where: str, status: int, message: str) -> web.Response:
        self.violations.append(f"{where}: {message}")
        return self._batch_error(status, message)

    # -- the endpoints -------------------------------------------------------------------

    async def upload(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        form = await request.post()
        purpose, upload = form.get("purpose"), form.get("file")
        if not isinstance(purpose, str) or not isinstance(upload, web.FileField):
            return self._bad_call("upload", 400, "purpose and file are required")
        with self._batch_lock:
            if (refused := self._upload_refused()) is not None:
                return refused
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
            return self._bad_call("create", 404, f"no file {file_id!r}")
        problems = []
        if body.get("endpoint") != self.ENDPOINT:
            problems.append(f"endpoint {body.get('endpoint')!r} is not {self.ENDPOINT}")
        if body.get("completion_window") != "24h":
            problems.append("completion_window must be 24h")
        if self.purposes[file_id] != "batch":
            problems.append("the input file's purpose is not batch")
        lines: list[BatchLine] = []
        errors: list[dict[str, Any]] = [
            {"code": "invalid_request", "message": p, "line": None} for p in problems
        ]
        errors += self._validate(self.files[file_id], lines)
        with self._batch_lock:
            if not errors and len(self.batches) < self.fail_batches:
                errors = [
                    {"code": self.fail_code, "message": f"refused: {self.fail_code}", "line": n}
                    for n in range(1, len(lines) + 1)
                ]
            batch = FakeBatch(id=f"batch_{len(self.batches) + 1:04d}", file=file_id, lines=lines,
                              status="validating", polls=0, errors=errors,
                              output_file_id=None, error_file_id=None)  # fmt: skip
            self.batches[batch["id"]] = batch
            if errors and len(self.batches) > self.fail_batches:
                self.violations.extend(e["message"] for e in errors)
            if errors:
                self.refused.extend(line.custom_id for line in lines)
            else:
                ids = [line.custom_id for line in lines]
                self.created.append((batch["id"], ids))
                self.submitted.update(ids)
        return web.json_response(self._object(batch))

    def _validate(self, raw: bytes, lines: list[BatchLine]) -> list[dict[str, Any]]:
        """The file's problems as `errors.data` entries, each with its documented code."""
        problems: list[dict[str, Any]] = []

        def problem(code: str, message: str, line: int | None = None) -> None:
            problems.append({"code": code, "message": message, "line": line})

        if len(raw) > self.max_bytes:
            problem("file_too_large", f"file of {len(raw)} bytes is over {self.max_bytes}")
        models: set[str] = set()
        seen: set[str] = set()
        for n, text in enumerate(raw.splitlines(), 1):
            try:
                line = msgspec.json.decode(text, type=BatchLine)
            except msgspec.DecodeError as exc:
                problem("invalid_json_line", f"line {n}: {_shape(text) or exc}", n)
                continue
            if line.custom_id in seen:
                problem("duplicate_custom_id", f"line {n}: duplicate custom_id {line.custom_id}", n)
            seen.add(line.custom_id)
            if line.method != "POST" or line.url != self.ENDPOINT:
                problem("url_mismatch", f"line {n}: {line.method} {line.url} is not POST {self.ENDPOINT}", n)
            body = orjson.loads(bytes(line.body))
            model = body.get("model") if isinstance(body, dict) else None
            if (reason := self._model_problem(model)) is not None:
                problem("invalid_request", f"line {n}: {reason}", n)
            models.add(str(model))
            lines.append(line)
        if len(lines) > self.max_requests:
            problem("too_many_tasks", f"{len(lines)} requests, over {self.max_requests}")
        if len(models) > 1:
            problem("model_mismatch", f"more than one {self.MODEL} in one file: {sorted(models)}")
        return problems

    async def retrieve(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return self._batch_error(404, "no such batch")
        with self._batch_lock:
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
            return self._batch_error(404, "no such file")
        return web.Response(body=raw, content_type="application/octet-stream")

    # -- answering -----------------------------------------------------------------------

    def _finish(self, batch: FakeBatch) -> None:
        """Answer every line as the live endpoint would (expiring some), in shuffled order."""
        out: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for line in batch["lines"]:
            cid = line.custom_id
            if self._expires(cid):
                self.expired.append(cid)
                error = {"code": "batch_expired", "message": "not completed within the 24h window"}
                errors.append(
                    {"id": f"batch_req_{len(errors)}", "custom_id": cid, "response": None, "error": error}
                )
                continue
            response = self._answer(bytes(line.body))
            out.append({"id": f"batch_req_{len(out)}", "custom_id": cid, "response": response, "error": None})
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

    def _store(self, rows: list[dict[str, Any]]) -> str:
        file_id = f"file-{len(self.files) + 1:04d}"
        self.files[file_id] = b"".join(orjson.dumps(r) + b"\n" for r in rows)
        self.purposes[file_id] = "batch_output"
        return file_id

    def _object(self, batch: FakeBatch) -> dict[str, Any]:
        errors = batch["errors"]
        return {
            "id": batch["id"],
            "object": "batch",
            "endpoint": self.ENDPOINT,
            "input_file_id": batch["file"],
            "completion_window": "24h",
            "status": batch["status"],
            "output_file_id": batch["output_file_id"],
            "error_file_id": batch["error_file_id"],
            "errors": {"object": "list", "data": errors} if errors else None,
            "request_counts": {"total": len(batch["lines"]), "completed": 0, "failed": 0},
        }


def _shape(text: bytes) -> str | None:
    """What is wrong with a JSON object line whose fields are not the four a line has."""
    try:
        line = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(line, dict) and set(line) != _FIELDS:
        return f"fields {sorted(line)} are not custom_id, method, url, body"
    return None
