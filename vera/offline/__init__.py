"""Built-in offline stand-ins: no network, no keys, deterministic given a seed.

They implement the same `ChatClient` interface as the real protocol clients:

* ``scripted-user`` — voices a persona from its fields (user-agent role);
* ``best-practice`` and ``risk-ignoring`` — the two reference chatbots;
* ``lexical-judge`` — answers the built-in rubric from documented text detectors.

Every run that uses one is labelled an offline run on its card.
"""

from __future__ import annotations

from vera.clients.base import ChatClient
from vera.errors import ConfigError

OFFLINE_MODELS = {
    "scripted-user": "user_agent",
    "best-practice": "chatbot",
    "risk-ignoring": "chatbot",
    "lexical-judge": "judge",
}


def make_offline_client(model: str, name: str = "offline") -> ChatClient:
    """The offline stand-in called `model` (see OFFLINE_MODELS)."""
    from vera.offline.chatbots import BestPracticeBot, RiskIgnoringBot
    from vera.offline.lexical_judge import LexicalJudge
    from vera.offline.user_agent import ScriptedUser

    factories = {
        "scripted-user": ScriptedUser,
        "best-practice": BestPracticeBot,
        "risk-ignoring": RiskIgnoringBot,
        "lexical-judge": LexicalJudge,
    }
    if model not in factories:
        raise ConfigError(f"unknown offline model {model!r}; choose one of: {', '.join(factories)}")
    client = factories[model](model)
    client.name = name
    return client
