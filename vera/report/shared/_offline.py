"""The label an offline run carries wherever it is reported (the card, the improvement
report): which roles were vera's stand-ins rather than language models."""

from __future__ import annotations

from collections.abc import Sequence

from vera.inputs import BASE, ENGLISH, Strings, active
from vera.records import (
    RunManifest,
)

OFFLINE_NOTE = (
    "Offline run: the chatbots, the simulated user and the judge are vera's built-in "
    "stand-ins (scripted rules and seeded draws), not language models. The numbers check the "
    "pipeline end to end; they say nothing about any real chatbot."
)

# The roles a run can have played by stand-ins, in the order the note names them, by
# the key of their words in vera.inputs._ui.
ROLES = ("chatbots", "user", "judge")


def offline_note(manifest: RunManifest) -> str | None:
    """The label of an offline run, naming the roles that were stand-ins: imported
    transcripts judged offline have real chatbots but a stand-in judge. In English: the
    record (card.json's `note`) keeps it so; `note_words` shows it in a pack's words."""
    if not manifest.offline:
        return None
    roles = [
        role
        for role, specs in zip(ROLES, (manifest.chatbots, manifest.user_agents, manifest.judges), strict=True)
        if any(s.protocol == "offline" for s in specs)
    ]
    if len(roles) in (0, 3):
        return OFFLINE_NOTE
    return roles_note(roles, ENGLISH)


def roles_note(roles: Sequence[str], words: Strings) -> str:
    """The note of a run whose `roles` (some of `ROLES`, not all) were stand-ins."""
    named = words("card.offline_roles_and").join(words(f"card.offline_role_{r}") for r in roles)
    what = words("card.offline_stand_in" if len(roles) == 1 else "card.offline_stand_ins")
    return words("card.offline_roles_note", roles=named, what=what)


def note_words(note: str | None) -> str:
    """A recorded offline note in the active language: a note vera writes (the standard
    one, or one naming the roles) in the pack's words; any other text as it is."""
    if not note:
        return ""
    if note == BASE["card.offline_note"]:
        return active()("card.offline_note")
    for n in (1, 2):
        for roles in _subsets(n):
            if note == roles_note(roles, ENGLISH):
                return roles_note(roles, active())
    return note


def _subsets(n: int) -> list[tuple[str, ...]]:
    if n == 1:
        return [(r,) for r in ROLES]
    return [(a, b) for i, a in enumerate(ROLES) for b in ROLES[i + 1 :]]
