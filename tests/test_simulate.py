"""The turn loop: who speaks first, the reminder, the end marker and its minimum, the
maximum, fresh contexts, and failures recorded as failures."""

from __future__ import annotations

import itertools
from typing import Literal

import msgspec

from vera.clients.cache import CachedClient, ResponseCache
from vera.engine._simulate import (
    CHATBOT_OPENER,
    USER_AGENT_OPENER,
    ChatbotViews,
    ConversationJob,
    SimulationSettings,
    UserViews,
    alternate,
    chatbot_view,
    simulate_conversation,
    user_view,
)
from vera.inputs._prompts import UserPrompts
from vera.records import Message, ModelSpec, Turn

from .helpers import FailingModel, ScriptModel, persona, user_prompts


def job(pid: str = "c1") -> ConversationJob:
    return ConversationJob(id=pid, chatbot="bot", user_agent="ua", persona=persona(), seed=7, replicate=0)


def counting_user(end_from: int | None = None):
    """Says 'u<n>'; from its `end_from`-th message on it appends the end marker."""

    def reply(messages, ctx):
        n = sum(1 for m in messages if m.role == "assistant") + 1
        text = f"u{n}"
        if end_from is not None and n >= end_from:
            text += "\n<<END>>"
        return text

    return ScriptModel(reply)


def counting_bot():
    return ScriptModel(lambda messages, ctx: f"b{sum(1 for m in messages if m.role == 'assistant') + 1}")


async def run(settings: SimulationSettings, user=None, bot=None, pid="c1"):
    user = user or counting_user()
    bot = bot or counting_bot()
    conv = await simulate_conversation(
        job(pid), chatbot=bot, user_agent=user, prompts=user_prompts(), settings=settings
    )
    return conv, user, bot


async def test_user_speaks_first_and_max_turns_counts_messages():
    conv, user, bot = await run(SimulationSettings(max_turns=6, min_turns=2))
    assert [(t.speaker, t.text) for t in conv.turns] == [
        ("user", "u1"),
        ("chatbot", "b1"),
        ("user", "u2"),
        ("chatbot", "b2"),
        ("user", "u3"),
        ("chatbot", "b3"),
    ]
    assert conv.status == "complete" and conv.ended_by == "max_turns"
    assert len(user.requests) == 3 and len(bot.requests) == 3


async def test_user_agent_context_has_persona_prompt_reminder_and_mirrored_roles():
    _, user, bot = await run(SimulationSettings(max_turns=4, min_turns=2))
    first, second = user.requests[0]["messages"], user.requests[1]["messages"]
    assert first[0].role == "system" and first[0].content.startswith("You are Robin, risk High.")
    assert "from turn 2 (max 4)" in first[0].content
    # nothing said yet: our neutral opener, with the reminder
    assert [m.role for m in first] == ["system", "user"]
    assert first[1].content == f"{USER_AGENT_OPENER}\n\nREMINDER: stay Robin.\n"
    # the user-agent sees its own lines as assistant, the chatbot's as user + reminder,
    # after the same opener (so the view opens with `user` for every protocol)
    assert [(m.role, m.content.split("\n")[0]) for m in second] == [
        ("system", first[0].content.split("\n")[0]),
        ("user", USER_AGENT_OPENER),
        ("assistant", "u1"),
        ("user", "b1"),
    ]
    assert second[-1].content.endswith("REMINDER: stay Robin.\n")
    # the chatbot sees a plain conversation: no persona, no reminder, no system prompt
    assert [(m.role, m.content) for m in bot.requests[1]["messages"]] == [
        ("user", "u1"),
        ("assistant", "b1"),
        ("user", "u2"),
    ]
    assert all("REMINDER" not in m.content for r in bot.requests for m in r["messages"])


