"""A team's own chatbot misbehaving, through `vera run` against a real loopback server:
each fault is an infrastructure failure with its reason (kept out of the scores, counted
on the card, named in one line on the terminal), never a score of the chatbot, and a
resume once the service is fixed finishes the work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pytest import MonkeyPatch

from vera.cli._main import main

from ..fakes.protocols import (
    Behaviour,
    Empty,
    Fail,
    FakeChatbot,
    Malformed,
    Raw,
    Reply,
    Reset,
    Slow,
    serve_in_thread,
)
from .runs import KEY, KEY_ENV, _write_setup, make_server

ROLES = {"chatbot": "http", "user_agent": "openai", "judge": "openai"}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        (Fail(500, "database unavailable"), "ServerError: [chatbot-http] HTTP 500: database unavailable"),
        (Malformed(), "BadResponseError: [chatbot-http] reply is not JSON"),
        (
            Raw(b'{"status": "queued"}'),
            "BadResponseError: [chatbot-http] no text at response_path 'reply.text'",
        ),
        (Empty(), "BadResponseError: [chatbot-http] empty reply"),
        (Slow(3), "CallTimeoutError: [chatbot-http] no complete answer within 1 s"),
        (Reset(), "[chatbot-http]"),
    ],
    ids=["500", "malformed", "no-reply-field", "empty-reply", "timeout", "connection-reset"],
)
def test_a_fault_is_a_failure_with_its_reason_and_a_resume_finishes(
    tmp_path: Path, fault: Behaviour, reason: str
) -> None:
    servers = {"http": make_server("http"), "openai": make_server("openai")}
    bot = servers["http"]
    assert isinstance(bot, FakeChatbot)
    bot.script(Reply(), fault)  # the conversation's second chatbot turn (max_retries = 0)
    out = tmp_path / "run"
    with MonkeyPatch.context() as env, serve_in_thread(*servers.values()):
        env.setenv(KEY_ENV, KEY)
        config = _write_setup(tmp_path, ROLES, servers, {}, 1, 6, "user", "", "")
        profile = tmp_path / "providers" / "chatbot-http.toml"
        profile.write_text(profile.read_text().replace("timeout_s = 10", "timeout_s = 1"))
        run = ["run", "--config", str(config), "--out", str(out), "--limit-personas", "1", "--quiet"]
        failed = CliRunner().invoke(main, run)
        (conversation,) = _jsonl(out / "conversations.jsonl")
        judgements = _jsonl(out / "judgements.jsonl")
        card = json.loads((out / "card.json").read_text())
        resumed = CliRunner().invoke(main, ["run", "--resume", str(out), "--quiet"])

    assert failed.exit_code == 2, failed.output
    # Recorded as failed, with the reason; never judged, so never scored.
    assert conversation["status"] == "failed" and reason in conversation["error"]
    assert judgements == []
    assert card["counts"]["conversations_failed"] == 1
    assert [f["reason"] for f in card["failures"]] == [conversation["error"]]
    # One line on the terminal says why, not only how many.
    assert f"failed: 1 conversation(s): {conversation['error']}" in failed.stderr.splitlines()
    assert "Traceback" not in failed.output

    assert resumed.exit_code == 0, resumed.output
    *_, done = _jsonl(out / "conversations.jsonl")
    assert done["status"] == "complete" and done["id"] == conversation["id"]
    assert "failed:" not in resumed.stderr
