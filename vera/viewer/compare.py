"""The viewer's comparison page: `vera compare` over the runs being viewed, each score
row linking to the list of the conversations behind it (that run, that chatbot and,
compared by seed, that seed), so a number can be checked against what was said.

Runs that are not comparable (different rubric, persona or prompt versions, or
terminal semantics) get a page saying why in words, not a comparison made anyway; the
list does not offer the link then (`comparable`). The comparison itself takes seconds
(a bootstrap), so the viewer computes it off the request path, once per state of the
runs, and serves `frame_page` until it is there (`vera.viewer.app`).
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from vera.errors import UserError
from vera.inputs import active, run_strings, tr, use_strings
from vera.report import RunComparison, compare_runs, comparison_plots, read_run, render_compare_html
from vera.stats import check_comparable
from vera.viewer.catalogue import Catalogue

# What a page of its own needs, as the card looks (the comparison page has its own style).
_STYLE = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;"
    "max-width:60rem;margin:0 auto;padding:1rem;color:#1a1a1a;line-height:1.5;overflow-wrap:anywhere}"
    "h1{font-size:1.4rem}nav{margin:.3rem 0 1rem}a{color:#005a8e}"
    ".reason{border-left:5px solid #E69F00;background:#fff8e6;padding:.6rem 1rem}"
    ".reason li{margin:.3rem 0}.wait{color:#444}"
)


# Links are relative to the page (the list is index.html beside /compare), so the viewer
# works under a prefix (`vera view FOLDER`) and as a bundle opened from disk.
# From a run's card (runs/<k>/card.html) the list is at ../../index.html.
def back_nav(list_href: str = "index.html") -> str:
    """The way back to the list, in the active strings' words."""
    return (
        f'<nav aria-label="{escape(tr("viewer.aria_page"))}"><a href="{escape(list_href)}">'
        f"{escape(tr('page.all_conversations'), quote=False)}</a></nav>"
    )


# The frame reloads itself at once; the server holds that reload (`wait=1`) until the
# comparison is there, so the browser shows the frame meanwhile and then the page.
# Relative, as the links above.
FRAME_RELOAD = "0; url=compare?wait=1"


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
        links[u.unit] = "index.html?" + urlencode(params)
    return links


def comparable(catalogue: Catalogue) -> list[str]:
    """Why the runs being viewed cannot be compared, in words (empty: they can). From
    the manifests alone, so it costs nothing: the list asks it before offering the link."""
    manifests = [r.records.manifest for r in catalogue.runs]
    names = [r.label for r in catalogue.runs]
    reasons = []
    semantics = {m.terminal_semantics for m in manifests}
    if len(semantics) > 1:
        reasons.append(
            "the runs were judged with different rules for where the rubric's walk ends "
            f"({', '.join(f'{n}: {m.terminal_semantics}' for n, m in zip(names, manifests, strict=True))}), "
            "so the same answers would give different ratings; judge them again with the same rules"
        )
    for problem in check_comparable(manifests, names=names):
        reasons.append(_in_words(problem))
    return reasons


def _in_words(problem: str) -> str:
    what = {
        "locale": "the locale packs differ",
        "rubric": "the rubric differs",
        "personas": "the personas differ",
        "user_prompts": "the simulated user's prompts differ",
        "judge_prompts": "the judge's prompts differ",
    }
    key, _, rest = problem.partition(" differs: ")
    return f"{what.get(key, key + ' differs')}: {rest}; scores made with different versions do not measure the same thing"


def compare_page(
    catalogue: Catalogue, *, by_seed: bool = False, reads: dict[Any, Any] | None = None
) -> tuple[int, str]:
    """(HTTP status, page): the comparison, or the reason there is none. `reads` keeps
    the runs as read for one state of them (by chatbot and by seed read them once)."""
    # On the comparison's own thread: the runs' pack's words for what the viewer adds.
    with use_strings(run_strings(r.records.manifest for r in catalogue.runs)):
        return _compare_page(catalogue, by_seed=by_seed, reads=reads)


def _compare_page(catalogue: Catalogue, *, by_seed: bool, reads: dict[Any, Any] | None) -> tuple[int, str]:
    reasons = comparable(catalogue)
    if reasons:
        return 409, refusal_page(reasons)
    kept = {} if reads is None else reads
    state = catalogue.signature
    for old in [k for k in kept if k[1] != state]:
        del kept[old]

    def read(path: str | Path) -> Any:
        key = (str(path), state)
        if key not in kept:
            kept[key] = read_run(path)
        return kept[key]

    try:
        result = compare_runs([r.path for r in catalogue.runs], by_seed=by_seed, read=read)
    except UserError as e:
        # Whatever else `vera compare` refuses (nothing judged yet, one chatbot only), in
        # its words, without the command line's advice.
        return 409, refusal_page([re.sub(r" \(use --\w+[^)]*\)$", "", str(e))])
    if not result.units:
        return 409, refusal_page(["no chatbot has a judged conversation yet"])
    html = render_compare_html(result, comparison_plots(result), unit_links(result, catalogue))
    return 200, html.replace("<body>\n", "<body>\n" + back_nav() + "\n", 1)


def _page(title: str, body: str, *, head: str = "") -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="{escape(active().lang)}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"{head}<title>{escape(title)}</title><style>{_STYLE}</style></head><body>{back_nav()}{body}</body></html>\n"
    )


def refusal_page(reasons: list[str]) -> str:
    items = "".join(f"<li>{escape(r)}</li>" for r in reasons)
    return _page(
        tr("viewer.compare_refused_title"),
        f"<h1>{escape(tr('viewer.compare_refused'), quote=False)}</h1>"
        f'<div class="reason"><p>{escape(tr("viewer.compare_refused_why"), quote=False)}</p>'
        f"<ul>{items}</ul></div>"
        f"<p>{escape(tr('viewer.compare_refused_still'), quote=False)}</p>",
    )


def frame_page(runs: int, *, by_seed: bool) -> str:
    """Served at once while the comparison is computed; reloads itself until it is there
    (a meta refresh: the comparison pages run no script)."""
    wait = tr("viewer.compare_wait_seed" if by_seed else "viewer.compare_wait", runs=runs)
    return _page(
        tr("viewer.compare_computing"),
        f"<h1>{escape(tr('viewer.compare_title'), quote=False)}</h1>"
        f'<p class="wait" role="status">{escape(wait, quote=False)}</p>',
        head=f'<meta http-equiv="refresh" content="{escape(FRAME_RELOAD + ("&by_seed=1" if by_seed else ""))}">',
    )
