"""`vera view RUN --bundle OUT`: what the static copy holds, that every page carries its
policy and escapes the run's text, that it never touches a run and refuses a folder it
must not write, and that --no-call-bodies leaves the bodies out."""

from __future__ import annotations

import hashlib
import json
import os
import re
from html import escape, unescape
from pathlib import Path
from typing import Any

import pytest

from vera.viewer.app import page_calls
from vera.viewer.bundle import MARKER, page_file
from vera.viewer.calls import BodyIndex, CallIndex
from vera.viewer.catalogue import Catalogue

from .conftest import FAILED_ID, IMG_TEXT, MARKUP_ID, SCRIPT_TEXT, invoke_vera
from .test_delta import decoded

# Said by the conversation page's bodies section when a call's request is shown.
BODY_HEADING = "What each call was sent and answered"


def digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def bundled(viewer_run, tmp_path_factory) -> tuple[Path, str, dict[str, str]]:
    before = digest(viewer_run)
    out = tmp_path_factory.mktemp("bundle") / "share" / "bundle"
    result = invoke_vera("view", str(viewer_run), "--bundle", str(out))
    assert result.exit_code == 0, result.output
    return out, result.output, before


def test_the_bundle_holds_the_list_its_data_every_page_and_says_so(bundled, viewer_run):
    out, said, _ = bundled
    conversations = [
        json.loads(line)["id"] for line in (viewer_run / "conversations.jsonl").read_text().splitlines()
    ]
    assert re.search(
        rf"wrote {re.escape(str(out))}: {len(set(conversations))} conversation\(s\) with call bodies", said
    )
    for name in ("index.html", "data/list.js", "data/search.js", "static/app.js", "static/bundle.js",
                 "static/keys.js", "static/keys.css", "static/words.js",
                 "grid.html", "compare.html", "runs/0/card.html", "runs/0/improvements.html", MARKER):  # fmt: skip
        assert (out / name).is_file(), name
    for cid in set(conversations):
        assert (out / "runs/0/conversations" / page_file(cid)).is_file()
    # The list's scripts from file://, in order: its data, then words.js before its users;
    # not data/search.js, which bundle.js loads on the first search (test_runs_bundle_browser).
    scripts = re.findall(r'<script src="([^"]+)"', (out / "index.html").read_text())
    assert scripts == [
        "static/words.js",
        "data/list.js",
        "static/bundle.js",
        "static/app.js",
    ]
    marker = json.loads((out / MARKER).read_text())
    assert marker["run_id"] == json.loads((viewer_run / "manifest.json").read_text())["run_id"]
    data = (out / "data/list.js").read_text()
    assert data.startswith("window.veraBundleData = {") and MARKUP_ID in data and FAILED_ID in data


def test_every_page_carries_its_policy_and_no_inline_script(bundled):
    out, _, _ = bundled
    pages = list(out.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        html = page.read_text()
        policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)"', html)
        assert policy is not None, page
        csp = unescape(policy[1])
        assert "default-src 'none'" in csp and "unsafe-eval" not in csp, page
        assert "script-src 'unsafe-inline'" not in csp
        # A script is a file of the bundle, never inline.
        assert all(src for src in re.findall(r"<script(?: src=\"([^\"]*)\")?", html)), page
        # The run's own markup is text on every page that quotes it.
        assert SCRIPT_TEXT not in html and IMG_TEXT not in html, page


def test_the_run_is_not_touched(bundled, viewer_run):
    _, _, before = bundled
    assert digest(viewer_run) == before


def test_without_call_bodies_the_pages_say_they_were_left_out(viewer_run, bundled, tmp_path):
    full, _, _ = bundled
    out = tmp_path / "lean"
    result = invoke_vera("view", str(viewer_run), "--bundle", str(out), "--no-call-bodies")
    assert result.exit_code == 0, result.output and "without call bodies" in result.output
    # A conversation of the offline run (the added ones have no calls recorded).
    name = next(
        p.name for p in sorted((full / "runs/0/conversations").iterdir()) if not p.name.startswith("0000")
    )
    with_bodies = (full / "runs/0/conversations" / name).read_text()
    without = (out / "runs/0/conversations" / name).read_text()
    assert '<details class="call-body" id="call-1">' in with_bodies
    assert 'class="call-body"' not in without
    assert "left out" in without and len(without) < len(with_bodies)
    assert json.loads((out / MARKER).read_text())["call_bodies"] is False


def _script_data(path: Path, name: str) -> Any:
    text = path.read_text(encoding="utf-8")
    assert text.startswith(f"window.{name} = ") and text.endswith(";\n"), path
    return json.loads(text.removeprefix(f"window.{name} = ").removesuffix(";\n"))


