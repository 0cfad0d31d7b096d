"""Azure OpenAI global batch on loopback, answering like the live Azure fake.

`AzureBatchFake` is the answering Azure Chat Completions fake (`AnsweringOpenAI` with
`azure=True`) plus Azure's Files and Batches endpoints under the resource, with the
rules and the state machine OpenAI and Azure share (tests/fakes/files_batches.py):

    POST /openai/files?api-version=V               multipart purpose=batch + file (JSONL)
    POST /openai/batches?api-version=V             {input_file_id, endpoint, completion_window}
    GET  /openai/batches/{id}?api-version=V        validating -> in_progress -> finalizing ->
                                                   completed (or expired) after `polls_to_complete`
    GET  /openai/files/{id}/content?api-version=V  the output or error JSONL

Azure's own rules, as its global-batch guide documents them: the `api-key` header (a
Bearer token is not a key), an `api-version` on every call (2024-10-21 or later: older
ones have no batch API), endpoint and every line's url `/chat/completions`, each line's
`body.model` the name of a Global-Batch deployment of the resource (`deployments`), one
deployment per file, at most `max_requests` lines (100,000) and `max_bytes` (200 MB),
at most `max_files` batch files per resource (500). Each broken rule is kept in
`violations`.

Each line's body is checked by the live handler's own rules and answered by its own
logic (as if POSTed to /openai/deployments/{model}/chat/completions), so a batched
request gets the reply the same request gets live. The chatbot's and simulated user's
replies are a checksum of their request (not the server's request count, which
interleaving judges and batches would shift), so a live run and a batch run on two
instances have the same transcripts to judge.
"""

from __future__ import annotations

import zlib
from typing import Any

import orjson
from aiohttp import web

from .answering import AnsweringOpenAI
from .files_batches import FilesBatches
from .protocols import TOKENS, Behaviour, Reply

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


class AzureBatchFake(FilesBatches, AnsweringOpenAI):
    ENDPOINT = "/chat/completions"
    PREFIX = "/openai"
    MODEL = "deployment"

    def __init__(
        self,
        *,
        deployments: tuple[str, ...] = ("gpt-4o",),
        polls_to_complete: int = 2,
        expire_rate: float = 0.0,
        max_requests: int = 100_000,
        max_bytes: int = 200 * 1024 * 1024,
        max_files: int = 500,
        fail_batches: int = 0,
        fail_code: str = "invalid_request",
        **kwargs: Any,
    ) -> None:
        super().__init__(azure=True, **kwargs)
        self.fail_batches = fail_batches
        self.fail_code = fail_code
        self.deployments = deployments
        self.polls_to_complete = polls_to_complete
        self.expire_rate = expire_rate
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.batch_calls: list[
            tuple[str, str, dict[str, str], dict[str, str]]
        ] = []  # method, path, query, headers
        self._open_files_batches()

    def routes(self, app: web.Application) -> None:
        super().routes(app)
        self.batch_routes(app)

    def payload(self, request: web.Request, body: dict[str, Any], behaviour: Behaviour, reply: Reply) -> Any:
        if body.get("response_format") is None:
            reply = stable_reply(body, reply)
        return super().payload(request, body, behaviour, reply)

    # -- what Azure does its own way ---------------------------------------------------

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

    def _batch_error(self, status: int, message: str) -> web.Response:
        return self.error(status, message)

    def _model_problem(self, model: object) -> str | None:
        if model in self.deployments:
            return None
        return f"body.model {model!r} is not a Global-Batch deployment"

    def _upload_refused(self) -> web.Response | None:
        if sum(1 for p in self.purposes.values() if p == "batch") >= self.max_files:
            self.violations.append(f"upload: over {self.max_files} batch files in the resource")
            return self.error(400, f"the resource holds {self.max_files} batch files already")
        return None

    def _answer(self, raw: bytes) -> dict[str, Any]:
        """The live handler's answer to this body, POSTed to its deployment."""
        body = orjson.loads(raw)
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
