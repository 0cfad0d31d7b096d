"""The label an offline run carries wherever it is reported (the card, the improvement
report): which roles were vera's stand-ins rather than language models."""

from __future__ import annotations

from vera.records import (
    RunManifest,
)

OFFLINE_NOTE = (
    "Offline run: the chatbots, the simulated user and the judge are vera's built-in "
    "stand-ins (scripted rules and seeded draws), not language models. The numbers check the "
    "pipeline end to end; they say nothing about any real chatbot."
)


def offline_note(manifest: RunManifest) -> str | None:
    """The label of an offline run, naming the roles that were stand-ins: imported
    transcripts judged offline have real chatbots but a stand-in judge."""
    if not manifest.offline:
        return None
    roles = [
        role
        for role, specs in (
            ("the chatbots", manifest.chatbots),
            ("the simulated user", manifest.user_agents),
            ("the judge", manifest.judges),
        )
        if any(s.protocol == "offline" for s in specs)
    ]
    if len(roles) in (0, 3):
        return OFFLINE_NOTE
    what = (
        "is vera's built-in stand-in, not a language model"
        if len(roles) == 1
        else "are vera's built-in stand-ins, not language models"
    )
    return (
        f"Offline run: {' and '.join(roles)} {what}. The numbers check the pipeline end to end; "
        "they say nothing about any real chatbot."
    )
