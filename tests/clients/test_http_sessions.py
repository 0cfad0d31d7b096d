"""A custom chatbot that keeps the history itself, by the session id vera sends: every run
is a fresh session on the product's side, and a resume goes on in the session it began.

The conversation ids are the same in every run of one config and seed (that is how a run
resumes and reproduces), so a session id made of them alone would hand a second run's
conversations to the product as the first run's, continued. Driven through `vera run`,
against a real loopback server that records what it received."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web
from click.testing import CliRunner
from pytest import MonkeyPatch

from vera.cli._main import main
from vera.store import BodyReader
from vera.viewer.calls import body_html

from ..fakes.protocols import Fail, FakeChatbot, FakeServer, Received, Reply, serve_in_thread
from .runs import KEY, KEY_ENV, _write_setup, make_server, run_roles

ROLES = {"chatbot": "http", "user_agent": "openai", "judge": "openai"}


def _sessions(received: list[Received]) -> list[str]:
    return [r.json["session"] for r in received]


def _tag(run_dir: Path) -> str:
    return json.loads((run_dir / "manifest.json").read_bytes())["session_tag"]


def test_two_runs_of_one_config_never_share_a_session(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
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


class StatefulChatbot(FakeChatbot):
    """A product that keeps each session's history itself, keyed by the session id in the
    URL, and stores a turn before it answers: its first answer to every turn is lost (a
    504 from its gateway), so the retry is the same turn again. It recognises a turn it
    has already stored by the `turn` field, and answers it from what it stored."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.history: dict[str, list[tuple[str, str]]] = {}
        self.answered: dict[tuple[str, str], str] = {}

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/api/sessions/{session}/reply", self.turn)

    async def turn(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.received.append(Received("POST", request.path, {}, {}, body, 0.0, b"", request.path_qs))
        session, turn = request.match_info["session"], body["turn"]
        if (session, turn) in self.answered:  # a retry: the turn is stored already
            return web.json_response({"reply": {"text": self.answered[(session, turn)]}})
        history = self.history.setdefault(session, [])
        reply = f"I hear you ({len(history) // 2 + 1} messages from you so far)."
        history += [("user", body["message"]), ("assistant", reply)]
        self.answered[(session, turn)] = reply
        return web.json_response({"detail": "gateway timeout"}, status=504)


def test_a_retried_turn_carries_the_same_turn_number_so_the_product_can_recognise_it(
    tmp_path: Path,
) -> None:
    bot = StatefulChatbot(key=KEY)
    servers: dict[str, FakeServer] = {"http": bot, "openai": make_server("openai")}
    out = tmp_path / "run"
    with MonkeyPatch.context() as env, serve_in_thread(*servers.values()):
        env.setenv(KEY_ENV, KEY)
        config = _write_setup(tmp_path, ROLES, servers, {}, 1, 8, "user", "", "")
        profile = tmp_path / "providers" / "chatbot-http.toml"
        profile.write_text(
            profile.read_text()
            .replace("max_retries = 0", "max_retries = 2")
            .replace("/api/chat", "/api/sessions/{{session_id}}/reply")
            .replace(
                'body = { session = "{{session_id}}", history = "{{messages}}", ',
                'body = { turn = "{{turn}}", ',
            )
        )
        run = CliRunner().invoke(
            main, ["run", "--config", str(config), "--out", str(out), "--limit-personas", "1", "--quiet"]
        )
    assert run.exit_code == 0, run.output
    (conversation,) = [json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()]
    # Every turn was sent twice (the 504, then the retry), with the same number each time.
    turns = [r.json["turn"] for r in bot.received]
    assert turns == [str(n) for n in range(1, len(turns) // 2 + 1) for _ in (1, 2)] and len(turns) >= 4
    # So the product's history is the conversation vera judges, each message once.
    (history,) = bot.history.values()
    said = [(t["speaker"].replace("chatbot", "assistant"), t["text"]) for t in conversation["turns"]]
    assert history == said[: len(history)] and len(history) >= len(said) - 1
    # The viewer says the product got each of those turns twice, not once.
    with BodyReader(out) as reader:
        bodies = [b for b in reader.all() if b.call.role == "chatbot"]
    assert len(bodies) == len(turns) // 2 and {b.call.attempts for b in bodies} == {2}
    for body in bodies:
        assert "sent to the service (2 attempts: each retry sends the same request)" in body_html(
            1, body, "chatbot"
        )


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
        # Judging the run in between (its complete conversations; here none) keeps the
        # tag in the manifest it writes again.
        judged = CliRunner().invoke(main, ["judge", str(out), "--quiet"])
        assert judged.exit_code == 2, judged.output
        resumed = CliRunner().invoke(main, ["run", "--resume", str(out), "--quiet"])
        assert resumed.exit_code == 0, resumed.output
    sessions = _sessions(bot.received)
    assert before == 2 and len(sessions) > before  # the resume sent the product more turns
    lines = (out / "conversations.jsonl").read_text().splitlines()
    conversation = json.loads(lines[-1])  # the resume's record of it
    assert conversation["status"] == "complete"
    assert set(sessions) == {f"{conversation['id']}-{_tag(out)}"}


STATEFUL_BODY = 'body = { message = "{{last_message}}" }\n'


def test_a_shared_cache_with_a_product_that_keeps_the_history_is_a_warning(tmp_path: Path) -> None:
    # No contract: the product here takes the newest message alone.
    servers: dict[str, FakeServer] = {"http": FakeChatbot(key=KEY), "openai": make_server("openai")}
    out = tmp_path / "run"
    with MonkeyPatch.context() as env, serve_in_thread(*servers.values()):
        env.setenv(KEY_ENV, KEY)
        config = _write_setup(tmp_path, ROLES, servers, {}, 1, 4, "user", "", "")
        shared = f'cache_dir = "{tmp_path / "cache"}"\n'
        config.write_text(shared + config.read_text().replace("cache = false\n", ""))
        stateless = CliRunner().invoke(main, ["validate", "config", str(config)])
        profile = tmp_path / "providers" / "chatbot-http.toml"
        text = profile.read_text()
        body = next(line for line in text.splitlines() if line.startswith("body = "))
        profile.write_text(text.replace(body + "\n", STATEFUL_BODY))
        validated = CliRunner().invoke(main, ["validate", "config", str(config)])
        run = ["run", "--config", str(config), "--out", str(out), "--limit-personas", "1", "--quiet"]
        ran = CliRunner().invoke(main, run)
    warning = "chatbot 'chatbot-http' keeps the history itself (its http.body sends no {{messages}})"
    # The control: a product sent the history is as well served by a shared cache.
    assert stateless.exit_code == 0 and warning not in stateless.output, stateless.output
    assert (
        validated.exit_code == 0 and f"warning: cache_dir {tmp_path / 'cache'}: {warning}" in validated.output
    )
    assert ran.exit_code == 0, ran.output
    assert any(line.startswith("warning: cache_dir ") and warning in line for line in ran.stderr.splitlines())
