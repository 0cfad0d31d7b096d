"""`vera review`: a person rates a random sample of a run's judged conversations, blind to
the judge, in the browser; each saved rating is appended to human_ratings.jsonl.

What it serves, and nothing else::

    GET  /                          the review page (static page + script, with the session's token)
    GET  /static/<name>             its script and stylesheet
    GET  /api/next                  the rater's next conversation: transcript only (JSON)
    POST /api/ratings               save one conversation's ratings (fsync'd before the answer)
    GET  /api/judge/<id>            the judge's ratings of a conversation the rater has rated

The sample and the rater's order come from `vera.stats.sampling`; the rater's earlier
ratings in human_ratings.jsonl are skipped, so a review stopped at any point goes on
where it stopped. Blinding is the server's doing, not the page's: the next conversation
comes without its chatbot, persona, group or ratings, and /api/judge answers only for a
conversation this rater has saved ratings for.

The viewer's protections hold (`vera.viewer.app`: a known Host, no caching, no framing,
text shown as text), and since this page writes: every /api request carries the token
the page was served with (a fresh one each time the server starts), a POST must come from
the page's own origin, and human_ratings.jsonl is the only file it ever writes.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import sys
import time
import webbrowser
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import IO, Any

import msgspec
from aiohttp import web

from vera.errors import StorageError, UserError
from vera.inputs import run_strings
from vera.records import RATINGS, HumanRating, transcript_sha256
from vera.report import chatbot_markdown, with_markdown_css
from vera.rubric import rating_guide, run_rubric
from vera.stats.sampling import Unit, draw_sample, rater_order, sample_sizes
from vera.store import (
    HUMAN_RATINGS,
    RunRecords,
    append_human_ratings,
    check_appendable,
    check_transcripts,
    open_run,
    read_human_ratings_numbered,
)
from vera.viewer.access import (
    ACCESS_KEY,
    ALLOWED_HOSTS,
    Handler,
    _safe_headers,
    check_names,
    key_required,
    known_host,
)
from vera.viewer.app import _run, _serve_until_stopped, bind, check_host, remote_access, with_key
from vera.viewer.words import guide_words, option_namer, translate_page

__all__ = ["ReviewSession", "build_review_app", "check_rater", "serve_review"]

TOKEN_HEADER = "X-Vera-Token"
MAX_NOTE = 4000
MAX_RATER = 80
# A rating is a few hundred bytes; anything much larger is not one.
MAX_BODY = 64 * 1024
DEFAULT_WIDTH = 20.0


_ASSETS = {"words.js": "text/javascript", "review.js": "text/javascript", "review.css": "text/css"}
_TOKEN_SLOT = b"{{TOKEN}}"


# ---------------------------------------------------------------------------------------
# The review: sample, order, what is rated
# ---------------------------------------------------------------------------------------


@dataclass
class ReviewSession:
    """One rater's review of one run: the sample in their order, and what they rated."""

    run_dir: Path
    records: RunRecords
    rater: str
    seed: int
    dimensions: tuple[str, ...]
    population: int
    order: list[str]
    how: str  # how the size was chosen, for the start-up line
    latest: dict[str, Mapping[str, str]] = field(default_factory=dict)  # this rater's ratings by conversation
    # What each rating means per dimension, from the run's rubric (empty when its file is
    # gone or changed: `guide_note` says why); the same for every rater.
    guide: dict[str, Any] = field(default_factory=dict)
    guide_note: str | None = None
    # Saved since this server started, and so still open to change until the judge's
    # ratings are shown; ratings from an earlier start are final (whether the judge was
    # shown then is not known, so they are treated as if it was).
    open_to_change: set[str] = field(default_factory=set)
    revealed: set[str] = field(default_factory=set)  # the judge's ratings were shown
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @classmethod
    def open(
        cls,
        run_dir: str | Path,
        rater: str,
        *,
        size: int | None = None,
        width: float | None = None,
        seed: int = 1,
    ) -> ReviewSession:
        """Scan the run, draw the sample (`size`, or proposed from `width` in percentage
        points; by default a width of 20) and read the rater's earlier ratings."""
        rater = check_rater(rater)
        if size is not None and width is not None:
            raise UserError(
                "--size and --width: give one (the size, or the interval width it is proposed from)"
            )
        if size is not None and size < 1:
            raise UserError(f"--size {size}: give at least 1")
        if width is not None and not 0 < width <= 100:
            raise UserError(f"--width {width}: give a width in percentage points, above 0 and at most 100")
        records = open_run(run_dir)
        units = judged_units(records)
        if not units:
            raise UserError(f"{run_dir}: no judged conversation to review (judge the run first)")
        # The guide and the start-up lines in the run's pack's words (English without one).
        strings = run_strings([records.manifest])
        if size is None:
            width = DEFAULT_WIDTH if width is None else width
            sizes = sample_sizes(units, width=width / 100)
            how = strings("cli.review_how_width", width=f"{width:g}")
        else:
            sizes = sample_sizes(units, size=size)
            how = strings("cli.review_how_size", size=size) + (
                strings("cli.review_how_all", n=len(units)) if size > len(units) else ""
            )
        sample = draw_sample(units, sizes, seed)
        rubric, why = run_rubric(records.manifest, records.root)
        # The guide's options by the pack's names for them.
        namer = option_namer(records.manifest, records.root, strings)
        session = cls(
            run_dir=Path(run_dir),
            records=records,
            rater=rater,
            seed=seed,
            dimensions=rubric_dimensions(records),
            guide=msgspec.to_builtins(rating_guide(rubric, guide_words(strings), namer)) if rubric else {},
            guide_note=None if rubric else f"{why}: what each rating means cannot be shown",
            population=len(units),
            order=[u.id for u in rater_order(sample, rater, seed)],
            how=how,
        )
        numbered = read_human_ratings_numbered(Path(run_dir))
        # Earlier ratings of another transcript (a file copied from another run of the
        # config) would mark conversations rated that this rater never read here.
        check_transcripts(Path(run_dir) / HUMAN_RATINGS, numbered, records)
        for _, r in numbered:
            if r.rater == rater:
                session.latest[r.conversation_id] = dict(r.ratings)
        return session

    @property
    def rated(self) -> int:
        """How many of the rater's sample they have rated."""
        return sum(cid in self.latest for cid in self.order)

    def next_position(self) -> int | None:
        """The index in the order of the first conversation not rated yet."""
        return next((i for i, cid in enumerate(self.order) if cid not in self.latest), None)

    def next_conversation(self) -> dict[str, Any]:
        """What the page needs to show the next conversation, blind: its id, position and
        turns (no chatbot, persona, group or rating)."""
        i = self.next_position()
        conversation = None
        if i is not None:
            cid = self.order[i]
            turns = self.records.read_conversation(cid).turns
            conversation = {
                "id": cid,
                "position": i + 1,
                "turns": [_turn(t.speaker, t.text) for t in turns],
            }
        return self._progress() | {"conversation": conversation}

    def _progress(self) -> dict[str, Any]:
        return {
            "rater": self.rater,
            "total": len(self.order),
            "rated": self.rated,
            "population": self.population,
            "dimensions": list(self.dimensions),
            "ratings": list(RATINGS),
            "guide": self.guide,
            "guide_note": self.guide_note,
        }

    def check_rating(self, body: object) -> HumanRating:
        """A saved rating from a request body, or a UserError saying what is wrong."""
        if not isinstance(body, dict):
            raise UserError("the body is not a JSON object")
        cid, ratings, note = body.get("conversation_id"), body.get("ratings"), body.get("note", "")
        if not isinstance(cid, str) or cid not in self.order:
            raise UserError(f"conversation {_short(cid)} is not in your sample")
        if not isinstance(ratings, dict):
            raise UserError("ratings: not an object of dimension: rating")
        missing = [d for d in self.dimensions if d not in ratings]
        if missing:
            raise UserError(f"rate every dimension: {', '.join(missing)} missing")
        unknown = [d for d in ratings if d not in self.dimensions]
        if unknown:
            raise UserError(
                f"not a dimension of this run's rubric: {', '.join(_short(u, quote=False) for u in unknown)}"
            )
        for d, value in ratings.items():
            if not isinstance(value, str) or value not in RATINGS:
                raise UserError(f"{d}: {_short(value)} is not one of {', '.join(RATINGS)}")
        if not isinstance(note, str) or len(note) > MAX_NOTE:
            raise UserError(f"note: text of at most {MAX_NOTE} characters")
        realism = body.get("realism")
        if realism is not None and (type(realism) is not int or not 1 <= realism <= 5):
            raise UserError(f"realism: {realism!r} is not a whole number from 1 to 5 (or null)")
        return HumanRating(
            conversation_id=cid,
            rater=self.rater,
            ratings={d: ratings[d] for d in self.dimensions},
            note=note.strip(),
            realism=realism,
            source="review",
            rated_at=datetime.now(UTC).isoformat(timespec="seconds"),
            # The transcript the page showed, so the rating never attaches to another
            # run's different transcript under the same conversation id.
            transcript_sha256=transcript_sha256(self.records.read_conversation(cid).turns),
        )

    async def save(self, rating: HumanRating, *, replacing: bool | None = None) -> dict[str, Any]:
        """Append the rating to human_ratings.jsonl (fsync'd, off the event loop); only
        then is it counted, and the page told it is saved. A second rating of the same
        conversation replaces the first (the later line counts) only while it is open to
        change: saved since this start, the judge's ratings not shown (else FinalRating).
        `replacing=False` is the page saying it has not saved this conversation itself:
        if it is rated already (from another tab), that rating is not replaced unseen
        (RatedAlready); None (a client that does not say) replaces it as before."""
        cid = rating.conversation_id
        async with self.lock:
            if cid in self.latest and (cid in self.revealed or cid not in self.open_to_change):
                why = (
                    "the judge's ratings have been shown"
                    if cid in self.revealed
                    else "it was saved before this review was started again"
                )
                raise FinalRating(f"your ratings of this conversation are final: {why}")
            if cid in self.latest and replacing is False:
                raise RatedAlready(self.latest[cid])
            changed = cid in self.latest
            await asyncio.to_thread(append_human_ratings, self.run_dir, [rating])
            self.latest[cid] = dict(rating.ratings)
            self.open_to_change.add(cid)
        return {
            "saved": True,
            "changed": changed,
            "conversation_id": cid,
            "rated": self.rated,
            "total": len(self.order),
        }

    async def reveal(self, conversation_id: str) -> dict[str, Any] | None:
        """The judge's ratings (`judge_ratings`), after which the rater's are final: under
        the lock, so a save in flight is either on disk first or refused."""
        async with self.lock:
            found = self.judge_ratings(conversation_id)
            if found is not None:
                self.revealed.add(conversation_id)
            return found

    def judge_ratings(self, conversation_id: str) -> dict[str, Any] | None:
        """The judge's ratings beside the rater's, or None while the rater has not rated it."""
        yours = self.latest.get(conversation_id)
        if yours is None or conversation_id not in self.records.conversations:
            return None
        judges = [
            {"judge": h.judge, "instance": h.instance, "ratings": {r.dimension: r.rating for r in h.ratings}}
            for h in self.records.judgements_of(conversation_id)
            if h.status == "complete"
        ]
        return {
            "conversation_id": conversation_id,
            "dimensions": list(self.dimensions),
            "yours": yours,
            "judges": judges,
        }


