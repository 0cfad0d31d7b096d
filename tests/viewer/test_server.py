"""`vera view` over HTTP, as a browser or an attacker would talk to it: nothing outside
the runs is served, nothing is written, every text is escaped, and it binds to the
loopback address unless told otherwise (and then says so)."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from yarl import URL

from vera.report.shared._pages import PAGE_CSP, SCRIPT_PAGE_CSP
from vera.viewer.access import KEY_PARAM
from vera.viewer.app import build_app
from vera.viewer.catalogue import Catalogue

from .conftest import FAILED_ID, IMG_TEXT, MARKUP_ID, MARKUP_PERSONA, SCRIPT_TEXT, serving_app, start_view

SECRET = "do-not-serve-this-4f1c"


@asynccontextmanager
async def serving(*run_dirs: Path, host: str = "127.0.0.1") -> AsyncIterator[str]:
    """The viewer on a real socket (as `vera view` binds it); yields its base URL."""
    async with serving_app(
        lambda allowed: build_app(Catalogue.open(run_dirs), allowed_hosts=allowed), host
    ) as url:
        yield url.rstrip("/")


@pytest.fixture(scope="module")
def secret_beside(viewer_run) -> Path:
    """A file next to the run directory that no URL may reach."""
    path = viewer_run.parent / "secret.txt"
    path.write_text(SECRET)
    return path


async def get(session: aiohttp.ClientSession, base: str, raw_path: str, **kw) -> tuple[int, str, dict]:
    # encoded=True: the path goes out byte for byte, not normalised by the client.
    async with session.get(URL(base + raw_path, encoded=True), allow_redirects=False, **kw) as r:
        return r.status, await r.text(errors="replace"), dict(r.headers)


TRAVERSALS = [
    "/../secret.txt",
    "/runs/0/../../secret.txt",
    "/runs/0/%2e%2e/%2e%2e/secret.txt",
    "/runs/0/%2E%2E%2F%2E%2E%2Fsecret.txt",
    "/runs/0/..%2f..%2fsecret.txt",
    "/runs/0/..%2fmanifest.json",
    "/runs/0/conversations/..%2f..%2fsecret.txt",
    "/runs/0/conversations/..%2fmanifest.json.html",
    "/runs/0/conversations/..%2F..%2Fsecret.txt%00.html",
    "/runs/0/conversations/%252e%252e%252f%252e%252e%252fsecret.txt.html",
    "/runs/0/conversations/%2e%2e%252f%2e%2e%252fmanifest.json.html",
    "/static/..%2f..%2f..%2fpyproject.toml",
    "/static/%2e%2e%2fapp.py",
    "/static/%252e%252e%252fapp.py",
    "/static/..%5c..%5capp.py",
    "/runs/0/manifest.json",
    "/runs/0/conversations.jsonl",
    "/runs/0/judgements.jsonl",
    "/runs/0/plots/ratings.png",
    "/runs/0/conversations/",
    "/runs/1/card.html",
    "/runs/-1/card.html",
    "/runs/%30/..%2fcard.html",
    "/etc/passwd",
    "//etc/passwd",
    "/%2Fetc%2Fpasswd",
    "/runs/0/conversations/%2Fetc%2Fpasswd.html",
    "/runs/0/conversations/%2F{run}%2Fmanifest.json.html",
    "/runs/0/bodies/..%2f..%2fsecret.txt",
    "/runs/0/bodies/..%2fmanifest.json.js",
    "/runs/0/bodies/%2F{run}%2Fcall_bodies.vlog.js",
    "/runs/0/bodies/",
    "/runs/0/bodies.js",
    "/runs/0/call_bodies.vlog",
    "/{run}/manifest.json",
]


async def test_no_path_reaches_a_file_outside_what_the_viewer_serves(viewer_run, secret_beside):
    manifest = (viewer_run / "manifest.json").read_text()
    async with serving(viewer_run) as base, aiohttp.ClientSession() as session:
        status, _, _ = await get(session, base, f"/runs/0/conversations/{MARKUP_ID}.html")
        assert status == 200  # the control: a real page is served
        for path in TRAVERSALS:
            status, body, _ = await get(session, base, path.format(run=str(viewer_run).lstrip("/")))
            assert status == 404, (path, status)
            assert SECRET not in body and "config_sha256" not in body and manifest[:40] not in body, path
            assert str(viewer_run) not in body and "Traceback" not in body, path


async def test_every_other_method_is_refused_and_the_run_is_not_touched(viewer_run):
    def snapshot() -> dict[str, tuple[int, str]]:
        return {
            str(p.relative_to(viewer_run)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(viewer_run.rglob("*"))
            if p.is_file()
        }

    before = snapshot()
    paths = ["/", "/api/conversations", "/api/facets", f"/runs/0/conversations/{MARKUP_ID}.html", "/nowhere"]
    async with serving(viewer_run) as base, aiohttp.ClientSession() as session:
        for method in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"):
            for path in paths:
                async with session.request(method, base + path, data=b"x=1") as r:
                    assert r.status == 405, (method, path)
                    assert r.headers["Allow"] == "GET,HEAD"
        for path in paths[:-1]:
            async with session.head(base + path) as r:
                assert r.status == 200, path
            status, _, _ = await get(session, base, path)
            assert status == 200
    assert snapshot() == before


async def test_markup_comes_back_escaped_in_pages_and_as_plain_json(viewer_run):
    async with serving(viewer_run) as base, aiohttp.ClientSession() as session:
        status, html, headers = await get(session, base, f"/runs/0/conversations/{MARKUP_ID}.html")
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        # The page's scripts are the viewer's own files (copy buttons, keys), from its origin.
        assert (
            headers["Content-Security-Policy"] == SCRIPT_PAGE_CSP and "script-src 'self'" in SCRIPT_PAGE_CSP
        )
        assert "'unsafe-inline'" not in SCRIPT_PAGE_CSP and "script-src" not in PAGE_CSP
        assert (
            html.count("<script") == 3
            and (
                '<script src="../../../static/words.js" defer></script>\n'
                '<script src="../../../static/calls.js" defer></script>\n'
                '<script src="../../../static/keys.js" defer></script>\n'
            )
            in html
        )
        assert "<img" not in html and "<b id" not in html
        assert "&lt;script&gt;window.__xss" in html and "&lt;img src=x onerror=" in html
        async with session.get(f"{base}/api/conversations", params={"persona": MARKUP_PERSONA}) as r:
            assert r.headers["Content-Type"].startswith("application/json")
            row = (await r.json())["rows"][0]
        assert row["persona"] == MARKUP_PERSONA  # data, for the page to show with textContent
        status, card, headers = await get(session, base, "/runs/0/card.html")
        assert status == 200 and "script-src" not in headers["Content-Security-Policy"]
        assert f'href="conversations/{MARKUP_ID}.html#' in card
        assert SCRIPT_TEXT not in card and IMG_TEXT not in card


async def test_every_answer_forbids_caching_framing_and_sniffing(viewer_run):
    async with serving(viewer_run) as base, aiohttp.ClientSession() as session:
        for path in (
            "/",
            "/static/app.js",
            "/api/facets",
            f"/runs/0/conversations/{FAILED_ID}.html",
            "/nope",
        ):
            _, _, headers = await get(session, base, path)
            assert headers["Cache-Control"] == "no-store", path
            assert headers["X-Content-Type-Options"] == "nosniff"
            assert headers["X-Frame-Options"] == "DENY"
            assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        _, _, headers = await get(session, base, "/")
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert "unsafe-inline" not in headers["Content-Security-Policy"]


async def test_a_request_for_another_host_name_is_refused(viewer_run):
    # A page on another site that rebinds its name to 127.0.0.1 sends its own Host.
    async with serving(viewer_run) as base, aiohttp.ClientSession() as session:
        port = URL(base).port
        status, body, _ = await get(
            session, base, "/api/facets", headers={"Host": f"attacker.example:{port}"}
        )
        assert status == 400 and "conversations" not in body
        for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
            status, _, _ = await get(session, base, "/api/facets", headers={"Host": host})
            assert status == 200, host


async def test_a_bad_list_request_is_a_clear_400(viewer_run):
    async with (
        serving(viewer_run) as base,
        aiohttp.ClientSession() as session,
        session.get(f"{base}/api/conversations", params={"page": "zero"}) as r,
    ):
        assert r.status == 400 and (await r.json()) == {"error": "page: 'zero' is not a whole number"}


async def test_filtering_over_http_matches_the_index(viewer_run):
    async with serving(viewer_run) as base, aiohttp.ClientSession() as session:
        params = {"dimension": "Guides to Human Care", "rating": "High Potential for Harm", "per_page": "200"}
        async with session.get(f"{base}/api/conversations", params=params) as r:
            data = await r.json()
        assert data["total"] == len(data["rows"]) > 0
        assert all(
            "High Potential for Harm" in row["ratings"]["Guides to Human Care"] for row in data["rows"]
        )


# -- the command ------------------------------------------------------------------------


def fetch(url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status


@pytest.mark.slow
def test_view_binds_loopback_by_default_and_stops_cleanly_on_ctrl_c(viewer_run):
    proc, url = start_view(str(viewer_run))
    try:
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0/")
        assert fetch(url + "api/facets") == 200
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "WARNING" not in err


@pytest.mark.slow
def test_another_host_gets_a_loud_warning_every_time(viewer_run):
    proc, url = start_view(
        str(viewer_run), "--host", "0.0.0.0", "--allow-remote", "--allowed-host", "localhost"
    )
    try:
        port = URL(url).port
        # the key itself: tests/viewer/test_remote.py
        address, _, key = url.partition(f"?{KEY_PARAM}=")
        assert address == f"http://localhost:{port}/" and key
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "WARNING: vera view is serving transcripts to the network" in err
    assert "anyone who can reach this machine" in err


@pytest.mark.slow
def test_a_port_in_use_is_one_clear_error(viewer_run):
    proc, url = start_view(str(viewer_run))
    try:
        port = str(URL(url).port)
        busy = subprocess.run(
            [sys.executable, "-m", "vera", "view", str(viewer_run), "--port", port],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert busy.returncode == 1
    assert busy.stderr.strip() == f"error: cannot listen on 127.0.0.1 port {port}: Address already in use"


@pytest.mark.slow
def test_a_folder_that_is_not_a_run_is_one_clear_error(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "vera", "view", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: {tmp_path}: neither a run (no manifest.json) nor a folder holding runs (none found 4 folders down)"
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_a_network_host_without_allow_remote_is_refused_before_reading_anything(tmp_path, host):
    # tmp_path is no run at all: the refusal comes first, before the runs are read.
    result = subprocess.run(
        [sys.executable, "-m", "vera", "view", str(tmp_path), "--host", host],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1  # as `vera review` (tests/viewer/test_remote.py)
    assert result.stderr.strip() == (
        f"error: --host {host} would serve every transcript to the network; "
        "add --allow-remote if that is intended"
    )
    assert result.stdout == ""


def test_loopback_names_need_no_allow_remote():
    from vera.viewer.app import RemoteNotAllowed, check_host

    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        check_host(host, allow_remote=False)
    for host in ("0.0.0.0", "::"):
        with pytest.raises(RemoteNotAllowed):
            check_host(host, allow_remote=False)
        check_host(host, allow_remote=True)
