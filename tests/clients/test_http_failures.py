"""A team's own chatbot misbehaving, through `vera run` against a real loopback server:
each fault is an infrastructure failure with its reason (kept out of the scores, counted
on the card, named in one line on the terminal), never a score of the chatbot, and a
resume once the service is fixed finishes the work."""

from __future__ import annotations

import json
import socket
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


WRONG = "wrong-token-5e1f0c9a7d"


def test_a_wrong_token_stops_the_run_naming_the_profile_and_is_never_written(tmp_path: Path) -> None:
    servers = {"http": make_server("http"), "openai": make_server("openai")}
    out = tmp_path / "run"
    with MonkeyPatch.context() as env, serve_in_thread(*servers.values()):
        env.setenv(KEY_ENV, KEY)
        config = _write_setup(tmp_path, ROLES, servers, {}, 1, 6, "user", "", "")
        profile = tmp_path / "providers" / "chatbot-http.toml"
        # The chatbot's token in a variable of its own, set wrong (the model roles' is right).
        profile.write_text(profile.read_text().replace(f"${{{KEY_ENV}}}", "${TEAM_BOT_TOKEN}"))
        env.setenv("TEAM_BOT_TOKEN", WRONG)
        run = ["run", "--config", str(config), "--out", str(out), "--limit-personas", "1", "--quiet"]
        stopped = CliRunner().invoke(main, run)
        env.setenv("TEAM_BOT_TOKEN", KEY)
        resumed = CliRunner().invoke(main, ["run", "--resume", str(out), "--quiet"])
    assert stopped.exit_code == 3, stopped.output
    assert "[chatbot-http] HTTP 401" in stopped.stderr.splitlines()[-1] or any(
        line.startswith("status: stopped early — [chatbot-http] HTTP 401")
        for line in stopped.output.splitlines()
    )
    assert "Traceback" not in stopped.output and WRONG not in stopped.output
    for path in out.rglob("*"):
        if path.is_file():
            assert WRONG.encode() not in path.read_bytes() and KEY.encode() not in path.read_bytes(), path
    assert resumed.exit_code == 0, resumed.output


def test_a_service_down_at_the_start_fails_with_the_reason_and_a_resume_once_it_is_up_finishes(
    tmp_path: Path,
) -> None:
    with socket.socket() as s:  # a free port, nothing listening on it yet
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    servers = {"http": _Later(key=KEY, port=port), "openai": make_server("openai")}
    out = tmp_path / "run"
    with MonkeyPatch.context() as env:
        env.setenv(KEY_ENV, KEY)
        with serve_in_thread(servers["openai"]):
            config = _write_setup(tmp_path, ROLES, servers, {}, 1, 6, "user", "", "")
            run = ["run", "--config", str(config), "--out", str(out), "--limit-personas", "1", "--quiet"]
            down = CliRunner().invoke(main, run)
            with serve_in_thread(servers["http"]):  # the service is back
                up = CliRunner().invoke(main, ["run", "--resume", str(out), "--quiet"])
    assert down.exit_code == 2, down.output
    (conversation,) = _jsonl(out / "conversations.jsonl")[:1]
    assert conversation["status"] == "failed" and "ConnectError: [chatbot-http]" in conversation["error"]
    assert f"Cannot connect to host 127.0.0.1:{port}" in conversation["error"]
    assert f"failed: 1 conversation(s): {conversation['error']}" in down.stderr.splitlines()
    assert up.exit_code == 0, up.output
    assert _jsonl(out / "conversations.jsonl")[-1]["status"] == "complete"
    assert servers["http"].received  # the turns the first run could not send


class _Later(FakeChatbot):
    """A chatbot whose address is known before it listens (its port is given), so a
    profile can name it while it is down."""

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self._port}"
