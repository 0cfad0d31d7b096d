"""The comparison page (`vera compare --html`): self-contained HTML5 in the card page's
style (vera.report.card._html), every text from a run escaped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from vera.report.card._html import (
    figure,
    html_section,
    html_table,
    offline_banner,
    page,
)
from vera.report.card._plots import Plot
from vera.report.card._schema import RunComparison
from vera.report.compare._tables import COMPARE_GUIDE, compare_tables
from vera.report.shared._numbers import num, percent_level


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
    body = ["<header><h1>vera comparison</h1>"]
    if any(r.offline for r in result.runs):
        body.append(
            offline_banner(
                "At least one of these runs is an offline run with vera's built-in stand-ins; "
                "its numbers say nothing about any real chatbot.",
                badge="Offline stand-ins:",
            )
        )
    if result.forced_differences:
        items = "".join(f"<li>{escape(d)}</li>" for d in result.forced_differences)
        body.append(
            '<div class="warning"><strong>Compared with --force although the runs differ:</strong>'
            f"<ul>{items}</ul>Scores from different rubric, persona or prompt versions are not comparable.</div>"
        )
    body += [html_table(tables.runs), "</header>", "<main>"]
    guide = COMPARE_GUIDE.format(confidence=percent_level(result.bootstrap.confidence))
    body.append(
        html_section("how-to-read", "How to read this comparison", f'<p class="guide">{escape(guide)}</p>')
    )
    body.append(html_section("scores", "Scores", scores))
    body.append(html_section("charts", "Charts", *(figure(p) for p in plots)))
    body.append(html_section("pairs", "Paired differences", *(html_table(t) for t in tables.pairs)))
    body.append("</main>")
    b = result.bootstrap
    body.append(
        f"<footer>Intervals: {escape(b.method)} over personas, {num(b.resamples)} resamples, "
        f"confidence {num(b.confidence)}, seed {num(b.seed)}.</footer>"
    )
    return page("vera comparison", body)
