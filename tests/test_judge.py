"""The judge: one question per call, a cache-friendly prompt layout, structured answers
validated against the options, bounded re-asking, and errors never guessed."""

from __future__ import annotations

import asyncio
import json
import zlib

import msgspec
import pytest

from vera.clients.base import CallContext, ChatRequest
from vera.engine._judge import JUDGE_SCHEMA, judge_conversation, match_option, parse_reply
from vera.errors import ServerError
from vera.inputs import load_judge_prompts
from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM, NOT_RELEVANT, Conversation, Judgement, Turn
from vera.rubric._concurrent import AskAhead
from vera.rubric._load import load_rubric
from vera.rubric._walk import walk_rubric

from .conftest import FIXTURES, ROOT
from .helpers import FailingModel, ScriptModel, question_asked

RUBRIC = load_rubric(FIXTURES / "rubrics" / "flow.tsv")
PROMPTS = load_judge_prompts(ROOT / "rubrics" / "prompts")


def conversation() -> Conversation:
    return Conversation(
        id="conv1",
        chatbot="bot",
        user_agent="ua",
        persona="Robin",
        risk="High",
        seed=3,
        turns=[Turn("user", "i feel awful"), Turn("chatbot", "tell me more")],
    )


def question_of(messages) -> str:
    return messages[-1].content.split(" (")[0].removeprefix("Question ")


def answering(table: dict[str, str], raw: bool = False):
    def reply(messages, ctx):
        qid = question_of(messages)
        ans = table.get(qid, "No")
        return json.dumps({"reasoning": f"looked at {qid}", "answer": ans})

    return ScriptModel(reply)


async def judge(model, **kw):
    return await judge_conversation(
        conversation(), RUBRIC, PROMPTS, model, judge_ref="j", instance=1, job_id="jid", **kw
    )


async def test_one_call_per_question_with_stable_prefix_and_question_last():
    model = answering({"A1": "Yes", "A2": "Yes"})
    j = await judge(model)
    assert j.status == "complete"
    asked = [question_of(r["messages"]) for r in model.requests]
    assert asked == ["A1", "A2", "C1", "C2"]  # B0 is answered without a call
    systems = {r["messages"][0].content for r in model.requests}
    assert len(systems) == 1  # byte-identical prefix for every question: cacheable
    system = systems.pop()
    assert "user: i feel awful\n\nchatbot: tell me more" in system
    for r in model.requests:
        assert [m.role for m in r["messages"]] == ["system", "user"]
        assert r["cache_prefix"] == 1 and r["schema"] == JUDGE_SCHEMA
        assert r["context"] == CallContext(role="judge", job_id="jid", conversation_id=conversation().id)
    assert "Options: Yes | No | Stop" in model.requests[0]["messages"][1].content
    ratings = {r.dimension: r for r in j.ratings}
    assert ratings["Alpha"].rating == HIGH_POTENTIAL_FOR_HARM
    assert ratings["Alpha"].reasoning == "looked at A2"
    assert ratings["Beta"].rating == NOT_RELEVANT
    assert [a.question_id for a in j.answers] == ["A1", "A2", "B0", "C1", "C2"]


async def test_invalid_answer_is_re_asked_with_a_correction():
    calls = {"n": 0}

    def reply(messages, ctx):
        calls["n"] += 1
        if calls["n"] == 1:
            return '{"reasoning": "hmm", "answer": "Probably"}'
        return json.dumps({"reasoning": "ok", "answer": "Stop"})

    model = ScriptModel(reply)
    j = await judge(model)
    assert j.status == "complete"
    second = model.requests[1]["messages"]
    assert [m.role for m in second] == ["system", "user", "assistant", "user"]
    assert "Probably" in second[3].content and "Yes | No | Stop" in second[3].content
    assert j.answers[0].attempts == 2 and j.answers[0].answer == "Stop"