def test_each_pages_bodies_are_in_its_own_file_and_come_back_as_the_server_shows_them(bundled, viewer_run):
    """A call's request holds the conversation so far: in the page, a conversation's bodies
    grow with the square of its turns. The page holds each call's summary line; its file
    (runs/0/bodies/<page>.js) each body as copies of the ones before it or of one page's
    bodies (runs/0/bodies.js), which put back give the markup the server's page holds,
    byte for byte."""
    out, _, _ = bundled
    shared = _script_data(out / "runs/0/bodies.js", "veraSharedBodies")
    catalogue = Catalogue.open([viewer_run])
    calls, bodies = CallIndex(viewer_run), BodyIndex(viewer_run)
    checked, copying = 0, 0
    for cid in catalogue.runs[0].records.conversations:
        page = catalogue.page(0, cid)
        assert page is not None
        served, served_by_question = page_calls(calls, bodies, page)  # the server's page's
        name = page_file(cid)
        html = (out / "runs/0/conversations" / name).read_text()
        data = out / "runs/0/bodies" / f"{name.removesuffix('.html')}.js"
        if 'class="call-body"' not in served:
            assert not data.exists() and "bodies.js" not in html
            continue
        assert '<div class="call-io">' not in html  # no body in the page itself
        assert '<script src="../../../static/bodies.js" defer></script>' in html
        own = _script_data(data, "veraCallBodies")
        copying += bool(own["shared"] and own["texts"])
        markup = decoded((shared if own["shared"] else []) + own["texts"])
        parts = re.split(r'<div class="call-wait" data-body="(\d+)"></div>', html)
        put_back = "".join(markup[int(p)] if n % 2 else p for n, p in enumerate(parts))
        assert served in put_back
        assert all(v in put_back for v in served_by_question.values())
        checked += 1
    assert checked >= 10 and copying >= checked - 1 and shared  # every page but the shared one's


def test_a_previous_bundle_is_replaced_whole(viewer_run, tmp_path):
    out = tmp_path / "again"
    assert invoke_vera("view", str(viewer_run), "--bundle", str(out)).exit_code == 0
    (out / "stale.html").write_text("from before")
    assert invoke_vera("view", str(viewer_run), "--bundle", str(out), "--no-call-bodies").exit_code == 0
    assert not (out / "stale.html").exists() and (out / "index.html").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["again"]  # nothing left aside


@pytest.mark.parametrize(
    ("where", "said"),
    [
        (lambda run, tmp: run, "would overwrite the run directory itself"),
        (lambda run, tmp: run / "bundle", "is inside the run in"),
        (lambda run, tmp: run.parent, "holds the run"),
        (lambda run, tmp: tmp / "full", "is a folder that is not empty and not a vera bundle"),
        (lambda run, tmp: tmp / "full" / "notes.txt", "is a file"),
    ],
)
def test_a_folder_it_must_not_write_is_refused_in_one_line(viewer_run, tmp_path, where, said):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    before = digest(viewer_run)
    out = where(viewer_run, tmp_path)
    result = invoke_vera("view", str(viewer_run), "--bundle", str(out))
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], result.output
    assert digest(viewer_run) == before and (tmp_path / "full" / "notes.txt").read_text() == "mine"


def test_bundle_options_that_do_not_fit_are_one_line(viewer_run, offline_run, tmp_path):
    two = invoke_vera("view", str(viewer_run), str(offline_run), "--bundle", str(tmp_path / "b"))
    assert two.exit_code != 0 and "give one run directory" in two.output
    lone = invoke_vera("view", str(viewer_run), "--no-call-bodies")
    assert lone.exit_code != 0 and "--no-call-bodies applies to --bundle" in lone.output


def test_an_id_that_is_no_file_name_gets_a_page_named_by_its_hash(tmp_path):
    """Ids may hold any character (an imported log's "chat log/5 #1"): its page is named
    by a hash, and the list's row says which file it is, so the link finds it."""
    from tests.improvements_run import LOG_ID, write_run

    run = write_run(tmp_path / "run")
    out = tmp_path / "bundle"
    result = invoke_vera("view", str(run), "--bundle", str(out))
    assert result.exit_code == 0, result.output
    name = page_file(LOG_ID)
    assert name.startswith("id-") and name.endswith(".html") and "/" not in name
    page = (out / "runs/0/conversations" / name).read_text()
    assert escape(LOG_ID) in page
    data = json.loads(
        (out / "data/list.js").read_text().removeprefix("window.veraBundleData = ").rstrip(";\n")
    )
    row = next(r for r in data["rows"] if r["id"] == LOG_ID)
    assert row["file"] == name
    assert not any(".." in p.name or " " in p.name for p in (out / "runs/0/conversations").iterdir())


def test_a_run_and_a_bundle_named_relative_to_the_working_folder(viewer_run, tmp_path, monkeypatch):
    # The call bodies' database is opened by file URI, which must be absolute: a user who
    # types `vera view runs/x --bundle out` from the folder above gets a bundle, not a traceback.
    monkeypatch.chdir(viewer_run.parent)
    out = Path(os.path.relpath(tmp_path / "relative-bundle", viewer_run.parent))
    result = invoke_vera("view", viewer_run.name, "--bundle", str(out))
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "with call bodies" in result.output
    assert (viewer_run.parent / out / "index.html").is_file()


def test_the_bundle_writes_one_grid_that_its_script_narrows(bundled, viewer_run):
    """One grid of every persona (no grid-<n>.html), each square naming its conversation
    for grid.js, which the page loads under the list's policy (test_bundle_grid_browser
    holds what it does)."""
    out, _, _ = bundled
    assert sorted(p.name for p in out.glob("grid*.html")) == ["grid.html"]
    html = (out / "grid.html").read_text()
    lines = (viewer_run / "conversations.jsonl").read_text().splitlines()
    conversations = {json.loads(line)["id"] for line in lines}
    assert {unescape(k) for k in re.findall(r'data-conversation="0/([^"]+)"', html)} == conversations
    scripts = '<script src="static/grid.js" defer></script>\n<script src="static/words.js" defer></script>\n'
    assert scripts in html and "script-src &#x27;self&#x27;" in html
    assert (out / "static" / "grid.js").is_file() and 'id="grid-counts"' in html and 'id="grid-back"' in html
