"""`vera review` over HTTP, as the page and as another site would talk to it: the sample
and each rater's order, blinding, the session token and origin on every write, and
nothing written but human_ratings.jsonl."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from tests.diskfs import in_private_mounts, needs_mounts, read_only
from vera.errors import UserError
from vera.records import BEST_PRACTICE as BP
from vera.records import RATINGS, HumanRating, Rating
from vera.store import append_human_ratings, open_run, read_human_ratings
from vera.viewer.review import ReviewSession, build_review_app, serve_review

from .conftest import serving_app, start_review, stop

TOKEN = "test-token-0123456789"


@pytest.fixture
def run_copy(offline_run, tmp_path) -> Path:
    """The session's offline run, copied: a review writes into its run directory."""
    out = tmp_path / "run"
    shutil.copytree(offline_run, out)
    return out


@asynccontextmanager
async def serving(session: ReviewSession) -> AsyncIterator[str]:
    """The review on a real socket, bound as `vera review` binds it; yields its base URL."""
    async with serving_app(
        lambda allowed: build_review_app(session, token=TOKEN, allowed_hosts=allowed)
    ) as url:
        yield url.rstrip("/")


def all_ratings(session: ReviewSession, rating: Rating = BP) -> dict[str, Rating]:
    return dict.fromkeys(session.dimensions, rating)


def snapshot(run_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name != "human_ratings.jsonl"
    }


# -- the sample --------------------------------------------------------------------------


def test_the_sample_covers_every_chatbot_and_group_and_each_rater_has_an_order(run_copy):
    records = open_run(run_copy)
    ada = ReviewSession.open(run_copy, "Ada", size=12)
    ben = ReviewSession.open(run_copy, " Ben ", size=12)
    assert ben.rater == "Ben"
    assert len(ada.order) == 12 and sorted(ada.order) == sorted(ben.order)  # one sample
    assert ada.order != ben.order  # two orders
    assert ada.order == ReviewSession.open(run_copy, "Ada", size=12).order  # the same each start
    heads = records.conversation_heads()
    population = Counter((h.chatbot, h.risk) for h in heads.values())
    drawn = Counter((heads[c].chatbot, heads[c].risk) for c in ada.order)
    assert set(drawn) == set(population)  # every stratum is in it
    for stratum, n in drawn.items():
        assert abs(n - 12 * population[stratum] / len(heads)) < 1, stratum
    assert ada.dimensions == (
        "Detects Potential Risk",
        "Confirms Risk",
        "Guides to Human Care",
        "Supportive Conversation",
        "Follows AI Boundaries",
    )
    # Without a size: proposed for a 20-point interval per chatbot, 12 conversations each:
    # 1.96² / 0.2² = 96.04, and 96.04 / (1 + 95.04 / 12) = 10.8 → 11.
    assert len(ReviewSession.open(run_copy, "Ada").order) == 2 * 11
    # 1.96² / 0.5² = 15.4, and 15.4 / (1 + 14.4 / 12) = 7.0 → 7.
    assert len(ReviewSession.open(run_copy, "Ada", width=50).order) == 2 * 7


def test_a_raters_earlier_ratings_are_skipped_and_only_theirs(run_copy):
    ada = ReviewSession.open(run_copy, "Ada", size=10)
    rated = ada.order[:3]
    append_human_ratings(
        run_copy,
        [HumanRating(conversation_id=c, rater="Ada", ratings=all_ratings(ada)) for c in rated]
        + [HumanRating(conversation_id=ada.order[3], rater="Ben", ratings=all_ratings(ada))],
    )
    again = ReviewSession.open(run_copy, "Ada", size=10)
    assert again.rated == 3
    assert again.next_conversation()["conversation"]["id"] == ada.order[3]
    ben = ReviewSession.open(run_copy, "Ben", size=10)
    assert ben.rated == 1
    assert ben.next_conversation()["conversation"]["id"] == next(c for c in ben.order if c != ada.order[3])


