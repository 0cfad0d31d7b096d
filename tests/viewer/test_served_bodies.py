"""`vera view`'s conversation pages hold each model call's summary line, not its body: a
call's request repeats the conversation so far, so with every body written out a page
grew with the square of its turns (0.15-0.86 MB a page on `make eval`). The bodies come
from /runs/<k>/bodies/<id>.js when one is opened (static/bodies.js), written as copies
of the bodies before them (vera.viewer.delta); put back, they are the markup the page
used to hold, byte for byte: for a whole run, a damaged bodies' file, a run without
bodies and a read-only one. Real servers on 127.0.0.1; the browser's side is
test_served_bodies_browser."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import stat
from pathlib import Path

import aiohttp
import msgspec
import pytest

from vera.store import BodyReader
from vera.store._writer import RunStore
from vera.viewer.app import page_calls
from vera.viewer.calls import BodyIndex, CallIndex
from vera.viewer.catalogue import Catalogue

from ..test_damaged_bodies import _flip
from .test_delta import decoded
from .test_server import get, serving

BODIES_TAG = '<script src="../../../static/bodies.js" defer></script>'
_WAIT = re.compile(r'<div class="call-wait" data-body="(\d+)"></div>')


def _script_data(text: str) -> dict:
    assert text.startswith("window.veraCallBodies = ") and text.endswith(";\n"), text[:80]
    return json.loads(text.removeprefix("window.veraCallBodies = ").removesuffix(";\n"))


async def _put_back(http: aiohttp.ClientSession, base: str, cid: str) -> tuple[str, str]:
    """A served page, and the same page with each body put back in its place from the
    page's bodies' file, as static/bodies.js puts it."""
    status, html, _ = await get(http, base, f"/runs/0/conversations/{cid}.html")
    assert status == 200
    numbers = _WAIT.findall(html)
    status, script, headers = await get(http, base, f"/runs/0/bodies/{cid}.js")
    if not numbers:
        assert status == 404 and BODIES_TAG not in html
        return html, html
    assert status == 200 and headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert headers["Cross-Origin-Resource-Policy"] == "same-origin" and headers["Cache-Control"] == "no-store"
    own = _script_data(script)
    assert own["shared"] is False  # the server's have no base page to copy from
    markup = decoded(own["texts"])
    assert sorted(map(int, numbers)) == list(range(len(markup)))  # each body once, none left over
    parts = _WAIT.split(html)
    return html, "".join(markup[int(p)] if n % 2 else p for n, p in enumerate(parts))


def _sections(run: Path, cid: str) -> tuple[str, list[str]]:
    """What the page held before: its calls section and the judge's calls by question,
    every body written out."""
    page = Catalogue.open([run]).page(0, cid)
    assert page is not None
    section, by_question = page_calls(CallIndex(run), BodyIndex(run), page)
    return section, list(by_question.values())


async def _check_run(run: Path) -> tuple[int, int]:
    """Every page of the run against what it held before: (pages with bodies, their bytes)."""
    pages, size = 0, 0
    async with serving(run) as base, aiohttp.ClientSession() as http:
        for cid in Catalogue.open([run]).runs[0].records.conversations:
            html, put_back = await _put_back(http, base, cid)
            section, by_question = _sections(run, cid)
            assert section in put_back and all(q in put_back for q in by_question), cid
            if 'class="call-body"' in section:
                assert '<div class="call-io">' not in html  # no body in the page itself
                assert BODIES_TAG in html
                pages += 1
                size += len(html.encode())
    return pages, size


async def test_each_pages_bodies_come_from_its_bodies_file_as_the_page_held_them(offline_run):
    pages, size = await _check_run(offline_run)
    assert pages >= 20  # the control: the pages had bodies to take out
    # The whole run's pages, against the bodies written out in each (what they held).
    catalogue = Catalogue.open([offline_run])
    before = 0
    for cid in catalogue.runs[0].records.conversations:
        section, by_question = _sections(offline_run, cid)
        before += len(section.encode()) + sum(len(q.encode()) for q in by_question)
    assert size * 5 < before


async def test_a_damaged_bodies_file_costs_the_bodies_it_held_and_says_so(offline_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    _flip(run, 2)
    pages, _ = await _check_run(run)
    assert pages >= 20
    async with serving(run) as base, aiohttp.ClientSession() as http:
        said = []
        for cid in Catalogue.open([run]).runs[0].records.conversations:
            _, html, _ = await get(http, base, f"/runs/0/conversations/{cid}.html")
            if "call_bodies.vlog is damaged (record 2)" in html:
                said.append(cid)
        assert said  # the pages whose calls it held say so, in the page itself


async def test_a_run_without_bodies_serves_no_bodies_file(offline_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    for bodies in run.glob("call_bodies.*"):
        bodies.unlink()
    cid = next(iter(Catalogue.open([run]).runs[0].records.conversations))
    async with serving(run) as base, aiohttp.ClientSession() as http:
        _, html, _ = await get(http, base, f"/runs/0/conversations/{cid}.html")
        assert "keeps no call bodies" in html and "call-wait" not in html and BODIES_TAG not in html
        assert '<table class="ratings calls">' in html  # the accounting is still there
        status, _, _ = await get(http, base, f"/runs/0/bodies/{cid}.js")
        assert status == 404


def _digest(folder: Path) -> dict[str, tuple[int, str]]:
    return {
        p.relative_to(folder).as_posix(): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


async def test_a_read_only_run_is_served_and_left_as_it_was(offline_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    before = _digest(run)
    modes = {p: p.stat().st_mode for p in [run, *run.rglob("*")]}
    for p in modes:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        pages, _ = await _check_run(run)
        assert pages >= 20
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert _digest(run) == before and sorted([run, *run.rglob("*")]) == sorted(modes)


async def test_a_bodies_file_is_only_for_its_own_pages_script(offline_run):
    cid = next(iter(Catalogue.open([offline_run]).runs[0].records.conversations))
    path = f"/runs/0/bodies/{cid}.js"
    async with serving(offline_run) as base, aiohttp.ClientSession() as http:
        assert (await get(http, base, path))[0] == 200  # the control
        # The page's own request says same-origin; another site's page that loads it as a
        # script would read the transcript in its own window.
        for site in ("cross-site", "same-site"):
            status, body, headers = await get(http, base, path, headers={"Sec-Fetch-Site": site})
            assert status == 403 and "veraCallBodies" not in body, site
            assert headers["Cross-Origin-Resource-Policy"] == "same-origin"
        assert (await get(http, base, path, headers={"Sec-Fetch-Site": "same-origin"}))[0] == 200
        for other in (f"/runs/0/bodies/{cid}", f"/runs/0/bodies/{cid}.html", "/runs/0/bodies/nobody.js",
                      f"/runs/1/bodies/{cid}.js", f"/runs/x/bodies/{cid}.js"):  # fmt: skip
            assert (await get(http, base, other))[0] == 404, other


@pytest.mark.parametrize("cid_of", [lambda ids: ids[0], lambda ids: ids[-1]])
async def test_a_bodies_file_asked_again_is_the_same(offline_run, cid_of):
    ids = list(Catalogue.open([offline_run]).runs[0].records.conversations)
    cid = cid_of(ids)
    async with serving(offline_run) as base, aiohttp.ClientSession() as http:
        first = await get(http, base, f"/runs/0/bodies/{cid}.js")
        for other in ids[:20]:  # past what is kept, so it is built again
            await get(http, base, f"/runs/0/bodies/{other}.js")
        again = await get(http, base, f"/runs/0/bodies/{cid}.js")
        assert first[0] == again[0] == 200 and first[1] == again[1]


def _add_a_call(run: Path, cid: str) -> None:
    """One more call of the conversation, with its body, appended as a run going on would
    (its last own call again, a while later)."""
    with BodyReader(run) as reader:
        last = [b for b in reader.conversation(cid) if b.call.role != "judge"][-1]
    store = RunStore(run, call_bodies=True)
    later = msgspec.structs.replace(last.call, at=last.call.at + 1000.0)
    store.add_call(later, msgspec.structs.replace(last, call=later))
    store.close()


async def test_a_run_going_on_keeps_each_bodys_number_for_a_page_loaded_before(offline_run, tmp_path):
    """A page loaded before the run made another call asks for its bodies after: the file,
    built again from the grown run, holds each of the page's bodies at its number."""
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    cid = next(iter(Catalogue.open([run]).runs[0].records.conversations))
    async with serving(run) as base, aiohttp.ClientSession() as http:
        _, html, _ = await get(http, base, f"/runs/0/conversations/{cid}.html")
        _, script, _ = await get(http, base, f"/runs/0/bodies/{cid}.js")
        before = decoded(_script_data(script)["texts"])
        assert len(_WAIT.findall(html)) == len(before) > 2  # the control
        # On a thread of its own: the store flushes on the running loop when there is one.
        await asyncio.to_thread(_add_a_call, run, cid)
        _, script, _ = await get(http, base, f"/runs/0/bodies/{cid}.js")
        after = decoded(_script_data(script)["texts"])
        assert after[: len(before)] == before and len(after) == len(before) + 1
        _, html, _ = await get(http, base, f"/runs/0/conversations/{cid}.html")
        assert len(_WAIT.findall(html)) == len(after)  # the page shows the new call too
