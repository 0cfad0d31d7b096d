"""A resumed run answers the calls it already paid for from its own call bodies.

A run that keeps call bodies (the default) writes every call's exact request and reply
to `call_bodies.vlog` before the call's line reaches calls.jsonl (vera.store). So when
such a run keeps its cache in its own directory, that cache would hold a second copy of
every reply, and its only use is the resume: a conversation or judgement cut off
half-way is rebuilt from the answers already paid for. A new run therefore keeps no
`cache.sqlite` at all (vera.app's `RunSession.open_cache`), and a resume reads the
bodies of the calls that belong to jobs not yet finished into a `ReplayTable`, which
`ReplayClient` answers from. A job with nothing to replay costs one dictionary lookup
by its id; a new run (an empty table) has no replay layer at all.

What a reply is replayed for. `vera.clients.cache.request_key` hashes the job, role,
protocol, provider, model, the profile's parameters, the call's parameters, the schema,
the messages and the re-ask count. A body holds all of these but two, in other forms:

- the protocol: not kept, but the table is looked up by job first, and a job's id
  hashes the whole `ModelSpec` of each model it calls (protocol, model, profile
  parameters; vera.engine's plan), so a job's calls go to one protocol per role; a
  resume also refuses a profile that now resolves otherwise (`check_same_run`);
- the profile's and the call's parameters: kept merged, as the provider was sent them
  (`merge_params`). Two requests with the same merged parameters are the same request
  on the wire, so the key here is exactly as strict as what the provider saw.

So the key is (role, provider, model, merged parameters, schema, messages, re-ask),
looked up among the job's own replies: two requests `request_key` calls the same have
the same key here (a test holds this), and a key here never matches a request whose
wire form differs. No hash of the request is computed: the tuple's hash uses the
messages' strings, whose hashes Python keeps on the strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from vera.clients.base import ChatClient, ChatRequest
from vera.clients.meter import current_meter
from vera.clients.structured import merge_params
from vera.records import CallBody, Completion, Message, ModelSpec

_encode = msgspec.json.encode

# (role, provider, model, parameters as sent (sorted JSON), schema (sorted JSON), messages, re-ask)
ReplayKey = tuple[str, str, str, bytes, bytes, tuple[Message, ...], int]


def replay_key(
    role: str,
    provider: str,
    model: str,
    params: dict[str, Any],
    schema: dict[str, Any] | None,
    messages: Sequence[Message],
    reask: int,
) -> ReplayKey:
    """The key of a request within its job; `params` are the parameters as sent (the
    profile's under the call's). JSON with sorted keys, so a list and a tuple, or two
    orders of the same keys, are one request, as on the wire."""
    return (
        role,
        provider,
        model,
        _encode(params, order="sorted"),
        _encode(schema, order="sorted"),
        tuple(messages),  # Messages compare and hash by role and content
        reask,
    )


def body_key(body: CallBody) -> ReplayKey:
    """The key of the request a stored body records."""
    call = body.call
    return replay_key(
        call.role, call.provider, call.model, body.params, body.schema, body.messages, body.reask
    )


class ReplayTable:
    """The replies a resume may replay: job id -> key -> the reply (the first kept for a
    key stays, as the response cache keeps the first answer)."""

    __slots__ = ("by_job", "replayed")

    def __init__(self) -> None:
        self.by_job: dict[str, dict[ReplayKey, Completion]] = {}
        self.replayed = 0  # calls answered from the table

    def add(self, body: CallBody) -> bool:
        """Hold `body`'s reply; False (nothing held) for a call that did not answer."""
        call = body.call
        if call.status != "ok" or body.response is None or not call.job_id:
            return False
        self.by_job.setdefault(call.job_id, {}).setdefault(body_key(body), body.response)
        return True

    @classmethod
    def of(cls, bodies: Iterable[CallBody]) -> ReplayTable:
        table = cls()
        for body in bodies:
            table.add(body)
        return table

    def __len__(self) -> int:
        return sum(len(answers) for answers in self.by_job.values())


class ReplayClient:
    """A ChatClient that answers a request its job already paid for from the table, and
    passes every other to the client below. A replay is recorded as the response cache's
    hits are (`cached`, no tokens, no money: vera.clients.stack)."""

    __slots__ = ("inner", "model", "name", "spec", "table")

    def __init__(self, inner: ChatClient, table: ReplayTable, spec: ModelSpec) -> None:
        self.inner = inner
        self.table = table
        self.spec = spec
        self.name = inner.name
        # What a live call through this stack records as its model (the limits layer's,
        # the protocol client's name for it): what the stored bodies hold.
        self.model = inner.model

    def __repr__(self) -> str:
        return f"ReplayClient({self.inner!r})"

    async def chat(self, request: ChatRequest) -> Completion:
        context = request.context
        if context is not None:
            answers = self.table.by_job.get(context.job_id)
            if answers is not None:
                spec = self.spec
                hit = answers.get(
                    replay_key(
                        context.role,
                        spec.provider,
                        self.model,
                        merge_params(spec.params, request.params),
                        request.schema,
                        request.messages,
                        request.reask,
                    )
                )
                if hit is not None:
                    self.table.replayed += 1
                    meter = current_meter()
                    if meter is not None:
                        meter.settled = True
                        meter.cached = True
                        meter.provider = spec.provider
                        meter.model = self.model
                        meter.account = "cache"
                    # A copy: the caller may keep it, and the table may answer again.
                    return msgspec.structs.replace(hit)
        return await self.inner.chat(request)