async def test_an_empty_reply_is_asked_again_past_the_response_cache_and_replays_in_order(tmp_path):
    # The user-agent answers its first request with nothing, then with text. Asked
    # again as it is, the request must reach the model rather than come back from the
    # cache as the same empty answer; a rerun over the cache replays both attempts.
    spec = ModelSpec(ref="ua", provider="p", protocol="openai", model="m")

    def once_silent() -> ScriptModel:
        asked = itertools.count()
        return ScriptModel(
            lambda m, c: "  " if next(asked) == 0 else f"u{sum(x.role == 'assistant' for x in m) + 1}"
        )

    settings = SimulationSettings(max_turns=4, min_turns=2, max_empty_replies=1)
    runs = []
    for _ in range(2):
        cache = ResponseCache(tmp_path / "cache.sqlite")
        user = once_silent()
        conv = await simulate_conversation(
            job(),
            chatbot=counting_bot(),
            user_agent=CachedClient(user, cache, spec),
            prompts=user_prompts(),
            settings=settings,
        )
        await cache.aclose()
        runs.append((conv, len(user.requests)))
    (first, asked_first), (again, asked_again) = runs
    assert first.status == "complete", first.error
    assert [t.text for t in first.turns] == ["u1", "b1", "u2", "b2"]
    assert asked_first == 3  # the empty answer, its re-ask, and the second user turn
    assert again.turns == first.turns and asked_again == 0  # all from the cache


async def test_chatbot_first_with_fixed_opening_message_and_system_prompt():
    settings = SimulationSettings(
        max_turns=4,
        min_turns=2,
        first_speaker="chatbot",
        opening_message="Hi, how can I help?",
        chatbot_system_prompt="Be kind.",
    )
    conv, _, bot = await run(settings)
    assert [(t.speaker, t.text) for t in conv.turns] == [
        ("chatbot", "Hi, how can I help?"),
        ("user", "u1"),
        ("chatbot", "b2"),
        ("user", "u2"),
    ]
    assert (
        bot.requests[0]["messages"][0].role == "system"
        and bot.requests[0]["messages"][0].content == "Be kind."
    )
    assert len(bot.requests) == 1  # the opening line was not generated, but is in its history
    # the chatbot's view opens with a user message even though the chatbot spoke first
    assert [(m.role, m.content) for m in bot.requests[0]["messages"]] == [
        ("system", "Be kind."),
        ("user", CHATBOT_OPENER),
        ("assistant", "Hi, how can I help?"),
        ("user", "u1"),
    ]


async def test_end_marker_is_ignored_before_min_turns_and_honoured_after():
    # The user says the marker from its first message; it may end only once the
    # conversation has reached 5 turns (u1 b1 u2 b2 u3).
    conv, _, _ = await run(SimulationSettings(max_turns=20, min_turns=5), user=counting_user(end_from=1))
    assert [t.text for t in conv.turns] == ["u1", "b1", "u2", "b2", "u3"]
    assert conv.ended_by == "end_marker"
    assert all("<<END>>" not in t.text for t in conv.turns)


async def test_every_conversation_starts_from_a_fresh_context():
    user, bot = counting_user(), counting_bot()
    await run(SimulationSettings(max_turns=4, min_turns=2), user=user, bot=bot, pid="a")
    n = len(bot.requests)
    await run(SimulationSettings(max_turns=4, min_turns=2), user=user, bot=bot, pid="b")
    assert [m.content for m in bot.requests[n]["messages"]] == ["u1"]
    assert bot.requests[n]["context"].conversation_id == "b"


async def test_provider_failure_is_a_failed_conversation_with_its_reason():
    conv, _, _ = await run(SimulationSettings(max_turns=10, min_turns=2), bot=FailingModel(ok=2))
    assert conv.status == "failed" and conv.ended_by == "error"
    assert "ServerError" in conv.error and "503" in conv.error
    assert [t.text for t in conv.turns] == ["u1", "fine", "u2", "fine", "u3"]  # kept for debugging


async def test_a_user_agent_that_returns_nothing_fails_the_conversation():
    silent = ScriptModel(lambda m, c: "   ")
    conv, _, _ = await run(SimulationSettings(max_turns=6, min_turns=2, max_empty_replies=1), user=silent)
    assert conv.status == "failed" and "no text" in conv.error
    assert len(silent.requests) == 2


def _alternates_from_user(messages) -> bool:
    roles = [m.role for m in messages if m.role != "system"]
    return bool(roles) and roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))


def _turns(*speakers: str) -> list[Turn]:
    return [Turn(s, f"{s[0]}{i}") for i, s in enumerate(speakers)]  # type: ignore[arg-type]


def _with_opening(prompts: UserPrompts, opening: str, position: str = "after") -> UserPrompts:
    import msgspec

    return msgspec.structs.replace(prompts, opening=opening, reminder_position=position)


