"""A bundle's call bodies in Chromium, opened from disk (file://): each conversation page
holds its calls' summary lines only, and loads its bodies' file (runs/0/bodies/<page>.js,
each body as copies of the ones before it) when a body is first opened; what it then
shows is what the run kept, for a late call of a long conversation too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest

from tests.run_config import ROOT, write_run_config
from vera.report import exported_call
from vera.store import BodyReader, open_run
from vera.viewer.bundle import page_file
from vera.viewer.delta import SharedText

from .conftest import invoke_vera, run_vera
from .shots import shot
from .test_browser import browser, no_page_scroll  # noqa: F401 - fixtures
from .test_delta import AWKWARD, conversation
from .test_runs_bundle_browser import page_of  # noqa: F401 - fixture

TURNS = 40  # messages, both speakers: each request holds up to 39 of them


def long_run(tmp: Path) -> Path:
    """A run of two TURNS-message conversations (one persona, both offline chatbots),
    judged, in `tmp`/run: its call bodies grow with the square of the turns."""
    config = write_run_config(
        tmp / "run.toml",
        providers=ROOT / "providers",
        runs_dir=tmp / "runs",
        chatbots=["offline/best-practice", "offline/risk-ignoring"],
        conversation={"max_turns": TURNS, "min_turns": TURNS},
    )
    run = tmp / "run"
    run_vera("run", "--config", str(config), "--out", str(run), "--limit-personas", "1", "--quiet")
    return run


@pytest.fixture(scope="module")
def long_bundle(tmp_path_factory) -> tuple[Path, Path]:
    """A run of two 40-message conversations (one persona, both offline chatbots), and
    its bundle."""
    tmp = tmp_path_factory.mktemp("long")
    run = long_run(tmp)
    out = tmp / "bundle"
    result = invoke_vera("view", str(run), "--bundle", str(out))
    assert result.exit_code == 0, result.output
    return run, out


def _bodies(run: Path) -> tuple[str, list, list]:
    """The last conversation's id, its own calls' bodies and its judge's, in order: its
    page's bodies copy from the first one's (runs/0/bodies.js)."""
    records = open_run(run)
    cid = list(records.conversations)[-1]
    with BodyReader(run) as reader:
        bodies = reader.conversation(cid)
    return cid, [b for b in bodies if b.call.role != "judge"], [b for b in bodies if b.call.role == "judge"]


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 400])
def test_a_late_calls_body_in_a_long_conversation_is_the_one_the_run_kept(
    page_of,  # noqa: F811
    long_bundle,
    width,
    tmp_path,
):
    run, out = long_bundle
    cid, own, judge = _bodies(run)
    assert len(own) >= TURNS - 1 and judge  # the control: a long conversation, judged
    late = own[-1]
    assert len(late.messages) >= TURNS - 2

    page = page_of(width, 900)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url.rsplit("/", 2)[-2] + "/" + r.url.rsplit("/", 1)[-1]))
    name = page_file(cid)
    page.goto((out / "runs/0/conversations" / name).as_uri())
    page.wait_for_load_state()
    # The transcript shows without the bodies: their file is not loaded, nor their text in the page.
    assert page.locator("#transcript").count() == 1
    bodies_file = f"bodies/{name.removesuffix('.html')}.js"
    kept = json.loads((out / "runs/0" / bodies_file).read_text().split(" = ", 1)[1].removesuffix(";\n"))
    assert kept["shared"] and kept["texts"]  # the control: it copies from the shared page's too

    def data() -> list[str]:
        return [a for a in asked if a.startswith("bodies/") or a == "0/bodies.js"]

    assert data() == [] and page.evaluate("window.veraCallBodies === undefined")
    assert page.locator(".call-io").count() == 0  # no call's input or output in the page yet
    shown = page.locator("#call-bodies > details.call-body")
    assert shown.count() == len(own)

    last = shown.last
    last.locator("> summary").click()
    texts = last.locator(".call-in .msg pre")
    texts.first.wait_for()
    assert texts.all_text_contents()[: len(late.messages)] == [m.content for m in late.messages]
    assert (
        late.response is not None and last.locator(".call-out pre").first.text_content() == late.response.text
    )
    last.locator(".call-in button.copy").click()
    copied = json.loads(page.evaluate("navigator.clipboard.readText()"))
    assert copied == json.loads(json.dumps(exported_call(late)["request"]))
    # An early call and a judge call in the walk: the file is loaded once.
    first = shown.first
    first.locator("> summary").click()
    first.locator(".call-out pre").first.wait_for()
    assert first.locator(".call-out pre").first.text_content() == own[0].response.text
    inside = page.locator("#walks details.call-body").first
    inside.locator("> summary").click()
    inside.locator(".call-in .msg pre").first.wait_for()
    assert inside.locator(".call-in .msg pre").first.text_content() == judge[0].messages[0].content
    assert data() == [bodies_file, "0/bodies.js"]  # each loaded once, the page's own first
    assert no_page_scroll(page) and page.problems == []
    last.locator("> summary").evaluate("summary => summary.scrollIntoView()")
    shot(page, tmp_path, f"bundle-late-call-{width}")


@pytest.mark.slow
def test_the_pages_reader_puts_back_every_awkward_body(page_of, long_bundle):  # noqa: F811
    """static/bodies.js's reader, in the page, on what vera.viewer.delta writes: bodies
    that share nothing, empty, not JSON, outside ASCII and outside the BMP."""
    run, out = long_bundle
    cid, _, _ = _bodies(run)
    texts = AWKWARD + conversation(40) + list(reversed(AWKWARD))
    shared = SharedText()
    for text in texts:
        shared.add(text)
    encoded = msgspec.json.decode(msgspec.json.encode(shared.encoded))
    page = page_of(1400, 900)
    page.goto((out / "runs/0/conversations" / page_file(cid)).as_uri())
    page.wait_for_load_state()
    back = page.evaluate(
        "(encoded) => { const text = window.veraBodies.decoder(encoded); return encoded.map((_, k) => text(k)); }",
        encoded,
    )
    assert back == texts
    assert page.problems == []


@pytest.mark.slow
@pytest.mark.parametrize("gone", ["own", "shared"])
def test_a_page_whose_bodies_file_is_missing_says_which_when_a_body_is_opened(
    page_of,  # noqa: F811
    long_bundle,
    gone,
    tmp_path,
):
    run, out = long_bundle
    cid, _, _ = _bodies(run)
    copy = tmp_path / "bundle"
    shutil.copytree(out, copy)
    name = page_file(cid)
    missing = f"../bodies/{name.removesuffix('.html')}.js" if gone == "own" else "../bodies.js"
    (copy / "runs/0/conversations" / missing).resolve().unlink()
    page = page_of(1400, 900)
    page.goto((copy / "runs/0/conversations" / name).as_uri())
    page.wait_for_load_state()
    first = page.locator("#call-bodies > details.call-body").first
    first.locator("> summary").click()
    said = first.locator(".call-wait.warning")
    said.wait_for()
    assert said.text_content() == (
        f"This call's body is in {missing}, which could not be read: open the bundle whole, as written."
    )
    # The browser's own console line for the missing file; no error of the page's script.
    assert page.problems == ["Failed to load resource: net::ERR_FILE_NOT_FOUND"]
