"""`[judge] mode = "batch"` on Azure OpenAI's global batch (and Gemini's batch mode), every
role on a loopback fake that keeps the provider's documented batch rules and answers each
batched request with the live fake's own logic (tests/fakes/batch_azure.py,
batch_gemini.py).

For each: the same ratings as live mode; the exact wire format (headers, api-version,
paths, line shape); expired or failed requests asked again in a later wave, never scored
as the chatbot's failure; a run killed with batches pending resumes by polling them and
submits nothing twice; no key in the batch journal or the event log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pytest import MonkeyPatch

from vera.cli._main import main

from .clients import runs
from .fakes.batch_azure import AzureBatchFake
from .fakes.batch_gemini import GeminiBatchFake
from .fakes.protocols import FakeServer, serve_in_thread
from .test_batch import BATCH, jsonl, kill_while_a_batch_is_pending, verdicts

ROLES = ("chatbot", "user_agent", "judge")


@contextmanager
def setup(
    tmp: Path,
    protocol: str,
    server: FakeServer,
    *,
    personas: int = 3,
    extra: str = "",
    profile_extra: str = "",
) -> Iterator[Path]:
    """Every role on `server` (serving in a thread), the key in the environment; the
    run config's path."""
    tmp.mkdir(parents=True, exist_ok=True)
    roles = dict.fromkeys(ROLES, protocol)
    with MonkeyPatch.context() as env, serve_in_thread(server):
        env.setenv(runs.KEY_ENV, runs.KEY)
        yield runs._write_setup(tmp, roles, {protocol: server}, {}, personas, 4, "user", profile_extra, extra)


