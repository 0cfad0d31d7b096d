"""`vera view RUN --bundle OUT`: the viewer of one run as a folder of static files that a
browser opens from disk (file://), with no server: to share a run with someone who has
no vera, or to keep what a run looked like.

    OUT/index.html                          the conversation list (app.js + bundle.js)
    OUT/data/list.js                        what the API would answer: every row, its ratings
    OUT/data/search.js                      every passage the search looks in (loaded on
                                            the list's first search, not with the page)
    OUT/static/…                            the viewer's own scripts and stylesheets
    OUT/runs/0/conversations/<id>.html      each conversation's page, with its model calls
    OUT/runs/0/bodies/<id>.js               what its calls were sent and answered, each
                                            body as copies of the ones before it and its
                                            new text (vera.viewer.delta), read on opening one
    OUT/runs/0/bodies.js                    one page's bodies, the others' to copy from
    OUT/runs/0/card.html, improvements.html the score card (if scored), what to fix first
    OUT/runs/0/arcs/<arc>.html              each arc (multi-session runs)
    OUT/grid.html                           the chatbot × persona grid, every persona on it;
                                            narrowed by the list's filters (grid.js)
    OUT/side-by-side-<n>.html               each persona's conversations in columns; narrowed
                                            by the list's filters (grid.js)
    OUT/compare.html                        the comparison, when the run has one to make
    OUT/vera-bundle.json                    what this folder is (so a new bundle may replace it)

A browser opened on file:// refuses `fetch` of other files, so the data is JavaScript
that sets one variable, loaded by <script> like the viewer's own; bundle.js answers the
list's API from it (filters, sort, search, pages) as the server does. Every page is the
one the server sends, with its links relative, and carries its Content-Security-Policy
in a meta tag (no header on disk): scripts from the bundle's own files only, never
inline, so a transcript's text is still only ever text.

The folder is written aside and moved into place whole. It is never a run's folder or
inside one, and never an existing folder that is not a previous bundle (`check_bundle_out`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import msgspec

from vera import __version__
from vera.errors import DataError, UserError, storage_error
from vera.inputs import Strings, run_strings, tr, use_strings
from vera.records import RISK_LEVELS
from vera.report import (
    page_name,
    render_arc_page,
    render_conversation_page,
    render_improvements_html,
    run_improvements,
)
from vera.store import bodies_path, check_output, has_bodies
from vera.viewer import grid
from vera.viewer.app import _ASSETS, BODIES_SCRIPT, PAGE_SCRIPTS, PAGE_SHEETS, load_assets, page_calls
from vera.viewer.calls import BodyIndex, CallIndex, wait_html
from vera.viewer.catalogue import Catalogue
from vera.viewer.compare import back_nav, compare_page
from vera.viewer.delta import SharedText
from vera.viewer.grid import GridLinks, grid_html, side_by_side_html
from vera.viewer.runs import is_run_dir
from vera.viewer.search import SearchIndex
from vera.viewer.stepping import steps_html
from vera.viewer.words import translate_page, with_words

MARKER = "vera-bundle.json"
# The list page and the viewer's own pages that carry no policy of their own.
LIST_META_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'"
)
CARD_META_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
)
# The viewer's own scripts and stylesheets, but the runs folder's page (a bundle is one run).
_STATIC = tuple(name for name in _ASSETS if not name.endswith(".html") and name != "runs.js")
# Appended to the conversation pages' script in a bundle: opened from a filtered list (a
# query in the address), the page loads the list's data and bundle.js, which redraw its
# Previous / Next within that list. Scripts from the bundle's own files, as the policy allows.
STEPS_LOADER = """
// vera view --bundle: Previous / Next within the list this page was opened from.
(function () {
  if (!window.location.search) return;
  const load = (src) => new Promise((resolve, reject) => {
    const tag = document.createElement("script");
    tag.src = "../../../" + src;
    tag.onload = resolve;
    tag.onerror = reject;
    document.head.append(tag);
  });
  const search = new URLSearchParams(window.location.search).get("q");
  load("data/list.js")
    .then(() => (search ? load("data/search.js") : null))
    .then(() => load("static/bundle.js"))
    .then(() => window.veraBundle && window.veraBundle.steps())
    .catch(() => {});
})();
"""
_CSP_TAG = re.compile(r'<meta http-equiv="Content-Security-Policy"', re.IGNORECASE)


class BodyFile:
    """A conversation page's call bodies, kept out of the page (static/bodies.js reads them
    back when one is opened): each a number on the page, its markup in the file of the
    page's name under runs/<k>/bodies/, written as copies of the bodies before it
    (vera.viewer.delta) and of the run's base page's (`base`, in runs/<k>/bodies.js): the
    judge's prompt and questions, a chatbot's system prompt, are the same on every page."""

    def __init__(self, page: str, base: SharedText | None) -> None:
        self.file = page.removesuffix(".html") + ".js"
        self.texts = SharedText(base)

    def later(self, markup: str) -> str:
        return wait_html(self.texts.add(markup))

    @property
    def written(self) -> bool:
        """Whether the page has a body (a number in its place)."""
        return bool(self.texts.encoded)

    def data(self, *, shared: bool) -> str:
        """The page's file: its texts, and whether their numbers follow the base's."""
        return _script_data("veraCallBodies", {"shared": shared, "texts": self.texts.encoded})


class BundleRefused(UserError):
    """The bundle's folder is a run's, inside one, or a folder that is not a bundle."""


@dataclass(frozen=True)
class BundleSummary:
    path: Path
    files: int
    bytes: int
    conversations: int
    call_bodies: bool
    seconds: float


def check_bundle_out(out: str | Path, run_dir: str | Path) -> None:
    """Refuse, in one line, a bundle folder that is a run's folder, inside a run (this one
    or any other), holds the run, or is an existing folder that is not a bundle."""
    shown = f"--bundle {out}"
    check_output(out, "--bundle", runs=[run_dir])
    target = Path(os.path.abspath(Path(out).expanduser())).resolve()
    run = Path(run_dir).resolve()
    for folder in (target, *target.parents):
        if is_run_dir(folder):
            raise BundleRefused(f"{shown} is inside the run in {folder}: write the bundle outside any run")
    if target == run or run.is_relative_to(target):
        raise BundleRefused(f"{shown} holds the run {run_dir}: write the bundle to a folder of its own")
    if target.exists():
        if not target.is_dir():
            raise BundleRefused(f"{shown} is a file: give a new folder, or a previous bundle to replace")
        if any(target.iterdir()) and not (target / MARKER).is_file():
            raise BundleRefused(
                f"{shown} is a folder that is not empty and not a vera bundle: give a new folder"
            )


def write_bundle(run_dir: str | Path, out: str | Path, *, call_bodies: bool = True) -> BundleSummary:
    """Write the bundle of one run to `out` (checked first; see the module docstring)."""
    started = time.perf_counter()
    check_bundle_out(out, run_dir)
    if call_bodies:
        _check_bodies_readable(Path(run_dir))
    catalogue = Catalogue.open([run_dir])
    target = Path(out).expanduser()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    except OSError as exc:  # a read-only or full disk, a folder not ours: one line
        raise storage_error(target, "the bundle", exc) from None
    try:
        _write(catalogue, work, call_bodies=call_bodies)
        if target.exists():  # a previous bundle (checked): replaced whole
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            target.rename(old / "bundle")
            work.rename(target)
            shutil.rmtree(old)
        else:
            work.rename(target)
    except OSError as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise storage_error(target, "the bundle", exc) from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    files = [p for p in target.rglob("*") if p.is_file()]
    return BundleSummary(
        path=target,
        files=len(files),
        bytes=sum(p.stat().st_size for p in files),
        conversations=catalogue.conversations.height,
        call_bodies=call_bodies,
        seconds=time.perf_counter() - started,
    )


def _check_bodies_readable(run_dir: Path) -> None:
    """Refuse a bundle with call bodies from a bodies' file the user may not read (another
    user's run, chmod 000). Each page would otherwise say the file is damaged and to
    restore it from a backup, and the command that it wrote them "with call bodies": a
    file that only needs its permission is the user's to fix, or to leave out."""
    if not has_bodies(run_dir):
        return
    path = bodies_path(run_dir)
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise DataError(
            str(path),
            f"cannot read the call bodies: {exc.strerror or exc}; make it readable, "
            "or give --no-call-bodies to write the bundle without them",
        ) from None


