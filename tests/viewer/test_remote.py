"""`--allow-remote`: both servers answer only the Host names they were given (so DNS
rebinding fails), ask for the key printed in their address, and refuse a network
--host without --allow-remote (or a wildcard without names) with the same line shape
and the same exit code.

The attack, as a rebinding browser makes it: a page on attacker.example points its name
at the server's machine and asks for `/` (or posts a rating) there; its browser names
attacker.example in the Host header and the page's own origin in Origin."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from yarl import URL

from vera.errors import UserError
from vera.records import BEST_PRACTICE as BP
from vera.viewer.access import check_name, check_names, host_names
from vera.viewer.app import bind
from vera.viewer.review import ReviewSession

from .conftest import start_vera, stop

NAME = "vera.test"
ATTACKER = "attacker.example"


def start(command: str, *args: str) -> tuple[subprocess.Popen[str], URL]:
    """`vera view|review ... --host 0.0.0.0 --allow-remote --allowed-host vera.test`;
    the process and the full address it printed (with its key)."""
    proc, url = start_vera(command, *args, "--host", "0.0.0.0", "--allow-remote", "--allowed-host", NAME)
    return proc, URL(url)


def local(url: URL, path: str) -> URL:
    """The same port on 127.0.0.1: the test reaches the server there whatever Host it sends."""
    return URL.build(scheme="http", host="127.0.0.1", port=url.port).join(URL(path))


def test_the_address_carries_a_key_and_only_the_given_names_are_answered(tmp_path):
    sock = bind("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        _, allowed = host_names(sock, "127.0.0.1", [NAME, "192.168.1.20"])
        assert f"{NAME}:{port}" in allowed and f"192.168.1.20:{port}" in allowed
        assert f"localhost:{port}" in allowed and f"[::1]:{port}" in allowed
        assert not any(ATTACKER in h or h.endswith(":80") for h in allowed)
    finally:
        sock.close()
    assert check_name("Review.Lab.Example.") == "review.lab.example"
    assert check_name("[fe80::1]") == "fe80::1"
    for bad in ("http://vera.test", "vera.test:8800", "vera.test/x", "", "a b"):
        with pytest.raises(UserError, match=r"--allowed-host .*without a port or http://"):
            check_name(bad)
    with pytest.raises(UserError, match=r"--host 0\.0\.0\.0 --allow-remote: name the host names"):
        check_names("0.0.0.0", [], allow_remote=True)
    assert check_names("192.168.1.20", [], allow_remote=True) == ()


@pytest.mark.slow
async def test_dns_rebinding_cannot_read_the_viewer_and_a_key_is_needed(viewer_run):
    proc, url = start("view", str(viewer_run))
    try:
        assert url.host == NAME and url.query.get("key")
        key = url.query["key"]
        port = url.port
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            # The rebinding page: its own name in Host, the key even (the worst case).
            for path in ("/", f"/?key={key}", "/api/facets", "/api/conversations", "/compare"):
                async with http.get(local(url, path), headers={"Host": f"{ATTACKER}:{port}"}) as r:
                    body = await r.text()
                    assert r.status == 400 and body == "unexpected Host header", (path, r.status)
            # The right name without the key: refused, for loopback names too.
            for host in (f"{NAME}:{port}", f"127.0.0.1:{port}"):
                async with http.get(local(url, "/api/facets"), headers={"Host": host}) as r:
                    assert r.status == 401 and "--allow-remote" in await r.text()
            wrong = key[:-1] + ("y" if key.endswith("x") else "x")  # never the key itself
            async with http.get(
                local(url, f"/api/facets?key={wrong}"), headers={"Host": f"{NAME}:{port}"}
            ) as r:
                assert r.status == 401
            # The printed address: the key once, a cookie after, and the key leaves the address.
            async with http.get(
                local(url, f"/?key={key}"), headers={"Host": f"{NAME}:{port}"}, allow_redirects=False
            ) as r:
                assert r.status == 303 and r.headers["Location"] == "/"
                cookie = r.headers["Set-Cookie"]
                assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
            async with http.get(local(url, "/api/facets"), headers={"Host": f"{NAME}:{port}"}) as r:
                assert r.status == 200 and "chatbot" in await r.text()
            # With the cookie, a foreign Host is still refused.
            async with http.get(local(url, "/api/facets"), headers={"Host": f"{ATTACKER}:{port}"}) as r:
                assert r.status == 400
    finally:
        err = stop(proc)
    assert "WARNING: vera view is serving transcripts to the network" in err


@pytest.mark.slow
async def test_dns_rebinding_cannot_save_a_rating(run_copy_remote):
    run = run_copy_remote
    review = ReviewSession.open(run, "Ada", size=4)
    proc, url = start("review", str(run), "--rater", "Ada", "--size", "4")
    try:
        key, port = url.query["key"], url.port
        ours = {"Host": f"{NAME}:{port}"}
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            # The rebinding page asks for the review page (which holds the token): refused.
            async with http.get(local(url, f"/?key={key}"), headers={"Host": f"{ATTACKER}:{port}"}) as r:
                assert r.status == 400 and "vera-token" not in await r.text()
            # The honest rater's page, to learn the token the attacker would need.
            async with http.get(local(url, f"/?key={key}"), headers=ours) as r:
                assert r.status == 200
                page = await r.text()
            found = re.search(r'name="vera-token" content="([^"]+)"', page)
            assert found is not None
            token = found.group(1)
            body = {"conversation_id": review.order[0], "ratings": dict.fromkeys(review.dimensions, BP)}
            attack = {
                "Host": f"{ATTACKER}:{port}",
                "Origin": f"http://{ATTACKER}:{port}",
                "X-Vera-Token": token,
                "Sec-Fetch-Site": "same-origin",  # to the browser, the page is talking to itself
            }
            async with http.post(local(url, "/api/ratings"), json=body, headers=attack) as r:
                assert r.status == 400, await r.text()
            assert not (run / "human_ratings.jsonl").exists()
            # The control: the rater's own page, with its name, saves.
            mine = {**ours, "Origin": f"http://{NAME}:{port}", "X-Vera-Token": token}
            async with http.post(local(url, "/api/ratings"), json=body, headers=mine) as r:
                assert r.status == 200, await r.text()
    finally:
        err = stop(proc)
    assert (run / "human_ratings.jsonl").read_text().count("\n") == 1
    assert "WARNING: vera review is serving transcripts to the network" in err


@pytest.fixture
def run_copy_remote(offline_run, tmp_path) -> Path:
    import shutil

    out = tmp_path / "run"
    shutil.copytree(offline_run, out)
    return out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            [],
            r"error: --host 0\.0\.0\.0 (would serve every transcript|is not this machine only).*--allow-remote.*",
        ),
        (["--allow-remote"], r"error: --host 0\.0\.0\.0 --allow-remote: name the host names"),
        (["--allow-remote", "--allowed-host", "x:1"], r"error: --allowed-host 'x:1': give a host name"),
    ],
)
def test_both_commands_refuse_alike_with_exit_code_1(tmp_path, extra, message):
    # tmp_path is no run: the refusal comes before anything is read.
    for command in (["view", str(tmp_path)], ["review", str(tmp_path), "--rater", "Ada"]):
        result = subprocess.run(
            [sys.executable, "-m", "vera", *command, "--host", "0.0.0.0", *extra],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 1, (command, result.stderr)
        assert re.match(message, result.stderr.strip(), flags=re.S), result.stderr
        assert "Traceback" not in result.stderr and result.stdout == ""
