"""`-w / --max-total-words` (the reference's flag): a conversation ends after the
chatbot's reply once the words of both sides reach the limit, recorded as ended by the
word limit; a run that leaves it unset keeps the job ids and fingerprint it had before
the setting existed."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from vera.cli._main import main
from vera.engine._plan import SessionPlan, conversation_jobs
from vera.engine._simulate import ConversationJob, SimulationSettings, simulate_conversation
from vera.inputs import load_config
from vera.records import ModelSpec, Persona

from .helpers import ScriptModel, persona, user_prompts
from .run_config import write_run_config

ROOT = Path(__file__).resolve().parent.parent


def words_user(n: int) -> ScriptModel:
    """Each message is `n` words."""
    return ScriptModel(lambda messages, ctx: " ".join(["word"] * n))


async def simulate(settings: SimulationSettings, user_words: int, bot_words: int):
    job = ConversationJob(id="c1", chatbot="bot", user_agent="ua", persona=persona(), seed=7, replicate=0)
    return await simulate_conversation(
        job,
        chatbot=words_user(bot_words),
        user_agent=words_user(user_words),
        prompts=user_prompts(),
        settings=settings,
    )


async def test_the_limit_ends_the_conversation_after_the_chatbots_reply() -> None:
    # 3 + 5 = 8, 16, 24 words after each chatbot reply: 20 is passed after the third.
    conv = await simulate(SimulationSettings(max_turns=30, min_turns=2, max_total_words=20), 3, 5)
    assert [t.speaker for t in conv.turns] == ["user", "chatbot"] * 3
    assert conv.status == "complete" and conv.ended_by == "max_words"


async def test_a_user_message_that_reaches_the_limit_still_gets_its_answer() -> None:
    # The user's first message alone reaches the limit; the chatbot answers it, then it ends.
    conv = await simulate(SimulationSettings(max_turns=30, min_turns=2, max_total_words=10), 12, 1)
    assert [t.speaker for t in conv.turns] == ["user", "chatbot"]
    assert conv.ended_by == "max_words"


async def test_reaching_the_limit_exactly_ends_it_and_no_limit_runs_to_max_turns() -> None:
    conv = await simulate(SimulationSettings(max_turns=30, min_turns=2, max_total_words=8), 3, 5)
    assert len(conv.turns) == 2 and conv.ended_by == "max_words"
    conv = await simulate(SimulationSettings(max_turns=6, min_turns=2), 300, 300)
    assert len(conv.turns) == 6 and conv.ended_by == "max_turns"


def specs() -> tuple[ModelSpec, ModelSpec, tuple[Persona, ...]]:
    bot = ModelSpec(
        ref="offline/best-practice", provider="offline", protocol="offline", model="best-practice"
    )
    ua = ModelSpec(ref="offline/scripted-user", provider="offline", protocol="offline", model="scripted-user")
    personas = tuple(Persona(name=n, risk="High", fields={"Name": n, "Risk": "High"}) for n in ("Ana", "Ben"))
    return bot, ua, personas


def test_job_ids_without_a_word_limit_are_those_of_older_runs() -> None:
    """Pinned from the code before the setting existed (the same ids as
    tests/test_sessions.py pins from before sessions): older runs resume under them."""
    bot, ua, personas = specs()

    def ids(settings: SimulationSettings) -> list[str]:
        jobs = conversation_jobs(
            chatbots=[bot],
            user_agents=[ua],
            personas=personas,
            seeds=[1, 2],
            user_prompts_sha="0" * 64,
            settings=settings,
        )
        return [j.id for j in jobs]

    pinned = ["3f96a853aa5b8b6d", "41e2192aca14ec27", "7a9372383ada80dc", "e615561956639cdd"]
    assert ids(SimulationSettings()) == ids(SimulationSettings(max_total_words=None)) == pinned
    limited = ids(SimulationSettings(max_total_words=500))
    assert not set(limited) & set(pinned) and len(set(limited)) == 4


def test_arc_and_session_ids_without_a_word_limit_are_those_of_older_runs() -> None:
    bot, ua, personas = specs()
    plan = SessionPlan(
        types=("intake", "follow-up"),
        settings=(SimulationSettings(), SimulationSettings(max_turns=12)),
        user_memory=False,
        chatbot_memory="none",
    )
    jobs = conversation_jobs(
        chatbots=[bot],
        user_agents=[ua],
        personas=personas,
        seeds=[1],
        user_prompts_sha="0" * 64,
        settings=SimulationSettings(),
        sessions=plan,
    )
    assert [(j.id, j.session.arc if j.session else "") for j in jobs] == [
        ("5d191833cec87f74", "9e7eb8f554d228a2"),
        ("f834191e031c9725", "9e7eb8f554d228a2"),
        ("faf852740c2fa220", "e7164dbe3aa12499"),
        ("accc2954fc32dcda", "e7164dbe3aa12499"),
    ]


def offline_config(tmp: Path, **conversation: object) -> Path:
    return write_run_config(
        tmp / "run.toml",
        providers=ROOT / "providers",
        runs_dir=tmp / "runs",
        chatbots=["offline/best-practice"],
        persona_limit=2,
        conversation={"max_turns": 20, "min_turns": 4, **conversation},
        stats={"resamples": 50},
    )


def test_the_fingerprint_moves_only_when_a_limit_is_set(tmp_path: Path) -> None:
    before = load_config(offline_config(tmp_path)).fingerprint()
    assert load_config(ROOT / "configs" / "offline.toml").fingerprint() != ""
    limited = tmp_path / "limited"
    limited.mkdir()
    assert load_config(offline_config(limited, max_total_words=50)).fingerprint() != before


def test_vera_run_w_ends_conversations_at_the_word_limit(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main, ["run", "--config", str(offline_config(tmp_path)), "-w", "40", "--out", str(out), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    convs = [json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()]
    assert convs and all(c["ended_by"] == "max_words" for c in convs)
    for c in convs:
        words = [len(t["text"].split()) for t in c["turns"]]
        assert c["turns"][-1]["speaker"] == "chatbot"
        assert sum(words) >= 40 > sum(words[:-2])  # the exchange before the last one was under it
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["conversation"]["max_total_words"] == 40
    card = json.loads((out / "card.json").read_text())
    assert sum(d["ended_by"]["max_words"] for d in card["diagnostics"]) == len(convs)


def test_a_limit_below_one_is_refused_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--config", str(offline_config(tmp_path)), "-w", "0"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    bad = tmp_path / "bad"
    bad.mkdir()
    result = CliRunner().invoke(main, ["validate", "config", str(offline_config(bad, max_total_words=0))])
    assert result.exit_code == 1
    assert "conversation.max_total_words must be at least 1" in result.output
