"""The arc page of a multi-session run in `vera view`: one persona's sessions with one
chatbot, in order, each linked to its own page (and back), checked over HTTP and in
headless Chromium."""

from __future__ import annotations

import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from vera.store import open_run

from .conftest import run_vera, start_view
from .test_browser import browser, page_at  # noqa: F401  (fixtures)


@pytest.fixture(scope="module")
def arc_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("arcs") / "run"
    run_vera(
        "run", "--out", str(out), "--seed", "1", "--limit-personas", "2",
        "--sessions", "intake,follow-up,check-in", "--quiet",
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def arc_view(arc_run: Path) -> Iterator[str]:
    proc, url = start_view(str(arc_run))
    yield url
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


def _arcs(run: Path) -> dict[str, list[str]]:
    """Arc id -> its sessions' conversation ids, in place order."""
    records = open_run(run)
    arcs: dict[str, list[tuple[int, str]]] = {}
    for head, _ in records.conversations.values():
        assert head.session is not None
        arcs.setdefault(head.session.arc, []).append((head.session.index, head.id))
    return {arc: [cid for _, cid in sorted(sessions)] for arc, sessions in arcs.items()}


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""


def test_an_arc_page_lists_its_sessions_in_order_and_unknown_arcs_are_404(
    arc_run: Path, arc_view: str
) -> None:
    arcs = _arcs(arc_run)
    assert len(arcs) == 4  # two personas × two offline chatbots
    arc, sessions = next(iter(arcs.items()))
    status, html = _get(f"{arc_view}runs/0/arcs/{arc}.html")
    assert status == 200
    positions = [html.index(f'href="../conversations/{cid}.html"') for cid in sessions]
    assert positions == sorted(positions)
    assert _get(f"{arc_view}runs/0/arcs/{'0' * 16}.html")[0] == 404
    assert _get(f"{arc_view}runs/0/arcs/{arc}")[0] == 404
    assert _get(f"{arc_view}runs/7/arcs/{arc}.html")[0] == 404


@pytest.mark.slow
def test_from_a_session_to_its_arc_and_on_to_the_next_session(
    page_at,  # noqa: F811
    arc_run: Path,
    arc_view: str,
    tmp_path: Path,
) -> None:
    arcs = _arcs(arc_run)
    arc, sessions = next(iter(arcs.items()))
    records = open_run(arc_run)
    page = page_at(1400)
    page.goto(f"{arc_view}runs/0/conversations/{sessions[0]}.html")
    assert "1 of 3: intake" in page.inner_text(".facts")
    page.click("nav a.arc")
    page.wait_for_load_state()
    assert page.url.endswith(f"/runs/0/arcs/{arc}.html")
    assert page.inner_text("h1") == f"Arc {arc}"
    rows = page.locator("#sessions tbody tr.session")
    assert rows.count() == 3
    assert [rows.nth(i).locator("td").first.inner_text() for i in range(3)] == [
        "intake",
        "follow-up",
        "check-in",
    ]
    assert rows.locator("code a").all_inner_texts() == sessions
    # Every session's ratings are there (each judged on its own), as badges.
    for i, cid in enumerate(sessions):
        judged = {r.dimension for h in records.judgements_of(cid) for r in h.ratings}
        assert rows.nth(i).locator(".badge").count() >= len(judged) > 0
    page.screenshot(path=tmp_path / "arc.png", full_page=True)
    rows.nth(1).locator("code a").click()
    page.wait_for_load_state()
    assert page.url.endswith(f"/runs/0/conversations/{sessions[1]}.html")
    assert "2 of 3: follow-up" in page.inner_text(".facts")
    # No script but the viewer's own (the call bodies' copy buttons and their loading, the keys).
    own = "script" + "".join(
        f':not([src="../../../static/{s}.js"])' for s in ("words", "calls", "keys", "bodies")
    )
    assert page.evaluate(f"document.querySelectorAll('{own}').length") == 0
    assert page.dialogs == []
