"""/compare in Chromium, desktop and phone: the frame shows at once while the
comparison cannot be done yet (its thread is held busy here) and stays on the screen
while its reload is held, and the same tab shows the comparison once it is done, with
no script and no reload by the reader."""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Iterator

import pytest
from aiohttp import web
from PIL import Image

from vera.viewer.access import host_names
from vera.viewer.app import COMPARE_THREAD, bind, build_app
from vera.viewer.catalogue import Catalogue

from . import test_browser
from .test_browser import no_page_scroll

browser = test_browser.browser
page_at = test_browser.page_at


@pytest.fixture
def held_viewer(viewer_run) -> Iterator[tuple[str, threading.Event]]:
    """The viewer on its own thread and loop, its comparison thread held until the
    event is set."""
    sock = bind("127.0.0.1", 0)
    url, allowed = host_names(sock)
    app = build_app(Catalogue.open([viewer_run]), allowed_hosts=allowed)
    gate = threading.Event()
    app[COMPARE_THREAD].submit(gate.wait, 60)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, access_log=None)
    up = threading.Event()

    def serve() -> None:
        # Its own thread: Playwright keeps a loop running on the test's.
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.SockSite(runner, sock).start())
        up.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert up.wait(30)
    try:
        yield url, gate
    finally:
        gate.set()
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


def dark_text_on_screen(page) -> bool:
    darkest = Image.open(io.BytesIO(page.screenshot())).convert("L").getextrema()[0]
    return isinstance(darkest, int | float) and darkest < 100  # one band: (min, max) of numbers


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 400])
def test_the_frame_shows_at_once_then_the_comparison_fills_it(page_at, held_viewer, width):
    url, gate = held_viewer
    page = page_at(width)
    response = page.goto(url + "compare")
    assert response is not None and response.status == 202
    # (What the frame says is checked over HTTP in test_compare_frame.py.) On the
    # screen: the frame's text, not a blank page.
    assert dark_text_on_screen(page)
    # It asks for its reload at once, and that request is held: the frame stays.
    for _ in range(50):
        page.wait_for_timeout(200)
        if page.url.endswith("/compare?wait=1"):
            break
        assert dark_text_on_screen(page)  # (headless Chromium runs the refresh on a redraw)
    assert page.url.endswith("/compare?wait=1")
    page.wait_for_timeout(300)
    assert dark_text_on_screen(page)
    gate.set()
    page.wait_for_selector("#scores", timeout=60_000)
    assert page.url.endswith("/compare?wait=1")
    assert page.evaluate("document.querySelectorAll('script').length") == 0
    assert no_page_scroll(page)
    page.goto(url + "compare?by_seed=1")
    page.wait_for_selector("#scores", timeout=60_000)
    assert "seed" in page.inner_text("#scores")
