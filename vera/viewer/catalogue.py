"""The viewer's index of one or more runs: small polars frames to list, filter, sort and
page conversations, and the records' places to open one.

Built once when the viewer starts, by one streaming scan of each run's JSONL files
(`vera.store._index`). The frames hold heads only — one row per conversation, one per
judgement, one per rating (dimension and rating, without the reasoning) — so a run of
10,000 conversations costs a few megabytes, and each request filters them in
milliseconds. Ratings come from the judgement records rather than ratings.parquet, so
the list also covers runs not scored yet, failed judgements and the latest records of a
resumed run, and says exactly what the card would count.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vera import records as rec
from vera.errors import UserError
from vera.records import RATINGS, RISK_LEVELS
from vera.report import ArcPage, ArcSession, ConversationPage, read_conversation_page
from vera.rubric import QuestionTexts, question_texts
from vera.store import RunRecords, open_run
from vera.viewer.search import MAX_QUERY, LazySearch

# Worse ratings rank higher: the list shows the worst rating of a dimension first.
RATING_RANK = {rec.NOT_RELEVANT: 0, rec.BEST_PRACTICE: 1, rec.SUBOPTIMAL: 2, rec.HIGH_POTENTIAL_FOR_HARM: 3}
STATUSES = ("complete", "failed", "judgement failed", "not judged")
# Ratings that differ: between the judges (and instances) of one conversation, or between
# runs, for the same chatbot, persona and seed.
DIFFERS = ("judges", "runs")
SORTS = ("worst", "id", "chatbot", "persona", "risk", "seed", "turns", "status", "run")
MAX_PER_PAGE = 200
# Filters that are one column of the conversations frame each.
_COLUMN_FILTERS = ("chatbot", "persona", "risk", "user_agent")


class QueryError(UserError):
    """A list request the viewer cannot answer (a bad page number, an unknown sort)."""


@dataclass(frozen=True)
class Query:
    """One request for a page of the conversation list."""

    run: int | None = None
    chatbot: str | None = None
    persona: str | None = None
    risk: str | None = None
    seed: int | None = None
    user_agent: str | None = None
    judge: str | None = None
    dimension: str | None = None
    rating: str | None = None
    status: str | None = None
    text: str | None = None  # free text to find in transcripts and reasoning (param `q`)
    differ: str | None = None  # "judges" or "runs": where the ratings of a dimension differ
    sort: str = "worst"
    descending: bool = False
    page: int = 1
    per_page: int = 50

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> Query:
        """A query from URL parameters; empty values mean "any"."""

        def text(name: str) -> str | None:
            value = params.get(name, "")
            return value or None

        def integer(name: str, default: int | None, low: int, high: int | None = None) -> int | None:
            raw = params.get(name, "")
            if raw == "":
                return default
            try:
                value = int(raw)
            except ValueError:
                raise QueryError(f"{name}: {raw!r} is not a whole number") from None
            if value < low or (high is not None and value > high):
                raise QueryError(f"{name}: {value} is out of range")
            return value

        sort = params.get("sort", "") or "worst"
        if sort not in SORTS:
            raise QueryError(f"sort: {sort!r} is not one of {', '.join(SORTS)}")
        status = text("status")
        if status is not None and status not in STATUSES:
            raise QueryError(f"status: {status!r} is not one of {', '.join(STATUSES)}")
        differ = text("differ")
        if differ is not None and differ not in DIFFERS:
            raise QueryError(f"differ: {differ!r} is not one of {', '.join(DIFFERS)}")
        search = params.get("q", "").strip() or None
        if search is not None and len(search) > MAX_QUERY:
            raise QueryError(f"q: longer than {MAX_QUERY} characters")
        return cls(
            run=integer("run", None, 0),
            chatbot=text("chatbot"),
            persona=text("persona"),
            risk=text("risk"),
            seed=integer("seed", None, -(2**63)),
            user_agent=text("user_agent"),
            judge=text("judge"),
            dimension=text("dimension"),
            rating=text("rating"),
            status=status,
            text=search,
            differ=differ,
            sort=sort,
            descending=params.get("desc", "") in ("1", "true"),
            page=integer("page", 1, 1) or 1,
            per_page=integer("per_page", 50, 1, MAX_PER_PAGE) or 50,
        )


@dataclass(frozen=True)
class Neighbours:
    """A conversation's place in a filtered list: 0-based position, the list's length,
    and (run, id) of the conversations before and after it."""

    position: int
    total: int
    previous: tuple[int, str] | None
    next: tuple[int, str] | None


@dataclass
class ViewerRun:
    """One run as the viewer serves it: addressed by its index, never by a path."""

    index: int
    label: str
    records: RunRecords
    questions: QuestionTexts

    @property
    def path(self) -> Path:
        return self.records.root


class Catalogue:
    """Every conversation of the runs given, as frames to query (see the module docstring)."""

    def __init__(self, runs: Sequence[ViewerRun]) -> None:
        self.runs = list(runs)
        self.conversations = _conversation_frame(self.runs)
        self.judgements = _judgement_frame(self.runs)
        self.ratings = _rating_frame(self.runs)
        self.dimensions = _dimension_order(self.runs, self.ratings)
        self._worst_cache: dict[str | None, pl.DataFrame] = {}
        self.search = LazySearch(self.runs)
        self.signature = _signature(self.runs)
        self.version = 0
        self._refresh_lock = threading.Lock()

    def refresh(self) -> bool:
        """Read the runs again if their record files changed since (a run still going):
        True if they had. The new frames are built aside and put in place together, so
        a request meanwhile sees the old index or the new one."""
        with self._refresh_lock:
            if _signature(self.runs) == self.signature:
                return False
            fresh = Catalogue.open([r.path for r in self.runs])
            fresh.version = self.version + 1
            fresh.__dict__.pop("_refresh_lock")
            self.__dict__.update(fresh.__dict__)
            return True

    @classmethod
    def open(cls, run_dirs: Sequence[str | Path]) -> Catalogue:
        """Scan each run directory once. The same directory twice is refused."""
        resolved = [Path(d).resolve() for d in run_dirs]
        if len(set(resolved)) != len(resolved):
            raise UserError("the same run directory is given twice")
        scanned = [open_run(d) for d in run_dirs]
        ids = [r.manifest.run_id for r in scanned]
        runs = []
        for k, records in enumerate(scanned):
            label = ids[k] if ids.count(ids[k]) == 1 else f"{ids[k]} #{k + 1}"
            runs.append(ViewerRun(k, label, records, question_texts(records.manifest, records.root)))
        return cls(runs)

    # -- what can be chosen ----------------------------------------------------------------

    def facets(self) -> dict[str, Any]:
        """The values each filter can take, for the list page's menus."""
        c = self.conversations

        def values(frame: pl.DataFrame, column: str) -> list[Any]:
            return sorted(v for v in frame.get_column(column).unique().to_list() if v is not None)

        risks = set(c.get_column("risk").unique().to_list())
        return {
            "runs": [
                {
                    "index": r.index,
                    "label": r.label,
                    "offline": r.records.manifest.offline,
                    "conversations": len(r.records.conversations),
                    "card": (r.path / "card.html").is_file(),
                    "questions_note": r.questions.note,
                }
                for r in self.runs
            ],
            "chatbots": values(c, "chatbot"),
            "personas": values(c, "persona"),
            "risks": [x for x in RISK_LEVELS if x in risks] + sorted(risks - set(RISK_LEVELS)),
            "seeds": values(c, "seed"),
            "user_agents": values(c, "user_agent"),
            "judges": values(self.judgements, "judge"),
            "dimensions": self.dimensions,
            "ratings": list(RATINGS),
            "statuses": list(STATUSES),
            "sorts": list(SORTS),
        }

    # -- the list ------------------------------------------------------------------------

    def query(self, q: Query) -> dict[str, Any]:
        """One page of the list: total count, the page's rows with their ratings."""
        frame = self._filtered(q)
        frame = self._sorted(frame, q)
        total = frame.height
        start = (q.page - 1) * q.per_page
        page = frame.slice(start, q.per_page)
        ratings = self._page_ratings(page, q.judge)
        found = self.search.get().snippets(q.text, page) if q.text else {}
        rows = []
        for row in page.iter_rows(named=True):
            key = (row["run"], row["id"])
            rows.append(
                {
                    "run": row["run"],
                    "id": row["id"],
                    "chatbot": row["chatbot"],
                    "persona": row["persona"],
                    "risk": row["risk"],
                    "seed": row["seed"],
                    "user_agent": row["user_agent"],
                    "status": row["status"],
                    "error": row["error"],
                    "turns": row["turns"],
                    "judgements": row["judgements"],
                    "failed_judgements": row["failed_judgements"],
                    "ratings": ratings.get(key, {}),
                }
            )
            if q.text:
                rows[-1]["found"] = found.get(key, {"count": 0, "snippets": []})
        return {"total": total, "page": q.page, "per_page": q.per_page, "rows": rows}

    def csv_rows(self, q: Query) -> Iterator[list[Any]]:
        """The whole filtered list (every page, in its order) as table rows: a header,
        then one row per conversation with its worst rating per dimension (the list's
        badge, written out; every judge's when they differ, worst first)."""
        frame = self.listed(q)
        ratings = self._page_ratings(frame, q.judge)
        run_labels = [r.label for r in self.runs]
        yield [
            "run", "conversation_id", "chatbot", "persona", "risk", "seed", "user_agent",
            "turns", "status", "judgements", *self.dimensions,
        ]  # fmt: skip
        for row in frame.iter_rows(named=True):
            dims = ratings.get((row["run"], row["id"]), {})
            yield [
                run_labels[row["run"]], row["id"], row["chatbot"], row["persona"], row["risk"],
                row["seed"], row["user_agent"], row["turns"], row["status"], row["judgements"],
                *(" | ".join(dims.get(d, [])) for d in self.dimensions),
            ]  # fmt: skip

    def listed(self, q: Query) -> pl.DataFrame:
        """Every conversation the list `q` holds, in its order (all pages)."""
        return self._sorted(self._filtered(q), q)

    def overall(self, judge: str | None = None) -> pl.DataFrame:
        """(run, id, rank): each conversation's worst rating over every dimension and
        judge instance (or one judge's), as a RATING_RANK; absent when not rated."""
        r = self.ratings if judge is None else self.ratings.filter(pl.col("judge") == judge)
        ranks = pl.col("rating").replace_strict(RATING_RANK, default=-1, return_dtype=pl.Int32)
        return r.group_by("run", "id").agg(ranks.max().alias("rank"))

    def neighbours(self, q: Query, run_index: int, conversation_id: str) -> Neighbours | None:
        """Where a conversation stands in the list `q` gives (ignoring its page), and the
        ones before and after it; None when the list does not hold it."""
        frame = self.listed(q).select("run", "id").with_row_index("position")
        here = frame.filter((pl.col("run") == run_index) & (pl.col("id") == conversation_id))
        if here.height == 0:
            return None
        position = int(here.item(0, "position"))

        def at(i: int) -> tuple[int, str] | None:
            if not 0 <= i < frame.height:
                return None
            return int(frame.item(i, "run")), str(frame.item(i, "id"))

        return Neighbours(position, frame.height, at(position - 1), at(position + 1))

    def _filtered(self, q: Query) -> pl.DataFrame:
        c = self.conversations
        conditions = [pl.col(name) == getattr(q, name) for name in _COLUMN_FILTERS if getattr(q, name)]
        if q.run is not None:
            conditions.append(pl.col("run") == q.run)
        if q.seed is not None:
            conditions.append(pl.col("seed") == q.seed)
        if q.status == "complete" or q.status == "failed":
            conditions.append(pl.col("status") == q.status)
        elif q.status == "judgement failed":
            conditions.append(pl.col("failed_judgements") > 0)
        elif q.status == "not judged":
            conditions.append((pl.col("status") == "complete") & (pl.col("judgements") == 0))
        if conditions:
            c = c.filter(pl.all_horizontal(conditions))
        if q.judge:
            judged = self.judgements.filter(pl.col("judge") == q.judge).select("run", "id").unique()
            c = c.join(judged, on=["run", "id"], how="semi")
        if q.dimension or q.rating:
            r = self.ratings
            wanted = [
                pl.col(name) == getattr(q, name)
                for name in ("judge", "dimension", "rating")
                if getattr(q, name)
            ]
            hits = r.filter(pl.all_horizontal(wanted)).select("run", "id").unique()
            c = c.join(hits, on=["run", "id"], how="semi")
        if q.differ:
            c = c.join(self._differing(q.differ, q.judge), on=["run", "id"], how="semi")
        if q.text:
            c = c.join(self.search.get().matching(q.text), on=["run", "id"], how="semi")
        return c

    def _differing(self, between: str, judge: str | None) -> pl.DataFrame:
        """(run, id) of the conversations where some dimension got different ratings:
        from its judges and instances, or, across runs, for the same chatbot, persona and
        seed (each run's conversation of that triple is listed)."""
        r = self.ratings if judge is None else self.ratings.filter(pl.col("judge") == judge)
        if between == "judges":
            spread = r.group_by("run", "id", "dimension").agg(pl.col("rating").n_unique().alias("n"))
            return spread.filter(pl.col("n") > 1).select("run", "id").unique()
        key = ["chatbot", "persona", "seed"]
        rated = r.join(self.conversations.select("run", "id", *key), on=["run", "id"])
        # The same judge instance's rating, run against run: judges that disagree within
        # one run are the other filter.
        spread = rated.group_by(*key, "judge", "instance", "dimension").agg(
            pl.col("run").n_unique().alias("runs"), pl.col("rating").n_unique().alias("n")
        )
        triples = spread.filter((pl.col("runs") > 1) & (pl.col("n") > 1)).select(key).unique()
        return self.conversations.join(triples, on=key, how="semi").select("run", "id")

    def _sorted(self, frame: pl.DataFrame, q: Query) -> pl.DataFrame:
        # The order conversations were written in breaks ties, so a page is stable.
        if q.sort == "worst":
            worst = self._worst(q.judge)
            frame = frame.join(worst, on=["run", "id"], how="left").with_columns(
                pl.col("n_hph").fill_null(0),
                pl.col("n_sub").fill_null(0),
                # Ties go to the higher risk level (Immediate first): the same harm weighs
                # more there. A group that is no risk level (a target's own) comes after.
                pl.when(pl.col("risk_order") < len(RISK_LEVELS))
                .then(pl.col("risk_order"))
                .otherwise(-1)
                .alias("risk_tie"),
            )
            # Worst first; "descending" turns it round (best first).
            return frame.sort(
                ["n_hph", "n_sub", "risk_tie", "run", "order"],
                descending=[not q.descending, not q.descending, not q.descending, False, False],
            ).drop("risk_tie")
        key = {"risk": "risk_order"}.get(q.sort, q.sort)
        return frame.sort([key, "run", "order"], descending=[q.descending, False, False], nulls_last=True)

    def _worst(self, judge: str | None) -> pl.DataFrame:
        """Per conversation, how many Harm and Suboptimal ratings it got (from one judge)."""
        cached = self._worst_cache.get(judge)
        if cached is not None:
            return cached
        r = self.ratings if judge is None else self.ratings.filter(pl.col("judge") == judge)
        worst = r.group_by("run", "id").agg(
            (pl.col("rating") == rec.HIGH_POTENTIAL_FOR_HARM).sum().alias("n_hph"),
            (pl.col("rating") == rec.SUBOPTIMAL).sum().alias("n_sub"),
        )
        # Kept for the run's own judges only: a URL cannot grow the cache without bound.
        if judge is None or r.height:
            self._worst_cache[judge] = worst
        return worst

    def _page_ratings(
        self, page: pl.DataFrame, judge: str | None
    ) -> dict[tuple[int, str], dict[str, list[str]]]:
        """For each conversation of a page: per dimension, its distinct ratings, worst first."""
        r = self.ratings.join(page.select("run", "id"), on=["run", "id"], how="semi")
        if judge:
            r = r.filter(pl.col("judge") == judge)
        out: dict[tuple[int, str], dict[str, list[str]]] = {}
        grouped = r.group_by("run", "id", "dimension").agg(pl.col("rating").unique())
        for run, cid, dim, ratings in grouped.iter_rows():
            ordered = sorted(ratings, key=lambda x: -RATING_RANK.get(x, -1))
            out.setdefault((run, cid), {})[dim] = ordered
        return out

    # -- one arc -------------------------------------------------------------------------

    def arc(self, run_index: int, arc_id: str) -> ArcPage | None:
        """An arc's sessions in order with their ratings; None if the run has no such arc."""
        if not 0 <= run_index < len(self.runs):
            return None
        run = self.runs[run_index]
        heads = sorted(
            (
                h
                for h, _ in run.records.conversations.values()
                if h.session is not None and h.session.arc == arc_id
            ),
            key=lambda h: h.session.index if h.session is not None else 0,
        )
        if not heads:
            return None
        ratings = self._page_ratings(
            pl.DataFrame(
                {"run": [run_index] * len(heads), "id": [h.id for h in heads]},
                schema={"run": pl.Int32, "id": pl.Utf8},
            ),
            None,
        )
        first = heads[0]
        return ArcPage(
            run_id=run.label,
            arc=arc_id,
            chatbot=first.chatbot,
            persona=first.persona,
            user_agent=first.user_agent,
            count=max(h.session.count for h in heads if h.session is not None),
            sessions=[
                ArcSession(
                    id=h.id,
                    index=h.session.index if h.session is not None else 0,
                    type=h.session.type if h.session is not None else "",
                    status=h.status,
                    turns=h.n_turns,
                    ratings=ratings.get((run_index, h.id), {}),
                )
                for h in heads
            ],
            dimensions=self.dimensions,
        )

    # -- one conversation ------------------------------------------------------------------

    def page(self, run_index: int, conversation_id: str) -> ConversationPage | None:
        """Everything one conversation's page shows, read by offset; None if unknown."""
        if not 0 <= run_index < len(self.runs):
            return None
        run = self.runs[run_index]
        if conversation_id not in run.records.conversations:
            return None
        return read_conversation_page(run.records, conversation_id, run.questions, run_label=run.label)


