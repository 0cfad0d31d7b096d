"""What the offline stand-ins know about a run besides the request they are sent.

A real model sees only the request. The stand-ins are rules, not models: to voice a
persona, reply deterministically per seed or answer a rubric question they need facts
the wire never carries. Those facts do not travel with the request (`CallContext` holds
only what real protocol clients read); the application, which has the loaded inputs and
the plan, hands the pool one object answering these questions, and the pool gives it to
the stand-ins it builds. Real clients never see it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import msgspec

from vera.inputs import Resources
from vera.records import Message, Persona, Turn
from vera.rubric import Question


class PlannedConversation(msgspec.Struct, frozen=True):
    """The persona and seed of one planned conversation."""

    persona: Persona
    seed: int


class StandInFacts(Protocol):
    """The run as the stand-ins need it, looked up by the request's conversation id."""

    @property
    def end_marker(self) -> str: ...

    @property
    def min_turns(self) -> int: ...

    @property
    def rubric_key(self) -> str: ...

    @property
    def resources(self) -> Resources | None:
        """The locale pack's crisis lines (None: vera's English base)."""
        ...

    def conversation(self, conversation_id: str) -> PlannedConversation | None:
        """The persona and seed the plan gave this conversation (None: not planned)."""
        ...

    def user_turns(self, conversation_id: str, messages: Sequence[Message]) -> list[Turn]:
        """The conversation so far, read back from the user-agent's view of it."""
        ...

    def judged_turns(self, conversation_id: str) -> tuple[Turn, ...]:
        """The turns of the conversation being judged."""
        ...

    def question_id(self, prompt: str) -> str | None:
        """The rubric question a judge prompt asks (None: not one of the rubric's)."""
        ...

    def rubric_question(self, question_id: str) -> Question:
        """A question of the run's rubric."""
        ...