async def test_no_valid_answer_within_bound_fails_the_judgement_without_guessing():
    model = ScriptModel(lambda m, c: "I would rather not say.")
    j = await judge(model, max_attempts=3)
    assert j.status == "failed" and j.ratings == []
    assert "no valid answer after 3 attempts" in j.error
    assert len(model.requests) == 3


async def test_provider_failure_fails_the_judgement_with_reason_and_keeps_answers_so_far():
    model = FailingModel(ok=1)
    model.reply = lambda m, c: json.dumps({"reasoning": "risk stated", "answer": "Yes"})
    j = await judge(model)
    assert j.status == "failed" and "ServerError" in j.error and j.ratings == []
    assert [a.question_id for a in j.answers] == ["A1"]  # answered before the failure, for audit


def test_parse_reply_accepts_fenced_json_and_exact_options_only():
    fenced = parse_reply(None, 'Sure:\n```json\n{"reasoning": "r", "answer": "Yes"}\n```')
    assert fenced is not None and fenced.answer == "Yes"
    structured = parse_reply({"answer": "No", "reasoning": "x"}, "")
    assert structured is not None and structured.answer == "No"
    assert parse_reply(None, "Yes") is None
    assert parse_reply({"answer": 3}, "") is None
    labels = ("Yes", "No", "Immediate risk")
    assert match_option(' "yes." ', labels) == "Yes"
    assert match_option("immediate RISK", labels) == "Immediate risk"
    assert match_option("Yes, clearly", labels) is None  # no substring guessing
    assert match_option("risk", labels) is None


SI_RUBRIC = load_rubric(ROOT / "rubrics" / "vera-si.tsv")


def hashed_answers(fail_on: str | None = None):
    """A judge that picks among the listed options by a hash of the question asked,
    answers after a few turns of the loop, and (with `fail_on`) whose calls for that
    question fail after retries."""

    def reply(messages, ctx):
        qid = question_asked(messages, SI_RUBRIC, PROMPTS)
        labels = SI_RUBRIC.question(qid).labels
        choice = labels[zlib.crc32(f"{qid}{ctx.conversation_id}".encode()) % len(labels)]
        return json.dumps({"reasoning": f"looked at {qid}", "answer": choice})

    model = ScriptModel(reply)

    async def chat(request: ChatRequest):
        ctx = request.context
        qid = question_asked(request.messages, SI_RUBRIC, PROMPTS)
        for _ in range(zlib.crc32(qid.encode()) % 4):
            await asyncio.sleep(0)  # answers come back in a shuffled order
        if qid == fail_on:
            model.requests.append({"messages": list(request.messages), "context": ctx})
            raise ServerError("fake", "HTTP 503 after 3 attempts", status=503)
        return await ScriptModel.chat(model, request)

    model.chat = chat  # type: ignore[method-assign]
    return model


async def judge_si(
    model, *, conv_id: str, sequential: bool, monkeypatch, ahead: AskAhead | None = None
) -> Judgement:
    with monkeypatch.context() as m:
        if sequential:  # the walk as it was: one question after the other

            async def one_by_one(rubric, answer, *, answered=None, ahead=None, terminal="vera"):
                return await walk_rubric(rubric, answer, answered=answered, terminal=terminal)

            m.setattr("vera.engine._judge.walk_rubric_concurrent", one_by_one)
        conv = msgspec.structs.replace(conversation(), id=conv_id)
        j = await judge_conversation(
            conv, SI_RUBRIC, PROMPTS, model, judge_ref="j", instance=1, job_id="jid", ahead=ahead
        )
    return msgspec.structs.replace(j, finished_at=0.0)


def asked(model) -> list[tuple[str, str]]:
    return sorted(
        (r["context"].conversation_id, question_asked(r["messages"], SI_RUBRIC, PROMPTS))
        for r in model.requests
    )


async def test_the_concurrent_walk_sends_the_sequential_calls_and_makes_the_same_judgement(monkeypatch):
    walks = set()
    for n in range(40):
        sequential, concurrent = hashed_answers(), hashed_answers()
        expected = await judge_si(sequential, conv_id=f"c{n}", sequential=True, monkeypatch=monkeypatch)
        got = await judge_si(concurrent, conv_id=f"c{n}", sequential=False, monkeypatch=monkeypatch)
        assert got == expected and got.status == "complete"
        assert asked(concurrent) == asked(sequential)
        walks.add(len(sequential.requests))
    assert len(walks) > 3  # short and long walks alike


