"""One conversation's page: the transcript beside each judge's walk, every text from the
run escaped, jumps from a harmful rating to the turn its reasoning quotes, and the pages
`vera score` writes beside card.html for the conversations the card lists."""

from __future__ import annotations

import json
import re
import shutil

import msgspec

from vera.report.card._score import score_run
from vera.report.shared._pages import (
    ConversationPage,
    conversation_href,
    rating_anchor,
    read_conversation_page,
    render_conversation_page,
    write_card_pages,
)
from vera.rubric._load import load_rubric
from vera.rubric._texts import question_texts
from vera.store._index import open_run

from .conftest import (
    FAILED_ID,
    IMG_TEXT,
    MARKUP_ID,
    MARKUP_PERSONA,
    MARKUP_REASONING,
    SCRIPT_TEXT,
    SECOND_JUDGE,
)
from .helpers import elements, text_of

JUDGE = "offline/lexical-judge"


def page_html(run, cid: str) -> str:
    records = open_run(run)
    return render_conversation_page(
        read_conversation_page(records, cid, question_texts(records.manifest, run))
    )


def test_markup_in_turns_persona_and_reasoning_is_shown_as_text(viewer_run):
    html = page_html(viewer_run, MARKUP_ID)
    tags = {tag for tag, _ in elements(html).tags}
    assert "script" not in tags and "img" not in tags and "b" not in tags
    assert "<script" not in html and "<img" not in html and "<b id" not in html
    assert " ".join(SCRIPT_TEXT.split()) in text_of(html, "turn-2")
    assert " ".join(IMG_TEXT.split()) in text_of(html, "turn-1")
    assert "<dd>Sam &lt;b id=injected&gt;bold&lt;/b&gt;</dd>" in html
    reasoning = text_of(html, rating_anchor(JUDGE, 1, "Detects Potential Risk"))
    assert " ".join(MARKUP_REASONING.split()) in reasoning


def test_the_page_runs_no_script_and_fetches_nothing(viewer_run):
    html = page_html(viewer_run, MARKUP_ID)
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
    assert csp and "default-src &#x27;none&#x27;" in csp.group(1) and "script-src" not in csp.group(1)
    assert "http://" not in html and "https://" not in html
    for tag, attrs in elements(html).tags:
        assert tag not in ("script", "link", "img", "iframe", "object") and "src" not in attrs
        assert not any(name.startswith("on") for name in attrs)


def test_the_transcript_is_numbered_and_each_walk_lists_every_question_in_order(viewer_run):
    records = open_run(viewer_run)
    rubric = load_rubric(records.manifest.rubric.path)
    some = next(
        cid for cid, (h, _) in records.conversations.items() if h.status == "complete" and h.n_turns > 3
    )
    html = page_html(viewer_run, some)
    conv = records.read_conversation(some)
    for n, turn in enumerate(conv.turns, start=1):
        speaker = "User" if turn.speaker == "user" else "Chatbot"
        assert text_of(html, f"turn-{n}").startswith(f"{n} · {speaker}")
    [judgement] = [records.read_judgement(h.id) for h in records.judgements_of(some) if h.judge == JUDGE]
    walk = text_of(html, f"walk-offline-lexical-judge-{judgement.instance}")
    at = 0
    for answer in judgement.answers:  # in the order asked, each with its text and answer
        step = f"{answer.question_id} {rubric.question(answer.question_id).text}"
        found = walk.find(" ".join(step.split()), at)
        assert found >= 0, answer.question_id
        at = found + len(step)
        assert f"Answer: {answer.answer}" in walk
    for r in judgement.ratings:
        block = text_of(html, rating_anchor(JUDGE, judgement.instance, r.dimension))
        assert f"{r.dimension}: {r.rating}" in block
        if r.question_id:
            assert f"Decided by {r.question_id} {rubric.question(r.question_id).text}"[:80] in block


def test_a_harmful_rating_links_to_the_turns_its_reasoning_quotes(viewer_run):
    html = page_html(viewer_run, MARKUP_ID)
    anchor = rating_anchor(JUDGE, 1, "Detects Potential Risk")
    assert "Quoted: turn 2, turn 1" in text_of(html, anchor)
    block = html[html.index(f'id="{anchor}"') :]
    block = block[: block.index('<div id="r-', 1)]
    # the quote of the chatbot's words is turn 2, the user's words turn 1
    assert block.index('href="#turn-2"') < block.index('href="#turn-1"')
    assert {"turn-1", "turn-2"} <= set(elements(html).text)
    # Quoted words that are not in the transcript, and a reasoning that quotes nothing:
    assert "The words it quotes were not found in the transcript." in text_of(
        html, rating_anchor(JUDGE, 1, "Supportive Conversation")
    )
    assert "The reasoning quotes nothing from the transcript." in text_of(
        html, rating_anchor(JUDGE, 1, "Guides to Human Care")
    )


