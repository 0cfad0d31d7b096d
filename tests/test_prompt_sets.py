"""Prompt sets that run another tool's templates unchanged: VERA-MH's placeholder
dialect and "ANSWER: / REASONING:" answer format for the judge, and a reminder placed
before the chatbot's message with an opening for the user-agent. Checked here with
templates written for the tests."""

from __future__ import annotations

import re

import pytest

from vera.engine._judge import judge_conversation, parse_reply, render_transcript
from vera.engine._simulate import ConversationJob, SimulationSettings, simulate_conversation
from vera.errors import ConfigError, DataError
from vera.inputs import load_judge_prompts, load_user_prompts
from vera.inputs._refdir import REFERENCE_ENV
from vera.records import Conversation, Turn
from vera.rubric._load import load_rubric

from .conftest import FIXTURES
from .helpers import ScriptModel, persona, question_asked

# A placeholder left unfilled: a brace around a word, as their templates and ours write them.
UNFILLED = re.compile(r"\{[A-Za-z_][^{}\"\n]*\}")


def test_labelled_answers_are_parsed_and_json_still_accepted():
    labelled = "ANSWER: Yes\nREASONING: The chatbot asked directly."
    mixed_case = "Answer: Yes\nReasoning: The chatbot asked directly."
    assert parse_reply(None, labelled, "labelled") == parse_reply(None, mixed_case, "labelled")
    reply = parse_reply(None, labelled, "labelled")
    assert reply is not None and (reply.answer, reply.reasoning) == ("Yes", "The chatbot asked directly.")
    bracketed = parse_reply(None, "**ANSWER:** [No]\n\n**REASONING:** nothing\nwas asked", "labelled")
    assert bracketed is not None and (bracketed.answer, bracketed.reasoning) == ("No", "nothing\nwas asked")
    as_json = parse_reply({"answer": "No", "reasoning": "r"}, "", "labelled")
    assert as_json is not None and as_json.answer == "No"
    # The JSON format does not read labelled lines: the format a prompt set declares counts.
    assert parse_reply(None, labelled, "json") is None
    assert parse_reply(None, "ANSWER:\nREASONING: empty answer", "labelled") is None


async def test_a_labelled_dialect_judge_fills_their_placeholders_and_walks_the_rubric():
    prompts = load_judge_prompts(FIXTURES / "labelled_judge_prompts")
    rubric = load_rubric(FIXTURES / "rubrics" / "flow.tsv")
    conv = Conversation(
        id="c1",
        chatbot="bot",
        user_agent="ua",
        persona="Robin",
        risk="High",
        seed=1,
        turns=[Turn("user", "i feel awful"), Turn("chatbot", "tell me more")],
    )

    def reply(messages, ctx):
        options = re.search(r"Pick one of \[(.*)\]\.", messages[-1].content)
        assert options is not None
        return f"ANSWER: {options.group(1).split(', ')[0]}\nREASONING: first option of {question_asked(messages, rubric, prompts)}"

    model = ScriptModel(reply)
    j = await judge_conversation(conv, rubric, prompts, model, judge_ref="j", instance=1, job_id="jid")
    assert j.status == "complete" and j.answers
    assert all(a.reasoning == f"first option of {a.question_id}" for a in j.answers if not a.auto)
    for request in model.requests:
        system, question = request["messages"]
        assert (
            system.content.startswith("Rate the chatbot") and render_transcript(conv.turns) in system.content
        )
        assert not UNFILLED.search(system.content) and not UNFILLED.search(question.content)
        assert request["schema"] is None  # the set says structured_output = false
    first = model.requests[0]["messages"][1].content
    q = rubric.questions[0]
    examples = "\n" + q.guidance + "\n" if q.guidance else ""
    assert first == f"Q: {q.text}\n{examples}\nPick one of [Yes, No, Stop]."


async def test_a_reminder_before_the_chatbot_message_and_an_opening():
    prompts = load_user_prompts(FIXTURES / "before_user_prompts")
    user = ScriptModel(lambda m, c: f"u{sum(x.role == 'assistant' for x in m) + 1}")
    bot = ScriptModel(lambda m, c: f"b{sum(x.role == 'assistant' for x in m) + 1}")
    job = ConversationJob(id="c", chatbot="bot", user_agent="ua", persona=persona(), seed=1, replicate=0)
    conv = await simulate_conversation(
        job,
        chatbot=bot,
        user_agent=user,
        prompts=prompts,
        settings=SimulationSettings(max_turns=4, min_turns=0),
    )
    assert [t.text for t in conv.turns] == ["u1", "b1", "u2", "b2"]
    first, second = (r["messages"] for r in user.requests)
    assert [(m.role, m.content) for m in first] == [
        ("system", "You are Robin."),
        ("user", "Say your first line."),
    ]
    assert second[-1].content == "STAY IN ROLE AS Robin.\n--- the chatbot said ---\nb1"


def test_prompt_set_settings_are_checked(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    for name in ("system.txt", "question.txt", "retry.txt"):
        (folder / name).write_text((FIXTURES / "labelled_judge_prompts" / name).read_text())
    base = 'name = "t"\nsystem = "system.txt"\nquestion = "question.txt"\nretry = "retry.txt"\n'
    (folder / "prompts.toml").write_text(base + 'placeholders = "jinja"\n')
    with pytest.raises(
        DataError, match=r"prompts.toml: placeholders = 'jinja': must be one of 'vera', 'vera-mh'"
    ):
        load_judge_prompts(folder)
    # Their placeholders are unknown in our dialect: named with file and line.
    (folder / "prompts.toml").write_text(base)
    with pytest.raises(DataError, match=r"system.txt:3: unknown placeholder \{conversation\}"):
        load_judge_prompts(folder)
    (folder / "prompts.toml").write_text(base + 'placeholders = "vera-mh"\nanswer_format = "yaml"\n')
    with pytest.raises(DataError, match="answer_format = 'yaml'"):
        load_judge_prompts(folder)


def test_templates_named_reference_are_read_from_the_reference_folder(tmp_path, monkeypatch):
    theirs, ours = tmp_path / "their-data", tmp_path / "ours"
    theirs.mkdir()
    ours.mkdir()
    (theirs / "persona.txt").write_text("Play {Name}.")
    (theirs / "nudge.txt").write_text("Still {Name}. Their message:\n")
    (ours / "prompts.toml").write_text(
        'name = "pointer"\nversion = "1"\nsystem = "reference:persona.txt"\n'
        'reminder = "reference:nudge.txt"\nend_marker = "[done]"\nreminder_position = "before"\n'
    )
    up = load_user_prompts(ours, lambda: theirs)
    assert (up.system.text, up.system.path) == ("Play {Name}.", str(theirs / "persona.txt"))
    # The set's hash covers their files' content, wherever they are read from.
    (theirs / "nudge.txt").write_text("Still {Name}. Their message, changed:\n")
    assert load_user_prompts(ours, lambda: theirs).version.sha256 != up.version.sha256
    # Without a folder, the error says how to give one (the default reads VERA_MH_DATA).
    monkeypatch.delenv(REFERENCE_ENV, raising=False)
    with pytest.raises(
        ConfigError, match="set VERA_MH_DATA=/path/to/VERA-MH/data or pass --reference-data DIR"
    ):
        load_user_prompts(ours)
    monkeypatch.setenv(REFERENCE_ENV, str(theirs))
    assert load_user_prompts(ours).system.text == "Play {Name}."
    monkeypatch.setenv(REFERENCE_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match=r"nowhere: reference data folder not found \(from VERA_MH_DATA\)"):
        load_user_prompts(ours)
