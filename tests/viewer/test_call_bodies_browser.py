"""The conversation page shows what each model call was sent and answered, the judge's
calls beside the question they answer, with copy buttons: in a real Chromium, on the
desktop and on a phone."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from vera.report import exported_call
from vera.store import BodyReader, open_run

from .conftest import start_view
from .helpers import open_all
from .test_browser import browser, no_page_scroll, page_at  # noqa: F401  (fixtures)

# Where the screenshots the docs show are refreshed from (VERA_DOCS_SCREENSHOTS=1).
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


@pytest.fixture(scope="module")
def offline_url(offline_run) -> Iterator[str]:
    proc, url = start_view(str(offline_run))
    yield url
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


def _a_judged_conversation(run: Path) -> str:
    records = open_run(run)
    return next(cid for cid in records.conversations if records.judgements_of(cid))


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 400])
def test_each_calls_input_and_output_is_shown_and_copied(page_at, offline_url, offline_run, width, tmp_path):  # noqa: F811
    cid = _a_judged_conversation(offline_run)
    with BodyReader(offline_run) as reader:
        bodies = reader.conversation(cid)
    own = [b for b in bodies if b.call.role != "judge"]
    judge = [b for b in bodies if b.call.role == "judge"]
    assert own and judge  # the control: both kinds are there to be shown

    page = page_at(width)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{offline_url}runs/0/conversations/{cid}.html")

    # The conversation's own calls under the calls table, in order, collapsed.
    shown = page.locator("#call-bodies details.call-body")
    assert shown.count() == len(own)
    assert not shown.first.evaluate("d => d.open")
    first, body = shown.first, own[0]
    first.locator("> summary").click()
    assert first.evaluate("d => d.open")
    first.locator(".call-in .msg pre").first.wait_for()  # loaded when opened
    texts = first.locator(".call-in .msg pre").all_text_contents()
    assert texts[: len(body.messages)] == [m.content for m in body.messages]
    assert body.response is not None
    assert first.locator(".call-out pre").first.text_content() == body.response.text

    # Copy: the reply's text, and the input as the JSON `vera export --calls` writes.
    first.locator(".call-out button.copy").click()
    assert page.evaluate("navigator.clipboard.readText()") == body.response.text
    first.locator(".call-in button.copy").click()
    copied = json.loads(page.evaluate("navigator.clipboard.readText()"))
    assert copied == json.loads(json.dumps(exported_call(body)["request"]))

    # Each judge call sits in the walk, in the step of the question it answers.
    steps = page.locator("#walks li.step")
    for b in judge:
        step = steps.filter(has=page.locator(f'code:text-is("{b.question_id}")'))
        assert step.locator("details.call-body").count() >= 1, b.question_id
    assert page.locator("#walks details.call-body").count() == len(judge)
    inside = page.locator("#walks details.call-body").first
    inside.locator("> summary").click()
    inside.locator(".call-in .msg pre").first.wait_for()
    assert inside.locator(".call-in .msg pre").first.text_content() == judge[0].messages[0].content

    # The calls table links each call to its body.
    assert page.locator('table.calls a[href="#call-1"]').count() == 1
    assert no_page_scroll(page)
    assert errors == []
    page.screenshot(path=tmp_path / f"calls-{width}.png", full_page=False)
    if os.environ.get("VERA_DOCS_SCREENSHOTS"):
        first.scroll_into_view_if_needed()
        page.screenshot(path=DOCS_IMAGES / f"call-bodies-{width}.png")


@pytest.mark.slow
def test_a_run_without_call_bodies_says_so_on_the_page(page_at, offline_run, tmp_path):  # noqa: F811
    import shutil

    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    for bodies in run.glob("call_bodies.*"):
        bodies.unlink()
    proc, url = start_view(str(run))
    try:
        page = page_at(1400)
        page.goto(f"{url}runs/0/conversations/{_a_judged_conversation(run)}.html")
        section = page.locator("#call-bodies").inner_text()
        assert "keeps no call bodies" in section
        assert page.locator("details.call-body").count() == 0
        assert page.locator("table.calls tbody tr").count() > 0  # the accounting is still there
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 400])
def test_an_http_chatbots_calls_show_what_its_service_received(page_at, tmp_path, width):  # noqa: F811
    from concurrent.futures import ThreadPoolExecutor

    from tests.clients.runs import run_roles

    # On a thread of its own: the browser's sync API holds this thread's event loop.
    with ThreadPoolExecutor(1) as pool:
        roles = {"chatbot": "http", "user_agent": "openai", "judge": "openai"}
        run = pool.submit(run_roles, tmp_path, roles).result()
    assert run.exit_code == 0, run.output
    received = run.servers["http"].received
    cid = run.jsonl("conversations.jsonl")[0]["id"]
    proc, url = start_view(str(run.out))
    try:
        page = page_at(width)
        page.goto(f"{url}runs/0/conversations/{cid}.html")
        open_all(page)  # each body is loaded when opened
        # Only the chatbot's calls have the block, one per request the service got.
        sent = page.locator("#call-bodies details.call-body").filter(has=page.locator(".wire"))
        assert sent.count() == len(received) >= 2
        assert page.locator("#call-bodies details.call-body").count() > len(received)
        first = sent.first
        assert first.locator(".wire .who").text_content() == "sent to the service"
        assert first.locator(".wire-body").text_content().encode() == received[0].raw
        line = first.locator(".wire-line").text_content()
        assert line.startswith("POST http://") and line.endswith(received[0].path_qs)
        assert no_page_scroll(page)
        first.scroll_into_view_if_needed()
        page.screenshot(path=tmp_path / f"wire-{width}.png")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