def test_several_judges_each_have_a_walk_and_a_column_of_ratings(viewer_run):
    html = page_html(viewer_run, MARKUP_ID)
    summary = text_of(html, "ratings")
    assert f"{JUDGE} · 1" in summary and f"{SECOND_JUDGE} · 1" in summary
    assert "walk-offline-lexical-judge-1" in elements(html).text
    assert "walk-offline-second-judge-1" in elements(html).text
    assert 'href="#walk-offline-second-judge-1"' in html
    second = text_of(html, rating_anchor(SECOND_JUDGE, 1, "Guides to Human Care"))
    assert "Guides to Human Care: Best Practice" in second
    assert "(3 attempts)" in text_of(html, "walk-offline-lexical-judge-1")


def test_failed_conversations_and_judgements_show_their_reason(viewer_run):
    html = page_html(viewer_run, FAILED_ID)
    assert "This conversation failed" in html and "ServerError: HTTP 503 after 3 attempts" in html
    records = open_run(viewer_run)
    failed = records.judgements["failed-judgement"][0]
    html = page_html(viewer_run, failed.conversation_id)
    walk = text_of(html, "walk-offline-second-judge-1")
    assert "This judgement failed" in walk and "BadResponseError: no JSON in the answer" in walk


def test_question_texts_are_shown_only_from_the_runs_own_rubric(tmp_path, viewer_run):
    rubric_copy = tmp_path / "rubric.tsv"
    records = open_run(viewer_run)
    shutil.copy(records.manifest.rubric.path, rubric_copy)
    run = tmp_path / "run"
    shutil.copytree(viewer_run, run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["rubric"]["path"] = str(rubric_copy)
    (run / "manifest.json").write_text(json.dumps(manifest))
    text = load_rubric(rubric_copy).question("D1").text
    assert " ".join(text.split())[:60] in " ".join(page_html(run, MARKUP_ID).split())

    rubric_copy.write_text(rubric_copy.read_text() + "\n")  # edited since the run
    html = page_html(run, MARKUP_ID)
    assert "has changed since this run" in html and "question ids only" in html
    assert text[:40] not in html

    rubric_copy.unlink()
    html = page_html(run, MARKUP_ID)
    assert f"rubric file {rubric_copy} is not there" in html and text[:40] not in html
    assert "<code>D1</code>" in html


def test_score_writes_a_page_for_every_conversation_the_card_lists(viewer_run):
    card = json.loads((viewer_run / "card.json").read_text())
    listed = {h["conversation_id"] for bot in card["chatbots"] for h in bot["harmful"]}
    assert MARKUP_ID in listed and len(listed) > 1
    # ... and every example of its "Fix first".
    listed |= {
        e["conversation_id"]
        for bot in card["fix_first"]["chatbots"]
        for d in bot["dimensions"]
        for f in d["findings"]
        for e in f["exemplars"]
    }
    # ... and every conversation its simulated-user checks flag (each linked from the card).
    listed |= {
        f["conversation_id"]
        for row in (card["realism"] or {}).get("by_user_agent", [])
        for f in row["flagged_conversations"]
    }
    written = {p.stem for p in (viewer_run / "conversations").glob("*.html")}
    assert written == listed
    card_html = (viewer_run / "card.html").read_text()
    for bot in card["chatbots"]:
        for h in bot["harmful"]:
            href = conversation_href(
                h["conversation_id"], judge=h["judge"], instance=h["instance"], dimension=h["dimension"]
            )
            assert f'<a href="{href}">{h["conversation_id"]}</a>' in card_html
            name, anchor = href.split("#")
            assert f'id="{anchor}"' in (viewer_run / name).read_text()


def test_a_written_page_is_the_page_the_viewer_serves(viewer_run):
    records = open_run(viewer_run)
    page = read_conversation_page(records, MARKUP_ID, question_texts(records.manifest, viewer_run))
    assert (viewer_run / "conversations" / f"{MARKUP_ID}.html").read_text() == render_conversation_page(page)
    assert page.conversation.persona == MARKUP_PERSONA


def test_a_rescore_removes_pages_the_card_no_longer_lists(tmp_path, viewer_run):
    run = tmp_path / "run"
    shutil.copytree(viewer_run, run)
    stale = run / "conversations" / "feedfacefeedface.html"
    stale.write_text("old")
    score_run(run, resamples=50)
    assert not stale.exists() and (run / "conversations" / f"{MARKUP_ID}.html").exists()


def test_an_id_that_is_not_a_safe_file_name_gets_no_page_and_no_link(viewer_run, tmp_path):
    for bad in ("../card", "a/b", ".hidden", "x" * 200, "c:evil", ""):
        assert conversation_href(bad, judge="j", instance=1, dimension="d") == ""
    records = open_run(viewer_run)
    page = read_conversation_page(records, MARKUP_ID, question_texts(records.manifest, viewer_run))
    odd = ConversationPage(
        run_id="r",
        conversation=msgspec.structs.replace(page.conversation, id="../../outside"),
        judgements=page.judgements,
        questions=page.questions,
    )
    manifest = records.manifest
    # On a copy: writing the pages removes those the list no longer names, and the shared
    # run's pages are what later tests (the card's links from disk) open.
    run = tmp_path / "run"
    shutil.copytree(viewer_run, run)
    out = write_card_pages(run, ["../../outside"], manifest, {"../../outside": odd.conversation}, [])
    assert (
        out == 0 and not (run.parent / "outside.html").exists() and not (tmp_path / "outside.html").exists()
    )
