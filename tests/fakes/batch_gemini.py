"""The Gemini API's batch mode on loopback, answering like the live Gemini fake.

`GeminiBatchFake` is the answering generateContent fake plus:

    POST /v1beta/models/{model}:batchGenerateContent   inline requests, or a requests
                                                       file's name -> an operation
    GET  /v1beta/batches/{id}                          BATCH_STATE_PENDING -> RUNNING ->
                                                       SUCCEEDED after `polls_to_complete` polls
    POST /upload/v1beta/files                          the File API's resumable upload:
                                                       start, then `upload, finalize`
    GET  /download/v1beta/files/{id}:download?alt=media  a file's bytes

The rules, as the API reference and batch guide document them: the key in
`x-goog-api-key`; `batch.displayName` given; `batch.inputConfig.requests.requests` a
non-empty list of `{request, metadata}` whose `metadata.key` is unique, or
`inputConfig.fileName` an uploaded file of `{key, request}` lines with unique keys; a
request's `model`, if it names one, is the URL's (the model is in the URL: one per
batch); the whole create call under 20 MB (`max_bytes`), a file under 2 GB
(`max_file_bytes`); each `request` a valid GenerateContentRequest by the live fake's
own rules. An upload states its size and type at the start, and sends exactly that
many bytes. A call that breaks one is refused
with 400 INVALID_ARGUMENT and the rule kept in `violations`.

Each request is answered by the live handler's logic (as if POSTed to
`{model}:generateContent`), so a batched request gets the reply it gets live; results
come back in the order of the requests, as the API documents, each with its request's
key: inline under `response` (the operation's result) and `metadata.output`, as the API
returns them, or, for a batch made from a file, in a responses file of `{key, response |
error}` lines. `expire_batches` makes the first N batches end BATCH_STATE_EXPIRED without
results; `error_rate` answers a share of requests (by a hash of their key, first
submission only) with an error status instead of a response.

The misbehaviours users of the service report, on demand: `shuffle` returns the results
out of order (each moved one place: the first last); `drop_keys` drops the `metadata`
(the key) from that share of the inline answers (by a hash of the key), except the
last one's, so that a batch of several answers always shows whether it kept the order
of its requests (with every key gone nothing could tell); `fail_batches` makes the first N
batches end BATCH_STATE_FAILED with an `error` ({code: 3 INVALID_ARGUMENT, message}) and
no results. `answered` counts the answers each batch returned: what the service bills.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import orjson
from aiohttp import web

from .answering import AnsweringGemini
from .batch_azure import LineRequest, stable_reply
from .protocols import Behaviour, Reply

OPERATION_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
OUTPUT_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"
INLINE_LIMIT = 20 * 1000 * 1000


class GeminiBatchFake(AnsweringGemini):
    def __init__(
        self,
        *,
        polls_to_complete: int = 2,
        expire_batches: int = 0,
        error_rate: float = 0.0,
        shuffle: bool = False,
        drop_keys: float = 0.0,
        fail_batches: int = 0,
        max_bytes: int = INLINE_LIMIT,
        max_file_bytes: int = 2 * 1000 * 1000 * 1000,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.max_file_bytes = max_file_bytes
        self.files: dict[str, bytes] = {}
        self._uploads: dict[str, int] = {}  # upload id -> the size announced at the start
        self.polls_to_complete = polls_to_complete
        self.expire_batches = expire_batches
        self.error_rate = error_rate
        self.shuffle = shuffle
        self.drop_keys = drop_keys
        self.fail_batches = fail_batches
        self.answered = 0  # responses returned (billed), over every batch
        self.dropped: list[str] = []  # keys whose answer came back without its metadata
        self.max_bytes = max_bytes
        self.batches: dict[str, dict[str, Any]] = {}
        self.created: list[tuple[str, list[str]]] = []  # (batch name, keys) in order
        self.submitted: Counter[str] = Counter()  # key -> times in a created batch
        self.polls: Counter[str] = Counter()
        self.failed_keys: list[str] = []  # keys answered with an error, and in expired batches
        self.batch_calls: list[tuple[str, str, dict[str, str], dict[str, str]]] = []
        self.bodies: list[bytes] = []  # each create call's body as received

    def routes(self, app: web.Application) -> None:
        # Before the live route, whose {call} would take ":batchGenerateContent" too.
        app.router.add_post("/v1beta/models/{model}:batchGenerateContent", self.create)
        app.router.add_get("/v1beta/batches/{id}", self.retrieve)
        app.router.add_post("/upload/v1beta/files", self.upload)
        app.router.add_get("/download/v1beta/files/{id}:download", self.download)
        super().routes(app)

    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        if (body.get("generationConfig") or {}).get("responseMimeType") != "application/json":
            reply = stable_reply(body, reply)
        return super().payload(request, body, behaviour, reply)

    def _refused(self, request: web.Request) -> web.Response | None:
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.batch_calls.append((request.method, request.path, dict(request.query), headers))
        if (missing := self.missing_credentials(request)) is not None:
            self.violations.append(f"{request.path}: {missing}")
            return self.auth_failure()
        if not self.authorized(request):
            return self.auth_failure()
        return None

    async def create(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        raw = await request.read()
        self.bodies.append(raw)
        model = request.match_info["model"]
        problems = []
        if len(raw) > self.max_bytes:
            problems.append(f"Request payload size exceeds the limit: {self.max_bytes} bytes.")
        body = orjson.loads(raw)
        batch = body.get("batch") if isinstance(body, dict) else None
        if not isinstance(batch, dict):
            problems.append("batch: required")
            batch = {}
        if not (batch.get("displayName") or batch.get("display_name")):
            problems.append("batch.displayName: required")
        config = batch.get("inputConfig") or batch.get("input_config") or {}
        file_name = config.get("fileName") or config.get("file_name")
        if file_name is not None:
            if file_name not in self.files:
                problems.append(f"batch.inputConfig.fileName: no file {file_name!r}")
                items: Any = []
            else:  # the file's {key, request} lines, as items to check like inline ones
                lines = [orjson.loads(t) for t in self.files[file_name].splitlines() if t.strip()]
                items = [{"request": x.get("request"), "metadata": {"key": x.get("key")}} for x in lines]
                if not items:
                    problems.append("the requests file is empty")
        else:
            items = (config.get("requests") or {}).get("requests")
            if not isinstance(items, list) or not items:
                problems.append("batch.inputConfig.requests.requests: a non-empty list")
                items = []
        keys: list[str] = []
        for n, item in enumerate(items):
            where = f"requests[{n}]"
            if not isinstance(item, dict) or not isinstance(item.get("request"), dict):
                problems.append(f"{where}.request: required")
                continue
            key = (item.get("metadata") or {}).get("key")
            if not isinstance(key, str) or not key:
                problems.append(f"{where}.metadata.key: required (vera matches results by it)")
            elif key in keys:
                problems.append(f"{where}: duplicate metadata.key {key}")
            keys.append(str(key))
            inner = item["request"]
            if "model" in inner and inner["model"] not in (model, f"models/{model}"):
                problems.append(f"{where}.request.model {inner['model']!r} is not the batch's model")
            # The live request names its model in the URL: checked as one without it.
            live = {k: v for k, v in inner.items() if k != "model"}
            stand: Any = LineRequest(orjson.dumps(live), {"call": f"{model}:generateContent"}, {})
            problems += [f"{where}.request: {p}" for p in self.problems(stand, live)]
        if problems:
            self.violations.extend(problems)
            return self.error(400, problems[0])
        name = f"batches/fake{len(self.batches) + 1:04d}"
        self.batches[name] = {"model": model, "items": items, "polls": 0, "state": "BATCH_STATE_PENDING",
                              "display": batch.get("displayName") or batch.get("display_name"), "output": None,
                              "from_file": file_name is not None}  # fmt: skip
        self.created.append((name, keys))
        self.submitted.update(keys)
        return web.json_response(self._operation(name))

    async def retrieve(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        name = f"batches/{request.match_info['id']}"
        batch = self.batches.get(name)
        if batch is None:
            return self.error(404, f"Batch {name} not found")
        self.polls[name] += 1
        batch["polls"] += 1
        if batch["state"] in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
            if batch["polls"] >= self.polls_to_complete:
                self._finish(name, batch)
            elif batch["polls"] > 1:
                batch["state"] = "BATCH_STATE_RUNNING"
        return web.json_response(self._operation(name))

    def _finish(self, name: str, batch: dict[str, Any]) -> None:
        place = [n for n, _ in self.created].index(name)
        if place < self.expire_batches:
            batch["state"] = "BATCH_STATE_EXPIRED"
            self.failed_keys.extend(item["metadata"]["key"] for item in batch["items"])
            return
        if place < self.fail_batches:
            batch["state"] = "BATCH_STATE_FAILED"
            batch["error"] = {"code": 3, "message": "Request contains an invalid argument."}
            return
        out = []
        for item in batch["items"]:
            key = item["metadata"]["key"]
            if self._errs(key):
                self.failed_keys.append(key)
                out.append(
                    {
                        "error": {"code": 13, "message": "Internal error encountered."},
                        "metadata": {"key": key},
                    }
                )
                continue
            inner = {k: v for k, v in item["request"].items() if k != "model"}
            stand: Any = LineRequest(orjson.dumps(inner), {"call": f"{batch['model']}:generateContent"}, {})
            self.requests += 1
            self.answered += 1
            out.append({"response": self.payload(stand, inner, Reply(), Reply()), "metadata": {"key": key}})
        if self.shuffle:
            out = out[1:] + out[:1]
        batch["state"] = "BATCH_STATE_SUCCEEDED"
        if batch["from_file"]:  # a responses file of {key, response | error} lines
            rows = [
                {"key": r["metadata"]["key"], **{k: v for k, v in r.items() if k != "metadata"}} for r in out
            ]
            file_name = f"files/responses-{len(self.files) + 1:04d}"
            self.files[file_name] = b"".join(orjson.dumps(r) + b"\n" for r in rows)
            batch["output"] = {"responsesFile": file_name}
        else:
            for r in out[:-1]:
                if self.drop_keys and _share(r["metadata"]["key"]) < self.drop_keys:
                    self.dropped.append(r.pop("metadata")["key"])
            batch["output"] = {"inlinedResponses": {"inlinedResponses": out}}

    async def upload(self, request: web.Request) -> web.Response:
        """The resumable upload: `start` announces the size and type and gets the URL to
        send the bytes to; `upload, finalize` sends them (in one piece here)."""
        if (refused := self._refused(request)) is not None:
            return refused
        command = request.headers.get("X-Goog-Upload-Command", "")
        if command == "start":
            problems = []
            if request.headers.get("X-Goog-Upload-Protocol") != "resumable":
                problems.append("X-Goog-Upload-Protocol: resumable is required")
            size = request.headers.get("X-Goog-Upload-Header-Content-Length", "")
            if not size.isdigit():
                problems.append("X-Goog-Upload-Header-Content-Length: the file's size is required")
            if not request.headers.get("X-Goog-Upload-Header-Content-Type"):
                problems.append("X-Goog-Upload-Header-Content-Type is required")
            body = await request.json()
            if not isinstance(body, dict) or not isinstance(body.get("file"), dict):
                problems.append("the start body is {file: {displayName}}")
            if problems:
                self.violations.extend(problems)
                return self.error(400, problems[0])
            upload_id = f"u{len(self._uploads) + 1}"
            self._uploads[upload_id] = int(size)
            # An absolute URL on the real host: the client must aim it at its base URL.
            url = f"https://generativelanguage.googleapis.com/upload/v1beta/files?upload_id={upload_id}"
            return web.json_response({}, headers={"X-Goog-Upload-URL": url, "X-Goog-Upload-Status": "active"})
        if command == "upload, finalize":
            upload_id = request.query.get("upload_id", "")
            content = await request.read()
            problems = []
            if upload_id not in self._uploads:
                problems.append(f"no upload {upload_id!r} was started")
            elif len(content) != self._uploads.pop(upload_id):
                problems.append("the bytes sent are not the size announced at the start")
            if request.headers.get("X-Goog-Upload-Offset") != "0":
                problems.append("X-Goog-Upload-Offset: 0 for a file sent in one piece")
            if len(content) > self.max_file_bytes:
                problems.append(f"a file of {len(content)} bytes is over {self.max_file_bytes}")
            if problems:
                self.violations.extend(problems)
                return self.error(400, problems[0])
            name = f"files/requests-{len(self.files) + 1:04d}"
            self.files[name] = content
            meta = {
                "name": name,
                "mimeType": "application/jsonl",
                "sizeBytes": str(len(content)),
                "state": "ACTIVE",
            }
            return web.json_response({"file": meta}, headers={"X-Goog-Upload-Status": "final"})
        self.violations.append(f"X-Goog-Upload-Command {command!r} is not start or upload, finalize")
        return self.error(400, "unknown upload command")

    async def download(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        if request.query.get("alt") != "media":
            self.violations.append("a download needs alt=media")
            return self.error(400, "alt=media is required")
        content = self.files.get(f"files/{request.match_info['id']}")
        if content is None:
            return self.error(404, "File not found")
        return web.Response(body=content, content_type="application/octet-stream")

    def _errs(self, key: str) -> bool:
        if not self.error_rate or self.submitted[key] > 1:
            return False
        return _share(key) < self.error_rate

    def _operation(self, name: str) -> dict[str, Any]:
        batch = self.batches[name]
        n = len(batch["items"])
        done = batch["state"] not in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING")
        metadata: dict[str, Any] = {
            "@type": OPERATION_TYPE,
            "model": f"models/{batch['model']}",
            "displayName": batch["display"],
            "createTime": "2026-01-01T00:00:00Z",
            "state": batch["state"],
            "name": name,
            "batchStats": {"requestCount": str(n), "pendingRequestCount": str(0 if done else n)},
        }
        op: dict[str, Any] = {"name": name, "metadata": metadata}
        if batch.get("error") is not None:
            op["error"] = batch["error"]
        if batch["output"] is not None:
            metadata["output"] = batch["output"]
            op["response"] = {"@type": OUTPUT_TYPE, **batch["output"]}
        if done:
            op["done"] = True
        return op


def _share(key: str) -> float:
    """A number in [0, 1) fixed by the key (which requests a share applies to)."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
