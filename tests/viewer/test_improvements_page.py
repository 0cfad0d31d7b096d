"""`vera view` serves each run's improvement report: the same report as the command,
linking every conversation (an imported id too) to the page the viewer serves for it,
with no script and the safe headers."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import aiohttp
import pytest

from tests.improvements_run import LOG_ID, SCRIPT, write_run
from vera.report import IMPROVEMENTS_CSP

from .test_server import get, serving


@pytest.fixture(scope="module")
def report_run(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp("viewer-report") / "run")


async def test_the_report_links_every_conversation_to_the_viewers_page(report_run):
    async with serving(report_run) as base, aiohttp.ClientSession() as session:
        status, html, headers = await get(session, base, "/runs/0/improvements.html")
        assert status == 200
        assert headers["Content-Security-Policy"] == IMPROVEMENTS_CSP
        assert headers["Cache-Control"] == "no-store"
        assert "<script" not in html and "&lt;script&gt;" in html
        # The list page is linked; the run has no card, so none is.
        assert 'href="../../index.html"' in html and "card.html" not in html
        hrefs = {unescape(h) for h in re.findall(r'href="(conversations/[^"#]+)#', html)}
        assert "conversations/chat%20log%2F5%20%231.html" in hrefs
        for href in hrefs:
            status, page, _ = await get(session, base, f"/runs/0/{href}")
            assert status == 200, href
        status, page, _ = await get(session, base, "/runs/0/conversations/chat%20log%2F5%20%231.html")
        assert "chat log/5 #1" in unescape(page) and LOG_ID
        assert (await get(session, base, "/runs/1/improvements.html"))[0] == 404
        assert (await get(session, base, "/runs/x/improvements.html"))[0] == 404
    assert SCRIPT not in html
