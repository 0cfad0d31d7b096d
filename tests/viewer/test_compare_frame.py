"""The viewer's /compare over HTTP: a frame at once (the bootstrap runs off the request
path), then the comparison; it and the card served here link back to the list. (Apart
from the browser tests: Playwright's sync fixtures keep a loop running on the test's
thread, which an async test in the same module cannot share.)"""

from __future__ import annotations

import asyncio

import aiohttp

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
