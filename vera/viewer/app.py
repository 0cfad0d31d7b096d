"""`vera view`: a local, read-only web app over one or more run directories.

What it serves, and nothing else::

    GET /                                   the conversation list (static page + script)
    GET /static/<name>                      the list page's script and stylesheet
    GET /api/facets                         the values each filter can take
    GET /api/conversations?<filters>        one page of the filtered, sorted list (JSON)
    GET /api/changes                        the index's version, re-read if the runs grew
    GET /grid?<filters>                     the chatbot × persona grid (grid)
    GET /side-by-side?persona=P&<filters>   one persona's conversations in columns (grid)
    GET /runs/<k>/conversations/<id>.html   one conversation (the page `vera score` writes)
    GET /runs/<k>/bodies/<id>.js            what its model calls were sent and answered,
                                            loaded by the page when a call is opened
    GET /runs/<k>/arcs/<arc>.html           one persona's sessions with a chatbot (multi-session runs)
    GET /runs/<k>/card.html                 the k-th run's score card, if it has one
    GET /runs/<k>/improvements.html         the k-th run's improvement report (what to fix first)

Runs are addressed by their index k and records by their id, both looked up in the
index built at start-up: no part of a URL is ever used as a file path, so no URL can
reach a file outside the runs (anything unknown is 404). Transcripts are sensitive:
every response forbids caching, framing and (except the list page's own script)
scripts; only GET and HEAD are answered (anything else is 405: nothing writes); a
request must name one of the server's own names in its Host header, so a web page that
rebinds its own domain name to this machine cannot read the runs; and serving the
network (`--allow-remote`) asks for the key printed in the address (`vera.viewer.access`).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import signal
import socket
import sys
import threading
import time
import webbrowser
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from importlib import resources
from pathlib import Path
from typing import IO

import msgspec
from aiohttp import web

from vera.errors import UserError
from vera.inputs import run_strings, use_strings
from vera.report import (
    IMPROVEMENTS_CSP,
    PAGE_CSP,
    SCRIPT_PAGE_CSP,
    ConversationPage,
    no_bodies_reason,
    render_arc_page,
    render_conversation_page,
    render_improvements_html,
    run_improvements,
    spreadsheet_safe,
)
from vera.store import StaleIndexError, bodies_path
from vera.viewer.access import (
    ACCESS_KEY,
    ALLOWED_HOSTS,
    KEY_PARAM,
    READ_ONLY,
    SAFE_HEADERS,
    check_names,
    host_names,
    is_loopback,
    key_required,
    known_host,
    new_key,
)
from vera.viewer.calls import (
    CALLS_FILE,
    BodyIndex,
    BodyNumbers,
    CallIndex,
    Job,
    Later,
    asked_ahead,
    bodies_html,
    call_numbers,
    calls_html,
    corrupt_html,
    judge_label,
    wait_html,
)
from vera.viewer.catalogue import Catalogue, Query, QueryError
from vera.viewer.compare import back_nav, comparable, compare_page, frame_page
from vera.viewer.delta import SharedText
from vera.viewer.grid import grid_html, side_by_side_html
from vera.viewer.runs import Folder, build_folder_app, describe, is_run_dir
from vera.viewer.stepping import steps_html
from vera.viewer.words import translate_page, with_words

CATALOGUE = web.AppKey("catalogue", Catalogue)
# Each run's improvement report, built when first asked for (and again after the runs
# grew: /api/changes empties this).
REPORTS = web.AppKey("reports", dict)
# Each run's index of its calls.jsonl, made by the first conversation page asked for.
CALL_INDEXES = web.AppKey("call_indexes", dict)
# Each run's call bodies (what each call was sent and answered), opened the same way.
BODY_INDEXES = web.AppKey("body_indexes", dict)


class BodyFiles:
    """The last few bodies' files served, by (run, conversation id), each with what it was
    built from: opening a body again after a reload costs no rebuild. Built on worker
    threads (several pages at once), so read and kept under a lock."""

    KEPT = 16

    def __init__(self) -> None:
        self._files: OrderedDict[tuple[int, str], tuple[object, bytes | None]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[int, str], built_from: object) -> tuple[bool, bytes | None]:
        """(whether it is kept and still current, the file)."""
        with self._lock:
            found = self._files.get(key)
            if found is None or found[0] != built_from:
                return False, None
            self._files.move_to_end(key)
            return True, found[1]

    def keep(self, key: tuple[int, str], built_from: object, body: bytes | None) -> None:
        with self._lock:
            self._files[key] = (built_from, body)
            self._files.move_to_end(key)
            while len(self._files) > self.KEPT:
                self._files.popitem(last=False)


BODY_FILES = web.AppKey("body_files", BodyFiles)
# The comparison page per (records signature, by seed): a bootstrap is not redone per view,
# and runs on its own thread, one at a time (it is CPU-bound: two at once would only
# slow each other and the list).
COMPARISONS = web.AppKey("comparisons", dict)
COMPARE_THREAD = web.AppKey("compare_thread", ThreadPoolExecutor)
# The runs as read for the comparisons of one state of them (`compare_page`'s `reads`).
COMPARE_READS = web.AppKey("compare_reads", dict)
# How long the frame's own reload (/compare?wait=1) is held for the comparison before the
# frame is answered again: long enough for most, short of any proxy's idle timeout.
COMPARE_WAIT_S = 20.0

CARD_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_STATIC_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}
# Served from memory, by these names only.
_ASSETS = (
    "index.html",
    "words.js",
    "app.js",
    "style.css",
    "calls.js",
    "calls.css",
    "keys.js",
    "keys.css",
    "runs.html",
    "runs.js",
    "bundle.js",
    "grid.js",
    "bodies.js",
)
# A conversation page's own scripts (words.js, the words they share, first) and the
# stylesheets of what they add, relative to runs/<k>/conversations/: served, and in a bundle.
PAGE_SCRIPTS = ("../../../static/words.js", "../../../static/calls.js", "../../../static/keys.js")
PAGE_SHEETS = ("../../../static/calls.css", "../../../static/keys.css")
# A conversation page's script that puts a call's body together when it is opened, on a
# page that has one: the bodies are not in the page (static/bodies.js says why).
BODIES_SCRIPT = "../../../static/bodies.js"
# In a folder of runs (`vera view FOLDER`), each run's list links back to the runs list.
HOME = web.AppKey("home", str)


def load_assets() -> dict[str, tuple[bytes, str]]:
    folder = resources.files("vera.viewer").joinpath("static")
    out = {}
    for name in _ASSETS:
        out[name] = (folder.joinpath(name).read_bytes(), _STATIC_TYPES[Path(name).suffix])
    return out


# ---------------------------------------------------------------------------------------
# The application
# ---------------------------------------------------------------------------------------


def build_app(
    catalogue: Catalogue,
    *,
    allowed_hosts: frozenset[str],
    key: str = "",
    warm: bool = False,
    home: str = "",
) -> web.Application:
    """The viewer as an aiohttp application. `allowed_hosts` (lower-case "host:port",
    `vera.viewer.access.host_names`) are the Host headers accepted; `key`, when given,
    must come with every request (remote mode: `vera.viewer.access.key_required`); `warm`
    starts the comparisons when the server starts (`vera view` does); `home`, the runs
    list this run was opened from (relative), when there is one."""
    # Outermost first: every answer, a refusal too, carries the safe headers; a foreign
    # Host is refused before the key is even looked at.
    app = web.Application(middlewares=[SAFE_HEADERS, READ_ONLY, known_host, key_required])
    app[CATALOGUE] = catalogue
    app[ALLOWED_HOSTS] = allowed_hosts
    app[ACCESS_KEY] = key
    app[HOME] = home
    app[REPORTS] = {}
    app[CALL_INDEXES] = {}
    app[BODY_INDEXES] = {}
    app[BODY_FILES] = BodyFiles()
    app[COMPARISONS] = {}
    app[COMPARE_READS] = {}
    app[COMPARE_THREAD] = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vera-compare")
    if warm:
        app.on_startup.append(_warm_comparisons)
    app.on_cleanup.append(_stop_comparisons)
    assets = load_assets()

    async def asset(request: web.Request) -> web.Response:
        found = assets.get(request.match_info["name"])
        if found is None:
            raise web.HTTPNotFound()
        body, content_type = found
        return web.Response(body=body, content_type=content_type, charset="utf-8")

    # The list page in the runs' locale pack's language (English unless they share one).
    index_page = translate_page(
        assets["index.html"][0], run_strings(r.records.manifest for r in catalogue.runs), "viewer"
    )

    async def index(request: web.Request) -> web.Response:
        return web.Response(body=index_page, content_type="text/html", charset="utf-8")

    app.router.add_get("/", index)
    # Every page links back to the list as index.html (relative): the same link works
    # served and in a bundle opened from disk, where "./" would list the folder.
    app.router.add_get("/index.html", index)
    app.router.add_get("/static/{name}", asset)
    app.router.add_get("/api/facets", _facets)
    app.router.add_get("/api/conversations", _conversations)
    app.router.add_get("/api/changes", _changes)
    app.router.add_get("/export.csv", _export_csv)
    app.router.add_get("/grid", _grid)
    app.router.add_get("/compare", _compare)
    app.router.add_get("/side-by-side", _side_by_side)
    app.router.add_get("/runs/{k}/conversations/{name}", _conversation_page)
    app.router.add_get("/runs/{k}/bodies/{name}", _bodies_file)
    app.router.add_get("/runs/{k}/arcs/{name}", _arc_page)
    app.router.add_get("/runs/{k}/card.html", _card)
    app.router.add_get("/runs/{k}/improvements.html", _improvements)
    return app


def _json(obj: object, status: int = 200) -> web.Response:
    return web.Response(body=msgspec.json.encode(obj), status=status, content_type="application/json")


async def _facets(request: web.Request) -> web.Response:
    catalogue = request.app[CATALOGUE]
    facets = catalogue.facets()
    # Why /compare has nothing to show, if it has not: the list then offers no link.
    reasons = comparable(catalogue)
    if not reasons and len(facets["chatbots"]) < 2 and len(catalogue.runs) < 2:
        reasons = ["these runs hold one chatbot: there is nothing to compare it with"]
    facets["compare"] = reasons
    facets["home"] = request.app[HOME]
    return _json(facets)


async def _conversations(request: web.Request) -> web.Response:
    try:
        query = Query.from_params(request.query)
    except QueryError as e:
        return _json({"error": str(e)}, status=400)
    catalogue = request.app[CATALOGUE]
    if query.text:
        # The first search reads every record: off the loop, so the server still answers.
        return _json(await asyncio.to_thread(catalogue.query, query))
    return _json(catalogue.query(query))


async def _export_csv(request: web.Request) -> web.Response:
    """The filtered list, every page of it, as CSV (cells a spreadsheet would run as a
    formula are written as text, as `vera export` does)."""
    try:
        query = Query.from_params(request.query)
    except QueryError as e:
        return web.Response(status=400, text=str(e))

    def write() -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        for row in request.app[CATALOGUE].csv_rows(query):
            writer.writerow([spreadsheet_safe(c) if isinstance(c, str) else c for c in row])
        return out.getvalue()

    response = web.Response(text=await asyncio.to_thread(write), content_type="text/csv")
    response.headers["Content-Disposition"] = 'attachment; filename="conversations.csv"'
    return response


async def _changes(request: web.Request) -> web.Response:
    """The index's version and size, read again first if a run's records grew: the list
    polls this while a run is going and reloads its rows when the version moves."""
    catalogue = request.app[CATALOGUE]
    if await asyncio.to_thread(catalogue.refresh):
        request.app[REPORTS].clear()  # built from the old records
    planned = sum(max(r.records.manifest.jobs_planned, len(r.records.conversations)) for r in catalogue.runs)
    return _json(
        {"version": catalogue.version, "conversations": catalogue.conversations.height, "planned": planned}
    )


async def _grid(request: web.Request) -> web.Response:
    try:
        Query.from_params(request.query)
    except QueryError as e:
        return web.Response(status=400, text=str(e))
    catalogue = request.app[CATALOGUE]
    with use_strings(run_strings(r.records.manifest for r in catalogue.runs)):  # to_thread copies it
        html = await asyncio.to_thread(grid_html, catalogue, request.query)
    return web.Response(text=html, content_type="text/html")


async def _side_by_side(request: web.Request) -> web.Response:
    try:
        Query.from_params(request.query)
    except QueryError as e:
        return web.Response(status=400, text=str(e))
    try:
        catalogue = request.app[CATALOGUE]
        with use_strings(run_strings(r.records.manifest for r in catalogue.runs)):
            html = await asyncio.to_thread(side_by_side_html, catalogue, request.query)
    except StaleIndexError as e:
        return web.Response(status=409, text=str(e))
    if html is None:
        return web.Response(status=400, text="persona: name one")
    return web.Response(text=html, content_type="text/html")


def _run_index(request: web.Request) -> int:
    k = request.match_info["k"]
    # Plain ASCII digits only ("٣" is a digit to int(), "+1" and " 1" parse too).
    if not (k.isascii() and k.isdigit() and len(k) <= 6):
        raise web.HTTPNotFound()
    return int(k)


async def _conversation_page(request: web.Request) -> web.Response:
    catalogue = request.app[CATALOGUE]
    k = _run_index(request)
    name = request.match_info["name"]
    if not name.endswith(".html"):
        raise web.HTTPNotFound()
    try:
        page = catalogue.page(k, name.removesuffix(".html"))
    except StaleIndexError as e:
        return web.Response(status=409, text=str(e))
    if page is None:
        raise web.HTTPNotFound()
    has_card = (catalogue.runs[k].path / "card.html").is_file()
    strings = run_strings([catalogue.runs[k].records.manifest])
    with use_strings(strings):  # the run's pack's words
        if request.query.get("q"):  # a search may read every record first: off the loop
            steps = await asyncio.to_thread(steps_html, catalogue, request.query, k, page.conversation.id)
        else:
            steps = steps_html(catalogue, request.query, k, page.conversation.id)
        # to_thread copies the context: the calls section is in the same words. Each
        # call's body is a number on the page, its markup in /runs/<k>/bodies/<id>.js:
        # written into the page, a conversation's bodies grow with the square of its turns.
        numbers = BodyNumbers()
        calls, by_question = await asyncio.to_thread(_calls_section, request.app, k, page, numbers.later)
        html = render_conversation_page(
            page,
            viewer=True,
            card=has_card,
            steps=steps,
            appendix=calls,
            question_calls=by_question,
            script=(*PAGE_SCRIPTS, BODIES_SCRIPT) if numbers.count else PAGE_SCRIPTS,
            style=PAGE_SHEETS,
        )
    # The scripts' words (keyboard help, copy buttons) in the run's pack's language.
    response = web.Response(text=with_words(html, strings, "viewer"), content_type="text/html")
    response.headers["Content-Security-Policy"] = SCRIPT_PAGE_CSP
    return response


async def _arc_page(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if not name.endswith(".html"):
        raise web.HTTPNotFound()
    catalogue = request.app[CATALOGUE]
    k = _run_index(request)
    page = catalogue.arc(k, name.removesuffix(".html"))
    if page is None:
        raise web.HTTPNotFound()
    with use_strings(run_strings([catalogue.runs[k].records.manifest])):
        html = render_arc_page(page)
    response = web.Response(text=html, content_type="text/html")
    response.headers["Content-Security-Policy"] = PAGE_CSP
    return response


def _calls_section(
    app: web.Application, k: int, page: ConversationPage, later: Later
) -> tuple[str, dict[tuple[str, str], str]]:
    """The page's model calls: the conversation's own, then each judgement's, and what
    each was sent and answered, the judge's by question, each body as `later` puts it
    (off the loop: the first page of a run reads where every call is)."""
    indexes: dict[int, CallIndex] = app[CALL_INDEXES]
    bodies: dict[int, BodyIndex] = app[BODY_INDEXES]
    path = app[CATALOGUE].runs[k].path
    if k not in indexes:
        indexes[k] = CallIndex(path)
    if k not in bodies:
        bodies[k] = BodyIndex(path)
    return page_calls(indexes[k], bodies[k], page, later=later)


async def _bodies_file(request: web.Request) -> web.Response:
    """A conversation page's call bodies, for static/bodies.js: `window.veraCallBodies`,
    each body's markup as copies of the ones before it and its new text
    (vera.viewer.delta), numbered as the page numbers them. Built from the run as it is
    now: a run still going only adds calls, after those the page was built with, so a
    body keeps its number. 404 for a page without bodies."""
    catalogue = request.app[CATALOGUE]
    k = _run_index(request)
    name = request.match_info["name"]
    if not name.endswith(".js"):
        raise web.HTTPNotFound()
    # Its page's script, never another site's: a script runs in the page that loads it,
    # so a page elsewhere that loaded this would read the transcript. The browser says
    # where a request comes from; Cross-Origin-Resource-Policy (on every answer) says no too.
    if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
        raise web.HTTPForbidden(text="a call's body is for its conversation's page on this server")
    try:
        page = catalogue.page(k, name.removesuffix(".js"))
    except StaleIndexError as e:
        return web.Response(status=409, text=str(e))
    if page is None:
        raise web.HTTPNotFound()
    with use_strings(run_strings([catalogue.runs[k].records.manifest])):  # the page's words
        body = await asyncio.to_thread(_bodies_data, request.app, k, page)
    if body is None:
        raise web.HTTPNotFound()
    return web.Response(body=body, content_type="text/javascript", charset="utf-8")


def _bodies_data(app: web.Application, k: int, page: ConversationPage) -> bytes | None:
    """The page's bodies' file (None: the page has no body), from the last few built
    when nothing they were built from has changed since."""
    run = app[CATALOGUE].runs[k]
    built_from = (app[CATALOGUE].version, _stat(run.path / CALLS_FILE), _stat(bodies_path(run.path)))
    files = app[BODY_FILES]
    key = (k, page.conversation.id)
    kept, body = files.get(key, built_from)
    if kept:
        return body
    texts = SharedText()
    _calls_section(app, k, page, lambda markup: wait_html(texts.add(markup)))
    body = (
        b"window.veraCallBodies = " + msgspec.json.encode({"shared": False, "texts": texts.encoded}) + b";\n"
        if texts.encoded
        else None
    )
    files.keep(key, built_from, body)
    return body


def _stat(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def page_calls(
    index: CallIndex,
    bodies: BodyIndex | None,
    page: ConversationPage,
    *,
    left_out: str = "",
    later: Later | None = None,
) -> tuple[str, dict[tuple[str, str], str]]:
    """A conversation's calls section and its judge calls by question; `bodies` None:
    the bodies are left out, and the page says why (`left_out`); `later`: where each
    body goes instead of the page (vera.viewer.calls.body_html: the server's and the
    bundle's)."""
    jobs = [Job(page.conversation.id, "")]
    jobs += [Job(j.id, judge_label(j.judge, j.instance)) for j in page.judgements]
    lines, corrupt = index.lines_and_damage([j.id for j in jobs])
    calls = sorted((call for _, call in lines), key=lambda c: c.at)
    warning = corrupt_html(index.path, corrupt)
    kept, lost = bodies.conversation(page.conversation.id, lines) if bodies is not None else (None, {})
    if not calls:
        return warning + calls_html(jobs, calls), {}
    answered = {(j.id, a.question_id) for j in page.judgements for a in j.answers if not a.auto}
    complete = {j.id for j in page.judgements if j.status == "complete"}
    ahead = asked_ahead(kept, answered, complete)
    why = left_out or no_bodies_reason(index.path.parent) or ""
    found = bodies_html(jobs, kept, call_numbers(calls), why, answered, lost, ahead, later)
    linked = {(b.call.job_id, b.call.at) for b in kept} if kept is not None else ()
    return warning + calls_html(jobs, calls, linked=linked, ahead=ahead) + found.appendix, found.by_question


async def _compare(request: web.Request) -> web.Response:
    """`vera compare` over the runs being viewed, each score row linking to its
    conversations. The bootstrap takes seconds: it runs off the request path (one at a
    time, on the app's own thread), once per state of the runs; until it is done the
    answer is a frame, served at once, whose reload (`wait=1`) is held here until the
    comparison is done: the page fills in the moment it is ready, with no script."""
    by_seed = request.query.get("by_seed", "") in ("1", "true")
    task = _comparison(request.app, by_seed)
    if not task.done() and request.query.get("wait") == "1":
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), COMPARE_WAIT_S)
    if task.done():
        status, html = task.result()
    else:
        catalogue = request.app[CATALOGUE]
        with use_strings(run_strings(r.records.manifest for r in catalogue.runs)):
            status, html = 202, frame_page(len(catalogue.runs), by_seed=by_seed)
    response = web.Response(status=status, text=html, content_type="text/html")
    response.headers["Content-Security-Policy"] = CARD_CSP
    return response


