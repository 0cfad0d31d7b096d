"""`vera review` in a real headless Chromium (Debian's `chromium`, driven by Playwright), as
a rater uses it: rate three conversations, stop the server, start it again, and the
fourth comes next. Skips without a browser unless VERA_BROWSER_TESTS=required (see
test_browser.py); screenshots go to each test's tmp folder."""

from __future__ import annotations

import shutil

import pytest
from yarl import URL

from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.records import NOT_RELEVANT as NR
from vera.records import SUBOPTIMAL as SUB
from vera.records import HumanRating, transcript_sha256
from vera.store import append_human_ratings, open_run, read_human_ratings
from vera.viewer.review import ReviewSession

from .conftest import IMG_TEXT, MARKUP_ID, MARKUP_TURN, SCRIPT_TEXT, start_review, stop
from .test_browser import browser, no_page_scroll, page_at  # noqa: F401  (fixtures)

RATER = "Dr Ada Lovelace"


def wait_for_conversation(page, position: int, total: int) -> None:
    page.wait_for_function(
        "t => document.querySelector('#conversation-title').textContent === t",
        arg=f"Conversation {position} of {total}",
    )


def turns_on_page(page) -> list[str]:
    """Each turn's exact text (a chatbot's Markdown is shown formatted: its Exact text)."""
    return page.eval_on_selector_all(
        "#turns .turn",
        "ts => ts.map(t => (t.querySelector('pre.exact') || t.querySelector('.text')).textContent)",
    )


def rate(page, choices: dict[str, str], note: str) -> None:
    """Choose a rating per dimension as a rater would: by the group's and the radio's
    accessible names (so both must be labelled)."""
    for i, (dimension, rating) in enumerate(choices.items()):
        group = page.get_by_role("group", name=f"{i + 1}. {dimension}")
        group.get_by_role("radio", name=rating).check()
    page.get_by_label("Note (optional)").fill(note)


@pytest.mark.slow
def test_rate_three_stop_start_again_and_the_fourth_comes_next(page_at, offline_run, tmp_path):  # noqa: F811
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    expected = ReviewSession.open(run, RATER, size=8)
    order, dims = expected.order, expected.dimensions
    records = open_run(run)
    proc, url = start_review(str(run), "--rater", RATER, "--size", "8")
    port = str(URL(url).port)
    page = page_at(1400)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(url)
        wait_for_conversation(page, 1, 8)
        # The heading says which conversation; the status line above it said the same
        # again ("Conversation 1 of 8: 11 turns."), in bold. It is for outcomes only.
        assert page.inner_text("#status") == ""
        assert page.inner_text("#progress-text").startswith(f"Rater {RATER} · 0 of 8 rated")
        # Blind: the transcript is there; the chatbot, persona and judge are not.
        first = records.read_conversation(order[0])
        assert turns_on_page(page) == [t.text for t in first.turns]
        body = page.inner_text("body")
        assert first.chatbot not in body and first.persona not in body
        assert page.locator("#judge").is_hidden() and page.locator("#after").is_hidden()
        page.screenshot(path=tmp_path / "review-1-blind.png", full_page=True)

        # Saving with a dimension left out is refused on the page, nothing is sent.
        page.get_by_role("button", name="Save ratings").click()
        assert page.inner_text("#status").startswith("Rate every dimension first:")
        assert page.locator("fieldset.dimension.missing").count() == len(dims)
        assert not (run / "human_ratings.jsonl").exists()

        given = [
            dict.fromkeys(dims, BP),
            {d: [SUB, NR, HPH, BP, BP][i % 5] for i, d in enumerate(dims)},
            {d: [HPH, HPH, SUB, NR, BP][i % 5] for i, d in enumerate(dims)},
        ]
        notes = ["", "Missed the second hint <b>of</b> risk.", 'Harmful: "stay away from anyone"']
        for i in range(3):
            wait_for_conversation(page, i + 1, 8)
            if i:  # (the first still shows the refusal above)
                assert page.inner_text("#status") == ""  # "Saved: conversation …" is gone too
            conversation = records.read_conversation(order[i])
            assert turns_on_page(page) == [t.text for t in conversation.turns]
            rate(page, given[i], notes[i])
            page.get_by_role("button", name="Save ratings").click()
            page.wait_for_function("() => document.querySelector('#status').textContent.startsWith('Saved')")
            # The page says saved only once the line is on disk.
            saved = read_human_ratings(run)
            assert [r.conversation_id for r in saved] == order[: i + 1]
            assert page.inner_text("#progress-text").startswith(f"Rater {RATER} · {i + 1} of 8 rated")
            assert page.locator("#judge").is_hidden()  # still hidden until asked for
            if i == 0:
                page.get_by_role("button", name="Show the judge's ratings").click()
                page.wait_for_selector("#judge-table tbody tr")
                judged = records.judgements_of(order[0])[0]
                theirs = {r.dimension: r.rating for r in judged.ratings}
                rows = page.locator("#judge-table tbody tr")
                assert rows.count() == len(dims)
                for k, d in enumerate(dims):
                    cells = rows.nth(k).locator("td").all_inner_texts()
                    assert cells[0] == BP and cells[1].startswith(theirs[d])
                assert (
                    page.get_by_role("button", name="Hide the judge's ratings").get_attribute("aria-expanded")
                    == "true"
                )
                page.screenshot(path=tmp_path / "review-2-revealed.png", full_page=True)
            if i < 2:
                page.get_by_role("button", name="Next conversation").click()
        page.screenshot(path=tmp_path / "review-3-third-saved.png", full_page=True)
        assert all(u.startswith(url) or u.startswith("data:") for u in requests), requests
    finally:
        stop(proc)

    saved = read_human_ratings(run)
    assert [r.conversation_id for r in saved] == order[:3]
    assert [r.ratings for r in saved] == given
    assert [r.note for r in saved] == [n.strip() for n in notes]
    assert {r.rater for r in saved} == {RATER} and {r.source for r in saved} == {"review"}
    # Each carries the fingerprint of the transcript the page showed.
    assert [r.transcript_sha256 for r in saved] == [
        transcript_sha256(records.read_conversation(cid).turns) for cid in order[:3]
    ]

    # The old page's token died with its server: a save from it is refused, not lost silently.
    proc, url2 = start_review(str(run), "--rater", RATER, "--size", "8", "--port", port)
    try:
        assert url2 == url
        page.get_by_role("button", name="Next conversation").click()
        page.wait_for_function("() => document.querySelector('#status').classList.contains('error')")
        assert "wrong session token" in page.inner_text("#status")

        fresh = page_at(1400)
        fresh.goto(url)
        wait_for_conversation(fresh, 4, 8)
        fourth = records.read_conversation(order[3])
        assert turns_on_page(fresh) == [t.text for t in fourth.turns]
        assert fresh.inner_text("#progress-text").startswith(f"Rater {RATER} · 3 of 8 rated")
        assert fresh.evaluate("document.activeElement.id") == "conversation-title"
        fresh.screenshot(path=tmp_path / "review-4-resumed.png", full_page=True)
    finally:
        stop(proc)
    assert len(read_human_ratings(run)) == 3


