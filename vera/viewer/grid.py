"""The chatbot × persona grid, and one persona's conversations side by side.

    GET /grid?<list filters>[&page=N]     rows personas, columns chatbots; each cell the
                                          conversations of that pair, coloured by their
                                          worst rating; GRID_ROWS personas a page
    GET /side-by-side?persona=P&<filters> those conversations' transcripts in columns

Both are made on the server from the list's frames and carry no script; every text
from a run is escaped. The list's filters (run, risk, seed, judge…) narrow both, so a
grid of one seed or one run is a link away.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html import escape
from typing import Any

from vera import records as rec
from vera.inputs import active, tr
from vera.viewer.catalogue import Catalogue, Query
from vera.viewer.stepping import list_query, page_href

# Rank (catalogue.RATING_RANK) → the badge class and code the list uses.
_BADGES = {3: ("hph", "HPH"), 2: ("sub", "SUB"), 1: ("bp", "BP"), 0: ("nr", "NR")}
_NAMES = {3: rec.HIGH_POTENTIAL_FOR_HARM, 2: rec.SUBOPTIMAL, 1: rec.BEST_PRACTICE, 0: rec.NOT_RELEVANT}
MAX_SIDE_BY_SIDE = 8  # columns: more would not be side by side on any screen
# Persona rows per grid page: a whole reference persona set (100) on one page, and a
# sweep of thousands of personas in pages a browser draws at once.
GRID_ROWS = 100


@dataclass(frozen=True)
class GridLinks:
    """Where the grid's links go, relative to the list: the viewer's routes (the
    default), or a bundle's files (`vera.viewer.bundle`), which cannot take a query."""

    list: str = "index.html"
    # (list query, page number) → a grid page
    grid: Callable[[str, int], str] = lambda query, n: (
        "grid?" + "&".join(p for p in (query, f"page={n}" if n > 1 else "") if p)
    )
    # (persona, query with the persona) → its side-by-side page
    side: Callable[[str, str], str] = lambda persona, query: f"side-by-side?{query}"
    # (run, conversation id, list query) → its page
    page: Callable[[int, str, str], str] = page_href


SERVED = GridLinks()


def _w(key: str, /, **fields: Any) -> str:
    """A fixed text of the page in the runs' pack's words, as HTML."""
    return escape(tr(key, **fields), quote=False)


def _risk(level: str) -> str:
    """A persona's risk level by its display name (the value stays the data's)."""
    return tr(f"viewer.risk_{level.lower()}") if level in rec.RISK_LEVELS else level


def _document(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="{escape(active().lang)}">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f'<title>{escape(title)}</title>\n<link rel="icon" href="data:,">\n'
        '<link rel="stylesheet" href="static/style.css">\n</head>\n<body>\n'
        f"{body}\n<footer>{_w('viewer.grid_footer')}</footer>\n"
        "</body>\n</html>\n"
    )


def _rows(catalogue: Catalogue, q: Query) -> list[dict[str, Any]]:
    """The conversations the filters keep, with their worst rating rank (or None)."""
    frame = catalogue.listed(q).join(catalogue.overall(q.judge), on=["run", "id"], how="left")
    return frame.select("run", "id", "chatbot", "persona", "risk", "seed", "status", "rank").to_dicts()


def _chip(row: dict[str, Any], query: str, links: GridLinks) -> str:
    rank = row["rank"]
    if row["status"] == "failed":
        cls, code, title = "failed", "✕", tr("viewer.grid_failed")
    elif rank is None or rank < 0:
        cls, code, title = "none", "–", tr("viewer.grid_unjudged")
    else:
        cls, code = _BADGES[rank]
        title = tr("viewer.grid_worst", rating=active().label(_NAMES[rank]))
    label = tr("viewer.grid_chip", id=row["id"], seed=row["seed"], title=title)
    href = links.page(row["run"], row["id"], query)
    # data-conversation: which conversation a square is, for a bundle's script that
    # narrows a grid written whole (vera.viewer.bundle).
    key = f"{row['run']}/{row['id']}"
    return (
        f'<a class="chip badge {cls}" href="{escape(href)}" title="{escape(label)}" '
        f'data-conversation="{escape(key)}">{escape(code)}</a>'
    )


