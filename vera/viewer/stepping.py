"""Previous / next on a conversation page, within the list the reader came from.

The list's links carry its filters, search and sort in their query string; the page
keeps that query string on its own links, so stepping (and reloading, and going back to
the list) stays within the same list. Conversation pages have no script: the links are
made here, on the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from urllib.parse import quote, urlencode

from vera.inputs import tr
from vera.viewer.catalogue import Catalogue, Query, QueryError

# The list's own parameters; anything else in a page's query string is dropped.
LIST_PARAMS = (
    "q",
    "run",
    "chatbot",
    "persona",
    "risk",
    "seed",
    "user_agent",
    "judge",
    "dimension",
    "rating",
    "status",
    "differ",
    "sort",
    "desc",
    "per_page",
)


def list_query(params: Mapping[str, str]) -> str:
    """The list's parameters of a query string, re-encoded (the page is not one of them:
    the position decides it)."""
    return urlencode([(k, params[k]) for k in LIST_PARAMS if params.get(k)])


def page_href(run_index: int, conversation_id: str, query: str, *, prefix: str = "") -> str:
    """A conversation's page, relative to the list (or, with `prefix`, to another page)."""
    return f"{prefix}runs/{run_index}/conversations/{quote(conversation_id, safe='')}.html" + (
        f"?{query}" if query else ""
    )


def steps_html(catalogue: Catalogue, params: Mapping[str, str], run_index: int, conversation_id: str) -> str:
    """The step bar for one page: previous, "n of N in the list" (back to that list, at
    the page holding this conversation), next. Empty when the query is not a valid list
    or the list does not hold this conversation."""
    try:
        q = Query.from_params(params)
    except QueryError:
        return ""
    found = catalogue.neighbours(q, run_index, conversation_id)
    if found is None:
        return ""
    query = list_query(params)
    page = found.position // q.per_page + 1
    list_href = "../../../index.html?" + "&".join(x for x in (query, f"page={page}" if page > 1 else "") if x)

    def link(target: tuple[int, str] | None, label: str, rel: str) -> str:
        if target is None:
            return f'<span class="off">{label}</span>'
        return f'<a rel="{rel}" href="{escape(page_href(*target, query, prefix="../../../"))}">{label}</a>'

    narrowed = any(params.get(k) for k in LIST_PARAMS if k not in ("sort", "desc", "per_page"))
    where = tr(
        "viewer.step_in_filtered" if narrowed else "viewer.step_in_list",
        n=f"{found.position + 1:,}",
        total=f"{found.total:,}",
    )
    return (
        f'<nav class="steps" aria-label="{escape(tr("viewer.aria_steps"))}">'
        + link(found.previous, escape(tr("viewer.step_previous"), quote=False), "prev")
        + f' <a href="{escape(list_href.rstrip("?"))}">{escape(where, quote=False)}</a> '
        + link(found.next, escape(tr("viewer.step_next"), quote=False), "next")
        + "</nav>"
    )
