"""In Chromium: a bundle's grid, opened from disk (file://), follows the list's filters as
the server's grid does. The list is filtered by its own controls, its grid link is
followed, and the squares shown (which, in which cell and order, with which colour,
code, title and link query), the rows and columns left, the counts and the way back are
those `vera view` shows for the same filter on the same run, started beside it. The
filter may come in the query or the fragment; a filter the list refuses is said. What a
keyboard reaches and what a screen reader reads (the accessibility tree) are the
server's too; so is a persona's side by side opened from the narrowed grid."""

from __future__ import annotations

import re
from urllib.parse import quote, urlencode

import pytest

from vera.store import open_run

from .conftest import FAILED_ID, MARKUP_ID, SECOND_JUDGE
from .shots import shot
from .test_browser import browser, no_page_scroll, viewer_url  # noqa: F401 - fixtures
from .test_bundle import bundled  # noqa: F401 - fixture
from .test_runs_bundle_browser import page_of, wait_for_list  # noqa: F401 - fixtures

# What the grid shows, read from the page as a person sees it (visible elements only).
GRID_STATE = """() => {
  const shown = (el) => el.checkVisibility();
  const query = (href) => Object.fromEntries(new URL(href).searchParams);
  const table = document.getElementById("grid");
  const rows = [...table.tBodies[0].rows].filter(shown).map((tr) => ({
    persona: tr.cells[0].textContent,
    cells: [...tr.cells].slice(1).filter(shown).map((td) => ({
      chatbot: td.dataset.label,
      chips: [...td.querySelectorAll("a.chip")].filter(shown).map((a) => ({
        conversation: a.dataset.conversation, cls: a.className, code: a.textContent,
        title: a.title, query: query(a.href),
      })),
    })),
  }));
  return {
    chatbots: [...table.tHead.rows[0].cells].filter(shown).map((th) => th.textContent),
    rows,
    counts: document.getElementById("grid-counts").textContent,
    back: query(document.getElementById("grid-back").href),
  };
}"""


# One persona's side by side, the same way: its columns, their squares and links.
SIDE_STATE = """() => {
  const shown = (el) => el.checkVisibility();
  const query = (href) => Object.fromEntries(new URL(href).searchParams);
  return {
    columns: [...document.querySelectorAll("#side-by-side section.side-column")].filter(shown).map((s) => ({
      conversation: s.dataset.conversation, chatbot: s.querySelector("h2").textContent,
      links: [...s.querySelectorAll("a[href]")].map((a) => [a.className, a.textContent, a.title, query(a.href)]),
      turns: s.querySelectorAll(".turn").length,
    })),
    summary: document.getElementById("side-summary").textContent,
    back: query(document.getElementById("side-back").href),
  };
}"""


def grid_state(page) -> dict:
    """The grid as shown, with each persona's side-by-side link's query."""
    state = page.evaluate(GRID_STATE)
    state["side"] = page.evaluate(
        "() => [...document.querySelectorAll('#grid a.side')].filter((a) => a.checkVisibility())"
        ".map((a) => Object.fromEntries(new URL(a.href).searchParams))"
    )
    return state


# Settled: the document loaded (grid.js is deferred: it runs after the page is parsed,
# so the whole grid is on show for a moment before it hides and narrows it), `selector`
# shown, and nothing still being narrowed. With `url`, the page must also be that
# address (as the browser writes it): a check made just after a navigation must not be
# answered by the document it left, nor by another address than the one asked for.
SETTLED = """([selector, url]) => (url === null || location.href === new URL(url).href)
  && document.readyState === "complete"
  && document.querySelector(selector)?.checkVisibility()
  && !document.querySelector("[aria-busy]")"""

# What the page was doing, for a wait that timed out.
STATE = """(selector) => ({
  url: location.href, ready: document.readyState,
  found: !!document.querySelector(selector),
  shown: !!document.querySelector(selector)?.checkVisibility(),
  busy: [...document.querySelectorAll("[aria-busy]")].map((e) => e.id || e.tagName),
  refused: document.getElementById("grid-refused")?.textContent ?? null,
  scripts: [...document.scripts].map((s) => s.src.split("/").slice(-2).join("/")),
})"""


