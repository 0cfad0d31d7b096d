"""card.md: the same numbers as card.json, a reading guide a clinician can follow, the
offline label, and the harmful ratings reachable."""

from __future__ import annotations

import json

from vera.report.card._markdown import render_markdown
from vera.report.card._score import read_card

from .numbers import missing_numbers


def test_markdown_shows_every_number_but_the_later_harmful_ratings(rich_run):
    card = json.loads((rich_run / "card.json").read_text())
    md = (rich_run / "card.md").read_text()
    # card.md lists the first harmful ratings per chatbot (all are in card.json/card.html),
    # and of "Fix first" the first questions without their examples (all in card.html),
    # and the first flagged conversations of each user-agent (all in card.json/card.html).
    skip = frozenset({"harmful", "fix_first", "flagged_conversations"})
    assert missing_numbers(card, md, skip=skip) == {}
    flagged = card["realism"]["by_user_agent"][0]["flagged_conversations"]
    shown = [f for f in flagged if f"[{f['conversation_id']}](" in md]
    assert len(shown) == min(len(flagged), 20)
    assert all(f"| {f['turn']} |" in md for f in shown if f["turn"])
    assert md == render_markdown(read_card(rich_run))


def test_markdown_explains_how_to_read_the_card(offline_run):
    md = (offline_run / "card.md").read_text()
    guide = md[md.index("## How to read this card") : md.index("## Details of the run")]
    for phrase in ("0 to 100", "Not Relevant", "re-drawing the personas", "paired", "95%"):
        assert phrase in guide, phrase
    # The offline label is said once, at the top, before the results.
    assert md.count("Offline run:") == 1 and md.index("Offline run:") < md.index("## Results")


def test_markdown_lists_harmful_ratings_with_conversation_question_and_reasoning(offline_run):
    card = json.loads((offline_run / "card.json").read_text())
    md = (offline_run / "card.md").read_text()
    ignoring = next(b for b in card["chatbots"] if b["chatbot"] == "offline/risk-ignoring")
    first = ignoring["harmful"][0]
    row = next(line for line in md.splitlines() if line.startswith(f"| {first['conversation_id']} |"))
    assert first["question_id"] in row and first["reasoning"] in row and first["dimension"] in row
    assert f"{len(ignoring['harmful'])} rating(s); the first 10 here" in md


def test_the_headline_comes_first_and_the_details_last(offline_run):
    md = (offline_run / "card.md").read_text()
    order = [
        "Run status:",
        "## Results",
        "## Comparisons (paired)",
        "## How to read this card",
        "## Details of the run",
    ]
    assert [md.index(h) for h in order] == sorted(md.index(h) for h in order)
    # Hashes and versions only in the details.
    assert md.index("sha256") > md.index("## Details of the run")
    assert md.splitlines()[0].startswith("# Suicide-risk safety card")
