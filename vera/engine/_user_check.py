"""The model check of a simulated user (docs/realism.md): one structured question to the
judge's client per conversation, asked with the versioned prompt of
`vera.inputs._realism`, re-asked with a short correction when the answer is not the JSON
asked for. It goes through the same client as the judge's walk, so it is recorded,
cached, rate-limited and (in `[judge] mode = "batch"`) batched like every judge call.

A check that gets no valid answer, or whose call fails after its retries, is recorded
as a failed check: it flags nothing and is never the chatbot's failure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vera.clients.base import CallContext, ChatClient, ChatRequest
from vera.clients.structured import extract_json
from vera.errors import TransientError
from vera.inputs import USER_CHECK_PROMPT, USER_CHECK_SCHEMA, parse_user_check, user_check_messages
from vera.records import Conversation, Message, Usage, UserCheck

# Our own words: what a model that did not answer with the JSON asked for is told.
USER_CHECK_RETRY = (
    'That was not the JSON asked for. Answer again with only a JSON object: {"flags": [...], '
    '"reasoning": "..."}, each flag with "kind" (role_reversal, ai_voice, persona_drop or '
    'empty_or_repeated), "turn" and "evidence".'
)


async def check_user(
    conversation: Conversation,
    persona: Mapping[str, str],
    client: ChatClient,
    *,
    checker: str,
    job_id: str,
    params: dict[str, Any] | None = None,
    max_attempts: int = 3,
    usage: Usage | None = None,
) -> UserCheck:
    """Check the simulated user of `conversation` (`persona`: its persona's columns);
    the calls' tokens are added to `usage` when given."""
    messages: list[Message] = list(user_check_messages(conversation.turns, persona))
    ctx = CallContext(role="judge", job_id=job_id, conversation_id=conversation.id)
    last = ""
    try:
        for _ in range(max_attempts):
            reply = await client.chat(
                ChatRequest(
                    messages=tuple(messages),
                    params=params,
                    schema=USER_CHECK_SCHEMA,
                    cache_prefix=1,
                    context=ctx,
                )
            )
            if usage is not None:
                usage.add(reply.usage)
            flags = parse_user_check(_parsed(reply.parsed, reply.text), len(conversation.turns))
            if flags is not None:
                return UserCheck(checker=checker, prompt=USER_CHECK_PROMPT, flags=flags)
            last = reply.text[:120]
            messages += [Message("assistant", reply.text or "(empty)"), Message("user", USER_CHECK_RETRY)]
    except TransientError as exc:
        return _failed(checker, f"{type(exc).__name__}: {exc}")
    return _failed(checker, f"no valid answer after {max_attempts} attempts (last: {last!r})")


def _parsed(parsed: Any, text: str) -> Any:
    return parsed if isinstance(parsed, dict) else extract_json(text or "")


def _failed(checker: str, why: str) -> UserCheck:
    return UserCheck(checker=checker, prompt=USER_CHECK_PROMPT, status="failed", error=why)