# ---------------------------------------------------------------------------------------
# Frames
# ---------------------------------------------------------------------------------------


def _signature(runs: Sequence[ViewerRun]) -> tuple[tuple[int, int], ...]:
    """Size and modification time of each run's record files: changes when a record is
    added (they are only ever appended to, or replaced whole)."""
    out = []
    for run in runs:
        for name in ("conversations.jsonl", "judgements.jsonl"):
            try:
                st = (run.path / name).stat()
            except OSError:
                out.append((-1, -1))
            else:
                out.append((st.st_size, st.st_mtime_ns))
    return tuple(out)


_CONVERSATION_SCHEMA: dict[str, Any] = {
    "run": pl.Int32,
    "order": pl.Int32,
    "id": pl.Utf8,
    "chatbot": pl.Utf8,
    "user_agent": pl.Utf8,
    "persona": pl.Utf8,
    "risk": pl.Utf8,
    "risk_order": pl.Int32,
    "seed": pl.Int64,
    "status": pl.Utf8,
    "error": pl.Utf8,
    "turns": pl.Int32,
    "judgements": pl.Int32,
    "failed_judgements": pl.Int32,
}


def _conversation_frame(runs: Sequence[ViewerRun]) -> pl.DataFrame:
    cols: dict[str, list[Any]] = {name: [] for name in _CONVERSATION_SCHEMA}
    risk_order = {level: i for i, level in enumerate(RISK_LEVELS)}
    for run in runs:
        counts: dict[str, list[int]] = {}
        for judgement, _ in run.records.judgements.values():
            n = counts.setdefault(judgement.conversation_id, [0, 0])
            n[0] += 1
            n[1] += judgement.status != "complete"
        seeds = run.records.manifest.seeds
        for order, (head, _) in enumerate(run.records.conversations.values()):
            judged, failed = counts.get(head.id, (0, 0))
            # The seed a reader knows is the run's seed (a replicate), not the one
            # derived for each conversation.
            seed = seeds[head.replicate] if 0 <= head.replicate < len(seeds) else head.seed
            for name, value in (
                ("run", run.index),
                ("order", order),
                ("id", head.id),
                ("chatbot", head.chatbot),
                ("user_agent", head.user_agent),
                ("persona", head.persona),
                ("risk", head.risk),
                ("risk_order", risk_order.get(head.risk, len(RISK_LEVELS))),
                ("seed", seed),
                ("status", head.status),
                ("error", head.error),
                ("turns", head.n_turns),
                ("judgements", judged),
                ("failed_judgements", failed),
            ):
                cols[name].append(value)
    return pl.DataFrame(cols, schema=_CONVERSATION_SCHEMA)