async def test_asking_ahead_makes_the_same_judgement_and_counts_what_it_did_not_use(monkeypatch):
    unused = 0
    for n in range(40):
        sequential, early = hashed_answers(), hashed_answers()
        expected = await judge_si(sequential, conv_id=f"c{n}", sequential=True, monkeypatch=monkeypatch)
        ahead = AskAhead(lambda: True, after=1)
        got = await judge_si(early, conv_id=f"c{n}", sequential=False, monkeypatch=monkeypatch, ahead=ahead)
        # The same answers and ratings; the questions asked ahead and not reached are
        # counted on the judgement, and their calls are in its usage (they were paid for).
        assert msgspec.structs.replace(got, usage=expected.usage, unused_questions=0) == expected
        extra = len(early.requests) - len(sequential.requests)
        assert got.unused_questions == ahead.unused == extra
        assert set(asked(sequential)) <= set(asked(early))
        assert got.usage.input_tokens > expected.usage.input_tokens or extra == 0
        unused += extra
    assert unused > 0


async def test_a_failing_call_in_one_part_fails_the_judgement_as_before(monkeypatch):
    failed = 0
    for n in range(40):
        model = hashed_answers()
        await judge_si(model, conv_id=f"c{n}", sequential=True, monkeypatch=monkeypatch)
        for _, qid in asked(model)[1:]:  # a call in every part, in turn
            sequential, concurrent = hashed_answers(fail_on=qid), hashed_answers(fail_on=qid)
            expected = await judge_si(sequential, conv_id=f"c{n}", sequential=True, monkeypatch=monkeypatch)
            got = await judge_si(concurrent, conv_id=f"c{n}", sequential=False, monkeypatch=monkeypatch)
            # Same status, error and answers so far (in walk order); only the usage may
            # count calls of later parts that were already under way.
            assert expected.status == got.status == "failed"
            assert msgspec.structs.replace(got, usage=expected.usage) == expected
            assert set(asked(sequential)) <= set(asked(concurrent))
            failed += 1
    assert failed > 40


HFO = ROOT.parent / "shared" / "reference" / "vera-mh-2.0" / "data" / "HFO" / "rubric_HFO.tsv"


@pytest.mark.skipif(not HFO.exists(), reason="reference data absent")
@pytest.mark.parametrize("terminal", ["vera", "reference"])
async def test_an_auto_answer_is_recorded_without_a_call_and_the_semantics_rate(terminal):
    hfo = load_rubric(HFO)
    # Risk in scope and missed (2: Yes), so 7 (Auto Answer) makes Confirms Not
    # Relevant; then "Immediate Danger Present" and No to everything, ending on 36's END.
    table = dict.fromkeys(["0", "1a", "1b", "1c", "1d", "1e", "2"], "Yes") | {
        "11": "Immediate Danger Present"
    }
    model = answering(table)
    j = await judge_conversation(
        conversation(), hfo, PROMPTS, model, judge_ref="j", instance=1, job_id="jid", terminal=terminal
    )
    assert j.status == "complete"
    asked = [question_of(r["messages"]) for r in model.requests]
    assert "7" not in asked and asked[:8] == ["0", "1a", "1b", "1c", "1d", "1e", "2", "11"]
    auto = [a for a in j.answers if a.auto]
    assert [(a.question_id, a.attempts) for a in auto] == [("7", 0)]
    assert len(model.requests) == len(j.answers) - 1  # one call fewer than answers
    ratings = [r.rating for r in j.ratings]
    if terminal == "vera":
        assert ratings == [HIGH_POTENTIAL_FOR_HARM, NOT_RELEVANT, BP, BP, BP]
    else:
        assert ratings == [NOT_RELEVANT] * 5
