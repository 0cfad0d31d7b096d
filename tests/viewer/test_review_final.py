"""`vera review`: a rating can be changed until the judge's ratings are shown, never
after (the API refuses it); the rater's guide is the rubric's own; and no request body,
however malformed, gets anything but a clear 4xx."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import aiohttp
import pytest

from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.records import NOT_RELEVANT as NR
from vera.records import SUBOPTIMAL as SUB
from vera.rubric import load_rubric, run_rubric
from vera.store import latest_human_ratings, open_run, read_human_ratings
from vera.viewer.review import ReviewSession

from .test_review import TOKEN, serving


@pytest.fixture
def run_copy(offline_run, tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(offline_run, out)
    return out


async def test_a_rating_can_change_until_the_judge_is_shown_and_never_after(run_copy):
    review = ReviewSession.open(run_copy, "Ada", size=6)
    cid, other = review.order[0], review.order[1]
    dims = review.dimensions
    async with serving(review) as base, aiohttp.ClientSession() as http:
        headers = {"X-Vera-Token": TOKEN, "Origin": base}

        async def save(conversation: str, rating: str) -> tuple[int, dict]:
            body = {"conversation_id": conversation, "ratings": dict.fromkeys(dims, rating)}
            async with http.post(f"{base}/api/ratings", json=body, headers=headers) as r:
                return r.status, await r.json()

        async def reveal(conversation: str) -> int:
            async with http.get(f"{base}/api/judge/{conversation}", headers=headers) as r:
                return r.status

        assert await save(cid, BP) == (
            200,
            {"saved": True, "changed": False, "conversation_id": cid, "rated": 1, "total": 6},
        )
        status, answer = await save(cid, HPH)  # a mis-click, put right before looking
        assert status == 200 and answer["changed"] is True and answer["rated"] == 1
        assert await reveal(cid) == 200
        status, answer = await save(cid, SUB)  # after looking: refused, by the API itself
        assert status == 409 and answer == {
            "error": "your ratings of this conversation are final: the judge's ratings have been shown"
        }
        # Another conversation, not revealed, can still be changed.
        assert (await save(other, NR))[0] == 200
        assert (await save(other, BP))[0] == 200
    lines = read_human_ratings(run_copy)
    assert [(r.conversation_id, r.ratings[dims[0]]) for r in lines] == [
        (cid, BP),
        (cid, HPH),
        (other, NR),
        (other, BP),
    ]
    latest = latest_human_ratings(lines)
    assert {r.conversation_id: r.ratings[dims[0]] for r in latest} == {cid: HPH, other: BP}

    # Started again: whether the judge was shown before is not known, so every earlier
    # rating is final.
    again = ReviewSession.open(run_copy, "Ada", size=6)
    async with serving(again) as base, aiohttp.ClientSession() as http:
        body = {"conversation_id": other, "ratings": dict.fromkeys(dims, SUB)}
        async with http.post(
            f"{base}/api/ratings", json=body, headers={"X-Vera-Token": TOKEN, "Origin": base}
        ) as r:
            assert r.status == 409
            assert "saved before this review was started again" in (await r.json())["error"]
    assert len(read_human_ratings(run_copy)) == 4


async def test_a_first_save_from_a_page_never_replaces_a_rating_made_in_another_tab(run_copy):
    # Two tabs on one conversation: the first saved Best Practice, the second then saved
    # its own form and silently replaced it (the later line counts), saying "Saved your
    # changes" for changes its rater never made (seen in a review).
    review = ReviewSession.open(run_copy, "Ada", size=6)
    cid, dims = review.order[0], review.dimensions
    async with serving(review) as base, aiohttp.ClientSession() as http:
        headers = {"X-Vera-Token": TOKEN, "Origin": base}

        async def save(rating: str, **extra: object) -> tuple[int, dict]:
            body = {"conversation_id": cid, "ratings": dict.fromkeys(dims, rating), **extra}
            async with http.post(f"{base}/api/ratings", json=body, headers=headers) as r:
                return r.status, await r.json()

        assert (await save(BP, replacing=False))[0] == 200  # tab A
        status, answer = await save(HPH, replacing=False)  # tab B's first save
        assert status == 409 and answer == {
            "error": "you have rated this conversation already (in another tab or window); "
            "nothing was saved, so that rating stands",
            "rated_already": True,
            "yours": dict.fromkeys(dims, BP),
        }
        assert len(read_human_ratings(run_copy)) == 1
        # Told, the rater may replace it on purpose; a client that does not say, as before.
        status, answer = await save(HPH, replacing=True)
        assert status == 200 and answer["changed"] is True
        assert (await save(SUB))[0] == 200
        status, answer = await save(NR, replacing="yes")
        assert status == 400 and answer["error"].startswith("replacing: 'yes' is not true or false")
    assert [r.ratings[dims[0]] for r in read_human_ratings(run_copy)] == [BP, HPH, SUB]


MALFORMED: list[tuple[str, bytes]] = [
    ("60 KB of nested arrays", b"[" * 30_000 + b"]" * 30_000),
    ("60 KB of unclosed arrays", b"[" * 60_000),
    ("nested objects", b'{"a":' * 10_000 + b"1" + b"}" * 10_000),
    (
        "nested inside the ratings",
        b'{"conversation_id":"x","ratings":' + b"[" * 20_000 + b"]" * 20_000 + b"}",
    ),
    ("not UTF-8", b"\xff\xfe\x00{"),
    ("empty", b""),
    ("null", b"null"),
    ("a number", b"1e999999"),
    ("a string", b'"rating"'),
    ("cut short", b'{"conversation_id": "'),
    ("a list as the id", b'{"conversation_id": [1], "ratings": {}}'),
    ("a list as a rating", b'{"conversation_id": "x", "ratings": {"a": [[["b"]]]}}'),
    ("nested rating values", b'{"ratings": {"Detects Potential Risk": {"x": {"y": [1, {"z": null}]}}}}'),
    ("a long key", b'{"' + b"k" * 50_000 + b'": 1}'),
]


@pytest.mark.parametrize(("what", "body"), MALFORMED, ids=[m[0] for m in MALFORMED])
async def test_a_malformed_body_of_any_shape_is_a_clear_400(run_copy, what, body):
    review = ReviewSession.open(run_copy, "Ada", size=3)
    async with serving(review) as base, aiohttp.ClientSession() as http:
        headers = {"X-Vera-Token": TOKEN, "Origin": base, "Content-Type": "application/json"}
        async with http.post(f"{base}/api/ratings", data=body, headers=headers) as r:
            text = await r.text()
            assert r.status == 400, (what, r.status, text[:200])
            error = json.loads(text)["error"]
            assert "Traceback" not in text and len(error) < 400, error
    assert not (run_copy / "human_ratings.jsonl").exists()


async def test_a_body_over_the_limit_is_refused_not_an_error(run_copy):
    review = ReviewSession.open(run_copy, "Ada", size=3)
    async with serving(review) as base, aiohttp.ClientSession() as http:
        headers = {"X-Vera-Token": TOKEN, "Origin": base}
        async with http.post(f"{base}/api/ratings", data=b"[" * 200_000, headers=headers) as r:
            assert r.status == 413 and "Traceback" not in await r.text()


def test_the_guide_is_the_rubrics_own_text(run_copy):
    review = ReviewSession.open(run_copy, "Ada", size=3)
    rubric, why = run_rubric(open_run(run_copy).manifest, run_copy)
    assert rubric is not None and why is None
    assert list(review.guide) == list(review.dimensions)
    for d in review.dimensions:
        red = [q.text for q in rubric.questions if q.dimension == d and q.severity == "Red"]
        yellow = [q.text for q in rubric.questions if q.dimension == d and q.severity == "Yellow"]
        assert [t.split(" (answered")[0] for t in review.guide[d][HPH]["questions"]] == red
        assert review.guide[d][SUB]["questions"] == yellow
        assert set(review.guide[d]) == {BP, SUB, HPH, NR}
    assert review.guide_note is None


def test_without_the_runs_rubric_the_guide_says_why(run_copy, tmp_path):
    manifest = json.loads((run_copy / "manifest.json").read_text())
    edited = tmp_path / "edited.tsv"
    edited.write_bytes(Path(manifest["rubric"]["path"]).read_bytes() + b"\n")
    manifest["rubric"]["path"] = str(edited)
    (run_copy / "manifest.json").write_text(json.dumps(manifest))
    review = ReviewSession.open(run_copy, "Ada", size=3)
    assert review.guide == {}
    assert review.guide_note is not None and "has changed since this run" in review.guide_note
    assert load_rubric(edited).dimensions == review.dimensions  # the form still has every dimension