def wait_for_settled(page, selector: str, url: str | None = None) -> None:
    from playwright.sync_api import TimeoutError as Timeout

    try:
        page.wait_for_function(SETTLED, arg=[selector, url], polling=100, timeout=30_000)
    except Timeout:
        raise AssertionError(
            f"{selector} not settled at {url}: {page.evaluate(STATE, selector)}; "
            f"problems {getattr(page, 'problems', None)}"
        ) from None


def follow(page, link: str, selector: str) -> None:
    """Click the first visible `link` as a person does, then wait for the page it leads
    to (its address as it was when clicked) to have settled with `selector` shown."""
    target = page.locator(f"{link}:visible").first
    href = target.evaluate("(a) => a.href")
    target.click()
    wait_for_settled(page, selector, href)


def side_columns(
    page, side: str, catalogue, params: dict[str, str]
) -> tuple[list[str], list[list[str]], str]:
    """A persona's side by side, the server's and the bundle's for the same `params`:
    the columns the server's page shows, those the bundle's page (`side`, opened from
    disk with `params` in its query) shows as [conversation, chatbot], and the server's
    page."""
    from vera.viewer.grid import side_by_side_html

    html = side_by_side_html(catalogue, params)
    assert html is not None
    want = re.findall(r'<section class="side-column" data-conversation="([^"]+)"', html)
    address = f"{side}?{urlencode(params)}"
    page.goto(address)
    wait_for_settled(page, "#side-by-side", address)
    shown = page.evaluate(
        "() => [...document.querySelectorAll('section.side-column')].filter((s) => s.checkVisibility())"
        ".map((s) => [s.dataset.conversation, s.querySelector('h2').textContent])"
    )
    return want, shown, html


def wait_for_grid(page, url: str | None = None) -> None:
    """The grid shown: at once when unfiltered, once narrowed (grid.js) when filtered."""
    wait_for_settled(page, "#grid", url)


def open_grid(page, address: str) -> None:
    """`address` loaded as a new document, then its grid shown. Going from one fragment
    to another is a navigation within the document: the old grid would still be on
    show until grid.js reloads the page, and would be read in place of the new one."""
    page.goto("about:blank")
    page.goto(address)
    wait_for_grid(page, address)


def chips(state: dict) -> list[str]:
    return [c["conversation"] for r in state["rows"] for cell in r["cells"] for c in cell["chips"]]


def tree(page, selector: str = "#grid") -> str:
    """What a screen reader is given of the grid: its accessibility tree, without the
    links' addresses (a file's names differ from the server's routes)."""
    snapshot = page.locator(selector).aria_snapshot()
    return "\n".join(line for line in snapshot.splitlines() if "/url:" not in line)


def filter_list(page, choices: dict[str, str]) -> None:
    """Choose each filter in the list's own form, as a person does, then follow the link
    to the grid."""
    if not page.evaluate("document.getElementById('filter-box').open"):
        page.click("#filter-box > summary")
    for name, value in choices.items():
        if name == "q":
            page.fill('#filters [name="q"]', value)
            page.press('#filters [name="q"]', "Enter")
        else:
            page.select_option(f'#filters select[name="{name}"]', value)
        page.wait_for_function(
            "([name, value]) => new URLSearchParams(location.search).get(name) === value", arg=[name, value]
        )
        wait_for_list(page)
    follow(page, "#grid-link", "#grid")


# Chosen in the list's form: a risk level and a status (the run has no High), a judge
# (whose own worst rating colours the squares), a search, a chatbot with an order.
FORM_FILTERS = [
    {"risk": "Low", "status": "complete"},
    {"status": "failed"},
    {"judge": SECOND_JUDGE},
    {"q": "pointless"},
    {"chatbot": "offline/risk-ignoring", "sort": "id"},
]