# ---------------------------------------------------------------------------------------
# What goes in
# ---------------------------------------------------------------------------------------


def page_file(conversation_id: str) -> str:
    """A conversation page's file name: its id when that is a safe file name, else a
    hash of it (an id may hold any character; a file name may not)."""
    return (
        page_name(conversation_id) or f"id-{hashlib.sha256(conversation_id.encode()).hexdigest()[:24]}.html"
    )


def with_meta_csp(html: str, csp: str) -> str:
    """The page with its policy in a meta tag, unless it carries one already."""
    if _CSP_TAG.search(html):
        return html
    tag = f'<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">'
    return html.replace('<meta charset="utf-8">', f'<meta charset="utf-8">{tag}', 1)


def _put(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _script_data(name: str, value: Any) -> str:
    # JSON is JavaScript; "</" cannot end anything in a file of its own, and U+2028/9 are
    # valid in string literals since ES2019.
    return f"window.{name} = " + msgspec.json.encode(value).decode() + ";\n"


def _write(catalogue: Catalogue, root: Path, *, call_bodies: bool) -> None:
    run = catalogue.runs[0]
    assets = load_assets()
    for name in _STATIC:
        (root / "static").mkdir(exist_ok=True)
        body = assets[name][0] + (STEPS_LOADER.encode() if name == "calls.js" else b"")
        (root / "static" / name).write_bytes(body)
    strings = run_strings([run.records.manifest])  # the pages in the run's pack's words
    index = translate_page(assets["index.html"][0], strings, "viewer").decode()
    index = with_meta_csp(index, LIST_META_CSP).replace(
        '<script src="static/app.js" defer></script>',
        # data/search.js is not here: bundle.js loads it on the list's first search.
        '<script src="data/list.js" defer></script>\n'
        '<script src="static/bundle.js" defer></script>\n<script src="static/app.js" defer></script>',
        1,
    )
    _put(root, "index.html", index)
    has_card = (run.path / "card.html").is_file()
    compare = _compare(catalogue)
    _put(root, "data/list.js", _script_data("veraBundleData", _list_data(catalogue, has_card, compare)))
    _put(root, "data/search.js", _script_data("veraBundleSearch", _search_data(catalogue)))

    calls = CallIndex(run.path)
    bodies = BodyIndex(run.path) if call_bodies else None
    with use_strings(strings):
        left_out = "" if call_bodies else tr("viewer.bundle_no_bodies")
    # The first complete, judged conversation's bodies are every later page's to copy
    # from (BodyFile): the pages before it have none to.
    base: SharedText | None = None
    for cid in run.records.conversations:
        page = catalogue.page(0, cid)
        if page is None:
            continue
        name = page_file(cid)
        own = BodyFile(name, base)
        with use_strings(strings):
            section, by_question = page_calls(calls, bodies, page, left_out=left_out, later=own.later)
            html = render_conversation_page(
                page,
                viewer=True,
                card=has_card,
                steps=steps_html(catalogue, {}, 0, cid),
                appendix=section,
                question_calls=by_question,
                script=(*PAGE_SCRIPTS, BODIES_SCRIPT) if own.written else PAGE_SCRIPTS,
                style=PAGE_SHEETS,
            )
        _put(root, f"runs/0/conversations/{name}", with_words(html, strings, "viewer"))
        if base is None and own.written and page.conversation.status == "complete" and page.judgements:
            base = own.texts  # its texts in bodies.js; the page's own file holds none
            _put(root, "runs/0/bodies.js", _script_data("veraSharedBodies", base.encoded))
            _put(
                root,
                f"runs/0/bodies/{own.file}",
                _script_data("veraCallBodies", {"shared": True, "texts": []}),
            )
        elif own.written:
            _put(root, f"runs/0/bodies/{own.file}", own.data(shared=base is not None))
    arcs = {h.session.arc for h, _ in run.records.conversations.values() if h.session is not None}
    for arc in sorted(arcs):
        found = catalogue.arc(0, arc)
        if found is not None and page_name(arc) is not None:
            with use_strings(strings):
                _put(root, f"runs/0/arcs/{arc}.html", render_arc_page(found))
    if has_card:
        card = (run.path / "card.html").read_text(encoding="utf-8")
        with use_strings(strings):
            back = back_nav("../../index.html")
        card = with_meta_csp(card.replace("<body>\n", "<body>\n" + back + "\n", 1), CARD_META_CSP)
        _put(root, "runs/0/card.html", card)
    report = run_improvements(run.records, questions=run.questions)
    with use_strings(strings):
        _put(root, "runs/0/improvements.html", render_improvements_html(report, viewer=True, card=has_card))

    personas = sorted(set(catalogue.conversations.get_column("persona").to_list()))
    number = {p: n for n, p in enumerate(personas, start=1)}
    links = GridLinks(
        grid=lambda _query, _n: "grid.html",
        # The persona rides along (as in the server's link), so the page's script runs.
        side=lambda persona, query: f"side-by-side-{number[persona]}.html?{query}",
        page=lambda k, cid, _query: f"runs/{k}/conversations/{page_file(cid)}",
    )
    # One grid of every persona, unpaged: a file cannot take the list's filters or a page
    # number, so grid.js reads them from the address and narrows this one as the server's
    # grid would draw them (bundle.js's own rule, the list's).
    with use_strings(strings):
        html = grid_html(catalogue, {}, links, paged=False)
    _put(root, "grid.html", _narrowed(html, strings))
    for persona, n in number.items():
        # Every conversation of the persona (past the first few, hidden): the filters in
        # the address choose which the script shows, as the server's page would.
        with use_strings(strings):
            side = side_by_side_html(catalogue, {"persona": persona}, links, every=True)
        if side is not None:
            _put(root, f"side-by-side-{n}.html", _narrowed(side, strings))
    if compare is not None:
        _put(root, "compare.html", with_meta_csp(compare, CARD_META_CSP))
    marker = {
        "what": "a vera view bundle: open index.html in a browser",
        "run_id": run.records.manifest.run_id,
        "vera_version": __version__,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "call_bodies": call_bodies,
    }
    _put(root, MARKER, msgspec.json.encode(marker).decode() + "\n")


def _narrowed(html: str, strings: Strings) -> str:
    """A grid or side-by-side page with the script that narrows it by the list's filters
    (static/grid.js), the policy that lets it run, and the page's words for it."""
    # grid.js first: it hides the grid before it is narrowed, as the page's first script.
    # It says nothing itself until the list's data has loaded; words.js, deferred too, runs
    # before that, and before the bundle.js it loads then.
    scripts = '<script src="static/grid.js" defer></script>\n<script src="static/words.js" defer></script>\n'
    html = html.replace("</head>", scripts + "</head>", 1)
    return with_meta_csp(with_words(html, strings, "viewer"), LIST_META_CSP)


def _compare(catalogue: Catalogue) -> str | None:
    """The comparison page, when the run has something to compare (two chatbots)."""
    if len(catalogue.facets()["chatbots"]) < 2:
        return None
    status, html = compare_page(catalogue)
    return html if status == 200 else None


def _list_data(catalogue: Catalogue, has_card: bool, compare: str | None) -> dict[str, Any]:
    """What bundle.js needs to answer the list's API as the server does."""
    facets = catalogue.facets()
    facets["compare"] = (
        [] if compare is not None else ["this bundle holds no comparison (one chatbot, or nothing judged)"]
    )
    facets["home"] = ""
    judges = list(facets["judges"])
    dims = list(catalogue.dimensions)
    ratings = list(facets["ratings"])
    by_row: dict[tuple[int, str], list[list[int]]] = {}
    for run, cid, judge, instance, dimension, rating in catalogue.ratings.select(
        "run", "id", "judge", "instance", "dimension", "rating"
    ).iter_rows():
        by_row.setdefault((run, cid), []).append(
            [judges.index(judge), int(instance), dims.index(dimension), ratings.index(rating)]
        )
    judged: dict[tuple[int, str], set[int]] = {}
    for run, cid, judge in catalogue.judgements.select("run", "id", "judge").iter_rows():
        judged.setdefault((run, cid), set()).add(judges.index(judge))
    rows = []
    for r in catalogue.conversations.iter_rows(named=True):
        key = (r["run"], r["id"])
        rows.append(
            {
                **{k: r[k] for k in ("run", "order", "id", "chatbot", "persona", "risk", "risk_order")},
                **{
                    k: r[k]
                    for k in ("user_agent", "status", "error", "turns", "judgements", "failed_judgements")
                },
                # Seeds can pass 2**53: as text, compared as text (the filter's value is text).
                "seed": str(r["seed"]),
                "file": page_file(r["id"]),
                "ratings": by_row.get(key, []),
                "judged_by": sorted(judged.get(key, ())),
            }
        )
    return {
        "facets": facets,
        "judges": judges,
        "dimensions": dims,
        "ratings": ratings,
        "risk_levels": len(RISK_LEVELS),
        "per_page_max": 200,
        "side_max": grid.MAX_SIDE_BY_SIDE,  # columns side by side (read when written)
        "card": has_card,
        "rows": rows,
    }


def _search_data(catalogue: Catalogue) -> dict[str, list[list[str]]]:
    """Every passage the server's search looks in, by conversation: [where, anchor, text]."""
    frame = SearchIndex(catalogue.runs).passages
    out: dict[str, list[list[str]]] = {}
    for run, cid, where, anchor, text in frame.select("run", "id", "where", "anchor", "text").iter_rows():
        out.setdefault(f"{run}/{cid}", []).append([where, anchor, text])
    return out
