"""The viewer's comparison page: `vera compare` over the runs being viewed, each score
row linking to the list of the conversations behind it (that run, that chatbot and,
compared by seed, that seed), so a number can be checked against what was said.

Runs that are not comparable (different rubric, persona or prompt versions) get the
refusal `vera compare` prints, not a comparison made anyway.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from urllib.parse import urlencode

from vera.errors import UserError
from vera.report import RunComparison, compare_runs, comparison_plots, render_compare_html
from vera.viewer.catalogue import Catalogue


def unit_links(result: RunComparison, catalogue: Catalogue) -> dict[str, str]:
    """Each compared unit's conversation list in the viewer."""
    index = {r.path.resolve(): r.index for r in catalogue.runs}
    by_id = {run.run_id: index.get(Path(run.path).resolve()) for run in result.runs}
    links: dict[str, str] = {}
    for u in result.units:
        k = by_id.get(u.run_id)
        if k is None:
            continue
        params: dict[str, str | int] = {"run": k, "chatbot": u.chatbot}
        if u.seed is not None:
            params["seed"] = u.seed
        links[u.unit] = "/?" + urlencode(params)
    return links


def compare_page(catalogue: Catalogue, *, by_seed: bool = False) -> tuple[int, str]:
    """(HTTP status, page): the comparison, or the reason there is none."""
    try:
        result = compare_runs([r.path for r in catalogue.runs], by_seed=by_seed)
    except UserError as e:
        return 409, _refusal(str(e))
    if not result.units:
        return 409, _refusal("nothing to compare: no chatbot has a judged conversation yet")
    return 200, render_compare_html(result, comparison_plots(result), unit_links(result, catalogue))


def _refusal(reason: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>vera comparison</title>'
        "</head><body><h1>No comparison</h1>"
        f'<p>{escape(reason)}</p><p><a href="/">Back to the conversations</a></p></body></html>\n'
    )
