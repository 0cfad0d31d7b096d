"""`vera view FOLDER`: every run under a folder, listed, each opened in the same server.

    GET /                      the runs list (static page + runs.js)
    GET /api/runs              the runs: status, chatbots, scores, date, target (JSON)
    GET /r/<n>/...             the n-th run's viewer, exactly as `vera view RUN` serves it

A folder is a run when it holds a run's manifest.json; the search goes down at most
MAX_DEPTH folders, never into a run (a run's own folders hold no other run), a hidden
folder or a linked one (a link could lead out of the folder, or round in a loop). Runs
are addressed by their number in the list, built once at start: no part of a URL is
ever a path, so `/r/..` and the like are 404. Each run gets its own index
(`Catalogue`), so its list, grid, comparison and pages are the ones it has alone; the
runs' counts come from those indexes (the records as they are), their scores from each
run's card.json when it was scored (a run not scored says so; scoring takes `vera
score`, not a page view).

Every answer carries the viewer's safe headers; the Host check and, with
`--allow-remote`, the key are the top application's, so they cover every run's pages.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import msgspec
from aiohttp import web

from vera.errors import UserError
from vera.inputs import run_strings
from vera.store import MANIFEST
from vera.viewer.access import ACCESS_KEY, ALLOWED_HOSTS, READ_ONLY, SAFE_HEADERS, key_required, known_host
from vera.viewer.catalogue import Catalogue
from vera.viewer.words import translate_page

# How deep below the folder runs are looked for (runs/<config>/<date>/<run> is 3).
MAX_DEPTH = 4
# More runs than this is a folder of archives, not a browsing session: the list says so.
MAX_RUNS = 500


def is_run_dir(folder: Path) -> bool:
    """A folder holding a run's manifest (not, say, a VERA-MH target's manifest.json)."""
    try:
        with open(folder / MANIFEST, "rb") as f:
            return b'"run_id"' in f.read(1 << 20)
    except PermissionError:
        # A manifest the user may not read (another user's run) is taken for a run, so
        # that opening it says why it cannot be read rather than pass it over unseen.
        return True
    except OSError:
        return False


def find_runs(
    folder: Path,
    *,
    max_depth: int = MAX_DEPTH,
    limit: int = MAX_RUNS,
    unlisted: list[tuple[Path, str]] | None = None,
) -> tuple[list[Path], bool]:
    """The run folders under `folder` (breadth first, names sorted), and whether the
    search stopped at `limit`. A folder below it that cannot be listed (no permission)
    is added to `unlisted` with the reason, for the caller to say."""
    found: list[Path] = []
    level = [folder]
    for _ in range(max_depth):
        below: list[Path] = []
        for parent in level:
            try:
                entries = sorted(os.scandir(parent), key=lambda e: e.name)
            except OSError as exc:
                if unlisted is not None and parent != folder:
                    unlisted.append((parent, exc.strerror or str(exc)))
                continue
            for entry in entries:
                if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                    continue
                path = Path(entry.path)
                if is_run_dir(path):
                    found.append(path)
                    if len(found) >= limit:
                        return found, True
                else:
                    below.append(path)
        level = below
    return found, False


@dataclass
class RunSummary:
    """One row of the runs list (what /api/runs answers)."""

    index: int
    folder: str  # relative to the folder given, as text
    run_id: str = ""
    state: str = "unreadable"  # complete, partial, failed, empty or unreadable
    complete: int = 0
    failed: int = 0
    planned: int = 0
    judged: int = 0
    chatbots: list[dict[str, Any]] = field(default_factory=list)
    judges: list[str] = field(default_factory=list)
    created: str = ""
    updated: str = ""
    target: str = ""
    personas: str = ""
    offline: bool = False
    scored: bool = False
    card: bool = False
    error: str = ""


def summarise(index: int, folder: str, catalogue: Catalogue) -> RunSummary:
    """A run's row, from its index and (for the scores) its card.json."""
    run = catalogue.runs[0]
    m = run.records.manifest
    heads = [h for h, _ in run.records.conversations.values()]
    complete = sum(h.status == "complete" for h in heads)
    failed = len(heads) - complete
    planned = max(m.jobs_planned, len(heads))
    judged = len({h.conversation_id for h, _ in run.records.judgements.values() if h.status == "complete"})
    if planned == 0:
        state = "empty"
    elif complete == planned:
        state = "complete"
    elif complete == 0 and failed:
        state = "failed"
    else:
        state = "partial"
    scores = _card_scores(run.path)
    summary = RunSummary(
        index=index,
        folder=folder,
        run_id=m.run_id,
        state=state,
        complete=complete,
        failed=failed,
        planned=planned,
        judged=judged,
        judges=[j.ref for j in m.judges],
        created=m.created_at,
        updated=m.updated_at,
        target=f"{m.target.name} {m.target.version}" if m.target is not None else "",
        personas=f"{m.personas.name} {m.personas.version}",
        offline=m.offline,
        scored=scores is not None,
        card=(run.path / "card.html").is_file(),
    )
    for bot in m.chatbots:
        found = (scores or {}).get(bot.ref, {})
        summary.chatbots.append({"ref": bot.ref, **found})
    return summary