def test_the_next_conversation_is_blind(run_copy):
    ada = ReviewSession.open(run_copy, "Ada", size=5)
    shown = ada.next_conversation()
    conversation = shown["conversation"]
    assert set(conversation) == {"id", "position", "turns"}
    assert conversation["position"] == 1 and conversation["id"] == ada.order[0]
    # The rater's guide is the rubric's, the same for every rater and conversation.
    guide = shown.pop("guide")
    assert guide == ReviewSession.open(run_copy, "Ben", size=5).next_conversation()["guide"]
    text = json.dumps(shown)
    head = open_run(run_copy).conversations[conversation["id"]][0]
    assert head.chatbot not in text and head.persona not in text
    assert "High Potential for Harm" not in text.replace(json.dumps(list(RATINGS)), "")
    assert ada.judge_ratings(conversation["id"]) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rater": "  "}, "--rater: give your name"),
        ({"rater": "Ada\nBen"}, "--rater: a name of at most 80 printable characters"),
        ({"rater": "Ada", "size": 5, "width": 10.0}, "--size and --width: give one"),
        ({"rater": "Ada", "width": 0.0}, "--width 0.0: give a width in percentage points"),
    ],
)
def test_bad_options_are_one_clear_error(run_copy, kwargs, message):
    rater = kwargs.pop("rater")
    with pytest.raises(UserError, match=re.escape(message)):
        ReviewSession.open(run_copy, rater, **kwargs)


def test_a_run_not_judged_yet_is_one_clear_error(run_copy):
    (run_copy / "judgements.jsonl").write_bytes(b"")
    with pytest.raises(UserError, match="no judged conversation to review"):
        ReviewSession.open(run_copy, "Ada")


# -- over HTTP ---------------------------------------------------------------------------


async def post(session: aiohttp.ClientSession, base: str, body: object, headers: dict[str, str]):
    async with session.post(f"{base}/api/ratings", data=json.dumps(body), headers=headers) as r:
        return r.status, await r.text()


async def test_a_write_without_the_token_or_from_another_origin_is_refused(run_copy):
    review = ReviewSession.open(run_copy, "Ada", size=6)
    before = snapshot(run_copy)
    cid = review.order[0]
    body = {"conversation_id": cid, "ratings": all_ratings(review), "note": "fine"}
    async with serving(review) as base, aiohttp.ClientSession() as http:
        origin = base  # http://127.0.0.1:PORT, as the page's own fetch sends it
        good = {"X-Vera-Token": TOKEN, "Origin": origin, "Content-Type": "application/json"}
        refused = [
            {"Origin": origin},  # no token
            {"X-Vera-Token": "guess", "Origin": origin},
            {"X-Vera-Token": TOKEN[:-1], "Origin": origin},
            {"X-Vera-Token": TOKEN},  # no Origin
            {"X-Vera-Token": TOKEN, "Origin": "http://attacker.example"},
            {"X-Vera-Token": TOKEN, "Origin": "null"},
            {"X-Vera-Token": TOKEN, "Origin": origin.replace("127.0.0.1", "localhost")},
            {**good, "Sec-Fetch-Site": "cross-site"},
        ]
        for headers in refused:
            status, text = await post(http, base, body, headers)
            assert status == 403, (headers, status, text)
        assert not (run_copy / "human_ratings.jsonl").exists()
        # A page elsewhere can post a form, but not a token nor its own origin.
        async with http.post(f"{base}/api/ratings", data={"conversation_id": cid}) as r:
            assert r.status == 403
        for path in ("/api/next", f"/api/judge/{cid}"):
            async with http.get(base + path) as r:
                assert r.status == 403, path
        async with http.get(f"{base}/api/next", headers={"X-Vera-Token": TOKEN}) as r:
            assert r.status == 200 and (await r.json())["conversation"]["id"] == cid
        # Another Host (a rebound domain name) is refused before anything else.
        async with http.get(base + "/", headers={"Host": "attacker.example"}) as r:
            assert r.status == 400
        async with http.request("PUT", f"{base}/api/ratings", headers=good, data=b"{}") as r:
            assert r.status == 405

        # The judge stays hidden until this rater has saved their ratings.
        async with http.get(f"{base}/api/judge/{cid}", headers={"X-Vera-Token": TOKEN}) as r:
            assert r.status == 403 and "rate this conversation first" in (await r.json())["error"]
        status, text = await post(http, base, body, good)
        assert status == 200, text
        assert json.loads(text) == {
            "saved": True,
            "changed": False,
            "conversation_id": cid,
            "rated": 1,
            "total": 6,
        }
        async with http.get(f"{base}/api/judge/{cid}", headers={"X-Vera-Token": TOKEN}) as r:
            assert r.status == 200
            shown = await r.json()
        judged = open_run(run_copy).judgements_of(cid)
        assert shown["yours"] == all_ratings(review)
        assert [j["ratings"] for j in shown["judges"]] == [
            {x.dimension: x.rating for x in h.ratings} for h in judged
        ]
        async with http.get(f"{base}/api/next", headers={"X-Vera-Token": TOKEN}) as r:
            assert (await r.json())["conversation"]["id"] == review.order[1]

    saved = read_human_ratings(run_copy)
    assert len(saved) == 1
    assert (saved[0].conversation_id, saved[0].rater, saved[0].note, saved[0].source) == (
        cid,
        "Ada",
        "fine",
        "review",
    )
    assert saved[0].ratings == all_ratings(review) and saved[0].rated_at.endswith("+00:00")
    assert snapshot(run_copy) == before  # nothing else in the run was written