def vera(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def run(tmp: Path, protocol: str, server: FakeServer, extra: str = "", profile_extra: str = "") -> Path:
    personas = 3
    with setup(tmp, protocol, server, personas=personas, extra=extra, profile_extra=profile_extra) as config:
        out = tmp / "run"
        done = vera(
            "run", "--config", str(config), "--out", str(out), "--limit-personas", str(personas), "--quiet"
        )
    assert done.exit_code == 0, done.output + done.stderr
    return out


def judge_tiers(out: Path) -> set[str]:
    return {c["tier"] for c in jsonl(out / "calls.jsonl") if c["role"] == "judge"}


def no_key_in(out: Path) -> None:
    for name in ("batches.jsonl", "events.jsonl", "calls.jsonl", "manifest.json"):
        path = out / name
        if path.exists():
            assert runs.KEY not in path.read_text(), name


# -- Azure OpenAI global batch ---------------------------------------------------------


def test_azure_global_batch_rates_as_live_azure_does(tmp_path):
    live = run(tmp_path / "live", "azure", AzureBatchFake(key=runs.KEY))
    # The batch goes to the resource's Global-Batch deployment, named apart from the live one.
    server = AzureBatchFake(key=runs.KEY, polls_to_complete=3, deployments=("gpt-4o-batch",))
    batch = run(tmp_path / "batch", "azure", server, BATCH, 'batch_deployment = "gpt-4o-batch"\n')
    assert server.violations == []
    assert server.created and all(n == 1 for n in server.submitted.values())
    assert verdicts(batch) == verdicts(live)
    assert all(v[0] == "complete" for v in verdicts(batch).values())
    assert judge_tiers(live) == {"standard"} and judge_tiers(batch) == {"batch"}
    # no judge question went live: the live calls were the chatbot's and the user's
    live_bodies = [r.json for r in server.received if r.path.startswith("/openai/deployments/")]
    assert live_bodies and not any(b.get("response_format") for b in live_bodies)
    # the wire: Azure's paths, the api-key header, the profile's api-version on every call
    paths = {(method, path.split("/")[2]) for method, path, _, _ in server.batch_calls}
    assert paths == {("POST", "files"), ("POST", "batches"), ("GET", "batches"), ("GET", "files")}
    for _, _, query, headers in server.batch_calls:
        assert query == {"api-version": "2024-10-21"}
        assert headers["api-key"] == runs.KEY and "authorization" not in headers
    # each line: POST /chat/completions, body.model the deployment, the live body otherwise
    first = server.files[server.batches[server.created[0][0]]["file"]].splitlines()
    line = json.loads(first[0])
    assert line["method"] == "POST" and line["url"] == "/chat/completions"
    assert (
        line["body"]["model"] == "gpt-4o-batch" and line["body"]["response_format"]["type"] == "json_schema"
    )
    assert line["custom_id"].startswith("vera-")
    journal = jsonl(batch / "batches.jsonl")
    assert [e["batch_id"] for e in journal if e["event"] == "created"] == [b for b, _ in server.created]
    assert {e["status"] for e in journal if e["event"] == "ended"} == {"completed"}
    assert {e["provider"] for e in journal} == {"judge-azure"}
    no_key_in(batch)


AZURE_BATCH_DEPLOYMENT = 'batch_deployment = "gpt-4o-batch"\n'


def test_azure_expired_requests_go_to_the_next_wave_and_are_never_a_failure(tmp_path):
    live = run(tmp_path / "live", "azure", AzureBatchFake(key=runs.KEY))
    server = AzureBatchFake(key=runs.KEY, polls_to_complete=1, expire_rate=0.3, deployments=("gpt-4o-batch",))
    batch = run(tmp_path / "batch", "azure", server, BATCH, AZURE_BATCH_DEPLOYMENT)
    assert server.expired, "nothing expired: the test proves nothing"
    assert server.violations == []
    assert verdicts(batch) == verdicts(live)
    assert all(v[0] == "complete" for v in verdicts(batch).values())
    assert all(server.submitted[cid] == 2 for cid in server.expired)
    assert "expired" in {e["status"] for e in jsonl(batch / "batches.jsonl") if e["event"] == "ended"}
    logged = [e for e in jsonl(batch / "events.jsonl") if e.get("event") == "batches"]
    assert logged[0]["requeued"] == len(server.expired) and logged[0]["live"] == 0


def test_azure_without_a_batch_deployment_is_refused_by_validate_config_and_before_the_run(tmp_path):
    """Azure runs batches only on a Global-Batch deployment: a judge profile that names
    none would have every line refused. Both `vera validate config` and `vera run` say
    so in one line, naming the profile's setting, before a call is made."""
    server = AzureBatchFake(key=runs.KEY)
    with setup(tmp_path, "azure", server, extra=BATCH) as config:
        checked = vera("validate", "config", str(config))
        done = vera("run", "--config", str(config), "--out", str(tmp_path / "run"), "--quiet")
    for result in (checked, done):
        assert result.exit_code == 1, result.output
        text = result.output + result.stderr
        assert "[azure] batch_deployment" in text and "Global-Batch" in text and "Traceback" not in text
    assert "judge-azure.toml" in checked.output  # the profile is where it is set
    assert server.received == [] and server.batch_calls == []
    assert not (tmp_path / "run").exists()


def test_azure_lines_refused_as_invalid_are_not_sent_again_and_the_reason_is_said(tmp_path):
    """A Global-Batch deployment named, but not one the resource has: Azure fails the
    batch with `invalid_request` on every line. The reason is on the console and in the
    event log, no line is sent again, nothing goes live, and the run stops (exit 3)."""
    server = AzureBatchFake(key=runs.KEY, polls_to_complete=1, deployments=("gpt-4o-batch",))
    server.expect_violations = True
    with setup(
        tmp_path, "azure", server, extra=BATCH, profile_extra='batch_deployment = "gpt-4o-std"\n'
    ) as config:
        out = tmp_path / "run"
        done = vera("run", "--config", str(config), "--out", str(out), "--quiet")
    assert done.exit_code == 3, done.output + done.stderr
    assert "invalid_request" in done.stderr and "not a Global-Batch deployment" in done.stderr
    assert len(server.refused) == len(set(server.refused)) > 0, "a refused line was sent again"
    failed = [e for e in jsonl(out / "events.jsonl") if e.get("event") == "batch_failed"]
    assert failed and all("invalid_request" in e["reason"] and not e["resent"] for e in failed)
    judge_live = [
        r
        for r in server.received
        if r.path.startswith("/openai/deployments/") and r.json.get("response_format")
    ]
    assert judge_live == []
    no_key_in(out)


def test_azure_fake_refuses_what_azure_refuses(tmp_path):
    """The fake is only as good as its refusals: a Bearer token, a missing api-version, a
    line for another url or a deployment that is not a batch one, each fails."""
    import asyncio

    import aiohttp

    server = AzureBatchFake(key=runs.KEY)
    server.expect_violations = True

    def line(cid: str, url: str = "/chat/completions", model: str = "gpt-4o") -> bytes:
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
        return json.dumps({"custom_id": cid, "method": "POST", "url": url, "body": body}).encode()

    async def status_of(
        content: bytes, headers: dict[str, str], query: str = "?api-version=2024-10-21"
    ) -> Any:
        async with aiohttp.ClientSession() as http:
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field("file", content, filename="in.jsonl")
            async with http.post(f"{server.root}/openai/files{query}", data=form, headers=headers) as r:
                if r.status != 200:
                    return r.status
                file_id = (await r.json())["id"]
            create = {"input_file_id": file_id, "endpoint": "/chat/completions", "completion_window": "24h"}
            async with http.post(f"{server.root}/openai/batches{query}", json=create, headers=headers) as r:
                batch_id = (await r.json())["id"]
            async with http.get(f"{server.root}/openai/batches/{batch_id}{query}", headers=headers) as r:
                return (await r.json())["status"]

    async def main_() -> list[Any]:
        async with server:
            key = {"api-key": runs.KEY}
            return [
                await status_of(line("a") + b"\n" + line("b"), key),
                await status_of(line("a"), {"Authorization": f"Bearer {runs.KEY}"}),
                await status_of(line("a"), key, query=""),
                await status_of(line("a"), key, query="?api-version=2024-02-01"),
                await status_of(line("a", url="/v1/chat/completions"), key),
                await status_of(line("a", model="gpt-4o-standard"), key),
                await status_of(line("a") + b"\n" + line("a"), key),
            ]

    assert asyncio.run(main_()) == ["validating", 401, 404, 404, "failed", "failed", "failed"]
    assert any("missing api-key" in v for v in server.violations)
    assert any("not a Global-Batch deployment" in v for v in server.violations)


# -- Gemini batch mode -----------------------------------------------------------------


def judge_cost(out: Path) -> float:
    return sum(c["cost_usd"] for c in jsonl(out / "calls.jsonl") if c["role"] == "judge")


def test_gemini_batch_mode_rates_as_live_gemini_does_at_half_the_judge_price(tmp_path):
    live = run(tmp_path / "live", "gemini", GeminiBatchFake(key=runs.KEY))
    # answers out of the order of the requests: matched by their keys
    server = GeminiBatchFake(key=runs.KEY, polls_to_complete=3, shuffle=True)
    batch = run(tmp_path / "batch", "gemini", server, BATCH)
    assert server.violations == []
    assert server.created and all(n == 1 for n in server.submitted.values())
    assert len(server.created) > 1  # one wave per step of the rubric walk
    assert verdicts(batch) == verdicts(live)
    assert all(v[0] == "complete" for v in verdicts(batch).values())
    assert judge_tiers(live) == {"standard"} and judge_tiers(batch) == {"batch"}
    # the same requests, so the same tokens: the judge's bill is exactly halved
    assert judge_cost(batch) == pytest.approx(judge_cost(live) * 0.5)
    # no judge question went live
    live_bodies = [r.json for r in server.received if r.path.endswith(":generateContent")]
    assert live_bodies and not any(
        (b.get("generationConfig") or {}).get("responseMimeType") for b in live_bodies
    )
    # the wire: the create call on the model's URL, polls on the batch's name, the key
    # in the x-goog-api-key header and never in the URL
    paths = {(method, path) for method, path, _, _ in server.batch_calls}
    assert ("POST", "/v1beta/models/gemini-2.5-flash:batchGenerateContent") in paths
    assert {p for m, p in paths if m == "GET"} == {f"/v1beta/{name}" for name, _ in server.created}
    for _, _, query, headers in server.batch_calls:
        assert query == {} and headers["x-goog-api-key"] == runs.KEY
    body = json.loads(server.bodies[0])
    assert set(body) == {"batch"} and set(body["batch"]) == {"displayName", "inputConfig"}
    item = body["batch"]["inputConfig"]["requests"]["requests"][0]
    assert set(item) == {"request", "metadata"} and item["metadata"]["key"].startswith("vera-")
    assert item["request"]["generationConfig"]["responseMimeType"] == "application/json"
    assert "contents" in item["request"] and "systemInstruction" in item["request"]
    # the states as Gemini names them, each batch's life in the event log
    events = jsonl(batch / "events.jsonl")
    first = [
        e["status"]
        for e in events
        if e.get("event") == "batch_state" and e["batch_id"] == server.created[0][0]
    ]
    assert first == ["pending", "running", "succeeded"]
    journal = jsonl(batch / "batches.jsonl")
    assert [e["batch_id"] for e in journal if e["event"] == "created"] == [b for b, _ in server.created]
    assert {e["status"] for e in journal if e["event"] == "ended"} == {"succeeded"}
    no_key_in(batch)


def judge_batch_calls(out: Path) -> list[dict[str, Any]]:
    return [c for c in jsonl(out / "calls.jsonl") if c["role"] == "judge" and c["tier"] == "batch"]


def test_gemini_answers_without_their_keys_are_matched_by_position_with_a_warning(tmp_path):
    """The service has been seen to drop `metadata` from inline answers; the API
    documents them in the order of the requests. Every answer is then matched by its
    position, the ratings are live mode's, nothing is asked twice, and a warning says so."""
    live = run(tmp_path / "live", "gemini", GeminiBatchFake(key=runs.KEY))
    server = GeminiBatchFake(key=runs.KEY, polls_to_complete=2, drop_keys=1.0)
    batch = run(tmp_path / "batch", "gemini", server, BATCH)
    assert server.dropped and server.violations == []
    assert verdicts(batch) == verdicts(live)
    assert all(n == 1 for n in server.submitted.values())
    logged = next(e for e in jsonl(batch / "events.jsonl") if e.get("event") == "batches")
    assert logged["by_position"] == len(server.dropped) and logged["requeued"] == 0 and logged["unused"] == 0
    warned = [e for e in jsonl(batch / "events.jsonl") if e.get("event") == "batch_warning"]
    assert warned and all(
        e["level"] == "warning" and "matched by their position" in e["message"] for e in warned
    )
    # what the service billed is what the call log holds
    assert len(judge_batch_calls(batch)) == server.answered


def test_gemini_answers_that_cannot_be_matched_are_billed_recorded_and_asked_again(tmp_path):
    """Half the keys dropped and the answers shuffled: the keyed answers show the order
    is not the requests', so position proves nothing. The keyless answers are not
    guessed at: each is recorded as a call (billed, unused), its request asked again in
    the next wave and, after `batch_requeue` waves, live. The card holds every answer
    the service returned, and the ratings are live mode's."""
    live = run(tmp_path / "live", "gemini", GeminiBatchFake(key=runs.KEY))
    server = GeminiBatchFake(key=runs.KEY, polls_to_complete=1, drop_keys=0.5, shuffle=True)
    batch = run(tmp_path / "batch", "gemini", server, BATCH)
    assert server.dropped, "no key was dropped: the test proves nothing"
    assert verdicts(batch) == verdicts(live)
    assert all(v[0] == "complete" for v in verdicts(batch).values())
    calls = judge_batch_calls(batch)
    unused = [c for c in calls if c["status"] == "error"]
    assert len(calls) == server.answered  # every billed answer is on the card
    assert len(unused) == len(server.dropped) > 0
    assert all(c["error"].startswith("batch answer not used") and c["cost_usd"] > 0 for c in unused)
    logged = next(e for e in jsonl(batch / "events.jsonl") if e.get("event") == "batches")
    assert logged["unused"] == len(unused) and logged["by_position"] == 0
    # each request whose answer could not be matched was asked again, in a later wave
    # (or live, after `batch_requeue` waves: a call standing in for a batched one)
    assert all(server.submitted[key] >= 2 for key in server.dropped)
    went_live = [c for c in jsonl(batch / "calls.jsonl") if c["role"] == "judge" and c["tier"] == "standard"]
    assert all(c["fallback"] == "batch" for c in went_live) and logged["live"] == len(went_live)
    card = json.loads((batch / "card.json").read_text())
    judge = card["accounting"]["by_role"]["judge"]
    # which requests end up live depends on how the waves form (timing); the card leaves
    # the count null when nothing fell back
    assert judge["calls"] == len(calls) + len(went_live) and (judge["fallbacks"] or 0) == len(went_live)
    assert judge["cost_usd"] == pytest.approx(
        round(sum(c["cost_usd"] for c in jsonl(batch / "calls.jsonl") if c["role"] == "judge"), 4)
    )


def test_gemini_a_batch_that_failed_says_why_and_its_requests_are_not_sent_again(tmp_path):
    server = GeminiBatchFake(key=runs.KEY, polls_to_complete=1, fail_batches=1)
    with setup(tmp_path, "gemini", server, extra=BATCH) as config:
        out = tmp_path / "run"
        done = vera("run", "--config", str(config), "--out", str(out), "--quiet")
    assert done.exit_code == 3, done.output + done.stderr
    assert "error 3: Request contains an invalid argument." in done.stderr
    failed = [e for e in jsonl(out / "events.jsonl") if e.get("event") == "batch_failed"]
    assert [e["batch_id"] for e in failed] == [server.created[0][0]] and not failed[0]["resent"]
    first = set(server.created[0][1])
    assert all(server.submitted[key] == 1 for key in first)


def test_gemini_expired_batches_and_failed_requests_go_to_the_next_wave(tmp_path):
    live = run(tmp_path / "live", "gemini", GeminiBatchFake(key=runs.KEY))
    server = GeminiBatchFake(key=runs.KEY, polls_to_complete=1, expire_batches=1, error_rate=0.3)
    batch = run(tmp_path / "batch", "gemini", server, BATCH)
    assert server.failed_keys, "nothing failed: the test proves nothing"
    assert server.violations == []
    assert verdicts(batch) == verdicts(live)
    assert all(v[0] == "complete" for v in verdicts(batch).values())
    # each unanswered request was asked once more, in a later batch, and answered there
    assert all(server.submitted[key] == 2 for key in server.failed_keys)
    ended = [e["status"] for e in jsonl(batch / "batches.jsonl") if e["event"] == "ended"]
    assert ended[0] == "expired" and "succeeded" in ended
    logged = [e for e in jsonl(batch / "events.jsonl") if e.get("event") == "batches"]
    assert logged[0]["requeued"] == len(server.failed_keys) and logged[0]["live"] == 0


def test_gemini_a_wave_over_the_inline_limit_goes_as_a_requests_file(tmp_path, monkeypatch):
    from vera.clients import batch_gemini

    live = run(tmp_path / "live", "gemini", GeminiBatchFake(key=runs.KEY))
    # Every wave over the inline limit; the fake refuses any create call over 2 kB, so
    # no request can have gone inline.
    monkeypatch.setattr(batch_gemini, "INLINE_BYTES", 1)
    server = GeminiBatchFake(key=runs.KEY, polls_to_complete=2, error_rate=0.3, max_bytes=2000)
    batch = run(tmp_path / "batch", "gemini", server, BATCH)
    assert server.violations == []
    assert server.failed_keys, "no error line: the test proves nothing"
    assert verdicts(batch) == verdicts(live)
    assert all(v[0] == "complete" for v in verdicts(batch).values())
    assert all(b["from_file"] for b in server.batches.values())
    assert all(server.submitted[key] == 2 for key in server.failed_keys)
    # the wire: the resumable upload's start and finish, the create naming the file, the
    # responses file downloaded; the key in the header on every call, never in the URL
    calls = [(m, p, q.get("upload_id", "") or q.get("alt", "")) for m, p, q, _ in server.batch_calls]
    assert ("POST", "/upload/v1beta/files", "") in calls and ("POST", "/upload/v1beta/files", "u1") in calls
    assert any(m == "GET" and p.startswith("/download/v1beta/files/") and q == "media" for m, p, q in calls)
    for _, _, query, headers in server.batch_calls:
        assert "key" not in query and headers["x-goog-api-key"] == runs.KEY
    starts = [h for m, p, q, h in server.batch_calls if h.get("x-goog-upload-command") == "start"]
    assert starts[0]["x-goog-upload-protocol"] == "resumable"
    assert starts[0]["x-goog-upload-header-content-type"] == "application/jsonl"
    requests_file = server.files["files/requests-0001"].splitlines()
    assert int(starts[0]["x-goog-upload-header-content-length"]) == len(server.files["files/requests-0001"])
    assert all(set(json.loads(line)) == {"key", "request"} for line in requests_file)
    assert json.loads(server.bodies[0])["batch"]["inputConfig"] == {"fileName": "files/requests-0001"}
    no_key_in(batch)


def test_gemini_fake_refuses_what_the_api_refuses():
    import asyncio

    import aiohttp

    server = GeminiBatchFake(key=runs.KEY, max_bytes=4000)
    server.expect_violations = True

    def item(key: str, model: str | None = None, text: str = "hi") -> dict[str, Any]:
        request: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": text}]}]}
        if model:
            request["model"] = model
        return {"request": request, "metadata": {"key": key}}

    def create(*items: dict[str, Any], name: str = "x") -> dict[str, Any]:
        return {"batch": {"displayName": name, "inputConfig": {"requests": {"requests": list(items)}}}}

    async def status(body: dict[str, Any], headers: dict[str, str]) -> int:
        async with aiohttp.ClientSession() as http:
            url = f"{server.root}/v1beta/models/gemini-2.5-flash:batchGenerateContent"
            async with http.post(url, json=body, headers=headers) as r:
                return r.status

    async def main_() -> list[int]:
        async with server:
            key = {"x-goog-api-key": runs.KEY}
            return [
                await status(create(item("a"), item("b", model="models/gemini-2.5-flash")), key),
                await status(create(item("a")), {}),
                await status(create(item("a"), item("a")), key),
                await status(create(item("a", model="models/gemini-2.5-pro")), key),
                await status(create(item("a", text="x" * 5000)), key),
                await status(create(item("a"), name=""), key),
            ]

    assert asyncio.run(main_()) == [200, 400, 400, 400, 400, 400]
    assert any("duplicate metadata.key" in v for v in server.violations)
    assert any("not the batch's model" in v for v in server.violations)
    assert any("exceeds the limit" in v for v in server.violations)


# -- resume after kill -9, for every provider --------------------------------------------

FAKES: dict[str, Callable[..., FakeServer]] = {
    "azure": lambda **kw: AzureBatchFake(key=runs.KEY, deployments=("gpt-4o-batch",), **kw),
    "gemini": lambda **kw: GeminiBatchFake(key=runs.KEY, **kw),
}
PROFILE_EXTRA = {"azure": AZURE_BATCH_DEPLOYMENT, "gemini": ""}


@pytest.mark.slow
@pytest.mark.parametrize("protocol", sorted(FAKES))
def test_killed_with_batches_pending_resumes_by_polling_and_submits_nothing_twice(tmp_path, protocol):
    server: Any = FAKES[protocol](polls_to_complete=10**9)
    with setup(tmp_path, protocol, server, extra=BATCH, profile_extra=PROFILE_EXTRA[protocol]) as config:
        out = tmp_path / "run"
        env = {**os.environ, runs.KEY_ENV: runs.KEY}
        cmd = [
            sys.executable,
            "-m",
            "vera",
            "run",
            "--config",
            str(config),
            "--limit-personas",
            "3",
            "--quiet",
        ]
        kill_while_a_batch_is_pending([*cmd, "--out", str(out)], env, server, out)
        before = len(server.created)
        polls_before = server.polls[server.created[0][0]]
        server.polls_to_complete = 1
        done = subprocess.run(
            [*cmd, "--resume", str(out)], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout + done.stderr
    assert server.violations == []
    # the batch pending at the kill was polled again, and no request was submitted twice
    assert server.polls[server.created[0][0]] > polls_before
    assert all(n == 1 for n in server.submitted.values()), server.submitted.most_common(3)
    assert len(server.created) > before
    final = verdicts(out)
    assert len(final) == 3 and all(v[0] == "complete" for v in final.values())
    no_key_in(out)
