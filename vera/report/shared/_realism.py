"""The simulated-user checks on the card (docs/realism.md): each conversation's check,
counted per user-agent with the flagged conversations listed, and the set
`vera score --exclude-flagged` leaves out of the scores.

A conversation's check is the model check its judgements carry (`[judge] check_users`)
when it has a complete one; otherwise vera's offline heuristic, run here on its turns
and its persona's columns, so every conversation is checked and the card says by what.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import msgspec

from vera.inputs import HEURISTIC, USER_CHECK_COLUMNS, USER_CHECK_PROMPT, heuristic_check
from vera.records import USER_FLAG_KINDS, Conversation, RunManifest, UserCheck
from vera.report.shared._diagnostics import persona_columns
from vera.store import JudgementHead

# Flagged conversations listed per user-agent on the card (card.json has them all).
SHOWN_FLAGGED = 20


class FlaggedConversation(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One flagged conversation: its kinds of flag, and the first flag's turn and words."""

    conversation_id: str
    chatbot: str
    persona: str
    checker: str
    kinds: list[str]
    turn: int
    evidence: str


class UserAgentChecks(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The checks of one user-agent's conversations."""

    user_agent: str
    conversations: int  # complete conversations, each checked
    by_model: int  # of them, checked by a model (the rest by the heuristic)
    failed_checks: int  # model checks that got no answer: the heuristic stood in
    flagged: int
    by_kind: dict[str, int]  # flag kind → flagged conversations with it
    flagged_conversations: list[FlaggedConversation]


class Realism(msgspec.Struct, frozen=True, kw_only=True):
    """The card's simulated-user checks: `checkers` that made them (model refs, and
    "heuristic"), the model check's prompt version, per user-agent counts, and whether
    the scores leave the flagged conversations out (`vera score --exclude-flagged`)."""

    checkers: list[str]
    prompt: str | None
    by_user_agent: list[UserAgentChecks]
    excluded: bool
    n_excluded: int


def model_checks(heads: Iterable[JudgementHead]) -> dict[str, UserCheck]:
    """Each conversation's model check from its judgements' heads: a complete one if
    any, else the failed one (so the card can count it)."""
    out: dict[str, UserCheck] = {}
    for j in heads:
        c = j.user_check
        if c is None:
            continue
        have = out.get(j.conversation_id)
        if have is None or (have.status == "failed" and c.status == "complete"):
            out[j.conversation_id] = c
    return out


def user_checks(
    manifest: RunManifest, conversations: Iterable[Conversation], models: Mapping[str, UserCheck]
) -> dict[str, tuple[Conversation, UserCheck, bool]]:
    """Every complete conversation's check: (conversation head fields, check, whether a
    model check failed and the heuristic stood in). The conversations are streamed;
    only their ids, labels and flags are kept."""
    values, _ = persona_columns(manifest, USER_CHECK_COLUMNS)
    out: dict[str, tuple[Conversation, UserCheck, bool]] = {}
    for conv in conversations:
        if conv.status != "complete":
            continue
        model = models.get(conv.id)
        if model is not None and model.status == "complete":
            check, failed = model, False
        else:
            fields = dict(values.get(conv.persona, {}))
            fields |= conv.annotations or {}
            check, failed = heuristic_check(conv.turns, fields), model is not None
        light = msgspec.structs.replace(conv, turns=[])  # the turns are not kept
        out[conv.id] = (light, check, failed)
    return out


def flagged_ids(checks: Mapping[str, tuple[Conversation, UserCheck, bool]]) -> set[str]:
    return {cid for cid, (_, check, _) in checks.items() if check.flagged}


def realism_block(
    user_agents: list[str], checks: Mapping[str, tuple[Conversation, UserCheck, bool]], *, excluded: bool
) -> Realism:
    """The card's block from every conversation's check."""
    per: dict[str, list[tuple[Conversation, UserCheck, bool]]] = {u: [] for u in user_agents}
    for item in checks.values():
        per.setdefault(item[0].user_agent, []).append(item)
    checkers: dict[str, None] = {}
    out: list[UserAgentChecks] = []
    for agent, items in per.items():
        kinds: Counter[str] = Counter()
        flagged: list[FlaggedConversation] = []
        for conv, check, _ in sorted(items, key=lambda x: x[0].id):
            checkers[check.checker] = None
            if not check.flagged:
                continue
            its: list[str] = list(dict.fromkeys(f.kind for f in check.flags))
            kinds.update(its)
            first = check.flags[0]
            flagged.append(
                FlaggedConversation(
                    conversation_id=conv.id,
                    chatbot=conv.chatbot,
                    persona=conv.persona,
                    checker=check.checker,
                    kinds=its,
                    turn=first.turn,
                    evidence=first.evidence,
                )
            )
        out.append(
            UserAgentChecks(
                user_agent=agent,
                conversations=len(items),
                by_model=sum(c.checker != HEURISTIC for _, c, _ in items),
                failed_checks=sum(failed for _, _, failed in items),
                flagged=len(flagged),
                by_kind={k: kinds.get(k, 0) for k in USER_FLAG_KINDS},
                flagged_conversations=flagged,
            )
        )
    models = [c for c in checkers if c != HEURISTIC]
    return Realism(
        checkers=list(checkers),
        prompt=USER_CHECK_PROMPT if models else None,
        by_user_agent=out,
        excluded=excluded,
        n_excluded=sum(r.flagged for r in out) if excluded else 0,
    )
