"""Small helpers shared by the offline stand-ins: seeded choice and completions."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

import msgspec

from vera.clients.base import ChatRequest
from vera.inputs import USER_CHECK_PROMPT, heuristic_check
from vera.records import Completion, Message, Usage
from vera.standins.facts import StandInFacts


def rng_for(*parts: object) -> random.Random:
    """A random generator determined only by `parts` (never by Python's salted hash),
    so the same seed and conversation give the same words on every machine."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def completion(text: str, messages: Sequence[Message], model: str, parsed: object = None) -> Completion:
    """A Completion with usage estimated like a real model would report it."""
    prompt = sum(estimate_tokens(m.content) for m in messages)
    return Completion(
        text=text,
        parsed=parsed,
        usage=Usage(input_tokens=prompt, output_tokens=estimate_tokens(text)),
        finish_reason="stop",
        raw_id=None,
        model=model,
    )


def json_text(obj: object) -> str:
    return msgspec.json.encode(obj).decode()


class OfflineModel:
    """The ChatClient surface the stand-ins share; each answers in `respond`, from the
    messages, the conversation id and the run's `StandInFacts` given at construction."""

    name = "offline"
    default_model = ""

    def __init__(self, model: str | None = None, facts: StandInFacts | None = None) -> None:
        self.model = model or self.default_model
        self.facts = facts

    async def chat(self, request: ChatRequest) -> Completion:
        conversation_id = request.context.conversation_id if request.context else ""
        return self.respond(request.messages, conversation_id)

    def respond(self, messages: Sequence[Message], conversation_id: str) -> Completion:
        raise NotImplementedError

    def seed(self, conversation_id: str) -> int:
        """The conversation's seed from the plan (0 when there is no plan to ask)."""
        planned = self.facts.conversation(conversation_id) if self.facts else None
        return planned.seed if planned else 0


def user_check_reply(
    facts: StandInFacts | None, messages: Sequence[Message], conversation_id: str, model: str
) -> Completion | None:
    """The offline judges' answer to the simulated-user check (docs/realism.md): the
    offline heuristic's flags as the structured answer a model gives; None when the
    request is not that check. The turns and persona are looked up, as the judge's are."""
    if not messages or not messages[0].content.startswith(f"[{USER_CHECK_PROMPT}]"):
        return None
    if facts is None or not conversation_id:
        return None
    planned = facts.conversation(conversation_id)
    persona = planned.persona.fields if planned is not None else {}
    check = heuristic_check(facts.judged_turns(conversation_id), persona)
    obj = {
        "flags": msgspec.to_builtins(check.flags),
        "reasoning": "Offline heuristic: word patterns over the user's turns and the persona's columns.",
    }
    return completion(json_text(obj), messages, model, parsed=obj)