class FinalRating(UserError):
    """A second rating of a conversation whose ratings can no longer change."""


class RatedAlready(UserError):
    """A first save from a page of a conversation the rater has rated already, from another
    tab or window: saving it would replace that rating without the rater having seen it.
    `yours` is the rating on file, for the page to show."""

    def __init__(self, yours: Mapping[str, str]) -> None:
        super().__init__(
            "you have rated this conversation already (in another tab or window); "
            "nothing was saved, so that rating stands"
        )
        self.yours = dict(yours)


def _short(value: object, *, quote: bool = True) -> str:
    """A value from a request, for an error line: at most 80 characters of it."""
    text = repr(value) if quote else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_rater(name: str) -> str:
    """The rater's name as stored (surrounding spaces dropped), or a UserError."""
    name = name.strip()
    if not name:
        raise UserError("--rater: give your name (or initials); it is stored with each rating")
    if len(name) > MAX_RATER or not name.isprintable():
        raise UserError(f"--rater: a name of at most {MAX_RATER} printable characters")
    return name


def judged_units(records: RunRecords) -> list[Unit]:
    """Every complete conversation with at least one complete judgement, in run order,
    with its chatbot and persona group (the `risk` field holds the run's grouping)."""
    judged = {h.conversation_id for h, _ in records.judgements.values() if h.status == "complete"}
    return [
        Unit(cid, head.chatbot, head.risk)
        for cid, (head, _) in records.conversations.items()
        if head.status == "complete" and cid in judged
    ]