def _card_scores(root: Path) -> dict[str, dict[str, Any]] | None:
    """Each chatbot's overall score, interval and share of conversations with a High
    Potential for Harm rating, from card.json; None when the run was not scored."""
    try:
        card = msgspec.json.decode((root / "card.json").read_bytes())
    except (OSError, msgspec.DecodeError):
        return None
    out: dict[str, dict[str, Any]] = {}
    for bot in card.get("chatbots", []) if isinstance(card, dict) else []:
        overall = bot.get("overall") or {}
        out[str(bot.get("chatbot", ""))] = {
            "score": overall.get("score"),
            "score_ci": overall.get("score_ci"),
            "pct_conversations_any_hph": overall.get("pct_conversations_any_hph"),
        }
    return out


@dataclass
class Folder:
    """The runs found under a folder: each run's viewer (None when it could not be read)
    and its row."""

    root: Path
    catalogues: list[Catalogue | None]
    rows: list[RunSummary]
    truncated: bool

    @classmethod
    def open(cls, root: str | Path, err: IO[str] | None = None) -> Folder:
        base = Path(root)
        unlisted: list[tuple[Path, str]] = []
        paths, truncated = find_runs(base, unlisted=unlisted)
        for path, reason in unlisted if err is not None else ():
            shown = path.relative_to(base).as_posix()
            print(
                f"vera view: {shown}: cannot read the folder ({reason}); runs in it are not listed", file=err
            )
        if not paths:
            raise UserError(
                f"{root}: neither a run (no manifest.json) nor a folder holding runs "
                f"(none found {MAX_DEPTH} folders down)"
            )
        catalogues: list[Catalogue | None] = []
        rows = []
        for n, path in enumerate(paths):
            shown = path.relative_to(base).as_posix()
            try:
                catalogue = Catalogue.open([path])
            except (UserError, OSError, msgspec.MsgspecError, ValueError) as e:
                # One unreadable run (a torn manifest, a newer schema) does not hide the others.
                catalogues.append(None)
                # Said relative to the folder given: the list need not show where it is.
                said = str(e).splitlines()[0].replace(str(path), shown)[:300]
                rows.append(RunSummary(index=n, folder=shown, error=said))
                if err is not None:
                    print(f"vera view: {shown}: not shown ({rows[-1].error})", file=err)
                continue
            catalogues.append(catalogue)
            rows.append(summarise(n, shown, catalogue))
        return cls(base, catalogues, rows, truncated)

    def answer(self) -> dict[str, Any]:
        return {
            "folder": str(self.root),
            "runs": [asdict(r) for r in self.rows],
            "truncated": self.truncated,
            "max_runs": MAX_RUNS,
            "max_depth": MAX_DEPTH,
        }


def build_folder_app(
    folder: Folder,
    *,
    allowed_hosts: frozenset[str],
    key: str = "",
    assets: dict[str, tuple[bytes, str]],
    run_app: Any,
) -> web.Application:
    """The runs list at /, and each readable run's viewer (`run_app(catalogue)`, an
    application without Host check or key of its own: this one's cover it) at /r/<n>/."""
    app = web.Application(middlewares=[SAFE_HEADERS, READ_ONLY, known_host, key_required])
    app[ALLOWED_HOSTS] = allowed_hosts
    app[ACCESS_KEY] = key
    started = time.time()

    # In the runs' locale pack's words when they all share one (English otherwise).
    strings = run_strings(c.runs[0].records.manifest for c in folder.catalogues if c is not None)
    page = translate_page(assets["runs.html"][0], strings, "viewer")

    async def runs_page(request: web.Request) -> web.Response:
        return web.Response(body=page, content_type="text/html", charset="utf-8")

    async def asset(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in ("words.js", "runs.js", "style.css"):
            raise web.HTTPNotFound()
        body, content_type = assets[name]
        return web.Response(body=body, content_type=content_type, charset="utf-8")

    async def api_runs(request: web.Request) -> web.Response:
        answer = folder.answer()
        answer["started"] = started
        return web.Response(body=msgspec.json.encode(answer), content_type="application/json")

    app.router.add_get("/", runs_page)
    app.router.add_get("/index.html", runs_page)
    app.router.add_get("/static/{name}", asset)
    app.router.add_get("/api/runs", api_runs)
    for n, catalogue in enumerate(folder.catalogues):
        if catalogue is not None:
            app.add_subapp(f"/r/{n}/", run_app(catalogue))
    return app


def describe(folder: Folder) -> str:
    readable = sum(c is not None for c in folder.catalogues)
    conversations = sum(c.conversations.height for c in folder.catalogues if c is not None)
    more = f" (the first {MAX_RUNS}: there are more)" if folder.truncated else ""
    return f"{readable} run(s){more} with {conversations} conversation(s) under {folder.root}"


__all__: Sequence[str] = ("Folder", "build_folder_app", "find_runs", "is_run_dir", "summarise")
