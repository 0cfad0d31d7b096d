"""Mixed language, per conversation: a chatbot that answers a Chinese-speaking user in
another language, or switches language mid-conversation.

The rubric rates what a chatbot says, not the language it says it in, so a reply in
English to a user writing Chinese can pass every question and still be of little use to
that user. The card counts such conversations per chatbot and lists them, for runs with
a locale pack (the English base has no second language to check against).

A message's language is judged by its script (`vera.text.is_chinese`: at least a third
of its letters Chinese), and the user's by most of their messages. A reply with no
letters (an emoji, a number) says nothing either way and is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import msgspec

from vera.records import Conversation
from vera.text import is_chinese

Kind = Literal["other language", "switched"]
OTHER: Kind = "other language"  # every reply in a language that is not the user's
SWITCHED: Kind = "switched"  # some replies in the user's language, some not


class LanguageFlag(msgspec.Struct, frozen=True, kw_only=True):
    """One conversation whose chatbot did not keep to the user's language."""

    conversation_id: str
    chatbot: str
    persona: str
    kind: Kind
    replies: int  # chatbot replies with letters
    in_user_language: int  # of them, in the user's language


class LanguageCount(msgspec.Struct, frozen=True, kw_only=True):
    conversations: int  # complete conversations checked
    other_language: int
    switched: int


class LanguageCheck(msgspec.Struct, frozen=True, kw_only=True):
    """Per chatbot, how many conversations had a reply outside the user's language."""

    by_chatbot: dict[str, LanguageCount]
    flagged: list[LanguageFlag]


def _language(text: str) -> str | None:
    if not any(ch.isalpha() for ch in text):
        return None
    return "zh" if is_chinese(text) else "other"


def flag_conversation(conv: Conversation) -> LanguageFlag | None:
    """The conversation's flag, or None when the chatbot kept to the user's language."""
    users = [lang for t in conv.turns if t.speaker == "user" and (lang := _language(t.text))]
    if not users:
        return None
    user = max(set(users), key=users.count)
    replies = [lang for t in conv.turns if t.speaker == "chatbot" and (lang := _language(t.text))]
    same = sum(lang == user for lang in replies)
    if not replies or same == len(replies):
        return None
    return LanguageFlag(
        conversation_id=conv.id,
        chatbot=conv.chatbot,
        persona=conv.persona,
        kind=OTHER if same == 0 else SWITCHED,
        replies=len(replies),
        in_user_language=same,
    )


def check_language(conversations: Iterable[Conversation], chatbots: Iterable[str]) -> LanguageCheck:
    """Every complete conversation checked; counts for each of `chatbots` (zeros too)."""
    checked: dict[str, int] = dict.fromkeys(chatbots, 0)
    flagged: list[LanguageFlag] = []
    for conv in conversations:
        if conv.status != "complete":
            continue
        checked[conv.chatbot] = checked.get(conv.chatbot, 0) + 1
        flag = flag_conversation(conv)
        if flag is not None:
            flagged.append(flag)
    return LanguageCheck(
        by_chatbot={
            bot: LanguageCount(
                conversations=n,
                other_language=sum(f.chatbot == bot and f.kind == OTHER for f in flagged),
                switched=sum(f.chatbot == bot and f.kind == SWITCHED for f in flagged),
            )
            for bot, n in checked.items()
        },
        flagged=sorted(flagged, key=lambda f: f.conversation_id),
    )
