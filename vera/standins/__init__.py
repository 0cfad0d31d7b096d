"""Built-in offline stand-ins: no network, no keys, deterministic given a seed.

They implement the same `ChatClient` interface as the real protocol clients:

* ``scripted-user`` — voices a persona from its fields (user-agent role);
* ``best-practice`` and ``risk-ignoring`` — the two reference chatbots;
* ``lexical-judge`` — answers the built-in rubric from documented text detectors;
* ``dry-run-judge`` — answers any rubric by seeded draws, to run a new target end to end.

Every run that uses one is labelled an offline run on its card.

The package is the stand-ins' own: the client pool builds them only through the
`StandIns` the application hands it (`vera.clients.OfflineModels`), so a locale adds its
texts here (`lexicon_zh.py`, `phrases_zh.py` for zh-CN) and a new stand-in is a module
and its line in `_FACTORIES` and `OFFLINE_MODELS`, with no change to the clients.
"""

from __future__ import annotations

from vera.clients.base import ChatClient
from vera.errors import ConfigError
from vera.standins import lexical_judge
from vera.standins.chatbots import BestPracticeBot, RiskIgnoringBot
from vera.standins.common import OfflineModel
from vera.standins.dry_run_judge import DryRunJudge
from vera.standins.facts import PlannedConversation, StandInFacts
from vera.standins.lexical_judge import LexicalJudge
from vera.standins.user_agent import ScriptedUser

_FACTORIES: dict[str, type[OfflineModel]] = {
    "scripted-user": ScriptedUser,
    "best-practice": BestPracticeBot,
    "risk-ignoring": RiskIgnoringBot,
    "lexical-judge": LexicalJudge,
    "dry-run-judge": DryRunJudge,
}

OFFLINE_MODELS = {
    "scripted-user": "user_agent",
    "best-practice": "chatbot",
    "risk-ignoring": "chatbot",
    "lexical-judge": "judge",
    "dry-run-judge": "judge",
}


__all__ = [
    "OFFLINE_MODELS",
    "PlannedConversation",
    "StandInFacts",
    "StandIns",
    "make_offline_client",
    "rubric_refusal",
    "stand_in_role_problem",
]


def make_offline_client(model: str, name: str = "offline", facts: StandInFacts | None = None) -> ChatClient:
    """The offline stand-in called `model` (see OFFLINE_MODELS), knowing the run's
    `facts` (the scripted user and the lexical judge refuse to work without them)."""
    if model not in _FACTORIES:
        raise ConfigError(f"unknown offline model {model!r}; choose one of: {', '.join(_FACTORIES)}")
    client = _FACTORIES[model](model, facts)
    client.name = name
    return client


_ROLE_WORDS = {"user_agent": "simulated user", "chatbot": "chatbot", "judge": "judge"}


def stand_in_role_problem(model: str, role: str) -> str | None:
    """Why the stand-in `model` cannot play `role` ("chatbot", "user_agent", "judge"):
    each is written for one role (a judge stand-in answers rubric questions, and as a
    chatbot would fail every turn); None when it can."""
    own = OFFLINE_MODELS.get(model)
    if own is None or own == role:
        return None
    return (
        f"offline/{model} is a {_ROLE_WORDS[own]} stand-in and cannot be the {_ROLE_WORDS[role]}; "
        f"the {_ROLE_WORDS[role]} stand-ins are: "
        + ", ".join(f"offline/{m}" for m, r in OFFLINE_MODELS.items() if r == role)
    )


def rubric_refusal(model: str, rubric_key: str) -> str | None:
    """Why the stand-in `model` cannot judge the rubric `rubric_key` (None: it can).

    Only the lexical judge reads a rubric, and it knows one. The pool asks this when a
    run is planned, so an unsupported rubric stops the run before any work."""
    if model == "lexical-judge" and not lexical_judge.supports(rubric_key):
        return (
            f"the offline lexical judge answers only the built-in rubric "
            f"{lexical_judge.SUPPORTED_RUBRIC} 1.x (or a locale pack's texts of it), not {rubric_key}"
        )
    return None


class StandIns:
    """vera's built-in stand-ins as a `ClientPool` builds them (`vera.clients.OfflineModels`),
    knowing the run's `facts` (None: the scripted user and the lexical judge refuse to work)."""

    def __init__(self, facts: StandInFacts | None = None) -> None:
        self.facts = facts

    def client(self, model: str, name: str) -> ChatClient:
        return make_offline_client(model, name, self.facts)

    def rubric_refusal(self, model: str, rubric_key: str) -> str | None:
        return rubric_refusal(model, rubric_key)
