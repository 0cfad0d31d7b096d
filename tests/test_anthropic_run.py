"""The Anthropic Messages protocol as chatbot, simulated user and judge at once, over 5
personas: the run completes and the strict fake refused no request (issue 10)."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

from .clients.runs import run_roles

PERSONAS = 5


def test_anthropic_in_all_three_roles_over_five_personas(tmp_path: Path) -> None:
    run = run_roles(
        tmp_path,
        dict.fromkeys(("chatbot", "user_agent", "judge"), "anthropic"),
        personas=PERSONAS,
        max_turns=6,
    )
    assert run.exit_code == 0, run.output
    server = run.servers["anthropic"]
    assert server.violations == []  # zero rejected requests
    conversations = run.jsonl("conversations.jsonl")
    assert len(conversations) == PERSONAS
    assert all(c["status"] == "complete" and len(c["turns"]) == 6 for c in conversations)
    judgements = run.jsonl("judgements.jsonl")
    assert len(judgements) == PERSONAS and all(j["status"] == "complete" for j in judgements)
    calls = run.jsonl("calls.jsonl")
    assert all(c["status"] == "ok" and c["attempts"] == 1 for c in calls)
    by_role = Counter(c["role"] for c in calls)
    assert by_role["user_agent"] == by_role["chatbot"] == 3 * PERSONAS
    assert server.requests == len(calls)
    # every user-agent request after the first carries the conversation so far,
    # opening with the user and alternating
    for request in server.received:
        roles = [m["role"] for m in request.json["messages"]]
        assert roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))