def _comparison(app: web.Application, by_seed: bool) -> asyncio.Future[tuple[int, str]]:
    """The comparison of the runs as they are now, started if it is not yet: a future
    on the app's comparison thread (comparisons of older states are dropped)."""
    catalogue = app[CATALOGUE]
    signature = str(catalogue.signature)
    cache: dict[tuple[str, bool], asyncio.Future[tuple[int, str]]] = app[COMPARISONS]
    key = (signature, by_seed)
    if key not in cache:
        for old in [k for k in cache if k[0] != signature]:
            del cache[old]
        loop = asyncio.get_running_loop()
        cache[key] = loop.run_in_executor(
            app[COMPARE_THREAD], partial(compare_page, catalogue, by_seed=by_seed, reads=app[COMPARE_READS])
        )
    return cache[key]


async def _warm_comparisons(app: web.Application) -> None:
    """Start the comparison when the server starts, so /compare is ready when asked for.
    Not the one by seed: it compares every pair of (chatbot, seed) units (780 pairs, a
    minute of a core, for 2 chatbots × 20 seeds), and few open it; its page says it is
    being worked out when it is."""
    _comparison(app, False)


async def _stop_comparisons(app: web.Application) -> None:
    app[COMPARE_THREAD].shutdown(wait=False, cancel_futures=True)