@pytest.mark.slow
@pytest.mark.parametrize("choices", FORM_FILTERS, ids=lambda c: urlencode(c))
def test_the_bundle_grid_follows_the_list_s_filters_as_the_server_s_grid_does(
    page_of,  # noqa: F811
    bundled,  # noqa: F811
    viewer_url,  # noqa: F811
    viewer_run,
    choices,
    tmp_path,
):
    out, _, _ = bundled
    live = page_of(1400, 900)
    live.goto(viewer_url)
    wait_for_list(live)
    filter_list(live, choices)
    want = grid_state(live)
    page = page_of(1400, 900)
    page.goto((out / "index.html").as_uri())
    wait_for_list(page)
    filter_list(page, choices)
    assert page.url.startswith("file://") and "/grid.html?" in page.url
    got = grid_state(page)
    assert got == want
    assert tree(page) == tree(live)
    # Narrowed: fewer squares than the run holds, and "(filtered)" said.
    assert 0 < len(chips(got)) < len(open_run(viewer_run).conversations)
    assert got["counts"].endswith(" (filtered)") and got["back"] == {**choices}
    assert no_page_scroll(page)
    name = re.sub(r"\W+", "-", urlencode(choices))
    shot(page, tmp_path, f"bundle-grid-{name}", full_page=True)
    # A persona's side by side, within the same filters.
    for p in (live, page):
        follow(p, "#grid a.side", "#side-by-side")
    assert page.evaluate(SIDE_STATE) == live.evaluate(SIDE_STATE)
    assert tree(page, "#side-by-side") == tree(live, "#side-by-side")
    shot(page, tmp_path, f"bundle-side-{name}")
    assert page.problems == [] and live.problems == []


@pytest.mark.slow
def test_the_grid_reads_the_filter_from_the_query_or_the_fragment_and_opens_pages_within_it(
    page_of,  # noqa: F811
    bundled,  # noqa: F811
    viewer_url,  # noqa: F811
):
    out, _, _ = bundled
    grid = (out / "grid.html").as_uri()
    live = page_of(1400, 900)
    page = page_of(1400, 900)
    for params in (
        {},
        {"risk": "High"},
        {"status": "not judged"},
        {"dimension": "Guides to Human Care", "rating": "High Potential for Harm"},
        {"rating": "Best Practice", "judge": SECOND_JUDGE},
        {"differ": "judges"},
        {"persona": "Sam <b id=injected>bold</b>", "sort": "seed", "desc": "1"},
        {"seed": "7"},
        {"page": "2", "per_page": "5"},  # the grid has no pages: per_page only rides along
    ):
        query = urlencode(params)
        live.goto(f"{viewer_url}grid?{query}")
        want = grid_state(live)
        for address in (f"{grid}?{query}", f"{grid}#{query}"):
            open_grid(page, address)
            assert grid_state(page) == want, address
    # A fragment changed in the same page: the grid narrowed afresh.
    open_grid(page, f"{grid}#status=failed")
    assert chips(grid_state(page)) == [f"0/{FAILED_ID}"]
    page.evaluate("location.hash = 'q=pointless'")
    page.wait_for_selector(f'#grid a.chip[data-conversation="0/{MARKUP_ID}"]', state="visible")
    assert chips(grid_state(page)) == [f"0/{MARKUP_ID}"]
    # From a square, the conversation steps within the grid's list.
    open_grid(page, f"{grid}?status=complete&sort=id")
    page.locator("#grid a.chip").first.click()
    page.wait_for_selector("nav.steps a:not([rel])")
    # The page's own links come first; bundle.js then redraws the bar for the list the
    # page was opened from, so wait for that redraw rather than read the bar at once.
    page.wait_for_function(
        "() => document.querySelector('nav.steps').innerText.includes('in this filtered list')",
        timeout=30_000,
    )
    assert "in this filtered list" in page.inner_text("nav.steps")
    assert "status=complete" in page.url
    assert page.problems == [] and live.problems == []


