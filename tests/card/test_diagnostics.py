"""Run diagnostics on the card (schema 8): how conversations ended, their turn counts,
empty and cut chatbot replies, the judge's re-asks and invalid answers, and scores by
user-agent and by persona column (`vera score --by`, `vera card --by`)."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import msgspec
import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.engine._simulate import ConversationJob, SimulationSettings, simulate_conversation
from vera.records import Completion, Conversation, Judgement, Usage
from vera.report.card._score import score_run

from ..clients.conftest import KEY, KEY_ENV, make_profile, open_pool
from ..fakes.protocols import FakeOpenAI, Reply
from ..helpers import ScriptModel, persona, user_prompts


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_offline_card_counts_endings_and_turns_as_the_records_say(offline_run):
    card = json.loads((offline_run / "card.json").read_text())
    assert card["schema_version"] == 8
    convs = jsonl(offline_run / "conversations.jsonl")
    for d in card["diagnostics"]:
        mine = [c for c in convs if c["chatbot"] == d["chatbot"]]
        assert d["conversations"] == len(mine)
        ended = Counter(c["ended_by"] for c in mine)
        assert d["ended_by"] == {r: ended.get(r, 0) for r in d["ended_by"]}
        assert list(d["ended_by"]) == ["end_marker", "max_turns", "max_words", "error", "imported"]
        lengths = Counter(len(c["turns"]) for c in mine)
        assert d["turns"]["counts"] == {str(k): lengths[k] for k in sorted(lengths)}
        assert d["turns"]["min"] == min(lengths) and d["turns"]["max"] == max(lengths)
        assert d["empty_chatbot_turns"] == 0 and d["truncated_chatbot_turns"] == 0
        assert d["invalid_answers"] == 0
    md = (offline_run / "card.md").read_text()
    assert "## Run diagnostics" in md and "Ended: turn limit" in md
    assert "Run diagnostics" in (offline_run / "card.html").read_text()


def test_scores_by_user_agent_and_by_disclosure_style_by_default(offline_run):
    card = json.loads((offline_run / "card.json").read_text())
    assert card["by_columns"] == ["Disclosure of Suicide Risk"] and card["absent_columns"] == []
    for bot in card["chatbots"]:
        (agent,) = bot["by_user_agent"]
        assert agent == "offline/scripted-user"
        assert bot["by_user_agent"][agent]["score"] == bot["overall"]["score"]
        groups = bot["by_persona"]["Disclosure of Suicide Risk"]
        assert sum(g["n_conversations"] for g in groups.values()) == bot["n_conversations"]
        # labels, not the descriptions of the persona file's cells
        assert all("(" not in name for name in groups)
    assert "### By persona column Disclosure of Suicide Risk" in (offline_run / "card.md").read_text()


@pytest.fixture(scope="module")
def flawed_run(offline_run, tmp_path_factory):
    """The offline run with one conversation given an empty chatbot reply and a reply cut
    at the output limit, one ended by the word limit, one judge answer that needed three
    attempts and one judgement failed for want of a valid answer."""
    out = tmp_path_factory.mktemp("flawed") / "run"
    shutil.copytree(offline_run, out)
    convs = jsonl(out / "conversations.jsonl")
    ids = sorted(c["id"] for c in convs)
    by_id = {c["id"]: c for c in convs}
    first = by_id[ids[0]]
    bot_turns = [i for i, t in enumerate(first["turns"]) if t["speaker"] == "chatbot"]
    first["turns"][bot_turns[0]]["text"] = ""
    first["truncated_turns"] = [bot_turns[1]]
    by_id[ids[1]]["ended_by"] = "max_words"
    write_jsonl(out / "conversations.jsonl", convs)
    judgements = jsonl(out / "judgements.jsonl")
    judged = next(j for j in judgements if j["conversation_id"] == ids[2])
    next(a for a in judged["answers"] if not a.get("auto"))["attempts"] = 3
    failed = msgspec.to_builtins(
        Judgement(
            id="invalid-judgement",
            conversation_id=ids[3],
            judge=judged["judge"],
            instance=2,
            status="failed",
            answers=[],
            ratings=[],
            error="InvalidAnswerError: question Q1: no valid answer after 3 attempts",
        )
    )
    write_jsonl(out / "judgements.jsonl", [*judgements, failed])
    score_run(out, resamples=50)
    chatbots = {i: by_id[i]["chatbot"] for i in ids[:4]}
    return out, chatbots


def test_injected_flaws_are_counted_against_their_chatbot(flawed_run):
    out, chatbots = flawed_run
    ids = sorted(chatbots)
    card = json.loads((out / "card.json").read_text())
    diags = {d["chatbot"]: d for d in card["diagnostics"]}
    expect: Counter[tuple[str, str]] = Counter()
    for key, cid in (("empty", ids[0]), ("words", ids[1]), ("reask", ids[2]), ("invalid", ids[3])):
        expect[(chatbots[cid], key)] += 1
    for bot, d in diags.items():
        assert d["empty_chatbot_turns"] == expect[(bot, "empty")]
        assert d["truncated_chatbot_turns"] == expect[(bot, "empty")]
        assert d["conversations_with_empty_or_truncated"] == expect[(bot, "empty")]
        assert d["ended_by"]["max_words"] == expect[(bot, "words")]
        assert d["judge_reasks"] == 2 * expect[(bot, "reask")]
        assert d["answers_reasked"] == expect[(bot, "reask")]
        assert d["invalid_answers"] == expect[(bot, "invalid")]
    assert "Ended: word limit" in (out / "card.md").read_text()


def test_a_conversation_record_from_before_truncated_turns_reads_with_none():
    old = {
        "id": "c",
        "chatbot": "b",
        "user_agent": "u",
        "persona": "p",
        "risk": "High",
        "seed": 1,
        "turns": [{"speaker": "user", "text": "hi"}],
    }
    conv = msgspec.json.decode(json.dumps(old).encode(), type=Conversation)
    assert conv.truncated_turns == [] and conv.ended_by == "max_turns"


class CutBot(ScriptModel):
    """A chatbot whose second reply stops at the output limit."""

    async def chat(self, request):
        done = await super().chat(request)
        finish = "length" if len(self.requests) == 2 else "stop"
        return Completion(text=done.text, usage=Usage(), finish_reason=finish)


async def test_a_reply_cut_at_the_output_limit_is_recorded_by_its_turn():
    bot = CutBot(lambda messages, ctx: "a reply")
    user = ScriptModel(lambda messages, ctx: "hello")
    job = ConversationJob(id="c1", chatbot="bot", user_agent="ua", persona=persona(), seed=7, replicate=0)
    conv = await simulate_conversation(
        job, chatbot=bot, user_agent=user, prompts=user_prompts(), settings=SimulationSettings(max_turns=6)
    )
    assert conv.truncated_turns == [3]
    assert conv.turns[3].speaker == "chatbot"


def test_score_by_a_column_and_card_by_it(offline_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(offline_run, out)
    runner = CliRunner()
    result = runner.invoke(main, ["score", str(out), "--by", "Gender", "--by", "No Such Column"])
    assert result.exit_code == 0, result.output
    card = json.loads((out / "card.json").read_text())
    assert card["by_columns"] == ["Gender", "No Such Column"]
    assert card["absent_columns"] == ["No Such Column"]
    assert set(card["chatbots"][0]["by_persona"]) == {"Gender"}
    assert "'No Such Column' asked for, but no persona file" in (out / "card.md").read_text()
    shown = runner.invoke(main, ["card", str(out), "--by", "Gender"])
    assert shown.exit_code == 0 and "Woman" in shown.output
    agents = runner.invoke(main, ["card", str(out), "--by", "user-agent"])
    assert agents.exit_code == 0 and "offline/scripted-user" in agents.output
    missing = runner.invoke(main, ["card", str(out), "--by", "Age"])
    assert missing.exit_code == 1
    assert "no breakdown by 'Age'" in missing.output and "vera score RUN_DIR --by 'Age'" in missing.output
    assert "Traceback" not in missing.output


async def test_a_reply_the_server_cut_at_the_output_limit_is_recorded(monkeypatch):
    """On the wire: an OpenAI chatbot whose second reply ends with finish_reason "length"."""
    monkeypatch.setenv(KEY_ENV, KEY)
    user = ScriptModel(lambda messages, ctx: "hello")
    job = ConversationJob(id="c1", chatbot="oai", user_agent="ua", persona=persona(), seed=7, replicate=0)
    async with FakeOpenAI(key=None) as server:
        server.script(Reply("a whole reply"), Reply("a reply cut in the mid", finish="length"), Reply("fine"))
        async with open_pool(make_profile("oai", "openai", server.base_url)) as pool:
            bot = pool.limited("oai", "chatbot")
            conv = await simulate_conversation(
                job,
                chatbot=bot,
                user_agent=user,
                prompts=user_prompts(),
                settings=SimulationSettings(max_turns=6),
            )
    assert conv.status == "complete" and conv.truncated_turns == [3]
    assert conv.turns[3].text == "a reply cut in the mid"
