"""`vera view FOLDER`: every run under a folder, each opened in the same server, with
the viewer's guards (Host, key, no path from a URL) over all of them."""

from __future__ import annotations

import json
import shutil
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from vera.viewer.access import key_cookie
from vera.viewer.app import build_app, load_assets
from vera.viewer.runs import Folder, build_folder_app, find_runs

from .conftest import run_vera, serving_app, start_view
from .test_server import get as aget


@pytest.fixture(scope="module")
def folder(viewer_run, tmp_path_factory) -> Path:
    """A scored run two folders down, an unscored one three down, an unreadable one, a
    hidden folder holding a run (not listed) and a run's own subfolder (not searched)."""
    root = tmp_path_factory.mktemp("folder") / "runs"
    shutil.copytree(viewer_run, root / "a" / "scored")
    partial = root / "b" / "2026" / "partial"
    run_vera("run", "--out", str(partial), "--seed", "3", "--limit-personas", "2", "--quiet")
    for name in ("card.html", "card.json", "card.md"):
        (partial / name).unlink()
    manifest = json.loads((partial / "manifest.json").read_text())
    manifest["jobs_planned"] = 10  # as a run stopped after 4 of 10
    (partial / "manifest.json").write_text(json.dumps(manifest))
    (root / "c" / "torn").mkdir(parents=True)
    (root / "c" / "torn" / "manifest.json").write_text('{"run_id": "torn"')
    shutil.copytree(partial, root / ".hidden" / "copy")
    return root


def get(url: str, host: str | None = None) -> tuple[int, bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


@pytest.fixture(scope="module")
def served(folder) -> Iterator[str]:
    proc, url = start_view(str(folder))
    yield url
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


def test_runs_are_found_below_the_folder_but_not_in_hidden_folders_or_inside_runs(folder):
    found, truncated = find_runs(folder)
    assert [p.relative_to(folder).as_posix() for p in found] == ["a/scored", "c/torn", "b/2026/partial"]
    assert not truncated
    assert find_runs(folder, max_depth=2)[0] == [folder / "a" / "scored", folder / "c" / "torn"]
    assert len(find_runs(folder, limit=1)[0]) == 1 and find_runs(folder, limit=1)[1]


@pytest.mark.slow
def test_the_runs_list_says_status_chatbots_scores_date_and_persona_set(served, viewer_run):
    status, body, headers = get(served + "api/runs")
    assert status == 200 and headers["Content-Security-Policy"].startswith("default-src 'none'")
    runs = {r["folder"]: r for r in json.loads(body)["runs"]}
    assert set(runs) == {"a/scored", "b/2026/partial", "c/torn"}
    scored, partial, torn = runs["a/scored"], runs["b/2026/partial"], runs["c/torn"]
    card = json.loads((viewer_run / "card.json").read_text())
    assert [(b["ref"], b["score"]) for b in scored["chatbots"]] == [
        (c["chatbot"], c["overall"]["score"]) for c in card["chatbots"]
    ]
    assert scored["scored"] and scored["card"] and scored["state"] == "partial"  # it holds a failed one
    assert scored["failed"] == 1 and scored["planned"] == scored["complete"] + 1
    assert partial["state"] == "partial" and (partial["complete"], partial["planned"]) == (4, 10)
    assert not partial["scored"] and all("score" not in b for b in partial["chatbots"])
    assert partial["personas"].startswith("vera-personas ") and partial["created"].startswith("20")
    assert torn["state"] == "unreadable" and "manifest" in torn["error"]
    # every readable run opens in the same server, as `vera view RUN` would serve it
    for r in (scored, partial):
        status, facets, _ = get(f"{served}r/{r['index']}/api/facets")
        assert status == 200 and json.loads(facets)["home"] == "../../"
        status, page, _ = get(f"{served}r/{r['index']}/")
        assert status == 200 and b'src="static/app.js"' in page
    assert get(f"{served}r/{torn['index']}/")[0] == 404


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    ["r/9/", "r/-1/", "r/%2e%2e/", "r/../manifest.json", "r/0/../../etc/passwd", "r/0/..%2f..%2fmanifest.json",
     "r/a%2fscored/", "r/0/runs/0/manifest.json", "static/app.js", "static/..%2fruns.py"],
)  # fmt: skip
def test_no_address_reaches_a_file(served, path):
    status, body, _ = get(served + path)
    assert status == 404 and b"run_id" not in body


@pytest.mark.slow
def test_a_foreign_host_is_refused_for_the_list_and_every_run(served):
    port = served.rsplit(":", 1)[1].strip("/")
    for path in ("", "api/runs", "r/0/api/facets", "r/0/runs/0/card.html"):
        status, body, _ = get(served + path, host=f"rebind.example:{port}")
        assert status == 400 and body == b"unexpected Host header"


async def test_with_a_key_the_list_and_every_run_need_it(folder):
    """Remote mode's key (`--allow-remote`) guards the runs list and each run alike: the
    key once in the address gives the cookie, and every run's pages then answer."""
    opened = Folder.open(folder)

    def keyed(allowed: frozenset[str]) -> web.Application:
        return build_folder_app(
            opened,
            allowed_hosts=allowed,
            key="sekrit",
            assets=load_assets(),
            run_app=lambda c: build_app(c, allowed_hosts=allowed, home="../../"),
        )

    async with serving_app(keyed) as url:
        base = url.rstrip("/")
        async with aiohttp.ClientSession() as session:
            for path in ("/", "/api/runs", "/r/0/", "/r/0/api/conversations", "/r/0/runs/0/card.html"):
                assert (await aget(session, base, path))[0] == 401
            status, _, headers = await aget(session, base, "/r/0/api/facets?key=sekrit")
            assert status == 303 and headers["Location"] == "/r/0/api/facets"
        async with aiohttp.ClientSession(cookies={key_cookie("sekrit"): "sekrit"}) as session:
            for path in ("/", "/api/runs", "/r/0/api/facets", "/r/2/api/conversations"):
                assert (await aget(session, base, path))[0] == 200