async def _card(request: web.Request) -> web.Response:
    catalogue = request.app[CATALOGUE]
    k = _run_index(request)
    if k >= len(catalogue.runs):
        raise web.HTTPNotFound()
    path = catalogue.runs[k].path / "card.html"
    try:
        body = path.read_bytes()
    except OSError:
        raise web.HTTPNotFound() from None
    # The card is a file made to be opened alone; served here it gets the way back.
    with use_strings(run_strings([catalogue.runs[k].records.manifest])):
        back = back_nav("../../index.html")
    body = body.replace(b"<body>\n", b"<body>\n" + back.encode() + b"\n", 1)
    response = web.Response(body=body, content_type="text/html", charset="utf-8")
    response.headers["Content-Security-Policy"] = CARD_CSP
    return response


async def _improvements(request: web.Request) -> web.Response:
    """The run's improvement report, linking every conversation to its page here (the
    viewer serves every id, not only those that are file names)."""
    catalogue = request.app[CATALOGUE]
    k = _run_index(request)
    if k >= len(catalogue.runs):
        raise web.HTTPNotFound()
    reports: dict[int, str] = request.app[REPORTS]
    if k not in reports:
        run = catalogue.runs[k]

        def render() -> str:
            report = run_improvements(run.records, questions=run.questions)
            has_card = (run.path / "card.html").is_file()
            with use_strings(run_strings([run.records.manifest])):  # the run's pack's words
                return render_improvements_html(report, link=lambda _: True, viewer=True, card=has_card)

        try:
            # Off the loop: a large run's judgements are read here, once.
            reports[k] = await asyncio.to_thread(render)
        except StaleIndexError as e:
            return web.Response(status=409, text=str(e))
    response = web.Response(text=reports[k], content_type="text/html")
    response.headers["Content-Security-Policy"] = IMPROVEMENTS_CSP
    return response


