"""`vera review` collects a clinician's rating of the simulated user's realism (1-5,
optional) beside the chatbot's ratings; `vera agreement --users` reads it back."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from vera.store import read_human_ratings
from vera.viewer.review import ReviewSession

from .test_review import TOKEN, all_ratings, post, serving
from .test_review import run_copy as run_copy  # the fixture

STATIC = Path(__file__).resolve().parents[2] / "vera" / "viewer" / "static"


async def test_a_realism_rating_is_saved_beside_the_ratings(run_copy):
    review = ReviewSession.open(run_copy, "Ada", size=6)
    first, second = review.order[:2]
    async with serving(review) as base, aiohttp.ClientSession() as http:
        headers = {"X-Vera-Token": TOKEN, "Origin": base}
        status, text = await post(
            http, base, {"conversation_id": first, "ratings": all_ratings(review), "realism": 2}, headers
        )
        assert status == 200, text
        status, text = await post(
            http, base, {"conversation_id": second, "ratings": all_ratings(review)}, headers
        )
        assert status == 200, text
    saved = {r.conversation_id: r for r in read_human_ratings(run_copy)}
    assert saved[first].realism == 2 and saved[second].realism is None
    assert saved[first].ratings == all_ratings(review)


@pytest.mark.parametrize("value", [0, 6, "3", 2.5, True])
async def test_a_realism_rating_that_is_not_1_to_5_is_refused(run_copy, value):
    review = ReviewSession.open(run_copy, "Ada", size=6)
    body = {"conversation_id": review.order[0], "ratings": all_ratings(review), "realism": value}
    async with serving(review) as base, aiohttp.ClientSession() as http:
        status, text = await post(http, base, body, {"X-Vera-Token": TOKEN, "Origin": base})
    assert status == 400
    assert json.loads(text)["error"].startswith("realism: ") and "from 1 to 5" in text
    assert not (run_copy / "human_ratings.jsonl").exists()


def test_the_page_asks_for_it_and_sends_it():
    page = (STATIC / "review.html").read_text()
    assert all(f'name="realism" value="{k}"' in page for k in range(1, 6))
    script = (STATIC / "review.js").read_text()
    assert "realism: realismChosen()" in script
