"""The comparison page (`vera compare --html`): self-contained HTML5 in the card page's
style (vera.report.card._html), every text from a run escaped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

import msgspec

from vera.inputs import phrase, tr
from vera.report.card._html import (
    figure,
    html_section,
    html_table,
    offline_banner,
    page,
)
from vera.report.card._plots import Plot
from vera.report.card._schema import RunComparison, SeedAgreement
from vera.report.card._sequence import failed_note_of, sequential_note_of
from vera.report.compare._tables import compare_tables, pairs_by_dimension_table
from vera.report.shared._numbers import num, percent_level
from vera.report.shared._table import Table


def render_compare_html(
    result: RunComparison, plots: Sequence[Plot], unit_links: Mapping[str, str] | None = None
) -> str:
    """The page of `vera compare --html`: runs, scores, charts, paired differences.
    `unit_links` (unit → URL; the viewer's list of that unit's conversations) makes each
    score row's chatbot a link to the conversations behind its numbers."""
    tables = compare_tables(result)
    if unit_links:
        links = [unit_links.get(u.unit, "") for u in result.units]
        scores = "".join(html_table(t, links=links) for t in tables.scores)
    else:
        scores = "".join(html_table(t) for t in tables.scores)
    title = tr("card.compare_title")
    body = [f"<header><h1>{escape(title)}</h1>"]
    if any(r.offline for r in result.runs):
        body.append(offline_banner(tr("card.compare_offline"), badge=tr("card.compare_offline_badge")))
    if result.forced_differences:
        items = "".join(f"<li>{escape(d)}</li>" for d in result.forced_differences)
        body.append(
            f'<div class="warning"><strong>{escape(tr("card.compare_forced"))}</strong>'
            f"<ul>{items}</ul>{escape(tr('card.compare_not_comparable'))}</div>"
        )
    for run in result.runs:
        # A gate's run covers a random subset of its baseline's units: the page says so,
        # as `vera compare` does on the terminal.
        if run.sequential is not None:
            note = sequential_note_of(run.label, run.sequential)
            if (failed := failed_note_of(run.sequential)) is not None:
                note += f" {failed}"  # the units it left out as failed, as the gate said it
            body.append(f'<div class="warning">{escape(note)}</div>')
    body += [html_table(tables.runs), "</header>", "<main>"]
    guide = tr("card.compare_guide", confidence=percent_level(result.bootstrap.confidence))
    how_to_read = html_section(
        "how-to-read", tr("card.compare_how_to_read"), f'<p class="guide">{escape(guide)}</p>'
    )
    if tables.across is None:
        pairs = "".join(html_table(t) for t in tables.pairs)
        body.append(how_to_read)
        body.append(html_section("scores", tr("card.compare_scores"), scores))
        body.append(html_section("charts", tr("card.compare_charts"), *(figure(p) for p in plots)))
        body.append(html_section("pairs", tr("card.compare_pairs"), pairs))
    else:
        # By seed, every pair on two tables (overall, then per dimension), not one each.
        pairs = html_table(tables.pairs[0]) + html_table(pairs_by_dimension_table(result.comparisons))
        body += _by_seed_sections(result, tables.across, tables.by_seed, plots, scores, pairs, how_to_read)
    body.append("</main>")
    b = result.bootstrap
    footer = tr(
        "card.compare_footer",
        method=phrase(b.method),
        resamples=num(b.resamples),
        confidence=num(b.confidence),
        seed=num(b.seed),
    )
    body.append(f"<footer>{escape(footer)}</footer>")
    return page(title, body)


def _by_seed_sections(
    result: RunComparison,
    across: Table,
    by_seed: Sequence[Table],
    plots: Sequence[Plot],
    scores: str,
    pairs: str,
    how_to_read: str,
) -> list[str]:
    """A comparison by seed reads summary first: each two chatbots across seeds (the
    summary, the chart of their per-seed differences, each seed by seed in a fold), then
    the scores of every replicate and every pair, folded. At 20 seeds the pairs are 780
    tables: unfolded, they made the page's first view a wall of numbers."""
    seed_charts = [p for p in plots if p.name == "seed_differences.png"]
    score_charts = [p for p in plots if p.name != "seed_differences.png"]
    folds = [
        _fold(tr("card.compare_seed_fold", a=p.a, b=p.b), html_table(t))
        for p, t in zip(_across(result), by_seed, strict=True)
    ]
    flagged = sum(1 for e in result.comparisons if e.overall.excludes_zero)
    every = tr("card.compare_pairs_fold", pairs=num(len(result.comparisons)), flagged=num(flagged))
    rows = tr("card.compare_scores_fold", n=num(len(result.units)))
    return [
        html_section(
            "across-seeds",
            tr("card.compare_across_seeds"),
            f'<p class="guide">{escape(tr("card.compare_across_seeds_guide"))}</p>',
            html_table(across),
            *(figure(p) for p in seed_charts),
            *folds,
        ),
        how_to_read,
        html_section(
            "scores",
            tr("card.compare_scores"),
            _fold(rows, scores + "".join(figure(p) for p in score_charts)),
        ),
        html_section("pairs", tr("card.compare_pairs"), _fold(every, pairs, anchor="every-pair")),
    ]


def _across(result: RunComparison) -> list[SeedAgreement]:
    return [] if isinstance(result.across_seeds, msgspec.UnsetType) else result.across_seeds


def _fold(summary: str, content: str, *, anchor: str = "") -> str:
    """Content behind a closed fold (no script: the browser opens it)."""
    ident = f' id="{escape(anchor)}"' if anchor else ""
    return f"<details{ident}><summary>{escape(summary, quote=False)}</summary>{content}</details>"