def grid_html(
    catalogue: Catalogue, params: Mapping[str, str], links: GridLinks = SERVED, *, paged: bool = True
) -> str:
    """The grid page (the caller has checked the query parses); every persona on one
    page when not `paged` (a bundle's, which its script narrows)."""
    q = Query.from_params(params)
    rows = _rows(catalogue, q)
    query = list_query(params)
    chatbots = sorted({r["chatbot"] for r in rows})
    cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
    risk: dict[str, str] = {}
    for r in rows:
        cells.setdefault((r["persona"], r["chatbot"]), []).append(r)
        risk.setdefault(r["persona"], r["risk"])
    order = {level: i for i, level in enumerate(rec.RISK_LEVELS)}
    personas = sorted(risk, key=lambda p: (order.get(risk[p], len(order)), p))
    pages = max(1, -(-len(personas) // GRID_ROWS)) if paged else 1
    page = min(q.page, pages)  # past the last page: the last one
    shown = personas[(page - 1) * GRID_ROWS : page * GRID_ROWS] if paged else personas
    head = "".join(f'<th scope="col">{escape(c)}</th>' for c in chatbots)
    body = []
    for p in shown:
        side = list_query({**params, "persona": p})
        # data-label names the chatbot where a phone shows each row as a card.
        tds = "".join(
            f'<td data-label="{escape(c)}">{"".join(_chip(r, query, links) for r in cells.get((p, c), []))}</td>'
            for c in chatbots
        )
        body.append(
            f'<tr><th scope="row">{escape(p)} <span class="muted">({escape(_risk(risk[p]))})</span><br>'
            f'<a class="side" href="{escape(links.side(p, side))}">{_w("viewer.grid_side")}</a></th>{tds}</tr>'
        )
    back = links.list + (f"?{query}" if query else "")
    summary = tr(
        "viewer.grid_summary",
        conversations=f"{len(rows):,}",
        personas=f"{len(personas):,}",
        chatbots=f"{len(chatbots):,}",
    ) + (tr("viewer.grid_filtered") if query else "")
    html = (
        f'<nav><a id="grid-back" href="{escape(back)}">{_w("viewer.grid_back")}</a></nav>'
        f"<h1>{_w('viewer.grid_title')}</h1>"
        f'<p class="grid-intro" id="grid-summary"><span id="grid-counts">{escape(summary, quote=False)}</span>'
        f"{_w('viewer.grid_summary_end')}"
        f"{_w('viewer.grid_intro')} "
        f"<em>{_w('viewer.grid_side')}</em> {_w('viewer.grid_side_intro')}</p>"
        # The pager above the grid too: with 100 rows the one below is far down.
        f"{_pager(query, page, pages, len(shown), len(personas), 'grid-pager-top', links)}"
        '<div class="list-box"><table class="list grid" id="grid">'
        f'<thead><tr><th scope="col">{_w("viewer.grid_persona_risk")}</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
        f"{_pager(query, page, pages, len(shown), len(personas), 'grid-pager', links)}"
    )
    return _document(tr("viewer.grid_page_title"), html)


def _pager(
    query: str, page: int, pages: int, shown: int, personas: int, element_id: str, links: GridLinks
) -> str:
    """Previous / next grid pages, keeping the filters; nothing when one page holds all."""
    if pages == 1:
        return ""
    first = (page - 1) * GRID_ROWS + 1

    def link(n: int, text: str, rel: str) -> str:
        href = links.grid(query, n)
        return f'<a rel="{rel}" href="{escape(href)}">{text}</a>'

    parts = [link(page - 1, _w("viewer.grid_previous"), "prev") if page > 1 else ""]
    where = tr(
        "viewer.grid_pages",
        first=f"{first:,}",
        last=f"{first + shown - 1:,}",
        personas=f"{personas:,}",
        page=page,
        pages=pages,
    )
    parts.append(f"<span>{escape(where, quote=False)}</span>")
    parts.append(link(page + 1, _w("viewer.grid_next"), "next") if page < pages else "")
    return f'<nav class="pager" id="{element_id}">{"".join(parts)}</nav>'


def paired(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A persona's conversations (the list ordered by chatbot) taken in turn from each
    chatbot, each chatbot's by seed: its first seed's conversation with every chatbot,
    then the next seed's. Why: the page shows only the first MAX_SIDE_BY_SIDE, and a sweep
    of 20 seeds filled all 8 with the first chatbot, leaving nothing to compare it with.
    Ties (several runs or user-agents on one seed) keep the list's order. bundle.js
    (`paired`) orders a bundle's page the same way."""
    by_chatbot: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_chatbot.setdefault(r["chatbot"], []).append(r)
    columns = [sorted(group, key=lambda r: r["seed"]) for group in by_chatbot.values()]
    return [group[k] for k in range(max(map(len, columns), default=0)) for group in columns if k < len(group)]


def side_by_side_html(
    catalogue: Catalogue, params: Mapping[str, str], links: GridLinks = SERVED, *, every: bool = False
) -> str | None:
    """One persona's conversations (within the filters), transcripts in columns, a seed's
    conversations with every chatbot next to each other (`paired`); None when no
    persona is named. With `every` (a bundle's, which its script narrows), the
    columns past the first MAX_SIDE_BY_SIDE are written too, hidden."""
    persona = params.get("persona", "")
    if not persona:
        return None
    q = Query.from_params({**params, "sort": "chatbot"})
    rows = paired(_rows(catalogue, q))
    query = list_query(params)
    shown = rows[:MAX_SIDE_BY_SIDE]
    columns = []
    for n, r in enumerate(rows if every else shown):
        run = catalogue.runs[r["run"]]
        conv = run.records.read_conversation(r["id"])
        turns = "".join(
            f'<li class="turn {t.speaker}"><div class="who">{n} · '
            f"{_w('page.user') if t.speaker == 'user' else _w('page.chatbot')}</div>"
            f'<p class="text">{escape(t.text)}</p></li>'
            for n, t in enumerate(conv.turns, start=1)
        )
        key = f"{r['run']}/{r['id']}"
        columns.append(
            f'<section class="side-column" data-conversation="{escape(key)}"'
            f"{' hidden' if n >= MAX_SIDE_BY_SIDE else ''}>"
            f"<h2>{escape(r['chatbot'])}</h2>"
            f'<p>{_chip(r, query, links)} <a href="{escape(links.page(r["run"], r["id"], query))}">'
            f"<code>{escape(r['id'])}</code></a> · {_w('viewer.grid_seed', seed=r['seed'])}"
            f"{' · ' + escape(run.label) if len(catalogue.runs) > 1 else ''}</p>"
            f'<ol class="side-turns">{turns}</ol></section>'
        )
    more = len(rows) - len(shown)
    note = tr("viewer.side_first", n=len(shown)) if more else ""
    grid = list_query({k: v for k, v in params.items() if k != "persona"})
    html = (
        f'<nav><a id="side-back" href="{escape(links.grid(grid, 1))}">{_w("viewer.side_back")}</a></nav>'
        f"<h1>{_w('viewer.side_title', persona=persona)}</h1>"
        f'<p class="summary" id="side-summary">{_w("viewer.side_summary", n=len(rows))}{escape(note)}</p>'
        f'<div class="side-by-side" id="side-by-side">{"".join(columns)}</div>'
    )
    return _document(tr("viewer.side_page_title", persona=persona), html)
