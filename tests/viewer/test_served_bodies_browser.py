"""`vera view`'s conversation page in Chromium with a long conversation: the page holds
each call's summary line, and a body is loaded from the server (/runs/<k>/bodies/<id>.js)
when it is opened, so the page grows with the conversation's turns, not their square.
What an opened body shows is what the run kept, for a late call too; a server stopped
since the page was loaded is said when a body is opened."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from vera.report import exported_call

from .conftest import start_view
from .shots import shot
from .test_browser import browser, no_page_scroll  # noqa: F401 - fixtures
from .test_bundle_bodies_browser import TURNS, _bodies
from .test_bundle_bodies_browser import long_run as make_long_run
from .test_runs_bundle_browser import page_of  # noqa: F401 - fixture

# What a page may weigh: the transcript, the calls table and one summary line a call grow
# with the turns (about 1 KB a message on these offline pages); the bodies written out
# grew with their square (640-730 KB for these 40 messages, against 36-41 KB without).
BASE_BYTES = 20_000
BYTES_PER_MESSAGE = 1_500


@pytest.fixture(scope="module")
def long_run(tmp_path_factory) -> Path:
    """Two 40-message conversations (one persona, both offline chatbots), judged."""
    return make_long_run(tmp_path_factory.mktemp("served-long"))


@pytest.fixture(scope="module")
def long_url(long_run) -> Iterator[str]:
    proc, url = start_view(str(long_run))
    yield url
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 400])
def test_a_long_conversations_page_is_small_and_opens_a_late_calls_body(
    page_of,  # noqa: F811
    long_run,
    long_url,
    width,
    tmp_path,
):
    cid, own, judge = _bodies(long_run)
    assert len(own) >= TURNS - 1 and judge  # the control: a long conversation, judged
    late = own[-1]
    assert len(late.messages) >= TURNS - 2

    page = page_of(width, 900)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url.removeprefix(long_url)))
    loaded = page.goto(f"{long_url}runs/0/conversations/{cid}.html")
    assert loaded is not None and loaded.ok
    size = len(loaded.body())
    assert size < BASE_BYTES + BYTES_PER_MESSAGE * TURNS, size
    page.wait_for_load_state()

    def data() -> list[str]:
        return [a for a in asked if "/bodies/" in a]

    # The transcript shows without the bodies: none is asked for, nor in the page.
    assert data() == [] and page.locator(".call-io").count() == 0
    shown = page.locator("#call-bodies > details.call-body")
    assert shown.count() == len(own)
    last = shown.last
    last.locator("> summary").click()
    texts = last.locator(".call-in .msg pre")
    texts.first.wait_for()
    assert texts.all_text_contents()[: len(late.messages)] == [m.content for m in late.messages]
    assert late.response is not None
    assert last.locator(".call-out pre").first.text_content() == late.response.text
    last.locator(".call-in button.copy").click()
    copied = json.loads(page.evaluate("navigator.clipboard.readText()"))
    assert copied == json.loads(json.dumps(exported_call(late)["request"]))
    # An early call, and a judge's call in the walk beside its question: the file once.
    first = shown.first
    first.locator("> summary").click()
    first.locator(".call-out pre").first.wait_for()
    assert own[0].response is not None
    assert first.locator(".call-out pre").first.text_content() == own[0].response.text
    inside = page.locator("#walks details.call-body").first
    inside.locator("> summary").click()
    inside.locator(".call-in .msg pre").first.wait_for()
    assert inside.locator(".call-in .msg pre").first.text_content() == judge[0].messages[0].content
    assert data() == [f"runs/0/bodies/{cid}.js"]
    # The calls table's numbers still link to each body's summary line.
    assert page.locator('table.calls a[href="#call-1"]').count() == 1
    assert no_page_scroll(page) and page.problems == []
    last.locator("> summary").evaluate("summary => summary.scrollIntoView()")
    shot(page, tmp_path, f"served-late-call-{width}")


@pytest.mark.slow
def test_an_address_naming_a_calls_reply_opens_its_body_there(page_of, long_run, long_url):  # noqa: F811
    """Written into the page, a reply was an element the browser opened its body for
    (#call-N-out); now it is put in when the body is loaded, and the script opens it."""
    cid, own, _ = _bodies(long_run)
    page = page_of(1400, 900)
    address = f"{long_url}runs/0/conversations/{cid}.html"
    page.goto(address)
    last = page.locator("#call-bodies > details.call-body").last
    number = last.get_attribute("id")
    assert number is not None and number.startswith("call-")
    page.goto("about:blank")
    page.goto(f"{address}#{number}-out")
    reply = page.locator(f"#{number}-out")
    reply.wait_for()
    assert own[-1].response is not None and reply.text_content() == own[-1].response.text
    assert last.evaluate("d => d.open") and reply.evaluate(
        "e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; }"
    )
    # Followed within the page too (a link, or the address edited).
    page.evaluate("location.hash = '#call-1-out'")
    page.locator("#call-1-out").wait_for()
    assert page.locator("#call-1").evaluate("d => d.open")
    assert page.problems == []


@pytest.mark.slow
def test_a_body_opened_after_the_server_stopped_says_so(page_of, long_run, tmp_path):  # noqa: F811
    cid, _, _ = _bodies(long_run)
    proc, url = start_view(str(long_run))
    try:
        page = page_of(1400, 900)
        page.goto(f"{url}runs/0/conversations/{cid}.html")
        page.wait_for_load_state()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    first = page.locator("#call-bodies > details.call-body").first
    first.locator("> summary").click()
    said = first.locator(".call-wait.warning")
    said.wait_for()
    assert said.text_content() == (
        f"This call's body could not be loaded from ../bodies/{cid}.js: reload the page "
        "(vera view must be running)."
    )
    # The browser's own console line for the request; no error of the page's script.
    assert page.problems == ["Failed to load resource: net::ERR_CONNECTION_REFUSED"]
    shot(page, tmp_path, "served-body-server-stopped")
