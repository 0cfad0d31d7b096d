"""words.js: the one reader of a page's words (the JSON block of vera/viewer/words.py) for
every script of the viewer's and the review's pages. Each page that runs a script using
`ui()` or `el()` loads words.js before it, and each server (and the bundle) that hands out such a
script hands out words.js too: a page without it would stop at the first `ui()`."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import aiohttp

from vera.report.shared._pages import _document
from vera.viewer import app as viewer_app
from vera.viewer import bundle, review
from vera.viewer.app import PAGE_SCRIPTS, PAGE_SHEETS, build_app, load_assets
from vera.viewer.catalogue import Catalogue
from vera.viewer.review import ReviewSession, build_review_app
from vera.viewer.runs import Folder, build_folder_app

from .conftest import serving_app

STATIC = Path(__file__).resolve().parents[2] / "vera" / "viewer" / "static"
_SRC = re.compile(r'<script src="([^"]+)"')


def _users() -> set[str]:
    """The scripts that call ui() or el(), or read UI (words.js's)."""
    return {
        p.name
        for p in STATIC.glob("*.js")
        if p.name != "words.js" and re.search(r"\bui\(|\bel\(|\bUI\b", p.read_text())
    }


def _in_order(page: str) -> list[str]:
    return [Path(src).name for src in _SRC.findall(page)]


def test_only_words_js_reads_the_words_block():
    for script in STATIC.glob("*.js"):
        text = script.read_text()
        reads = 'getElementById("vera-ui")' in text or "function ui(" in text or "const UI " in text
        assert reads == (script.name == "words.js"), script.name
        # One el() for every page: a copy elsewhere would drift from it (or shadow it).
        assert ("function el(" in text) == (script.name == "words.js"), script.name
    assert _users() == {
        "app.js",
        "review.js",
        "runs.js",
        "keys.js",
        "calls.js",
        "bundle.js",
        "grid.js",
        "bodies.js",
    }


def test_every_page_loads_words_js_before_the_scripts_that_use_it():
    conversation = _document("t", [], script=PAGE_SCRIPTS, style=PAGE_SHEETS)
    pages = {name: (STATIC / name).read_text() for name in ("index.html", "review.html", "runs.html")}
    for name, page in (*pages.items(), ("conversation page", conversation)):
        scripts = _in_order(page)
        using = [s for s in scripts if s in _users()]
        assert using and scripts[0] == "words.js", (name, scripts)
    # The page asks for no stylesheet that is not there (none for words.js).
    sheets = re.findall(r'<link rel="stylesheet" href="([^"]+)"', conversation)
    assert [Path(s).name for s in sheets] == ["calls.css", "keys.css"]
    assert all((STATIC / Path(s).name).is_file() for s in (*sheets, *PAGE_SCRIPTS))


def test_every_list_of_static_files_holds_words_js():
    assert "words.js" in viewer_app._ASSETS and "words.js" in load_assets()
    assert set(review._ASSETS) >= {"words.js", "review.js"}
    assert (
        {Path(s).name for s in (*PAGE_SCRIPTS, *PAGE_SHEETS)} <= set(bundle._STATIC) >= {"words.js", "app.js"}
    )


async def test_the_viewer_the_review_and_a_folder_of_runs_serve_it(offline_run, tmp_path):
    words = (STATIC / "words.js").read_bytes()
    run = tmp_path / "runs" / "run"
    shutil.copytree(offline_run, run)
    session = ReviewSession.open(run, "tester", size=2)
    folder = Folder.open(tmp_path / "runs", io.StringIO())
    apps = [
        lambda allowed: build_app(Catalogue.open([run]), allowed_hosts=allowed),
        lambda allowed: build_review_app(session, token="t" * 32, allowed_hosts=allowed),
        lambda allowed: build_folder_app(
            folder,
            allowed_hosts=allowed,
            key="",
            assets=load_assets(),
            run_app=lambda c: build_app(c, allowed_hosts=allowed, home="../../"),
        ),
    ]
    for make in apps:
        async with (
            serving_app(make) as url,
            aiohttp.ClientSession() as http,
            http.get(f"{url}static/words.js") as r,
        ):
            assert r.status == 200 and r.content_type == "text/javascript"
            assert await r.read() == words
