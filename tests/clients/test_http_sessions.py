"""A custom chatbot that keeps the history itself, by the session id vera sends: every run
is a fresh session on the product's side, and a resume goes on in the session it began.

The conversation ids are the same in every run of one config and seed (that is how a run
resumes and reproduces), so a session id made of them alone would hand a second run's
conversations to the product as the first run's, continued. Driven through `vera run`,
against a real loopback server that records what it received."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from pytest import MonkeyPatch

from vera.cli._main import main

from ..fakes.protocols import Fail, FakeChatbot, Received, Reply, serve_in_thread
from .runs import KEY, KEY_ENV, _write_setup, make_server, run_roles

ROLES = {"chatbot": "http", "user_agent": "openai", "judge": "openai"}


def _sessions(received: list[Received]) -> list[str]:
    return [r.json["session"] for r in received]


def _tag(run_dir: Path) -> str:
    return json.loads((run_dir / "manifest.json").read_bytes())["session_tag"]


def test_two_runs_of_one_config_never_share_a_session(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first = run_roles(tmp_path / "a", ROLES, personas=2)
    second = run_roles(tmp_path / "b", ROLES, personas=2)
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    # The same conversations (the same ids) in both runs...
    ids = {c["id"] for c in first.jsonl("conversations.jsonl")}
    assert ids == {c["id"] for c in second.jsonl("conversations.jsonl")} and len(ids) == 2
    a, b = _sessions(first.servers["http"].received), _sessions(second.servers["http"].received)
    assert len(set(a)) == 2 and len(set(b)) == 2
    # ... under sessions of their own on the product's side: the conversation's id and
    # the run's tag, which the manifest records.
    assert not set(a) & set(b)
    assert set(a) == {f"{i}-{_tag(first.out)}" for i in ids}
    assert set(b) == {f"{i}-{_tag(second.out)}" for i in ids}


def test_a_resume_goes_on_in_the_session_it_began(tmp_path: Path) -> None:
    servers = {"http": make_server("http"), "openai": make_server("openai")}
    bot = servers["http"]
    assert isinstance(bot, FakeChatbot)
    bot.script(Reply(), Fail(500, "backend restarting"))  # the second turn fails (max_retries = 0)
    out = tmp_path / "run"
    with MonkeyPatch.context() as env, serve_in_thread(*servers.values()):
        env.setenv(KEY_ENV, KEY)
        config = _write_setup(tmp_path, ROLES, servers, {}, 1, 8, "user", "", "")
        run = ["run", "--config", str(config), "--out", str(out), "--limit-personas", "1", "--quiet"]
        failed = CliRunner().invoke(main, run)
        assert failed.exit_code == 2, failed.output
        before = len(bot.received)
        resumed = CliRunner().invoke(main, ["run", "--resume", str(out), "--quiet"])
        assert resumed.exit_code == 0, resumed.output
    sessions = _sessions(bot.received)
    assert before == 2 and len(sessions) > before  # the resume sent the product more turns
    lines = (out / "conversations.jsonl").read_text().splitlines()
    conversation = json.loads(lines[-1])  # the resume's record of it
    assert conversation["status"] == "complete"
    assert set(sessions) == {f"{conversation['id']}-{_tag(out)}"}
