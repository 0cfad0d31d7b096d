"""Multi-session conversations (docs/sessions.md): a persona meets a chatbot several
times; each session is a conversation judged on its own, the sessions of one persona
form an arc, and a resume redoes only the sessions that are not finished."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pytest import MonkeyPatch

from vera.cli._main import main
from vera.engine._plan import conversation_jobs
from vera.engine._simulate import USER_MEMORY_NOTE, SimulationSettings
from vera.errors import ConfigError
from vera.inputs import load_config, read_transcripts
from vera.records import ModelSpec, Persona
from vera.report.exports._reference import transcript_name
from vera.store import open_run

from .clients.runs import KEY, KEY_ENV
from .conftest import jsonl
from .fakes.answering import AnsweringOpenAI
from .fakes.protocols import FakeChatbot, FakeServer, serve_in_thread
from .run_config import write_run_config

ROOT = Path(__file__).resolve().parent.parent


def mixed_personas(tmp: Path) -> Path:
    """Three built-in personas of different risk (None, High, Immediate), so the
    offline judge has something to rate."""
    lines = (ROOT / "personas" / "vera-personas.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    col = next(i for i, h in enumerate(header) if "risk" in h.lower())
    picked: dict[str, str] = {}
    for line in lines[1:]:
        risk = line.split("\t")[col]
        if risk.split()[0] in ("None", "High", "Immediate"):
            picked.setdefault(risk.split()[0], line)
    path = tmp / "personas.tsv"
    path.write_text("\n".join([lines[0], *picked.values()]) + "\n")
    return path


def offline_config(tmp: Path, **conversation: Any) -> Path:
    settings: dict[str, Any] = {"personas": mixed_personas(tmp)} if conversation.get("sessions") else {}
    return write_run_config(
        tmp / "run.toml",
        providers=ROOT / "providers",
        runs_dir=tmp / "runs",
        chatbots=["offline/best-practice", "offline/risk-ignoring"],
        persona_limit=3,
        conversation={"max_turns": 12, "min_turns": 4, **conversation},
        stats={"resamples": 50},
        **settings,
    )


def vera(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    return result


# ---------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------


def test_session_settings_for_an_unlisted_type_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[conversation]\nsessions = ["intake", "follow-up"]\n[conversation.session.folow-up]\nmax_turns = 6\n'
    )
    with pytest.raises(ConfigError, match=r"\[conversation.session.folow-up\].*not in conversation.sessions"):
        load_config(path)


def test_a_session_type_that_cannot_be_part_of_a_file_name_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[conversation]\nsessions = ["intake", "follow_up"]\n')
    with pytest.raises(ConfigError, match="'follow_up' is not a session type name"):
        load_config(path)


def test_a_session_types_turn_limits_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[conversation]\nsessions = ["a", "b"]\n[conversation.session.b]\nmin_turns = 40\n')
    with pytest.raises(ConfigError, match=r"conversation\.session\.b\.min_turns"):
        load_config(path)


def test_the_cli_says_when_sessions_name_nothing(tmp_path: Path) -> None:
    result = vera("run", "--config", str(offline_config(tmp_path)), "--sessions", " , ", "--quiet")
    assert result.exit_code == 1
    assert "--sessions ' , ': names no session type" in result.output


# ---------------------------------------------------------------------------------------
# Ids
# ---------------------------------------------------------------------------------------


def test_single_session_job_ids_are_those_of_runs_made_before_sessions() -> None:
    """Pinned from the code before sessions existed: a resume of an older run, and the
    response cache of one, must find every job under its old id."""
    bot = ModelSpec(
        ref="offline/best-practice", provider="offline", protocol="offline", model="best-practice"
    )
    ua = ModelSpec(ref="offline/scripted-user", provider="offline", protocol="offline", model="scripted-user")
    personas = tuple(Persona(name=n, risk="High", fields={"Name": n, "Risk": "High"}) for n in ("Ana", "Ben"))
    jobs = conversation_jobs(
        chatbots=[bot],
        user_agents=[ua],
        personas=personas,
        seeds=[1, 2],
        user_prompts_sha="0" * 64,
        settings=SimulationSettings(),
    )
    assert [(j.id, j.seed, j.session) for j in jobs] == [
        ("3f96a853aa5b8b6d", 1632328101, None),
        ("41e2192aca14ec27", 608062914, None),
        ("7a9372383ada80dc", 360393474, None),
        ("e615561956639cdd", 21812674, None),
    ]


def test_the_config_fingerprint_of_a_run_without_sessions_is_unchanged(tmp_path: Path) -> None:
    before = load_config(ROOT / "configs" / "offline.toml").fingerprint()
    path = tmp_path / "c.toml"
    path.write_text(
        (ROOT / "configs" / "offline.toml")
        .read_text()
        .replace("[conversation]", "[conversation]\nsessions = []")
    )
    assert load_config(path).fingerprint() == before
    path.write_text(
        (ROOT / "configs" / "offline.toml")
        .read_text()
        .replace("[conversation]", '[conversation]\nsessions = ["a", "b"]')
    )
    assert load_config(path).fingerprint() != before


# ---------------------------------------------------------------------------------------
# An offline run with sessions
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def arc_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("arcs")
    config = offline_config(tmp, sessions=["intake", "follow-up"])
    config.write_text(config.read_text() + "[conversation.session.intake]\nmax_turns = 6\nmin_turns = 2\n")
    out = tmp / "run"
    result = vera("run", "--config", str(config), "--out", str(out), "--quiet")
    assert result.exit_code == 0, result.output
    return out


def test_every_persona_gets_one_arc_of_its_sessions_in_order(arc_run: Path) -> None:
    convs = jsonl(arc_run / "conversations.jsonl")
    assert len(convs) == 3 * 2 * 2  # personas × chatbots × sessions
    arcs: dict[str, list[dict[str, Any]]] = {}
    for c in convs:
        arcs.setdefault(c["session"]["arc"], []).append(c)
    assert len(arcs) == 6
    for sessions in arcs.values():
        assert [(s["session"]["index"], s["session"]["type"], s["session"]["count"]) for s in sessions] == [
            (1, "intake", 2),
            (2, "follow-up", 2),
        ]
        assert len({(s["persona"], s["chatbot"], s["replicate"]) for s in sessions}) == 1
        assert len({s["id"] for s in sessions}) == 2


def test_a_session_types_own_turn_limit_applies_to_its_sessions_only(arc_run: Path) -> None:
    convs = jsonl(arc_run / "conversations.jsonl")
    intake = [len(c["turns"]) for c in convs if c["session"]["type"] == "intake"]
    follow = [len(c["turns"]) for c in convs if c["session"]["type"] == "follow-up"]
    assert max(intake) <= 6
    assert max(follow) > 6  # the offline stand-ins talk past six turns when allowed to


def test_each_session_is_judged_on_its_own(arc_run: Path) -> None:
    convs = {c["id"] for c in jsonl(arc_run / "conversations.jsonl")}
    judged = [j["conversation_id"] for j in jsonl(arc_run / "judgements.jsonl")]
    assert sorted(judged) == sorted(convs)


def test_a_resume_redoes_only_the_sessions_that_were_not_finished(arc_run: Path, tmp_path: Path) -> None:
    """As after a kill: every arc's first session is stored and judged, a second session
    of some arcs too; the resume simulates exactly the missing sessions, reads back the
    finished ones, and ends with the records of the uninterrupted run."""
    killed = tmp_path / "killed"
    killed.mkdir()
    for name in ("manifest.json",):
        (killed / name).write_bytes((arc_run / name).read_bytes())
    convs = jsonl(arc_run / "conversations.jsonl")
    second = [c["id"] for c in convs if c["session"]["index"] == 2]
    lost = set(second[:4])  # two arcs keep their second session
    kept = [c for c in convs if c["id"] not in lost]
    (killed / "conversations.jsonl").write_text("".join(json.dumps(c) + "\n" for c in kept))
    judgements = [j for j in jsonl(arc_run / "judgements.jsonl") if j["conversation_id"] not in lost]
    (killed / "judgements.jsonl").write_text("".join(json.dumps(j) + "\n" for j in judgements))

    result = vera("run", "--resume", str(killed))
    assert result.exit_code == 0, result.output
    assert "conversations: 4 new, 8 reused" in result.output
    assert "judgements: 4 new, 8 reused" in result.output
    after = {c["id"]: c for c in jsonl(killed / "conversations.jsonl")}
    whole = {c["id"]: c for c in convs}
    assert set(after) == set(whole)
    for cid in lost:
        assert after[cid]["turns"] == whole[cid]["turns"]
        assert after[cid]["session"] == whole[cid]["session"]


# ---------------------------------------------------------------------------------------
# What each side is sent: loopback servers
# ---------------------------------------------------------------------------------------


def _sessions_run(
    tmp: Path,
    chatbot: FakeServer,
    chatbot_profile: Callable[[FakeServer], str],
    *extra: str,
    conversation: dict[str, Any] | None = None,
) -> tuple[int, str, Path, FakeServer]:
    """One persona, two sessions (intake, follow-up), the chatbot on `chatbot`, the
    user-agent on a loopback OpenAI server, the offline judge."""
    agent = AnsweringOpenAI(key=KEY)
    out = tmp / "run"
    providers = tmp / "providers"
    providers.mkdir()
    with MonkeyPatch.context() as env, serve_in_thread(chatbot, agent):
        env.setenv(KEY_ENV, KEY)
        (providers / "bot.toml").write_text(chatbot_profile(chatbot))
        (providers / "agent.toml").write_text(_openai_profile(agent))
        config = write_run_config(
            tmp / "run.toml",
            providers=providers,
            runs_dir=tmp / "runs",
            chatbots=["bot"],
            user_agents=["agent"],
            persona_limit=1,
            cache=False,
            conversation={
                "max_turns": 4,
                "min_turns": 4,
                "sessions": ["intake", "follow-up"],
                **(conversation or {}),
            },
            stats={"resamples": 50},
        )
        result = CliRunner().invoke(
            main, ["run", "--config", str(config), "--out", str(out), "--quiet", *extra]
        )
    return result.exit_code, result.output, out, agent


def _openai_profile(server: FakeServer) -> str:
    return (
        f'protocol = "openai"\nbase_url = "{server.base_url}"\nmodel = "gpt-4o"\n'
        f'api_key_env = "{KEY_ENV}"\ntimeout_s = 10\nmax_retries = 0\n'
    )


def _http_profile(server: FakeServer) -> str:
    return HTTP_PROFILE.format(root=server.root)


HTTP_PROFILE = (
    'protocol = "http"\ntimeout_s = 10\nmax_retries = 0\n'
    '[http]\nurl = "{root}/api/sessions/{{{{conversation_id}}}}/reply"\n'
    'headers = {{ Authorization = "Bearer ${{' + KEY_ENV + '}}" }}\n'
    'body = {{ session = "{{{{session_id}}}}", kind = "{{{{session}}}}", place = "{{{{session_index}}}}", '
    'history = "{{{{messages}}}}", message = "{{{{last_message}}}}" }}\n'
    'response_path = "reply.text"\n'
)


def test_a_custom_chatbot_is_told_its_arc_and_session_and_sent_this_session_only(tmp_path: Path) -> None:
    bot = FakeChatbot(key=KEY)
    code, output, out, _ = _sessions_run(tmp_path, bot, _http_profile)
    assert code == 0, output
    convs = jsonl(out / "conversations.jsonl")
    arc = convs[0]["session"]["arc"]
    seen = [
        (r.path, r.json["session"], r.json["kind"], r.json["place"], len(r.json["history"]))
        for r in bot.received
    ]
    # Each id the product is sent carries the run's tag (no two runs share a session).
    tag = json.loads((out / "manifest.json").read_text())["session_tag"]
    assert len(seen) == 4  # two chatbot turns in each of two sessions
    assert {path for path, *_ in seen} == {f"/api/sessions/{arc}-{tag}/reply"}
    assert [(s, k, p) for _, s, k, p, _ in seen] == [
        (f"{convs[0]['id']}-{tag}", "intake", "1"),
        (f"{convs[0]['id']}-{tag}", "intake", "1"),
        (f"{convs[1]['id']}-{tag}", "follow-up", "2"),
        (f"{convs[1]['id']}-{tag}", "follow-up", "2"),
    ]
    # The product keeps its own memory: the follow-up's history starts afresh.
    assert [n for *_, n in seen] == [1, 3, 1, 3]


def test_a_custom_chatbot_without_sessions_is_its_own_arc(tmp_path: Path) -> None:
    bot = FakeChatbot(key=KEY)
    providers = tmp_path / "providers"
    providers.mkdir()
    config = write_run_config(
        tmp_path / "run.toml",
        providers=providers,
        runs_dir=tmp_path / "runs",
        chatbots=["bot"],
        persona_limit=1,
        cache=False,
        conversation={"max_turns": 4, "min_turns": 4},
        stats={"resamples": 50},
    )
    with MonkeyPatch.context() as env, serve_in_thread(bot):
        env.setenv(KEY_ENV, KEY)
        (providers / "bot.toml").write_text(_http_profile(bot))
        result = CliRunner().invoke(
            main, ["run", "--config", str(config), "--out", str(tmp_path / "o"), "--quiet"]
        )
    assert result.exit_code == 0, result.output
    (conv,) = jsonl(tmp_path / "o" / "conversations.jsonl")
    assert conv["session"] is None
    tag = json.loads((tmp_path / "o" / "manifest.json").read_text())["session_tag"]
    session = f"{conv['id']}-{tag}"
    assert {(r.path, r.json["session"], r.json["kind"], r.json["place"]) for r in bot.received} == {
        (f"/api/sessions/{session}/reply", session, "default", "1")
    }


def _chatbot_requests(bot: FakeServer) -> list[list[dict[str, Any]]]:
    return [r.json["messages"] for r in bot.received]


def test_by_default_session_2_starts_the_model_chatbot_fresh_as_the_reference_does(tmp_path: Path) -> None:
    """The reference clears a model chatbot's history at each session: its first call of
    session 2 carries that session's first user message and nothing of session 1."""
    bot = AnsweringOpenAI(key=KEY)
    prompt = "You are a support chatbot for a wellbeing app."
    code, output, out, _ = _sessions_run(
        tmp_path, bot, _openai_profile, conversation={"chatbot_system_prompt": prompt}
    )
    assert code == 0, output
    first, second = jsonl(out / "conversations.jsonl")
    requests = _chatbot_requests(bot)
    assert [len(m) for m in requests] == [2, 4, 2, 4]
    # What the reference sends a model at session 2's first turn: its chatbot's system
    # prompt, then the history of the current session only, here its first user message.
    reference_sends = [
        {"role": "system", "content": prompt},
        {"role": "user", "content": second["turns"][0]["text"]},
    ]
    assert requests[2] == reference_sends
    assert not any(t["text"] in str(requests[2]) for t in first["turns"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["conversation"]["chatbot_memory"] == "none"
    card = json.loads((out / "card.json").read_text())
    assert card["settings"]["chatbot_memory"] == "none"
    assert "a model chatbot starts each session fresh" in (out / "card.md").read_text()


def test_a_model_chatbot_is_sent_the_earlier_sessions_with_history_by_name(tmp_path: Path) -> None:
    bot = AnsweringOpenAI(key=KEY)
    code, output, out, agent = _sessions_run(tmp_path, bot, _openai_profile, "--chatbot-memory", "history")
    assert code == 0, output
    first, second = jsonl(out / "conversations.jsonl")
    requests = _chatbot_requests(bot)
    earlier = [
        {"role": "user" if t["speaker"] == "user" else "assistant", "content": t["text"]}
        for t in first["turns"]
    ]
    follow_up = requests[2]  # the first chatbot call of session 2
    assert follow_up[: len(earlier) - 1] == earlier[:-1]
    # Session 1 ended with the chatbot, session 2 opens with the user: no merging needed.
    assert follow_up[len(earlier) - 1] == earlier[-1]
    assert follow_up[len(earlier)] == {"role": "user", "content": second["turns"][0]["text"]}
    # The simulated user starts the follow-up fresh (the reference's semantics).
    systems = [r.json["messages"][0]["content"] for r in agent.received]
    assert not any(USER_MEMORY_NOTE in s for s in systems)
    assert len(set(systems)) == 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["conversation"]["chatbot_memory"] == "history"
    assert "vera's history replay" in (out / "card.md").read_text()


def test_chatbot_memory_history_in_the_config_replays_the_earlier_sessions(tmp_path: Path) -> None:
    bot = AnsweringOpenAI(key=KEY)
    code, output, _, _ = _sessions_run(
        tmp_path, bot, _openai_profile, conversation={"chatbot_memory": "history"}
    )
    assert code == 0, output
    assert [len(m) for m in _chatbot_requests(bot)] == [1, 3, 5, 7]


def test_chatbot_memory_needs_sessions(tmp_path: Path) -> None:
    config = offline_config(tmp_path)
    result = vera("run", "--config", str(config), "--chatbot-memory", "history", "--out", str(tmp_path / "o"))
    assert result.exit_code == 1
    assert "--chatbot-memory: each persona has one session in this run" in result.output


def test_with_user_memory_the_simulated_user_remembers_its_earlier_sessions(tmp_path: Path) -> None:
    bot = AnsweringOpenAI(key=KEY)
    code, output, out, agent = _sessions_run(tmp_path, bot, _openai_profile, "--user-memory")
    assert code == 0, output
    first, _ = jsonl(out / "conversations.jsonl")
    systems = [r.json["messages"][0]["content"] for r in agent.received]
    assert len(systems) == 4
    assert not any(USER_MEMORY_NOTE in s for s in systems[:2])
    for s in systems[2:]:
        assert USER_MEMORY_NOTE in s
        assert "--- Earlier chat (intake) ---" in s
        for t in first["turns"]:
            assert t["text"] in s
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["conversation"]["user_memory"] is True


def test_exports_name_each_rows_arc_session_and_type(arc_run: Path, tmp_path: Path) -> None:
    import polars as pl

    heads = {h.id: h for h, _ in open_run(arc_run).conversations.values()}
    for args, name in (
        (["--format", "parquet"], "long.parquet"),
        (["--wide", "--format", "parquet"], "wide.parquet"),
    ):
        out = tmp_path / name
        result = vera("export", str(arc_run), *args, "-o", str(out))
        assert result.exit_code == 0, result.output
        frame = pl.read_parquet(out)
        assert frame["arc"].null_count() == 0
        for row in frame.select("conversation_id", "arc", "session", "session_type").unique().iter_rows():
            place = heads[row[0]].session
            assert place is not None and row[1:] == (place.arc, place.index, place.type)
        # Every arc's sessions are there, in their places.
        per_arc = frame.group_by("arc").agg(pl.col("session").unique().sort())
        assert all(s.to_list() == [1, 2] for s in per_arc["session"])


# ---------------------------------------------------------------------------------------
# Transcripts: import and export by session
# ---------------------------------------------------------------------------------------

SESSION_TEXT = "user: hi again\n\nchatbot: welcome back. how have things been since we last talked?\n"


def test_session_transcripts_import_into_one_arc_each(tmp_path: Path) -> None:
    folder = tmp_path / "p_gpt_5__a_acme_bot__t20__r2__20260101_000000"
    folder.mkdir()
    for name in (
        "a1b2c3_Robin_gpt-5_run1_s1_intake.txt",
        "a1b2c3_Robin_gpt-5_run1_s2_follow-up.txt",
        "d4e5f6_Robin_gpt-5_run2_s1_intake.txt",
        "d4e5f6_Robin_gpt-5_run2_s2_follow-up.txt",
        "aaaaaa_Sam_gpt-5_run1.txt",
    ):
        (folder / name).write_text(SESSION_TEXT)
    convs = read_transcripts(tmp_path)
    places = sorted(
        (c.session.arc, c.session.index, c.session.type, c.session.count) for c in convs if c.session
    )
    assert len(places) == 4
    arcs = {arc for arc, *_ in places}
    assert len(arcs) == 2
    assert sorted((i, t, n) for _, i, t, n in places) == [
        (1, "intake", 2),
        (1, "intake", 2),
        (2, "follow-up", 2),
        (2, "follow-up", 2),
    ]
    (single,) = [c for c in convs if c.session is None]
    assert single.persona == "Sam"
    assert {c.persona for c in convs if c.session} == {"Robin"}
    assert {c.user_agent for c in convs if c.session} == {"gpt-5"}


def test_an_arcs_sessions_export_under_the_reference_names(arc_run: Path) -> None:
    records = open_run(arc_run)
    models = {s.ref: s.model for s in records.manifest.user_agents}
    names = {
        cid: transcript_name(head, models[head.user_agent])
        for cid, (head, _) in records.conversations.items()
    }
    for cid, name in names.items():
        head = records.conversations[cid][0]
        assert head.session is not None
        agent = models[head.user_agent]  # the reference names the user-agent's model here
        assert (
            name
            == f"{head.session.arc[:6]}_{head.persona}_{agent}_run1_s{head.session.index}_{head.session.type}.txt"
        )
    # And they import again with their place.
    folder = arc_run.parent / "exported"
    folder.mkdir(exist_ok=True)
    for cid, name in names.items():
        conv = records.read_conversation(cid)
        (folder / name).write_text("".join(f"{t.speaker}: {t.text}\n\n" for t in conv.turns))
    again = read_transcripts(folder)
    assert sorted((c.session.index, c.session.type, c.session.count) for c in again if c.session) == sorted(
        (h.session.index, h.session.type, h.session.count)
        for h, _ in records.conversations.values()
        if h.session
    )
    assert len({c.session.arc for c in again if c.session}) == 6


# ---------------------------------------------------------------------------------------
# The card: arcs and sessions
# ---------------------------------------------------------------------------------------


def test_the_card_counts_each_chatbots_arcs_and_scores_each_session_type(arc_run: Path) -> None:
    card = json.loads((arc_run / "card.json").read_text())
    assert card["settings"]["sessions"] == ["intake", "follow-up"]
    assert card["settings"]["user_memory"] is False
    assert card["settings"]["chatbot_memory"] == "none"
    convs = {c["id"]: c for c in jsonl(arc_run / "conversations.jsonl")}
    harmful = {
        j["conversation_id"]
        for j in jsonl(arc_run / "judgements.jsonl")
        if any(r["rating"] == "High Potential for Harm" for r in j["ratings"])
    }
    for bot in card["chatbots"]:
        mine = [c for c in convs.values() if c["chatbot"] == bot["chatbot"]]
        arcs = {c["session"]["arc"] for c in mine}
        with_harm = {c["session"]["arc"] for c in mine if c["id"] in harmful}
        assert bot["arcs"] == {
            "sessions": ["intake", "follow-up"],
            "n_arcs": len(arcs),
            "n_arcs_complete": len(arcs),
            "n_arcs_any_hph": len(with_harm),
            "pct_arcs_any_hph": round(100 * len(with_harm) / len(arcs), 1),
        }
        assert list(bot["by_session"]) == ["intake", "follow-up"]
        for kind, section in bot["by_session"].items():
            assert section["n_conversations"] == sum(c["session"]["type"] == kind for c in mine)
    risky = next(b for b in card["chatbots"] if b["chatbot"] == "offline/risk-ignoring")
    assert risky["arcs"]["n_arcs_any_hph"] > 0  # the test would pass vacuously otherwise
    text = (arc_run / "card.md").read_text()
    assert "### By session" in text
    assert "| intake → follow-up | 3 | 3 |" in text
    assert (
        "intake → follow-up per arc, each judged on its own; the simulated user starts each session fresh"
        in text
    )


def test_a_card_without_sessions_has_no_arc_fields(tmp_path: Path) -> None:
    config = offline_config(tmp_path)
    result = vera(
        "run", "--config", str(config), "--out", str(tmp_path / "o"), "--limit-personas", "1", "--quiet"
    )
    assert result.exit_code == 0, result.output
    card = json.loads((tmp_path / "o" / "card.json").read_text())
    assert not {"sessions", "user_memory", "chatbot_memory"} & set(card["settings"])
    for bot in card["chatbots"]:
        assert "arcs" not in bot and "by_session" not in bot
    assert "By session" not in (tmp_path / "o" / "card.md").read_text()


def test_resuming_with_other_sessions_is_refused_naming_the_option(arc_run: Path, tmp_path: Path) -> None:
    result = vera("run", "--resume", str(arc_run), "--sessions", "intake,check-in")
    assert result.exit_code == 1
    assert "--sessions: this run used intake,follow-up; you gave intake,check-in" in result.output
    result = vera("run", "--resume", str(arc_run), "--user-memory")
    assert result.exit_code == 1
    assert "--user-memory: this run used False; you gave True" in result.output


def test_a_plan_too_big_counts_every_session(tmp_path: Path) -> None:
    result = vera("run", "--seeds", "2000", "--sessions", "a,b,c", "--out", str(tmp_path / "run"))
    assert result.exit_code == 1
    assert "the sweep plans 1,200,000 conversations (2,000 seed(s) × 2 chatbot(s)" in result.output
    assert "× 3 sessions)" in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_kill_9_mid_arcs_then_resume_redoes_only_the_unfinished_sessions(tmp_path: Path) -> None:
    """A real kill: arcs are cut between and inside sessions. The resume reuses every
    stored session, simulates only the others, writes no session twice, and ends with
    the uninterrupted run's card."""
    args = [
        "--config", str(ROOT / "configs" / "offline.toml"), "--seeds", "2", "--limit-personas", "40",
        "--sessions", "intake,follow-up,check-in",
    ]  # fmt: skip
    total = 2 * 2 * 40 * 3  # seeds × chatbots × personas × sessions
    whole = tmp_path / "whole"
    assert vera("run", *args, "--out", str(whole), "--quiet").exit_code == 0
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vera", "run", *args, "--out", str(killed), "--quiet"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        # Kill once some arc is stored only in part: offline sessions are quick, so on a
        # busy machine 40 stored sessions may all belong to whole arcs. The run is frozen
        # (SIGSTOP) before the check that decides the kill, so the arcs it sees cut are
        # still cut when it dies: a running process can finish them in between.
        lines = _complete_lines(killed / "conversations.jsonl")
        if len(lines) >= 40 and _arcs_cut(lines):
            proc.send_signal(signal.SIGSTOP)
            if _arcs_cut(_complete_lines(killed / "conversations.jsonl")):
                break
            proc.send_signal(signal.SIGCONT)
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    before = {c["id"]: c for c in _complete_lines(killed / "conversations.jsonl")}
    assert 40 <= len(before) < total, "killed when some but not all sessions were done"
    places: dict[str, set[int]] = {}
    for c in before.values():
        places.setdefault(c["session"]["arc"], set()).add(c["session"]["index"])
    assert any(len(p) < 3 for p in places.values()), "some arc was cut between its sessions"
    resumed = vera("run", "--resume", str(killed), "--quiet")
    assert resumed.exit_code == 0, resumed.output
    assert f"conversations: {total - len(before)} new, {len(before)} reused" in resumed.output
    after = _complete_lines(killed / "conversations.jsonl")
    assert len(after) == len({c["id"] for c in after}) == total  # nothing simulated twice
    by_id = {c["id"]: c for c in after}
    assert all(by_id[cid]["turns"] == c["turns"] for cid, c in before.items())
    assert _card_without_volatile(killed) == _card_without_volatile(whole)


def _arcs_cut(lines: list[dict[str, Any]]) -> bool:
    places: dict[str, set[int]] = {}
    for c in lines:
        places.setdefault(c["session"]["arc"], set()).add(c["session"]["index"])
    return any(len(p) < 3 for p in places.values())


def _complete_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip().endswith("}")]


def _card_without_volatile(run_dir: Path) -> dict[str, Any]:
    card = json.loads((run_dir / "card.json").read_text())
    card.pop("run_id")
    card.pop("accounting")
    return card


def test_imported_sessions_are_judged_each_and_grouped_into_arcs_on_the_card(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for tag in ("a1b2c3", "d4e5f6"):
        for place in ("s1_intake", "s2_follow-up"):
            (logs / f"{tag}_Robin_gpt-5_run1_{place}.txt").write_text(SESSION_TEXT)
    out = tmp_path / "run"
    result = vera("judge", "--transcripts", str(logs), "--out", str(out), "--quiet")
    assert result.exit_code == 0, result.output
    assert len(jsonl(out / "judgements.jsonl")) == 4
    (bot,) = json.loads((out / "card.json").read_text())["chatbots"]
    assert bot["arcs"]["sessions"] == ["intake", "follow-up"]
    assert (bot["arcs"]["n_arcs"], bot["arcs"]["n_arcs_complete"]) == (2, 2)
    assert {k: v["n_conversations"] for k, v in bot["by_session"].items()} == {"intake": 2, "follow-up": 2}
