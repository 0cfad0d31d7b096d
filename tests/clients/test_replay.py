"""The replay layer (vera.clients.replay): a resumed run's calls answered from the run's
own call bodies, only for the identical request, on a real loopback OpenAI fake. The
bodies go through the real store (written, closed, read back by `replayable_bodies`)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import msgspec

from vera.clients.base import CallContext, ChatRequest
from vera.clients.cache import CachedClient, ResponseCache, request_key
from vera.clients.replay import ReplayClient, ReplayTable, body_key, replay_key
from vera.clients.stack import CachingClients, RecordingClient
from vera.clients.structured import merge_params
from vera.records import CallBody, CallRecord, Completion, Message, ModelSpec
from vera.store import RunStore, replayable_bodies

from ..fakes.protocols import FakeOpenAI, Reply
from .conftest import ANSWER_SCHEMA, STRICT_ANSWER_SCHEMA, make_profile, open_pool

SYSTEM = Message("system", "You are a careful assistant.")


def _request(job: str = "job-1", role: str = "judge", **changes: Any) -> ChatRequest:
    fields: dict[str, Any] = {
        "messages": (SYSTEM, Message("user", "hello")),
        "params": {"temperature": 0.0},
        "schema": STRICT_ANSWER_SCHEMA,
        "context": CallContext(role=role, job_id=job, conversation_id="conv-1"),  # type: ignore[arg-type]
    }
    fields.update(changes)
    return ChatRequest(**fields)


def _kept(run_dir: Path, bodies: list[CallBody]) -> list[CallBody]:
    """`bodies` written by a real store and read back as a resume reads them."""
    store = RunStore(run_dir, call_bodies=True)
    for body in bodies:
        store.add_call(body.call, body)
    store.close()
    return list(replayable_bodies(run_dir, lambda job: job == "done-job"))


async def _first_session(server: FakeOpenAI, requests: list[tuple[str, ChatRequest]]) -> list[CallBody]:
    """Ask each (role, request) through the ordinary stack, keeping the bodies."""
    bodies: list[CallBody] = []
    profile = make_profile("oai", "openai", server.base_url, params={"max_tokens": 64})
    async with open_pool(profile) as pool:
        clients = CachingClients(pool, None, lambda r: None, on_body=bodies.append)
        for role, request in requests:
            await clients.client("oai", role).chat(request)  # type: ignore[arg-type]
    return bodies


async def test_a_resume_replays_exactly_the_requests_already_answered(tmp_path: Path) -> None:
    asked = [
        ("judge", _request()),
        ("judge", _request(job="done-job")),
        ("chatbot", _request(role="chatbot")),
    ]
    async with FakeOpenAI(key=None) as server:
        server.script(Reply("yes"), Reply("other"), Reply("bot says"))
        kept = _kept(tmp_path / "run", await _first_session(server, asked))
        # The finished job's reply is not held; the others are, each under its own job.
        assert sorted((b.call.job_id, b.call.role) for b in kept) == [
            ("job-1", "chatbot"),
            ("job-1", "judge"),
        ]
        table = ReplayTable.of(kept)
        assert len(table) == 2
        received = len(server.received)
        records: list[CallRecord] = []
        profile = make_profile("oai", "openai", server.base_url, params={"max_tokens": 64})
        async with open_pool(profile) as pool:
            clients = CachingClients(pool, None, records.append, replay=table)
            judge = clients.client("oai", "judge")
            assert isinstance(judge, RecordingClient) and isinstance(judge.inner, ReplayClient)
            assert judge.inner.inner is pool.limited("oai", "judge")
            answer = await judge.chat(_request())
            bot = await clients.client("oai", "chatbot").chat(_request(role="chatbot"))
            assert len(server.received) == received  # nothing asked again
            assert (answer.text, bot.text) == ("yes", "bot says")
            # The finished job's request is asked (it is never replayed: nothing asks it).
            await judge.chat(_request(job="done-job"))
            assert len(server.received) == received + 1
    replayed = [r for r in records if r.cached]
    assert [(r.job_id, r.role, r.account, r.cost_usd, r.usage.input_tokens) for r in replayed] == [
        ("job-1", "judge", "cache", 0.0, 0),
        ("job-1", "chatbot", "cache", 0.0, 0),
    ]
    assert replayed[0].provider == "oai" and replayed[0].model == "test-model"
    assert table.replayed == 2


async def test_a_request_that_differs_in_anything_is_asked_not_replayed(tmp_path: Path) -> None:
    async with FakeOpenAI(key=None) as server:
        server.script(Reply("kept answer"))
        table = ReplayTable.of(_kept(tmp_path / "run", await _first_session(server, [("judge", _request())])))
        assert len(table) == 1
        changed = [
            _request(job="job-2"),  # another job (another judge instance, another seed)
            _request(messages=(SYSTEM, Message("user", "hello!"))),
            _request(messages=(SYSTEM, Message("assistant", "hello"))),
            _request(messages=(Message("user", "hello"),)),
            _request(params={"temperature": 0.5}),
            _request(params={"temperature": 0.0, "max_tokens": 32}),  # over the profile's
            _request(schema=None),
            _request(schema={**STRICT_ANSWER_SCHEMA, "title": "Another"}),
            _request(reask=1),
        ]
        before = len(server.received)
        profile = make_profile("oai", "openai", server.base_url, params={"max_tokens": 64})
        async with open_pool(profile) as pool:
            judge = CachingClients(pool, None, lambda r: None, replay=table).client("oai", "judge")
            for request in changed:
                assert (await judge.chat(request)).text != "kept answer"
            # The same request in another role, or to another model of the same provider,
            # is another request.
            bot = CachingClients(pool, None, lambda r: None, replay=table).client("oai", "chatbot")
            assert (await bot.chat(_request(role="chatbot"))).text != "kept answer"
        assert len(server.received) == before + len(changed) + 1
        other_model = make_profile(
            "oai", "openai", server.base_url, model="other-model", params={"max_tokens": 64}
        )
        async with open_pool(other_model) as pool:
            judge = CachingClients(pool, None, lambda r: None, replay=table).client("oai", "judge")
            assert (await judge.chat(_request())).text != "kept answer"
        assert len(server.received) == before + len(changed) + 2
        # Other profile parameters are another request too.
        hotter = make_profile("oai", "openai", server.base_url, params={"max_tokens": 64, "top_p": 0.5})
        async with open_pool(hotter) as pool:
            judge = CachingClients(pool, None, lambda r: None, replay=table).client("oai", "judge")
            assert (await judge.chat(_request())).text != "kept answer"
        assert len(server.received) == before + len(changed) + 3


def test_requests_the_cache_calls_the_same_have_the_same_replay_key() -> None:
    """The replay key holds what `request_key` holds (the protocol aside, which the
    provider's profile fixes in a run; the parameters merged as sent): over requests that
    vary in every field, two with the same `request_key` have the same replay key, and
    two with different replay keys have different `request_key`s."""
    spec = ModelSpec(ref="p/m", provider="p", protocol="openai", model="m", params={"max_tokens": 64})
    other = ModelSpec(ref="p/n", provider="p", protocol="openai", model="n", params={"max_tokens": 64})
    specs = [spec, other, ModelSpec(ref="q/m", provider="q", protocol="openai", model="m")]
    histories = [
        (SYSTEM,),
        (SYSTEM, Message("user", "a")),
        (SYSTEM, Message("user", "a"), Message("assistant", "b")),
        (SYSTEM, Message("assistant", "a")),
    ]
    params: list[dict[str, Any] | None] = [
        None,
        {},
        {"temperature": 0.2},
        {"max_tokens": 64},
        {"seed": [1, 2]},
    ]
    schemas: list[dict[str, Any] | None] = [None, ANSWER_SCHEMA]
    contexts = [CallContext(role=r, job_id=j) for r in ("judge", "chatbot") for j in ("a", "b")]
    seen: dict[str, Any] = {}
    keys: dict[Any, str] = {}
    for s, m, p, sc, c, reask in itertools.product(specs, histories, params, schemas, contexts, (0, 1)):
        cache = request_key(s, m, p, sc, c, reask)
        ours = (c.job_id, replay_key(c.role, s.provider, s.model, merge_params(s.params, p), sc, m, reask))
        if cache in seen:
            assert seen[cache] == ours
        seen[cache] = ours
        if ours in keys and keys[ours] != cache:
            # Only one way for two cache keys to send one request: the same parameters
            # given by the profile or by the call (the wire request is the same).
            assert merge_params(s.params, p) == s.params
        keys[ours] = cache
    assert len(keys) > 500


def test_a_body_key_is_the_key_of_the_request_it_records() -> None:
    spec = ModelSpec(ref="p/m", provider="p", protocol="openai", model="m", params={"max_tokens": 64})
    request = _request()
    body = CallBody(
        call=CallRecord(
            job_id="job-1", role="judge", provider="p", model="m", account="a", latency_ms=1.0, status="ok"
        ),
        messages=request.messages,
        params=merge_params(spec.params, request.params),
        schema=request.schema,
        response=Completion(text="t"),
    )
    assert body_key(body) == replay_key(
        "judge", "p", "m", merge_params(spec.params, request.params), request.schema, request.messages, 0
    )
    # Parameters compare as sent: the order of their keys, a list or a tuple, are one request.
    assert replay_key("judge", "p", "m", {"a": 1, "b": [1]}, None, (), 0) == replay_key(
        "judge", "p", "m", {"b": (1,), "a": 1}, None, (), 0
    )
    # A call that did not answer holds nothing to replay.
    failed = msgspec.structs.replace(body, call=msgspec.structs.replace(body.call, status="error"))
    unanswered = msgspec.structs.replace(body, response=None)
    assert ReplayTable.of([failed, unanswered]).by_job == {}
    assert len(ReplayTable.of([body])) == 1


async def test_with_a_cache_sqlite_too_the_bodies_answer_first_and_the_cache_the_rest(tmp_path: Path) -> None:
    """A run made before the bodies answered its resume has both; they hold the same
    replies, and whichever holds one answers it without a request."""
    async with FakeOpenAI(key=None) as server:
        server.script(Reply("from bodies"), Reply("from cache"))
        kept = _kept(tmp_path / "run", await _first_session(server, [("judge", _request())]))
        table = ReplayTable.of(kept)
        cache = ResponseCache(tmp_path / "run" / "cache.sqlite")
        profile = make_profile("oai", "openai", server.base_url, params={"max_tokens": 64})
        async with open_pool(profile) as pool:
            # The cache alone first: it pays for one more request and keeps it.
            only_cache = CachingClients(pool, cache, lambda r: None).client("oai", "judge")
            assert (await only_cache.chat(_request(job="job-2"))).text == "from cache"
            received = len(server.received)
            both = CachingClients(pool, cache, lambda r: None, replay=table).client("oai", "judge")
            assert isinstance(both, RecordingClient) and isinstance(both.inner, ReplayClient)
            assert isinstance(both.inner.inner, CachedClient)
            assert (await both.chat(_request())).text == "from bodies"
            assert (await both.chat(_request(job="job-2"))).text == "from cache"
            assert len(server.received) == received
        assert table.replayed == 1 and cache.hits == 1
        await cache.aclose()