@pytest.mark.slow
def test_a_filter_the_list_refuses_is_said_and_no_grid_is_shown(page_of, bundled):  # noqa: F811 - fixtures
    out, _, _ = bundled
    page = page_of(1400, 900)
    page.goto(f"{(out / 'grid.html').as_uri()}?sort=nope")
    page.wait_for_selector("#grid-refused")
    assert page.inner_text("#grid-refused").startswith("This grid cannot take the list's filters: sort:")
    assert not page.locator("#grid").is_visible()
    assert page.problems == []


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 400])
def test_the_keyboard_reaches_only_the_squares_the_filter_keeps(
    page_of,  # noqa: F811
    bundled,  # noqa: F811
    width,
    tmp_path,
):
    out, _, _ = bundled
    page = page_of(width, 850)
    open_grid(page, f"{(out / 'grid.html').as_uri()}?{urlencode({'status': 'failed'})}")
    kept = chips(grid_state(page))
    assert kept == [f"0/{FAILED_ID}"]
    reached = set()  # Tab once round every link of the page (and on round again)
    for _ in range(page.locator("a").count() + 2):
        page.keyboard.press("Tab")
        reached.add(page.evaluate("document.activeElement.dataset.conversation || ''"))
    assert reached - {""} == set(kept)
    assert no_page_scroll(page)
    shot(page, tmp_path, f"bundle-grid-failed-{width}", full_page=True)
    # Enter on it opens it, within the list of failed conversations.
    open_grid(page, f"{(out / 'grid.html').as_uri()}?{urlencode({'q': 'pointless'})}")
    assert chips(grid_state(page)) == [f"0/{MARKUP_ID}"]
    page.locator("#grid a.chip").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript")
    assert quote(MARKUP_ID) in page.url and "q=pointless" in page.url
    assert page.problems == []


@pytest.mark.slow
def test_side_by_side_shows_the_first_columns_of_the_filtered_list_as_the_server_does(
    page_of,  # noqa: F811
    viewer_run,
    tmp_path,
    monkeypatch,
):
    """With fewer columns allowed than a persona has conversations, the bundle's page
    (every column written) shows the first of those the filter keeps, and says so, as
    the server's page made with the same limit."""
    import vera.viewer.grid
    from vera.viewer.bundle import write_bundle
    from vera.viewer.catalogue import Catalogue

    from .helpers import text_of

    monkeypatch.setattr(vera.viewer.grid, "MAX_SIDE_BY_SIDE", 1)
    write_bundle(viewer_run, tmp_path / "bundle")
    catalogue = Catalogue.open([viewer_run])
    persona = next(
        r["persona"] for r in catalogue.conversations.iter_rows(named=True) if r["id"] == FAILED_ID
    )
    personas = sorted(set(catalogue.conversations.get_column("persona").to_list()))
    side = (tmp_path / "bundle" / f"side-by-side-{personas.index(persona) + 1}.html").as_uri()
    page = page_of(1400, 900)
    for params in ({"persona": persona}, {"persona": persona, "status": "complete", "desc": "1"}):
        want, shown, html = side_columns(page, side, catalogue, params)
        assert [c for c, _ in shown] == want and len(want) == 1
        assert page.inner_text("#side-summary") == text_of(html, "side-summary")
        assert "The first 1 are shown" in page.inner_text("#side-summary")
    assert page.problems == []


@pytest.mark.slow
def test_a_bundled_side_by_side_pairs_seeds_across_chatbots_as_the_server_does(
    page_of,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    """A persona with three seeds and two chatbots, three columns allowed: the bundle's
    page shows a seed's conversations with both chatbots next to each other, the
    columns and order of the server's page, filtered or reversed."""
    import vera.viewer.grid
    from vera.viewer.bundle import write_bundle
    from vera.viewer.catalogue import Catalogue

    from .conftest import run_vera

    run = tmp_path / "run"
    run_vera("run", "--out", str(run), "--seeds", "3", "--limit-personas", "1", "--quiet")
    monkeypatch.setattr(vera.viewer.grid, "MAX_SIDE_BY_SIDE", 3)
    write_bundle(run, tmp_path / "bundle")
    catalogue = Catalogue.open([run])
    persona = catalogue.facets()["personas"][0]
    side = (tmp_path / "bundle" / "side-by-side-1.html").as_uri()
    page = page_of(1400, 900)
    for params in (
        {"persona": persona},
        {"persona": persona, "desc": "1"},
        {"persona": persona, "seed": "2"},
    ):
        want, shown, _ = side_columns(page, side, catalogue, params)
        assert [c for c, _ in shown] == want, params
        assert len({chatbot for _, chatbot in shown}) == 2, params  # both chatbots, whatever the filter
    assert page.problems == []