async def test_a_bad_rating_is_a_clear_400_and_nothing_is_written(run_copy):
    review = ReviewSession.open(run_copy, "Ada", size=6)
    cid = review.order[0]
    outside = next(c for c in open_run(run_copy).conversations if c not in review.order)
    dims = review.dimensions
    cases = [
        (
            {"conversation_id": outside, "ratings": all_ratings(review)},
            f"conversation {outside!r} is not in your sample",
        ),
        (
            {"conversation_id": cid, "ratings": dict.fromkeys(dims[1:], BP)},
            f"rate every dimension: {dims[0]} missing",
        ),
        (
            {"conversation_id": cid, "ratings": {**all_ratings(review), dims[2]: "Great"}},
            f"{dims[2]}: 'Great' is not one of",
        ),
        (
            {"conversation_id": cid, "ratings": {**all_ratings(review), "Kindness": BP}},
            "not a dimension of this run's rubric: Kindness",
        ),
        (
            {"conversation_id": cid, "ratings": all_ratings(review), "note": "x" * 4001},
            "note: text of at most 4000",
        ),
        ([1, 2], "the body is not a JSON object"),
    ]
    async with serving(review) as base, aiohttp.ClientSession() as http:
        headers = {"X-Vera-Token": TOKEN, "Origin": base}
        for body, message in cases:
            status, text = await post(http, base, body, headers)
            assert status == 400, (body, text)
            assert json.loads(text)["error"].startswith(message), text
        async with http.post(f"{base}/api/ratings", data=b"{not json", headers=headers) as r:
            assert r.status == 400 and (await r.json())["error"].startswith("the body is not JSON")
    assert not (run_copy / "human_ratings.jsonl").exists()


async def test_a_rating_that_cannot_be_written_is_not_reported_saved(run_copy):
    review = ReviewSession.open(run_copy, "Ada", size=6)
    (run_copy / "human_ratings.jsonl").mkdir()  # the append fails, as on a full or read-only disk
    body = {"conversation_id": review.order[0], "ratings": all_ratings(review)}
    async with serving(review) as base, aiohttp.ClientSession() as http:
        status, text = await post(http, base, body, {"X-Vera-Token": TOKEN, "Origin": base})
        assert status == 500
        error = json.loads(text)["error"]
        assert error.startswith("not saved: ") and "human_ratings.jsonl" in error, error
        async with http.get(f"{base}/api/next", headers={"X-Vera-Token": TOKEN}) as r:
            shown = await r.json()
    assert shown["rated"] == 0 and shown["conversation"]["id"] == review.order[0]  # still to do


def test_another_host_is_refused_without_allow_remote(run_copy):
    with pytest.raises(UserError, match=r"--host 0\.0\.0\.0 is not this machine only: .* add --allow-remote"):
        serve_review(run_copy, rater="Ada", host="0.0.0.0")
    assert not (run_copy / "human_ratings.jsonl").exists()


# -- the command -------------------------------------------------------------------------


@pytest.mark.slow
@needs_mounts
@pytest.mark.parametrize("earlier", [False, True], ids=["no-ratings-yet", "ratings-file-there"])
def test_a_read_only_run_is_refused_before_serving(run_copy, earlier):
    """A clinician rated a read-only run for minutes before the first save said "Not
    saved: Read-only file system". The folder is now checked as the save would write
    it (a real read-only mount, which stops root too), before anything is served."""
    ratings = run_copy / "human_ratings.jsonl"
    if earlier:
        review = ReviewSession.open(run_copy, "Ada", size=3)
        rating = review.check_rating({"conversation_id": review.order[0], "ratings": all_ratings(review)})
        append_human_ratings(run_copy, [rating])
    before = snapshot(run_copy), ratings.read_bytes() if earlier else None
    run = shlex.quote(str(run_copy))
    # `timeout`: the old code served on and never exited.
    proc = in_private_mounts(
        f"{read_only(run_copy)} && timeout 30 $VERA review {run} --rater Ada --size 3 --port 0",
        timeout=120,
    )
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stderr == (
        f"error: {ratings}: cannot write the human ratings: Read-only file system; nothing you rate "
        "could be saved: review a copy of the run in a folder you can write, then add its "
        "human_ratings.jsonl to this run with `vera ratings import`\n"
    )
    assert "serving at" not in proc.stdout
    assert (snapshot(run_copy), ratings.read_bytes() if earlier else None) == before
    assert ratings.exists() == earlier


