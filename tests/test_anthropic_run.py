"""The Anthropic Messages protocol as chatbot, simulated user and judge at once, over 5
personas: the run completes and the strict fake refused no request (issue 10)."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import pytest

from .clients.runs import Run, run_roles

PERSONAS = 5
PRICES = "price_cached_input_per_mtok = 0.1\nprice_cache_write_per_mtok = 1.25\n"  # input 1.0, output 4.0


def test_anthropic_in_all_three_roles_over_five_personas(tmp_path: Path) -> None:
    run = run_roles(
        tmp_path,
        dict.fromkeys(("chatbot", "user_agent", "judge"), "anthropic"),
        personas=PERSONAS,
        max_turns=6,
        profile_extra=PRICES,
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

    assert_prompt_caching(run)


def marked(blocks: object) -> list[int]:
    """Indexes of the blocks that carry a cache mark."""
    return (
        [i for i, b in enumerate(blocks) if isinstance(b, dict) and "cache_control" in b]
        if isinstance(blocks, list)
        else []
    )


def assert_prompt_caching(run: Run) -> None:
    """Every role marks its stable prefix; the cache is then read in every role, the
    card shows the cached tokens per role, and cache writes are priced as written."""
    by_role: dict[str, list[dict]] = {"judge": [], "user_agent": [], "chatbot": []}
    for r in run.servers["anthropic"].received:
        body = r.json
        role = "judge" if body.get("tools") else "user_agent" if body.get("system") else "chatbot"
        by_role[role].append(body)
    for body in by_role["judge"]:
        assert marked(body["system"]) == [0]  # instructions + transcript, shared by every question
    for body in by_role["user_agent"]:
        assert marked(body["system"]) == [0]  # the persona prompt
        messages = body["messages"]
        if len(messages) > 1:  # and the conversation up to its own last line
            assert messages[-2]["role"] == "assistant" and marked(messages[-2]["content"]) == [0]
            assert not isinstance(messages[-1]["content"], list)  # the reminder's message is not
    for body in by_role["chatbot"]:
        assert marked(body["messages"][-1]["content"]) == [0]  # its whole view, extended next turn
    card = json.loads((run.out / "card.json").read_text())
    for role in ("user_agent", "chatbot"):  # read back on every later turn
        assert card["accounting"]["by_role"][role]["cached_input_tokens"] > 0, role
    calls = run.jsonl("calls.jsonl")
    # Each walk's first question writes the judge's cache (instructions + transcript) and
    # every later question of the same walk reads it.
    walks: dict[str, list[dict]] = {}
    for c in calls:
        if c["role"] == "judge":
            walks.setdefault(c["job_id"], []).append(c["usage"])
    assert walks and any(len(w) > 1 for w in walks.values())
    for usages in walks.values():
        assert usages[0]["cache_write_tokens"] > 0
        assert all(u["cached_input_tokens"] > 0 and u["cache_write_tokens"] == 0 for u in usages[1:])
    for call in calls:
        u = call["usage"]
        uncached = u["input_tokens"] - u["cached_input_tokens"] - u["cache_write_tokens"]
        expected = (uncached * 1.0 + u["cached_input_tokens"] * 0.1 + u["cache_write_tokens"] * 1.25) / 1e6
        assert call["cost_usd"] == pytest.approx(expected + u["output_tokens"] * 4.0 / 1e6)
