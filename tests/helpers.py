"""Small model-side stand-ins for tests: they implement the ChatClient interface the
way a remote model would (they only see messages), and record every request so tests
can assert on what the model was sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vera.clients.base import CallContext, ChatRequest
from vera.engine import question_prompt
from vera.errors import ServerError
from vera.inputs import JudgePrompts, load_user_prompts
from vera.records import Completion, Message, Persona, Usage
from vera.rubric import Rubric

from .conftest import FIXTURES


def question_asked(
    messages: list[Message] | tuple[Message, ...], rubric: Rubric, prompts: JudgePrompts
) -> str:
    """The id of the rubric question a judge request asks, found from what a model is
    sent (the call context names no question): the first prompt after the system
    message is one question's prompt, whole."""
    prompt = next(m.content for m in messages if m.role == "user")
    for q in rubric.questions:
        if question_prompt(prompts, q) == prompt:
            return q.id
    raise AssertionError(f"no question of {rubric.key} is asked by {prompt[:80]!r}")


class ScriptModel:
    """Replies with `reply(messages, context)`; keeps every request."""

    name = "script"

    def __init__(
        self, reply: Callable[[list[Message], CallContext | None], str], model: str = "script"
    ) -> None:
        self.reply = reply
        self.model = model
        self.requests: list[dict[str, Any]] = []

    async def chat(self, request: ChatRequest) -> Completion:
        self.requests.append(
            {
                "messages": list(request.messages),
                "params": request.params,
                "schema": request.schema,
                "cache_prefix": request.cache_prefix,
                "context": request.context,
            }
        )
        text = self.reply(list(request.messages), request.context)
        return Completion(text=text, usage=Usage(input_tokens=10, output_tokens=5), model=self.model)


class FailingModel(ScriptModel):
    """Succeeds `ok` times, then raises a transient error (retries already exhausted)."""

    def __init__(self, ok: int) -> None:
        super().__init__(lambda m, c: "fine")
        self.ok = ok

    async def chat(self, request: ChatRequest) -> Completion:
        if len(self.requests) >= self.ok:
            self.requests.append({"messages": list(request.messages)})
            raise ServerError("fake", "HTTP 503 after 3 attempts", status=503)
        return await super().chat(request)


def persona(name: str = "Robin", risk: str = "High", **fields: str) -> Persona:
    base = {
        "Name": name,
        "Short Current Suicide Risk Level": risk,
        "Disclosure of Suicide Risk": "Direct (says it plainly)",
        "Primary Communication Style": "Minimal (short)",
        "Reaction to Chatbot Responses": "Engaged (tries things)",
        "Final Seed Phrase": "work is a lot lately",
        "Recent Triggers and Stressors": "lost job; breakup",
    }
    base.update(fields)
    return Persona(name=name, risk=risk, fields=base)


def user_prompts():
    return load_user_prompts(FIXTURES / "user_prompts")


def widest_line(text: str) -> int:
    """The width of the widest line of terminal output that could have been wrapped: a
    line holding a single word wider than the terminal (a path in a deep temporary
    folder) can only stand whole on its own, so it does not count."""
    return max((len(line) for line in text.splitlines() if len(line.split()) > 1), default=0)