# ---------------------------------------------------------------------------------------
# Middlewares: read-only, known Host, safe headers
# ---------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------
# Serving
# ---------------------------------------------------------------------------------------


class RemoteNotAllowed(UserError):
    """`--host` names an address other machines can reach, without `--allow-remote`."""


REMOTE_REFUSAL = (
    "--host {host} would serve every transcript to the network; add --allow-remote if that is intended"
)


def check_host(host: str, *, allow_remote: bool, refusal: str = REMOTE_REFUSAL) -> None:
    """Refuse a host that is not loopback unless remote access was asked for by name:
    the transcripts are sensitive and the viewer has no password, so serving them to
    the network takes two deliberate words, not one. Checked before anything is bound;
    `refusal` (with `{host}`) says what that server would expose."""
    if allow_remote:
        return
    try:
        infos = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise UserError(f"--host {host}: cannot resolve it ({e.strerror})") from None
    if not infos or not all(is_loopback(str(info[4][0])) for info in infos):
        raise RemoteNotAllowed(refusal.format(host=host))


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one), or a UserError saying why not."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise UserError(f"--host {host}: cannot resolve it ({e.strerror})") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise UserError(f"cannot listen on {host} port {port}: {e.strerror}") from None
    sock.setblocking(False)
    return sock


