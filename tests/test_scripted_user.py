"""The offline scripted user-agent voices every persona of the built-in set: disclosure
timing follows the disclosure style, answers to direct questions follow the risk level,
and it never ends before the minimum number of turns."""

from __future__ import annotations

import pytest

from vera.app import RunFacts
from vera.engine import Inputs
from vera.engine._simulate import ConversationJob, SimulationSettings, simulate_conversation
from vera.inputs import load_user_prompts
from vera.inputs._config import load_config
from vera.inputs._personas import DISCLOSURE, SEED_PHRASE, label, load_personas
from vera.standins import lexicon as lx
from vera.standins import make_offline_client

from .conftest import ROOT
from .helpers import ScriptModel

PERSONAS = load_personas(ROOT / "personas" / "vera-personas.tsv").personas
PROMPTS = load_user_prompts(ROOT / "personas" / "prompts")
ASK = "Are you having thoughts of suicide?"
PLAN = "Do you have a plan, and when might you act?"
SETTINGS = SimulationSettings(max_turns=20, min_turns=12)


def jobs() -> list[ConversationJob]:
    return [
        ConversationJob(id=f"p{i}", chatbot="probe", user_agent="scripted", persona=p, seed=5, replicate=0)
        for i, p in enumerate(PERSONAS)
    ]


def scripted_user():
    """The stand-in as a run builds it: knowing the plan's personas and seeds."""
    cfg = load_config(str(ROOT / "configs" / "offline.toml"))
    cfg.conversation.max_turns, cfg.conversation.min_turns = SETTINGS.max_turns, SETTINGS.min_turns
    facts = RunFacts(Inputs.load(cfg), lambda cid: pytest.fail("nothing is judged here"))
    facts.plan(jobs())
    return make_offline_client("scripted-user", facts=facts)


def probe():
    """A chatbot that listens for three replies, then asks directly, then about a plan."""

    def reply(messages, ctx):
        n = sum(1 for m in messages if m.role == "assistant")
        return {3: ASK, 4: PLAN}.get(n, "Tell me more about that.")

    return ScriptModel(reply)


def disclosed(text: str) -> bool:
    return lx.user_suicidal_thoughts(text) or bool(lx.USER_IMMEDIATE.search(text))


@pytest.fixture(scope="module")
def conversations():
    import asyncio

    user = scripted_user()

    async def run_all():
        out = {}
        for job in jobs():
            out[job.persona.name] = await simulate_conversation(
                job, chatbot=probe(), user_agent=user, prompts=PROMPTS, settings=SETTINGS
            )
        return out

    return asyncio.run(run_all())


def answer_to(conv, question: str) -> str:
    for i, t in enumerate(conv.turns[:-1]):
        if t.speaker == "chatbot" and t.text == question:
            return conv.turns[i + 1].text
    raise AssertionError(f"{conv.persona}: the question was never answered")


def test_all_100_personas_are_voiced_and_never_end_early(conversations):
    assert len(conversations) == 100
    for conv in conversations.values():
        assert conv.status == "complete"
        assert len(conv.turns) >= 12, f"{conv.persona} ended before the minimum"
        assert all(t.text for t in conv.turns)
        assert "<<END>>" not in " ".join(t.text for t in conv.turns)


def test_direct_questions_are_answered_consistently_with_the_risk_level(conversations):
    for p in PERSONAS:
        conv = conversations[p.name]
        direct, plan = answer_to(conv, ASK), answer_to(conv, PLAN)
        if p.risk == "None":
            assert lx.USER_DENIAL.search(direct), (p.name, direct)
            assert not disclosed(direct + plan)
        elif p.risk == "Low":
            assert lx.USER_PASSIVE.search(direct), (p.name, direct)
            assert not lx.USER_EXPLICIT.search(direct) and not lx.USER_IMMEDIATE.search(direct + plan)
        elif p.risk == "High":
            assert lx.USER_EXPLICIT.search(direct), (p.name, direct)
            assert not lx.USER_IMMEDIATE.search(direct + plan), (p.name, direct, plan)
        else:
            assert lx.USER_IMMEDIATE.search(direct) and lx.USER_IMMEDIATE.search(plan), (p.name, direct, plan)


def test_disclosure_timing_follows_the_disclosure_style(conversations):
    seen = set()
    for p in PERSONAS:
        style = label(p.field(DISCLOSURE))
        users = [t.text for t in conversations[p.name].turns if t.speaker == "user"]
        before_asked = users[:3]  # the probe asks only after its third reply
        seed = p.field(SEED_PHRASE)
        seen.add(style)
        if p.risk == "None":
            assert not any(disclosed(u) for u in users), p.name
        elif style == "Direct":
            assert disclosed(users[0]), (p.name, users[0])
        elif style == "Hesitant":
            assert users[0].startswith(seed) and not disclosed(users[0][len(seed) :]), (
                "opens in its own words"
            )
            if not disclosed(seed):  # unless its own opening words already said it: hints first
                assert not lx.USER_EXPLICIT.search(users[1]), (p.name, users[1])
                assert lx.user_risk_signal(users[1]), (p.name, users[1])
        elif style == "Indirect":
            assert users[0].startswith(seed) and not disclosed(users[0][len(seed) :])
            said = before_asked[1:]  # its own words aside, never plain words before it is asked
            assert not any(lx.USER_EXPLICIT.search(u) for u in said), (p.name, said)
            assert any(lx.user_risk_signal(u) for u in before_asked), (p.name, before_asked)
        elif style == "Contradictory":
            first = next(i for i, u in enumerate(users) if disclosed(u))
            assert any(lx.USER_RETRACT.search(u) for u in users[first:]), (p.name, users)
    assert seen == {"Direct", "Hesitant", "Indirect", "Contradictory", "Not applicable"}


def test_the_same_seed_gives_the_same_words(conversations):
    import asyncio

    p = PERSONAS[42]
    job = ConversationJob(id="p42", chatbot="probe", user_agent="scripted", persona=p, seed=5, replicate=0)
    again = asyncio.run(
        simulate_conversation(
            job,
            chatbot=probe(),
            user_agent=scripted_user(),
            prompts=PROMPTS,
            settings=SETTINGS,
        )
    )
    assert again.turns == conversations[p.name].turns


def test_no_message_is_said_twice_so_the_realism_heuristic_passes_it(conversations):
    """The stand-in varies its lines (a chatbot that answers the same thing every turn
    included, as the probe does): the heuristic flags none of its conversations, while
    the same transcripts with a user line said again are flagged."""
    import msgspec

    from vera.inputs import heuristic_check
    from vera.records import Turn

    by_name = {p.name: p for p in PERSONAS}
    for name, conv in conversations.items():
        users = [t.text for t in conv.turns if t.speaker == "user"]
        assert len(set(users)) == len(users), (name, users)
        fields = by_name[name].fields
        assert heuristic_check(conv.turns, fields).flags == [], name
        longest = max(users, key=lambda u: len(u.split()))
        if len(longest.split()) >= 6:
            # The longest line said again straight after its answer: a script, flagged.
            at = next(i for i, t in enumerate(conv.turns) if t.text == longest) + 2
            injected = [*conv.turns[:at], Turn("user", longest), *conv.turns[at:]]
            kinds = [f.kind for f in heuristic_check(injected, fields).flags]
            assert "empty_or_repeated" in kinds, (name, longest)
        empty = msgspec.structs.replace(conv.turns[2], text="")
        kinds = [f.kind for f in heuristic_check([*conv.turns[:2], empty], fields).flags]
        assert kinds == ["empty_or_repeated"], name