def _judgement_frame(runs: Sequence[ViewerRun]) -> pl.DataFrame:
    cols: dict[str, list[Any]] = {
        "run": [],
        "id": [],
        "judgement": [],
        "judge": [],
        "instance": [],
        "status": [],
    }
    for run in runs:
        for head, _ in run.records.judgements.values():
            cols["run"].append(run.index)
            cols["id"].append(head.conversation_id)
            cols["judgement"].append(head.id)
            cols["judge"].append(head.judge)
            cols["instance"].append(head.instance)
            cols["status"].append(head.status)
    schema = {"run": pl.Int32, "id": pl.Utf8, "judgement": pl.Utf8, "judge": pl.Utf8, "instance": pl.Int64}
    return pl.DataFrame(cols, schema=schema | {"status": pl.Utf8})


def _rating_frame(runs: Sequence[ViewerRun]) -> pl.DataFrame:
    """One row per rating of every complete judgement (what a score would count)."""
    cols: dict[str, list[Any]] = {
        "run": [],
        "id": [],
        "judge": [],
        "instance": [],
        "dimension": [],
        "rating": [],
    }
    for run in runs:
        for head, _ in run.records.judgements.values():
            if head.status != "complete":
                continue
            for r in head.ratings:
                cols["run"].append(run.index)
                cols["id"].append(head.conversation_id)
                cols["judge"].append(head.judge)
                cols["instance"].append(head.instance)
                cols["dimension"].append(r.dimension)
                cols["rating"].append(r.rating)
    schema = {"run": pl.Int32, "id": pl.Utf8, "judge": pl.Utf8, "instance": pl.Int64, "dimension": pl.Utf8}
    return pl.DataFrame(cols, schema=schema | {"rating": pl.Utf8})


def _dimension_order(runs: Sequence[ViewerRun], ratings: pl.DataFrame) -> list[str]:
    """The rubrics' dimensions in their order, then any others the ratings name."""
    seen: list[str] = []
    for run in runs:
        for d in run.questions.dimensions:
            if d not in seen:
                seen.append(d)
    for d in ratings.get_column("dimension").unique(maintain_order=True).to_list():
        if d not in seen:
            seen.append(d)
    return seen
