"""The viewer's /compare over HTTP: a frame at once (the bootstrap runs off the request
path), then the comparison; it and the card served here link back to the list. (Apart
from the browser tests: Playwright's sync fixtures keep a loop running on the test's
thread, which an async test in the same module cannot share.)"""

from __future__ import annotations

import asyncio
import threading
import time

import aiohttp
from aiohttp import web

from vera.viewer.app import COMPARE_THREAD, COMPARISONS, build_app
from vera.viewer.catalogue import Catalogue

from .conftest import serving_app
from .test_server import serving


async def test_compare_answers_a_frame_at_once_then_the_comparison(viewer_run):
    async with serving(viewer_run) as base, aiohttp.ClientSession() as http:
        async with http.get(f"{base}/compare") as r:
            first = r.status, await r.text()
        assert first[0] == 202 and 'http-equiv="refresh"' in first[1] and "All conversations" in first[1]
        for _ in range(600):
            async with http.get(f"{base}/compare") as r:
                if r.status == 200:
                    html = await r.text()
                    break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the comparison never came")
        assert '<a href="index.html">← All conversations</a>' in html and 'id="scores"' in html
        async with http.get(f"{base}/runs/0/card.html") as r:  # two folders down
            assert '<a href="../../index.html">← All conversations</a>' in await r.text()
        async with http.get(f"{base}/api/facets") as r:
            assert (await r.json())["compare"] == []


async def test_the_frames_reload_is_held_until_the_comparison_is_there(viewer_run):
    """The frame comes while the comparison cannot have finished (its thread is held
    busy here); the frame's own reload, asked for at once, is answered with the
    comparison as soon as it is done, not a second later."""
    gate = threading.Event()

    def held_app(allowed: frozenset[str]) -> web.Application:
        app = build_app(Catalogue.open([viewer_run]), allowed_hosts=allowed)
        app[COMPARE_THREAD].submit(gate.wait, 30)  # the comparison queues behind this
        return app

    async with serving_app(held_app) as url:
        try:
            async with aiohttp.ClientSession() as http:
                for query, seed in (("", ""), ("?by_seed=1", "&amp;by_seed=1")):
                    async with http.get(f"{url}compare{query}") as r:
                        assert r.status == 202
                        frame = await r.text()
                    assert f'content="0; url=compare?wait=1{seed}"' in frame and "fills in by itself" in frame

                async def reload() -> tuple[int, str, float]:
                    async with http.get(f"{url}compare?wait=1") as r:
                        return r.status, await r.text(), time.perf_counter()

                held = asyncio.create_task(reload())
                await asyncio.sleep(0.5)
                assert not held.done()  # held while the comparison cannot run
                released = time.perf_counter()
                gate.set()
                status, html, answered = await held
                assert status == 200 and 'id="scores"' in html
                assert answered > released
                # By seed was started by its frame: its reload gets the comparison too.
                async with http.get(f"{url}compare?wait=1&by_seed=1") as r:
                    assert r.status == 200 and "seed" in await r.text()
        finally:
            gate.set()


async def test_the_server_starts_the_comparison_ahead_but_not_the_one_by_seed(viewer_run):
    """The comparison by seed pairs every (chatbot, seed) unit: a minute of a core for a
    20-seed sweep, which a server must not spend at start for a page few open."""
    made: list[web.Application] = []

    def app_of(allowed: frozenset[str]) -> web.Application:
        made.append(build_app(Catalogue.open([viewer_run]), allowed_hosts=allowed, warm=True))
        return made[0]

    async with serving_app(app_of):
        started = made[0][COMPARISONS]
        assert [by_seed for _, by_seed in started] == [False]