def test_a_writable_run_is_checked_without_a_trace(run_copy):
    """The check before serving writes nothing: no ratings file where there was none
    (`vera score` and the tests that no file appears rely on it), no file of its own."""
    from vera.store import check_appendable

    listing = sorted(p.name for p in run_copy.iterdir())
    check_appendable(run_copy, "unused")
    assert sorted(p.name for p in run_copy.iterdir()) == listing


@pytest.mark.slow
def test_the_command_refuses_another_host_and_warns_when_allowed(run_copy):
    refused = subprocess.run(
        [sys.executable, "-m", "vera", "review", str(run_copy), "--rater", "Ada", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: --host 0.0.0.0 is not this machine only")
    assert "Traceback" not in refused.stderr
    proc, url = start_review(
        str(run_copy), "--rater", "Ada", "--host", "0.0.0.0", "--allow-remote", "--allowed-host", "vera.test"
    )
    err = stop(proc)
    assert url.startswith("http://vera.test:")
    assert "WARNING: vera review is serving transcripts to the network" in err
    both = subprocess.run(
        [
            sys.executable,
            "-m",
            "vera",
            "review",
            str(run_copy),
            "--rater",
            "A",
            "--size",
            "3",
            "--width",
            "9",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert both.returncode != 0 and "--size and --width: give one" in both.stderr


async def test_ratings_saved_in_a_review_calibrate_the_card(run_copy):
    from vera.report.card._score import score_run

    review = ReviewSession.open(run_copy, "Ada", size=12)
    for cid in review.order[:8]:
        await review.save(review.check_rating({"conversation_id": cid, "ratings": all_ratings(review)}))
    score_run(run_copy, resamples=200)
    card = json.loads((run_copy / "card.json").read_text())
    heads = open_run(run_copy).conversation_heads()
    rated = Counter(heads[c].chatbot for c in review.order[:8])
    assert rated == {bot: 4 for bot in rated} and len(rated) == 2  # the order interleaves the chatbots
    for bot in card["chatbots"]:
        assert bot["calibrated"]["n_rated_by_humans"] == rated[bot["chatbot"]]


def test_the_start_up_lines_read_as_before_in_english(run_copy):
    lines: list[str] = []
    proc, url = start_review(str(run_copy), "--rater", "AO", "--size", "3", lines=lines)
    stop(proc)
    assert re.fullmatch(
        r"vera review: rater 'AO': a sample of 3 of \d+ judged conversation\(s\) \(--size 3; seed 1\); "
        r"0 rated, 3 to go \(\d+\.\d s\)",
        lines[0],
    ), lines
    assert lines[1:] == [
        f"vera review: ratings are appended to {run_copy / 'human_ratings.jsonl'}",
        f"vera review: serving at {url} (Ctrl-C to stop; start it again to go on)",
    ]


def test_a_zh_cn_runs_review_starts_in_its_words(tmp_path):
    """The page of a zh-CN run is Chinese, and `vera run`, `vera card` and `vera ratings
    import` speak of it in Chinese; the review's start-up lines were English. A space
    follows the address, so a terminal (or a script) does not take the full-width
    bracket for part of it."""
    run = tmp_path / "zh"
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "vera",
            "run",
            "--limit-personas",
            "12",
            "--locale",
            "zh-CN",
            "--out",
            str(run),
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    lines: list[str] = []
    proc, url = start_review(str(run), "--rater", "王医生", "--size", "30", lines=lines)
    stop(proc)
    assert re.fullmatch(
        r"vera review：评分人 '王医生'：从 24 段已评审的对话中抽取 24 段（--size 30，即全部 24 段；种子 1）；"
        r"已评 0 段，还剩 24 段（\d+\.\d 秒）",
        lines[0],
    ), lines
    assert lines[1:] == [
        f"vera review：评分追加写入 {run / 'human_ratings.jsonl'}",
        f"vera review：服务地址 {url} （按 Ctrl-C 停止；再次启动即可接着评）",
    ]