@pytest.mark.slow
def test_markup_in_a_transcript_is_text_and_a_small_screen_does_not_scroll_sideways(
    page_at,  # noqa: F811
    viewer_run,
    tmp_path,
):
    run = tmp_path / "rich"
    shutil.copytree(viewer_run, run)
    review = ReviewSession.open(run, RATER, size=100)
    assert MARKUP_ID in review.order
    # Everything before the markup conversation is rated already, so it comes next.
    before = review.order[: review.order.index(MARKUP_ID)]
    append_human_ratings(
        run,
        [
            HumanRating(conversation_id=c, rater=RATER, ratings=dict.fromkeys(review.dimensions, BP))
            for c in before
        ],
    )
    proc, url = start_review(str(run), "--rater", RATER, "--size", "100")
    try:
        page = page_at(400)
        page.goto(url)
        wait_for_conversation(page, len(before) + 1, len(review.order))
        assert turns_on_page(page)[:2] == [MARKUP_TURN, SCRIPT_TEXT]
        assert IMG_TEXT in page.inner_text("#turns")
        assert page.evaluate("window.__xss") is None and page.dialogs == []
        assert page.evaluate("document.querySelectorAll('#turns img, #turns script, #injected').length") == 0
        assert no_page_scroll(page)
        page.screenshot(path=tmp_path / "review-400.png", full_page=True)
    finally:
        stop(proc)


@pytest.mark.slow
def test_the_next_conversation_shows_the_form_from_its_first_dimension(page_at, offline_run, tmp_path):  # noqa: F811
    # On a wide screen the form scrolls in a panel of its own; a rater who scrolled it
    # down to Save met the next conversation's form still scrolled down, its first
    # dimensions out of sight above (seen in a trial's screenshots).
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    dims = ReviewSession.open(run, RATER, size=4).dimensions
    proc, url = start_review(str(run), "--rater", RATER, "--size", "4")
    page = page_at(1400)
    try:
        page.goto(url)
        wait_for_conversation(page, 1, 4)
        rate(page, dict.fromkeys(dims, BP), "")
        page.get_by_role("button", name="Save ratings").click()
        page.wait_for_function("() => document.querySelector('#status').textContent.startsWith('Saved')")
        page.get_by_role("button", name="Next conversation").click()
        wait_for_conversation(page, 2, 4)
        assert page.evaluate("document.querySelector('section.rate').scrollTop") == 0
        page.screenshot(path=tmp_path / "review-next.png")
    finally:
        stop(proc)


@pytest.mark.slow
def test_a_rated_sample_shows_only_that_it_is_rated(page_at, offline_run, tmp_path):  # noqa: F811
    # `.review { display: grid }` outranked the `hidden` attribute: a rater whose sample
    # was all rated met an empty conversation and a blank rating form above "Your sample
    # is rated" (seen in a trial's screenshot), as if there were more to rate.
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    session = ReviewSession.open(run, RATER, size=2)
    append_human_ratings(
        run,
        [
            HumanRating(conversation_id=c, rater=RATER, ratings=dict.fromkeys(session.dimensions, BP))
            for c in session.order
        ],
    )
    proc, url = start_review(str(run), "--rater", RATER, "--size", "2")
    page = page_at(1400)
    try:
        page.goto(url)
        page.wait_for_selector("#done", state="visible")
        assert page.locator("#review").is_hidden()
        assert page.get_by_role("button", name="Save ratings").is_hidden()
        # What becomes of the ratings: a rater who opened the card after reviewing saw it
        # unchanged, with nothing saying the calibrated score needs the run scored again.
        done = page.inner_text("#done")
        assert "vera score" in done and "calibrated score" in done and "vera agreement" in done
        page.screenshot(path=tmp_path / "review-done.png")
    finally:
        stop(proc)