def test_every_view_opens_with_user_and_alternates_whoever_speaks_first():
    plain = user_prompts()
    opening = _with_opening(plain, "Start the conversation as your character.", "before")
    shapes = [
        (),
        ("user",),
        ("chatbot",),
        ("user", "chatbot"),
        ("chatbot", "user"),
        ("user", "chatbot", "user", "chatbot"),
        ("chatbot", "user", "chatbot"),
    ]
    for shape in shapes:
        turns = _turns(*shape)
        for prompts in (plain, opening):
            view = user_view(turns, "R.", prompts)
            assert _alternates_from_user(view), (shape, view)
            assert view[-1].role == "user"
        assert _alternates_from_user(chatbot_view(turns, "")), shape
        assert _alternates_from_user(chatbot_view(turns, "sys")), shape


def test_user_view_keeps_the_same_opening_on_every_call_and_the_reminder_only_on_the_newest():
    prompts = _with_opening(user_prompts(), "Begin.", "before")
    first = user_view([], "R: ", prompts)
    assert [(m.role, m.content) for m in first] == [("user", "Begin.")]  # the opening as written
    later = user_view(_turns("user", "chatbot", "user", "chatbot"), "R: ", prompts)
    assert [(m.role, m.content) for m in later] == [
        ("user", "Begin."),
        ("assistant", "u0"),
        ("user", "c1"),
        ("assistant", "u2"),
        ("user", "R: c3"),
    ]
    # the chatbot spoke first: its line is the first user message, with the reminder
    assert [(m.role, m.content) for m in user_view(_turns("chatbot"), "R: ", prompts)] == [("user", "R: c0")]


def test_alternate_merges_consecutive_same_role_messages_but_not_system():
    from vera.records import Message

    merged = alternate(
        [Message("system", "s"), Message("user", "a"), Message("user", "b"), Message("assistant", "c")]
    )
    assert [(m.role, m.content) for m in merged] == [("system", "s"), ("user", "a\n\nb"), ("assistant", "c")]


async def test_each_side_marks_its_stable_prefix_for_caching():
    _, user, bot = await run(SimulationSettings(max_turns=6, min_turns=2))
    for request in user.requests:  # everything but the newest message, which has the reminder
        assert request["cache_prefix"] == len(request["messages"]) - 1
    for request in bot.requests:  # the whole view: the next turn only appends to it
        assert request["cache_prefix"] == len(request["messages"])


def test_views_grown_turn_by_turn_are_the_views_built_from_scratch():
    """The turn loop grows each side's view as turns are added (`UserViews`,
    `ChatbotViews`): after every turn, what they give is what `user_view` and
    `chatbot_view` build from all the turns, for either first speaker, runs of one
    speaker (merged), every opening and reminder setting, earlier sessions and a
    chatbot system prompt, and from no turns at all."""
    base = user_prompts()
    prompt_sets = [
        None,
        base,
        msgspec.structs.replace(base, opening="Hi there.", opener="[Open.]", chatbot_opener="[Bot.]"),
        msgspec.structs.replace(base, reminder_position="before", opener="[Open.]"),
        msgspec.structs.replace(base, opening="Hello.", reminder_position="before"),
    ]
    earlier = [(), (Message("user", "before 1"), Message("assistant", "before 2"))]
    speakers: list[Literal["user", "chatbot"]] = ["user", "chatbot"]
    checked = 0
    for prompts, before, system_prompt in itertools.product(prompt_sets, earlier, ["", "Be kind."]):
        for order in itertools.product(speakers, repeat=5):
            turns: list[Turn] = []
            users = UserViews("SYS", "R.", prompts)
            bots = ChatbotViews(system_prompt, before, prompts.chatbot_opener if prompts else "")
            for i, speaker in enumerate((None, *order)):
                if speaker is not None:
                    turns.append(Turn(speaker, f"line {i}"))
                want_user = (Message("system", "SYS"), *user_view(turns, "R.", prompts))
                want_bot = tuple(
                    chatbot_view(turns, system_prompt, before, prompts.chatbot_opener if prompts else "")
                )
                assert users.messages(turns) == want_user, (order, i)
                assert bots.messages(turns) == want_bot, (order, i)
                checked += 1
    assert checked == len(prompt_sets) * 2 * 2 * 32 * 6
