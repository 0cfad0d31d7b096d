"""DNS rebinding in a real Chromium: the browser is told that both vera.test (the name
the server was given) and attacker.example resolve to this machine, exactly what a
rebinding attacker arranges, and a page at attacker.example tries to read the viewer
and to save a rating in the review. Both are refused; the printed address (with its
key) works at desktop and phone widths. Skips without a browser unless
VERA_BROWSER_TESTS=required (see test_browser.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from vera.viewer.review import ReviewSession

from .conftest import stop
from .test_browser import CHROMIUM, CHROMIUM_ARGS, _missing, no_page_scroll
from .test_remote import ATTACKER, NAME, start

SIZES = [(1400, 900), (400, 850)]


@pytest.fixture(scope="module")
def rebinding_browser() -> Iterator[object]:
    why = _missing()
    if why:
        if os.environ.get("VERA_BROWSER_TESTS") == "required":
            pytest.fail(f"browser tests are required here, but {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    rules = f"--host-resolver-rules=MAP {NAME} 127.0.0.1, MAP {ATTACKER} 127.0.0.1"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, rules])
        yield b
        b.close()


@pytest.mark.slow
def test_a_rebinding_page_cannot_read_the_viewer(rebinding_browser, viewer_run, tmp_path):
    proc, url = start("view", str(viewer_run))
    port = url.port
    try:
        for width, height in SIZES:
            context = rebinding_browser.new_context(viewport={"width": width, "height": height})
            page = context.new_page()
            # The attacker's page, now served "from" the viewer's machine under its own name.
            response = page.goto(f"http://{ATTACKER}:{port}/?key={url.query['key']}")
            assert response.status == 400 and page.inner_text("body") == "unexpected Host header"
            fetched = page.evaluate(
                "() => fetch('/api/conversations').then(r => r.status + ' ' + r.statusText)"
            )
            assert fetched.startswith("400")
            # The rater's address: the key is taken, the list loads, the key leaves the address.
            page.goto(str(url))
            page.wait_for_selector("#list tbody tr")
            assert "key=" not in page.url and page.url.startswith(f"http://{NAME}:{port}/")
            assert no_page_scroll(page)
            page.screenshot(path=tmp_path / f"remote-list-{width}.png", full_page=False)
            context.close()
    finally:
        stop(proc)


@pytest.mark.slow
def test_a_rebinding_page_cannot_save_a_rating(rebinding_browser, offline_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    review = ReviewSession.open(run, "Ada", size=4)
    proc, url = start("review", str(run), "--rater", "Ada", "--size", "4")
    port = url.port
    try:
        for width, height in SIZES:
            context = rebinding_browser.new_context(viewport={"width": width, "height": height})
            page = context.new_page()
            page.goto(str(url))
            page.wait_for_function(
                "() => document.querySelector('#conversation-title').textContent.startsWith('Conversation 1')"
            )
            token = page.locator('meta[name="vera-token"]').get_attribute("content")
            assert no_page_scroll(page)
            attacker = context.new_page()
            response = attacker.goto(f"http://{ATTACKER}:{port}/")
            assert response.status == 400
            # Even handed the token, the rebinding page's save is refused.
            status = attacker.evaluate(
                """([token, body]) => fetch('/api/ratings', {method: 'POST', body: JSON.stringify(body),
                     headers: {'Content-Type': 'application/json', 'X-Vera-Token': token}}).then(r => r.status)""",
                [
                    token,
                    {
                        "conversation_id": review.order[0],
                        "ratings": dict.fromkeys(review.dimensions, "Best Practice"),
                    },
                ],
            )
            assert status == 400
            assert not (run / "human_ratings.jsonl").exists()
            context.close()
    finally:
        stop(proc)