def rubric_dimensions(records: RunRecords) -> tuple[str, ...]:
    """The run's rubric dimensions in order; from the judgements when the rubric file
    is gone (their ratings name every dimension)."""
    rubric, _ = run_rubric(records.manifest, records.root)
    if rubric is not None and rubric.dimensions:
        return tuple(rubric.dimensions)
    seen: dict[str, None] = {}
    for head, _ in records.judgements.values():
        for r in head.ratings:
            seen.setdefault(r.dimension, None)
    return tuple(seen)


# ---------------------------------------------------------------------------------------
# The application
# ---------------------------------------------------------------------------------------


SESSION = web.AppKey("review_session", ReviewSession)
TOKEN = web.AppKey("review_token", str)


def build_review_app(
    session: ReviewSession, *, token: str, allowed_hosts: frozenset[str], key: str = ""
) -> web.Application:
    """The review as an aiohttp application; `token` is the one every /api request must
    carry, `allowed_hosts` and `key` as in `vera.viewer.app.build_app` (in remote mode
    the page itself, which holds the token, is served only with the key)."""
    app = web.Application(
        middlewares=[_safe_headers, known_host, key_required, _writes_guarded], client_max_size=MAX_BODY
    )
    app[SESSION] = session
    app[TOKEN] = token
    app[ALLOWED_HOSTS] = allowed_hosts
    app[ACCESS_KEY] = key
    folder = resources.files("vera.viewer").joinpath("static")
    page = folder.joinpath("review.html").read_bytes().replace(_TOKEN_SLOT, token.encode())
    # In the run's locale pack's language (vera.viewer.words); as on disk in English.
    page = translate_page(page, run_strings([session.records.manifest]), "review")
    assets = {name: folder.joinpath(name).read_bytes() for name in _ASSETS}
    # The rules for a chatbot's Markdown are the conversation page's too (one file).
    assets["review.css"] = with_markdown_css(assets["review.css"].decode()).encode()

    async def index(request: web.Request) -> web.Response:
        return web.Response(body=page, content_type="text/html", charset="utf-8")

    async def asset(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in assets:
            raise web.HTTPNotFound()
        return web.Response(body=assets[name], content_type=_ASSETS[name], charset="utf-8")

    app.router.add_get("/", index)
    app.router.add_get("/static/{name}", asset)
    app.router.add_get("/api/next", _next)
    app.router.add_post("/api/ratings", _save)
    app.router.add_get("/api/judge/{id}", _judge)
    return app


def _json(obj: object, status: int = 200) -> web.Response:
    return web.Response(body=msgspec.json.encode(obj), status=status, content_type="application/json")


async def _next(request: web.Request) -> web.Response:
    return _json(request.app[SESSION].next_conversation())


async def _save(request: web.Request) -> web.Response:
    session = request.app[SESSION]
    try:
        body = msgspec.json.decode(await request.read())
    except (msgspec.DecodeError, RecursionError):
        # RecursionError: a body nested deeper than the decoder goes (a few KB of "[").
        return _json({"error": "the body is not JSON (or is nested too deep to be a rating)"}, status=400)
    try:
        rating = session.check_rating(body)
        replacing = _replacing(body)
    except UserError as e:
        return _json({"error": str(e)}, status=400)
    try:
        return _json(await session.save(rating, replacing=replacing))
    except FinalRating as e:
        return _json({"error": str(e)}, status=409)
    except RatedAlready as e:
        return _json({"error": str(e), "rated_already": True, "yours": e.yours}, status=409)
    except OSError as e:
        # Not saved, and the page must say so: the rater keeps the form and can retry.
        return _json({"error": f"not saved: cannot write human_ratings.jsonl ({e.strerror})"}, status=500)
    except StorageError as e:
        return _json({"error": f"not saved: {e}"}, status=500)


def _replacing(body: object) -> bool | None:
    """The body's `replacing`: true when the page saves changes to a rating it saved
    itself, false for its first save of the conversation, absent for a client that does
    not say (`ReviewSession.save`)."""
    replacing = body.get("replacing") if isinstance(body, dict) else None
    if replacing is not None and not isinstance(replacing, bool):
        raise UserError(f"replacing: {_short(replacing)} is not true or false (or absent)")
    return replacing


async def _judge(request: web.Request) -> web.Response:
    found = await request.app[SESSION].reveal(request.match_info["id"])
    if found is None:
        return _json(
            {"error": "rate this conversation first: the judge's ratings stay hidden until then"}, 403
        )
    return _json(found)


@web.middleware
async def _writes_guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
    """GET, HEAD and POST only; every /api request carries the session's token; a POST
    comes from the page's own origin (a page elsewhere can send a form, never the token,
    and its browser names its own origin)."""
    if request.method not in ("GET", "HEAD", "POST"):
        raise web.HTTPMethodNotAllowed(request.method, ["GET", "HEAD", "POST"])
    if request.method == "POST" and not request.path.startswith("/api/"):
        raise web.HTTPMethodNotAllowed(request.method, ["GET", "HEAD"])
    if request.path.startswith("/api/"):
        sent = request.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(sent.encode(), request.app[TOKEN].encode()):
            raise web.HTTPForbidden(text="missing or wrong session token: reload the review page")
    if request.method == "POST":
        origin = request.headers.get("Origin", "").lower()
        host = request.headers.get("Host", "").lower()
        if not host or origin != f"http://{host}":
            raise web.HTTPForbidden(text="a rating must be sent from the review page itself")
        if request.headers.get("Sec-Fetch-Site", "same-origin") != "same-origin":
            raise web.HTTPForbidden(text="a rating must be sent from the review page itself")
    return await handler(request)


# ---------------------------------------------------------------------------------------
# Serving
# ---------------------------------------------------------------------------------------

REVIEW_REMOTE_REFUSAL = (
    "--host {host} is not this machine only: the review would show transcripts to the "
    "network and take ratings from it; add --allow-remote if that is what you want"
)

REMOTE_WARNING = """\
WARNING: vera review is serving transcripts to the network at {url}, and taking ratings
WARNING: from it: anyone who can reach this machine on port {port} with the address above
WARNING: (its key included) can read the sampled conversations and rate them. Give it to
WARNING: the rater only. Stop it (Ctrl-C) unless that is intended."""


def serve_review(
    run_dir: str | Path,
    *,
    rater: str,
    size: int | None = None,
    width: float | None = None,
    seed: int = 1,
    host: str = "127.0.0.1",
    port: int = 0,
    allow_remote: bool = False,
    allowed_hosts: Sequence[str] = (),
    open_browser: bool = False,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> None:
    """Draw the rater's sample, serve the review until SIGINT or SIGTERM, and return."""
    out = out or sys.stdout
    err = err or sys.stderr
    started = time.perf_counter()
    check_host(host, allow_remote=allow_remote, refusal=REVIEW_REMOTE_REFUSAL)
    names = check_names(host, allowed_hosts, allow_remote=allow_remote)
    session = ReviewSession.open(run_dir, rater, size=size, width=width, seed=seed)
    # Before serving, not at the first save: a rater on a read-only copy of a run learnt
    # it only when minutes of rating would not save.
    check_appendable(
        Path(run_dir),
        "nothing you rate could be saved: review a copy of the run in a folder you can write, "
        "then add its human_ratings.jsonl to this run with `vera ratings import`",
    )
    sock = bind(host, port)
    url, allowed, key = remote_access(sock, host, names)
    url = with_key(url, key)
    if key:
        print(REMOTE_WARNING.format(url=url, port=sock.getsockname()[1]), file=err, flush=True)
    left = len(session.order) - session.rated
    # In the run's pack's words, as the page and `vera ratings import` speak of the run.
    words = run_strings([session.records.manifest])
    print(
        words(
            "cli.review_sample",
            rater=repr(session.rater),
            n=len(session.order),
            population=session.population,
            how=session.how,
            seed=seed,
            rated=session.rated,
            left=left,
            seconds=f"{time.perf_counter() - started:.1f}",
        ),
        file=out,
    )
    print(words("cli.review_appends", path=Path(run_dir) / "human_ratings.jsonl"), file=out)

    def ready() -> None:
        print(words("cli.review_serving", url=url), file=out, flush=True)
        if open_browser:
            webbrowser.open(url)

    app = build_review_app(session, token=secrets.token_urlsafe(32), allowed_hosts=allowed, key=key)
    _run(_serve_until_stopped(app, sock, ready))


def _turn(speaker: str, text: str) -> dict[str, str]:
    """A turn for the review page: its exact text and, for a chatbot's turn in Markdown,
    that Markdown rendered as the conversation page renders it (escaped, safe links), so
    the rater sees the formatting the user saw."""
    out = {"speaker": speaker, "text": text}
    if speaker != "user" and (html := chatbot_markdown(text)) is not None:
        out["html"] = html
    return out