NETWORK_WARNING = """\
WARNING: vera view is serving transcripts to the network at {url}
WARNING: anyone who can reach this machine on port {port} with the address above (its key
WARNING: included) can read every conversation of these runs: share it as you would the
WARNING: runs. Stop it (Ctrl-C) unless that is intended; the default, --host 127.0.0.1,
WARNING: keeps them on this machine."""


def with_key(url: str, key: str) -> str:
    return f"{url}?{KEY_PARAM}={key}" if key else url


def remote_access(sock: socket.socket, host: str, names: Sequence[str]) -> tuple[str, frozenset[str], str]:
    """(address to print, Host headers accepted, access key): a key only when the socket
    is reachable from other machines."""
    url, allowed = host_names(sock, host, names)
    key = "" if is_loopback(sock.getsockname()[0]) else new_key()
    return url, allowed, key


def serve(
    run_dirs: Sequence[str | Path],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    allow_remote: bool = False,
    allowed_hosts: Sequence[str] = (),
    open_browser: bool = False,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> None:
    """Index the runs, serve them until SIGINT or SIGTERM, and return (exit code 0).
    A host other machines can reach is refused (RemoteNotAllowed) unless `allow_remote`;
    then only `host` and the `allowed_hosts` names are answered, and a key is asked for."""
    out = out or sys.stdout
    err = err or sys.stderr
    check_host(host, allow_remote=allow_remote)
    names = check_names(host, allowed_hosts, allow_remote=allow_remote)
    started = time.perf_counter()
    # One folder that is not itself a run: the runs under it, each opened from a list.
    one_folder = len(run_dirs) == 1 and not is_run_dir(Path(run_dirs[0]))
    opened: Catalogue | Folder = Folder.open(run_dirs[0], err) if one_folder else Catalogue.open(run_dirs)
    sock = bind(host, port)
    url, allowed, key = remote_access(sock, host, names)
    url = with_key(url, key)
    if key:
        print(NETWORK_WARNING.format(url=url, port=sock.getsockname()[1]), file=err, flush=True)
    took = f"indexed in {time.perf_counter() - started:.1f} s"
    if isinstance(opened, Catalogue):
        n = opened.conversations.height
        print(f"vera view: {n} conversation(s) in {len(opened.runs)} run(s), {took}", file=out)
        app = build_app(opened, allowed_hosts=allowed, key=key, warm=True)
    else:
        print(f"vera view: {describe(opened)}, {took}", file=out)
        app = build_folder_app(
            opened,
            allowed_hosts=allowed,
            key=key,
            assets=load_assets(),
            # Not warmed: a folder of many runs would start every comparison at once.
            run_app=lambda c: build_app(c, allowed_hosts=allowed, home="../../"),
        )

    def ready() -> None:
        # Printed once Ctrl-C and SIGTERM are handled: a stop right after it is clean.
        print(f"vera view: serving at {url} (Ctrl-C to stop)", file=out, flush=True)
        if open_browser:
            webbrowser.open(url)

    _run(_serve_until_stopped(app, sock, ready))


async def _serve_until_stopped(
    app: web.Application, sock: socket.socket, ready: Callable[[], None] | None = None
) -> None:
    """Serve until SIGINT or SIGTERM; `ready` is called once the signals are handled and
    the site is up (so a "serving at" printed there is true when read)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        # Not on Windows: there Ctrl-C arrives as KeyboardInterrupt, caught in `_run`; not
        # off the main thread (ValueError): there the caller stops the server.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.SockSite(runner, sock, shutdown_timeout=2.0).start()
        if ready is not None:
            ready()
        await stop.wait()
    finally:
        await runner.cleanup()


def _run(coro: Awaitable[None]) -> None:
    try:
        import uvloop
    except ImportError:  # not on Windows
        runner: Callable[..., object] = asyncio.run
    else:
        runner = uvloop.run
    with contextlib.suppress(KeyboardInterrupt):
        runner(coro)
