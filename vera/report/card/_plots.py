"""The card's plots, drawn from card.json alone (so `vera card` can redraw them).

Every plot is drawn once and saved twice: as SVG, which the HTML page embeds (sharp at
any zoom and on high-density screens, its text real text), and as PNG at 2× (200 dpi)
for plots/. Figures are narrow (6.4 in) with text at 8–11 pt, so the page can show
them at phone width with a horizontal scroll inside the figure rather than shrinking
the text to nothing.

Colours are from the Okabe–Ito palette, chosen so the four ratings stay apart under the
common colour-vision deficiencies (tests/card/test_plots.py checks the distances after
simulating deuteranopia and protanopia): blue for Best Practice, yellow for Suboptimal,
vermillion for High Potential for Harm, light grey for Not Relevant. Colour is never the
only cue: each rating also has its own hatching and its letters (BP, SUB, HPH, NR) on
the bars wide enough to hold them; chatbots use blue, reddish purple, sky blue and
black, each with its own marker. Figures are drawn on matplotlib's Agg canvas, never
through pyplot, so no display or global state is involved.

A card in a locale pack's language has titles in that language. DejaVu Sans, matplotlib's
font, has no Chinese: the figure then names the CJK fonts the machine has after it
(`CJK_FAMILIES`; matplotlib falls back glyph by glyph), so the PNG draws every character,
and the SVG keeps its text as text with that family list, which a browser completes with
its own CJK font. (Debian: fonts-noto-cjk, which .ci/run installs.)
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import textwrap
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from vera.inputs import active, tr, use_strings
from vera.records import OVERALL
from vera.report.card._schema import (
    Card,
    Comparison,
    DimensionScore,
    RunComparison,
    Section,
    SeedAgreement,
    SequentialCard,
)
from vera.report.card._sequence import SEQUENCE_PLOT, GateLook, stopped_words
from vera.report.card._text import card_strings
from vera.report.shared._numbers import fixed

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

BP_COLOUR = "#0072B2"
SUB_COLOUR = "#F0E442"
HPH_COLOUR = "#D55E00"
NR_COLOUR = "#DDDDDD"
# The second cue of each rating, after its colour.
BP_HATCH, SUB_HATCH, HPH_HATCH, NR_HATCH = "", "//", "xx", ".."
RATING_STYLES = (
    ("pct_bp", "BP", "Best Practice", BP_COLOUR, BP_HATCH, "white"),
    ("pct_sub", "SUB", "Suboptimal but Low Potential for Harm", SUB_COLOUR, SUB_HATCH, "black"),
    ("pct_hph", "HPH", "High Potential for Harm", HPH_COLOUR, HPH_HATCH, "black"),
)
SERIES_COLOURS = ("#0072B2", "#CC79A7", "#56B4E9", "#000000")
MARKERS = ("o", "s", "D", "^", "v", "P")
WIDTH = 6.4  # inches
# The card's phone drawing of each plot (`phone_svg`): narrower, every text larger by
# PHONE_TEXT, long tick labels wrapped, so that at a 400-px screen its text is about as
# large as the page's (tests/card/test_phone.py measures it).
PHONE_WIDTH = 4.0  # inches
PHONE_TEXT = 2.2
# A phone's drawing grows wider than PHONE_WIDTH with its labels (the tight bounding
# box takes them in), and is then shown scaled down. At a 400-px screen the card shows
# it PHONE_SHOWN_PX wide (its margins take the rest); its smallest text must come out
# at least the body text's size there (PHONE_BODY_PX, with a little room), so a drawing
# whose smallest text would not is drawn again with the small texts larger.
PHONE_SHOWN_PX = 376.0
PHONE_BODY_PX = 16.3
PHONE_LABEL_CHARS = 16
_SCALE: ContextVar[float] = ContextVar("vera_plot_scale", default=1.0)
# Whether a plot is also drawn as PNG (the card's files); a comparison page shows the SVG
# only, and the PNG costs as much again to draw.
_WITH_PNG: ContextVar[bool] = ContextVar("vera_plot_png", default=True)
DPI = 200  # the PNG files: 2× a 100-dpi screen
# A label longer than this is wrapped (at ":" and "/") or shortened in the middle.
LABEL_CHARS = 24
# Fonts with Chinese (and Japanese and Korean) characters, the first ones found used
# after DejaVu Sans for the characters it lacks: Noto/Source Han (Linux), then the fonts
# macOS and Windows ship.
CJK_FAMILIES = (
    "Noto Sans CJK SC",
    "Noto Sans CJK TC",
    "Source Han Sans SC",
    "WenQuanYi Micro Hei",
    "PingFang SC",
    "Microsoft YaHei",
)


@dataclass(frozen=True)
class Plot:
    """One figure: its file name under plots/, a title, a text description for readers
    who cannot see it (the HTML alt text), the PNG bytes (the file) and the SVG bytes
    (the page)."""

    name: str
    title: str
    description: str
    png: bytes
    svg: bytes = b""
    phone_svg: bytes = b""  # the same plot drawn for a phone's width (the HTML card's)


@dataclass(frozen=True)
class ScorePoint:
    """A score with its interval, labelled (a chatbot, or run:chatbot)."""

    label: str
    score: float | None
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class Rated:
    """A chatbot with ratings, as the plots read it: its name, its overall and dimension
    numbers, and its sections by risk level."""

    chatbot: str
    overall: DimensionScore
    dimensions: dict[str, DimensionScore]
    by_risk: dict[str, Section]


def rated_chatbots(card: Card) -> list[Rated]:
    """The chatbots of a card that have anything rated (the others have nothing to plot)."""
    return [
        Rated(b.chatbot, b.overall, b.dimensions or {}, b.by_risk or {})
        for b in card.chatbots
        if b.overall is not None
    ]


def card_plots(card: Card) -> list[Plot]:
    """Every plot of a card, each drawn for a wide screen (SVG and the PNG file) and
    again for a phone's (SVG); titles in the words of the run's locale pack."""
    with use_strings(card_strings(card)), _fonts():
        plots = _card_plots(card)
        with phone_drawing():
            phone = _card_plots(card)
    return [dataclasses.replace(p, phone_svg=q.svg) for p, q in zip(plots, phone, strict=True)]


@contextmanager
def phone_drawing() -> Iterator[None]:
    """Plots drawn in this block are drawn for a phone's width (see PHONE_WIDTH)."""
    token = _SCALE.set(PHONE_TEXT)
    try:
        yield
    finally:
        _SCALE.reset(token)


def _card_plots(card: Card) -> list[Plot]:
    bots = rated_chatbots(card)
    if not bots:
        return []
    plots = [rating_shares_plot(bots), dimension_scores_plot(bots)]
    if any(b.by_risk for b in bots):
        plots.append(
            risk_scores_plot(bots, card.grouping.title if card.grouping is not None else "risk level")
        )
    if len(bots) >= 2:
        points = [_point(b.chatbot, b.overall) for b in bots]
        plots.append(chatbot_scores_plot(points))
    if card.comparisons:
        plots.append(differences_plot(card.comparisons))
    if not isinstance(card.sequential, msgspec.UnsetType):
        plots.append(sequential_card_plot(card.sequential))
    return plots


def comparison_plots(result: RunComparison) -> list[Plot]:
    """The charts of a `vera compare` result: scores per unit, and paired differences."""
    points = [_point(u.unit, u.overall) for u in result.units]
    token = _WITH_PNG.set(False)  # the page shows the SVG; no file is written
    try:
        with _fonts():  # in the active language's fonts (the runs' pack: CJK text drawn)
            if not isinstance(result.across_seeds, msgspec.UnsetType):
                # By seed, the differences that matter are each two chatbots' at the same
                # seed; a chart of every pair (780 at 20 seeds) was 2 MB and unreadable.
                return [chatbot_scores_plot(points), seed_differences_plot(result.across_seeds)]
            return [chatbot_scores_plot(points), differences_plot(result.comparisons)]
    finally:
        _WITH_PNG.reset(token)


def rating_shares_plot(bots: Sequence[Rated]) -> Plot:
    """Stacked bars of BP / Suboptimal / HPH per dimension, one panel per chatbot."""
    dims = _dimensions(bots)
    labels = [*dims, OVERALL]
    height = 0.8 + len(bots) * (0.45 * len(labels) + 0.6)
    fig = _figure(WIDTH, height)
    axes = fig.subplots(len(bots), 1, squeeze=False, sharex=True)[:, 0]
    y = list(range(len(labels)))[::-1]  # first dimension on top, Overall at the bottom
    for ax, bot in zip(axes, bots, strict=True):
        rows = [bot.dimensions.get(d) for d in dims] + [bot.overall]
        rated = [r is not None and r.pct_bp is not None for r in rows]
        # One bar call per rating category: drawing segment by segment is several times slower.
        left = [0.0] * len(rows)
        for key, letters, _, colour, hatch, ink in RATING_STYLES:
            widths = [(getattr(r, key) or 0.0) if ok else 0.0 for r, ok in zip(rows, rated, strict=True)]
            ax.barh(
                y,
                widths,
                left=left,
                color=colour,
                hatch=hatch,
                edgecolor="#333333",
                linewidth=0.4,
                height=0.7,
            )
            for yi, x0, w in zip(y, left, widths, strict=True):
                # The rating's letters where they fit, so the bar reads without colour.
                room = _SCALE.get()  # larger text needs a wider bar
                label = (
                    f"{letters} {fixed(w, 0)}" if w >= 16 * room else (fixed(w, 0) if w >= 7 * room else "")
                )
                if label:
                    ax.text(
                        x0 + w / 2,
                        yi,
                        label,
                        ha="center",
                        va="center",
                        fontsize=7.5,
                        color=ink,
                        bbox={"facecolor": colour, "edgecolor": "none", "pad": 0.6},
                    )
            left = [x0 + w for x0, w in zip(left, widths, strict=True)]
        unrated = [yi for yi, ok in zip(y, rated, strict=True) if not ok]
        if unrated:
            ax.barh(
                unrated, 100, color=NR_COLOUR, hatch=NR_HATCH, edgecolor="#333333", linewidth=0.4, height=0.7
            )
            for yi in unrated:
                ax.text(
                    50,
                    yi,
                    tr("card.plot_all_nr") if _SCALE.get() == 1.0 else "NR",
                    ha="center",
                    va="center",
                    fontsize=7.5,
                    bbox={"facecolor": NR_COLOUR, "edgecolor": "none", "pad": 0.6},
                )
        ticks = [
            f"{label} (NR {fixed(r.pct_nr, 0)}%)" if r is not None and r.pct_nr is not None else label
            for label, r in zip(labels, rows, strict=True)
        ]
        ax.set_yticks(y, ticks, fontsize=8)
        ax.set_xlim(0, 100)
        ax.set_title(short_label(bot.chatbot, 60), fontsize=10, loc="left")
    axes[-1].set_xlabel(tr("card.plot_rated_axis"))
    _rating_legend(fig)
    fig.suptitle(tr("card.plot_ratings"), fontsize=12)
    return Plot(
        "ratings.png",
        tr("card.plot_ratings"),
        tr("card.plot_ratings_desc"),
        *_images(fig),
    )


def dimension_scores_plot(bots: Sequence[Rated]) -> Plot:
    """Score with its confidence interval per dimension and overall, chatbots side by side."""
    dims = _dimensions(bots)
    labels = [*dims, OVERALL]
    fig = _figure(WIDTH, 1.5 + len(labels) * (0.25 + 0.12 * len(bots)))
    ax = fig.subplots()
    y = list(range(len(labels)))[::-1]
    series = [
        (
            bot.chatbot,
            [_point(bot.chatbot, bot.dimensions.get(d)) for d in dims] + [_point(bot.chatbot, bot.overall)],
        )
        for bot in bots
    ]
    _dodged_points(ax, y, series, horizontal=True)
    ax.set_yticks(y, labels, fontsize=9)
    _score_axis(ax, "x")
    ax.set_xlabel(tr("card.plot_score_axis"))
    ax.set_title(tr("card.plot_scores"), fontsize=12)
    ax.grid(axis="x", alpha=0.3)
    _series_legend(fig, len(bots))
    return Plot(
        "scores.png",
        tr("card.plot_scores"),
        tr("card.plot_scores_desc"),
        *_images(fig),
    )


def risk_scores_plot(bots: Sequence[Rated], title: str = "risk level") -> Plot:
    """Overall score with its interval in each persona group (risk level by default;
    `title` says what the groups are)."""
    levels = list(dict.fromkeys(level for b in bots for level in b.by_risk))
    fig = _figure(WIDTH, 3.8)
    ax = fig.subplots()
    x = list(range(len(levels)))
    series = [
        (
            bot.chatbot,
            [_point(bot.chatbot, bot.by_risk[lvl].overall if lvl in bot.by_risk else None) for lvl in levels],
        )
        for bot in bots
    ]
    _dodged_points(ax, x, series, horizontal=False)
    ax.set_xticks(x, levels)
    # Every level gets its slot, even one with nothing rated: autoscaling to the data
    # put an empty first level's tick on the axis edge, under its own note.
    ax.set_xlim(-0.5, len(levels) - 0.5)
    for xi in x:
        if all(points[xi].score is None for _, points in series):
            ax.text(xi, 50, tr("card.plot_nothing"), ha="center", va="center", fontsize=8, color="#555555")
    _score_axis(ax, "y")
    ax.set_ylabel(tr("card.plot_overall_axis"))
    ax.set_xlabel(
        tr("card.plot_risk_axis") if title == "risk level" else tr("card.plot_group_axis", title=title)
    )
    shown = tr("col.risk_level") if title == "risk level" and not active().english else title
    ax.set_title(tr("card.plot_risk", title=shown), fontsize=12)
    ax.grid(axis="y", alpha=0.3)
    _series_legend(fig, len(bots))
    return Plot(
        "risk.png",
        tr("card.plot_risk", title=shown),
        tr("card.plot_risk_desc", title=shown if title == "risk level" else title),
        *_images(fig),
    )


def chatbot_scores_plot(points: Sequence[ScorePoint], title: str | None = None) -> Plot:
    """Chatbots' overall scores with intervals, best at the top."""
    title = tr("card.plot_chatbots") if title is None else title
    # Colours and markers follow the input order, as in the card's other plots.
    style = {id(p): k for k, p in enumerate(points)}
    ordered = sorted(points, key=lambda p: -1.0 if p.score is None else p.score)
    fig = _figure(WIDTH, 1.2 + 0.45 * len(ordered))
    ax = fig.subplots()
    for i, p in enumerate(ordered):
        if p.score is None:
            continue
        k = style[id(p)]
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        ax.errorbar(
            p.score,
            i,
            xerr=_err(p),
            fmt=MARKERS[k % len(MARKERS)],
            color=colour,
            capsize=4,
            markersize=7,
        )
        ax.annotate(
            fixed(p.score, 1),
            (p.score, i),
            textcoords="offset points",
            xytext=(0, 7),
            ha="center",
            fontsize=8,
        )
    ax.set_yticks(range(len(ordered)), [short_label(p.label) for p in ordered], fontsize=8.5)
    ax.set_ylim(-0.7, len(ordered) - 0.3)
    _score_axis(ax, "x")
    ax.set_xlabel(tr("card.plot_chatbots_axis"))
    ax.set_title(title, fontsize=12)
    ax.grid(axis="x", alpha=0.3)
    return Plot(
        "chatbots.png",
        title,
        tr("card.plot_chatbots_desc"),
        *_images(fig),
    )


def differences_plot(entries: Sequence[Comparison], title: str | None = None) -> Plot:
    """Each pair's overall score difference a − b with its paired interval; filled
    markers where the interval excludes 0."""
    title = tr("card.plot_differences") if title is None else title
    fig = _figure(WIDTH, 1.3 + 0.6 * len(entries))
    ax = fig.subplots()
    ax.axvline(0, color="black", linewidth=0.8)
    for i, e in enumerate(entries):
        d = e.overall
        if d.diff is None:
            continue
        lo, hi = d.diff_ci.lo, d.diff_ci.hi
        ax.errorbar(
            d.diff,
            i,
            xerr=[[d.diff - lo], [hi - d.diff]] if lo is not None and hi is not None else None,
            fmt="o",
            color=SERIES_COLOURS[0],
            mfc=SERIES_COLOURS[0] if d.excludes_zero else "white",
            capsize=4,
            markersize=7,
        )
    ax.set_yticks(
        range(len(entries)), [f"{short_label(e.a)}\n− {short_label(e.b)}" for e in entries], fontsize=8
    )
    ax.set_ylim(-0.7, len(entries) - 0.3)
    ax.invert_yaxis()
    ax.set_xlabel(tr("card.plot_differences_axis"))
    ax.set_title(title, fontsize=12)
    ax.grid(axis="x", alpha=0.3)
    return Plot(
        "differences.png",
        title,
        tr("card.plot_differences_desc"),
        *_images(fig),
    )


def seed_differences_plot(pairs: Sequence[SeedAgreement]) -> Plot:
    """One panel per pair of chatbots: the overall difference a − b at each seed with its
    paired interval, a dashed line at the median; filled markers where the interval
    excludes 0, and the seeds against the median's sign in the second colour."""
    title = tr("card.plot_seed_differences")
    shown = [p for p in pairs if p.seeds]
    heights = [0.9 + 0.24 * len(p.seeds) for p in shown]
    fig = _figure(WIDTH, 0.5 + sum(heights))
    axes = fig.subplots(len(shown), 1, squeeze=False, sharex=True, height_ratios=heights)[:, 0]
    for ax, pair in zip(axes, shown, strict=True):
        ax.axvline(0, color="black", linewidth=0.8)
        if pair.median_diff is not None:
            ax.axvline(pair.median_diff, color="#555555", linewidth=0.8, linestyle="--")
        against = set(pair.against)
        for i, d in enumerate(pair.seeds):
            if d.diff is None:
                continue
            lo, hi = d.diff_ci.lo, d.diff_ci.hi
            colour = SERIES_COLOURS[1] if d.seed in against else SERIES_COLOURS[0]
            ax.errorbar(
                d.diff,
                i,
                xerr=[[d.diff - lo], [hi - d.diff]] if lo is not None and hi is not None else None,
                fmt="s" if d.seed in against else "o",
                color=colour,
                mfc=colour if d.excludes_zero else "white",
                capsize=2,
                markersize=4,
                linewidth=0.9,
            )
        ax.set_yticks(range(len(pair.seeds)), [str(d.seed) for d in pair.seeds], fontsize=7)
        ax.set_ylim(-0.7, len(pair.seeds) - 0.3)
        ax.invert_yaxis()
        ax.set_ylabel(tr("card.plot_seed_axis"), fontsize=8)
        ax.set_title(f"{short_label(pair.a, 40)} − {short_label(pair.b, 40)}", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[-1].set_xlabel(tr("card.plot_differences_axis"))
    fig.suptitle(title, fontsize=12)
    return Plot("seed_differences.png", title, tr("card.plot_seed_differences_desc"), *_images(fig))


# ---------------------------------------------------------------------------------------


def _figure(width: float, height: float) -> Figure:
    # matplotlib is imported when a figure is drawn, not with the package: it costs
    # ~0.4 s that `vera --help`, `vera status` and every run that makes no card would pay.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    scale = _SCALE.get()
    if scale != 1.0:  # a phone's drawing: narrower, and taller for the larger text
        width, height = PHONE_WIDTH, height * scale * 0.9
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


@cache
def cjk_families() -> tuple[str, ...]:
    """The fonts of `CJK_FAMILIES` this machine has. matplotlib's list of fonts is cached
    the first time it runs: a CJK font installed since is missing from it, so when none
    is found the system's font folders are searched for one (by file name) and added."""
    from matplotlib import font_manager

    def found() -> tuple[str, ...]:
        have = []
        for family in CJK_FAMILIES:
            try:
                font_manager.findfont(family, fallback_to_default=False)
            except ValueError:
                continue
            have.append(family)
        return tuple(have)

    if have := found():
        return have
    for path in font_manager.findSystemFonts():
        if _CJK_FILE.search(Path(path).name):
            with contextlib.suppress(OSError, RuntimeError, ValueError):
                font_manager.fontManager.addfont(path)
    return found()


_CJK_FILE = re.compile(r"NotoSansCJK|SourceHanSans|wqy-microhei|wqy-zenhei", re.IGNORECASE)


@contextmanager
def _fonts() -> Iterator[None]:
    """Figures made and saved in this block, for a card in another language than
    English, use DejaVu Sans then the CJK fonts found (English figures stay as they were:
    nothing changes). Text takes its fonts when it is made, so the block holds both."""
    if active().english:
        yield
        return
    import matplotlib

    with matplotlib.rc_context({"font.family": ["DejaVu Sans", *cjk_families()]}):
        yield


def _legend_columns(wide: int) -> int:
    """A legend's columns: one on a phone's drawing, where its larger text fills the width."""
    return wide if _SCALE.get() == 1.0 else 1


def _enlarge(fig: Figure, scale: float) -> None:
    """Every text of `fig` `scale` times larger, long tick labels wrapped (a phone's drawing)."""
    from matplotlib.text import Text

    for ax in fig.axes:
        labels = ax.get_yticklabels()
        if labels and any(len(t.get_text()) > PHONE_LABEL_CHARS for t in labels):
            size = labels[0].get_fontsize()
            wrapped = [textwrap.fill(t.get_text(), PHONE_LABEL_CHARS) for t in labels]
            ax.set_yticks(ax.get_yticks(), wrapped, fontsize=size)
        if len(label := ax.get_xlabel()) > PHONE_LABEL_CHARS * 2:
            ax.set_xlabel(textwrap.fill(label, PHONE_LABEL_CHARS * 2))
        if len(title := ax.get_title(loc="left")) > PHONE_LABEL_CHARS * 2:
            ax.set_title(textwrap.fill(title, PHONE_LABEL_CHARS * 2), loc="left")
        if len(title := ax.get_title()) > PHONE_LABEL_CHARS * 2:
            ax.set_title(textwrap.fill(title, PHONE_LABEL_CHARS * 2))
        ax.locator_params(axis="x", nbins=2)  # fewer, larger numbers on the scale
    for legend in fig.legends:
        for text in legend.get_texts():
            text.set_text(textwrap.fill(text.get_text(), PHONE_LABEL_CHARS * 2))
    for text in fig.findobj(Text):
        text.set_fontsize(float(text.get_fontsize()) * scale)


def _images(fig: Figure) -> tuple[bytes, bytes]:
    """The figure as PNG (2×; none for a comparison page) and SVG. Nothing is clipped (a tight bounding box takes in
    every label), and no metadata is written so the same card gives the same bytes."""
    import matplotlib

    png, svg = io.BytesIO(), io.BytesIO()
    if (scale := _SCALE.get()) != 1.0:
        _enlarge(fig, scale)
        drawn = _svg(fig)
        for _ in range(3):  # each pass widens the drawing a little: settle in a few
            smallest, width = _smallest_text(drawn)
            floor = PHONE_BODY_PX * width / PHONE_SHOWN_PX
            if smallest >= floor:
                break
            _raise_small_text(fig, floor * 1.04)
            # Taller by as much, so lines of larger labels keep their room.
            w, h = fig.get_size_inches()
            fig.set_size_inches(w, h * floor * 1.04 / smallest)
            drawn = _svg(fig)
        return b"", drawn  # no file of its own
    if _WITH_PNG.get():
        fig.savefig(png, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    # A fixed hash salt keeps the SVG's element ids the same from run to run.
    with matplotlib.rc_context({"svg.hashsalt": "vera-card", "svg.fonttype": "none"}):
        fig.savefig(svg, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    return png.getvalue(), svg.getvalue()


def _svg(fig: Figure) -> bytes:
    """The phone's drawing as SVG. Enlarged text can leave a tall chart (many chatbots or
    groups) no room for its axes, which matplotlib reports by warning that the layout
    collapsed: the figure is then made taller until the axes fit again."""
    import matplotlib

    for _ in range(6):
        out = io.BytesIO()
        with (
            warnings.catch_warnings(record=True) as caught,
            matplotlib.rc_context({"svg.hashsalt": "vera-card", "svg.fonttype": "none"}),
        ):
            warnings.simplefilter("always")
            fig.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
        collapsed = [w for w in caught if "collapsed to zero" in str(w.message)]
        for w in caught:
            if w not in collapsed:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if not collapsed:
            break
        width, height = fig.get_size_inches()
        fig.set_size_inches(width, height * 1.5)
    return out.getvalue()


def _smallest_text(svg: bytes) -> tuple[float, float]:
    """(the smallest font size, the drawing's width), both in the drawing's units."""
    sizes = [float(x) for x in re.findall(rb"font-size: ([\d.]+)px", svg)]
    found = re.search(rb'viewBox="0 0 ([\d.]+)', svg)
    return min(sizes, default=float("inf")), float(found.group(1)) if found else PHONE_SHOWN_PX


def _raise_small_text(fig: Figure, floor: float) -> None:
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        if text.get_text() and float(text.get_fontsize()) < floor:
            text.set_fontsize(floor)


def short_label(label: str, width: int = LABEL_CHARS) -> str:
    """A chatbot label that does not take half the chart: wrapped at ":" (run:chatbot)
    or "/" (provider/model) onto two lines, each line shortened in the middle if it is
    still too long."""
    if len(label) <= width:
        return label
    for sep in (":", "/"):
        head, found, tail = label.partition(sep)
        if found and head and tail:
            return f"{_middle(head + found, width)}\n{_middle(tail, width)}"
    return "\n".join(_middle(line, width) for line in textwrap.wrap(label, width, break_on_hyphens=True)[:2])


def _middle(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    keep = width - 1
    return text[: (keep + 1) // 2] + "…" + text[len(text) - keep // 2 :]


def _dimensions(bots: Sequence[Rated]) -> list[str]:
    return list(dict.fromkeys(d for b in bots for d in b.dimensions))


def _point(label: str, stats: DimensionScore | None) -> ScorePoint:
    if stats is None:
        return ScorePoint(label, None, None, None)
    return ScorePoint(label, stats.score, stats.score_ci.lo, stats.score_ci.hi)


def _err(p: ScorePoint) -> list[list[float]] | None:
    if p.score is None or p.lo is None or p.hi is None:
        return None
    return [[p.score - p.lo], [p.hi - p.score]]


def _dodged_points(
    ax: Axes,
    positions: Sequence[float],
    series: Sequence[tuple[str, Sequence[ScorePoint]]],
    *,
    horizontal: bool,
) -> None:
    """Points with interval bars, the series side by side around each position."""
    n = len(series)
    step = 0.6 / max(1, n)
    for k, (label, points) in enumerate(series):
        offset = (k - (n - 1) / 2) * step
        colour, marker = SERIES_COLOURS[k % len(SERIES_COLOURS)], MARKERS[k % len(MARKERS)]
        # On a horizontal plot the first series sits on top.
        shifted = [p - offset if horizontal else p + offset for p in positions]
        first = True
        for pos, p in zip(shifted, points, strict=True):
            if p.score is None:
                continue
            err = _err(p)
            x, y = (p.score, pos) if horizontal else (pos, p.score)
            ax.errorbar(
                x,
                y,
                xerr=err if horizontal else None,
                yerr=None if horizontal else err,
                fmt=marker,
                color=colour,
                capsize=3,
                markersize=6,
                label=short_label(label, 36) if first else None,
            )
            first = False


def _score_axis(ax: Axes, which: str) -> None:
    """A 0–100 score axis with a margin, so points on 0 or 100 are not cut in half."""
    ticks = [0, 20, 40, 60, 80, 100]
    if which == "x":
        ax.set_xlim(-3, 103)
        ax.set_xticks(ticks)
    else:
        ax.set_ylim(-3, 103)
        ax.set_yticks(ticks)


def _series_legend(fig: Figure, n: int) -> None:
    # No labelled series (nothing was scored): no legend, rather than a warning printed
    # into the user's terminal.
    labelled = any(
        str(h.get_label() or "_")[:1] != "_" for ax in fig.axes for h in ax.get_legend_handles_labels()[0]
    )
    if n > 1 and labelled:
        fig.legend(loc="outside lower center", ncols=_legend_columns(min(3, n)), fontsize=8, frameon=False)


def _rating_legend(fig: Figure) -> None:
    from matplotlib.patches import Patch

    handles = [
        Patch(facecolor=colour, hatch=hatch, edgecolor="#333333", linewidth=0.4, label=f"{letters}: {name}")
        for _, letters, name, colour, hatch, _ in RATING_STYLES
    ]
    handles.append(
        Patch(
            facecolor=NR_COLOUR,
            hatch=NR_HATCH,
            edgecolor="#333333",
            linewidth=0.4,
            label="NR: Not Relevant (nothing rated)",
        )
    )
    fig.legend(
        handles=handles, loc="outside lower center", ncols=_legend_columns(2), fontsize=7.5, frameon=False
    )


def sequential_card_plot(seq: SequentialCard) -> Plot:
    """The card's plot of a gate's run: Overall's interval after each wave vs −margin."""
    points = [(x.units, x.lo, x.hi, x.diff) for x in seq.looks]
    return _interval_plot(points, seq.margin, seq.stopped, seq.available, len(seq.looks))


def sequence_plot(looks: list[GateLook], margin: float) -> Plot:
    """Overall's interval of candidate − baseline after each wave, with −margin and
    where the gate stopped."""
    points = []
    for look in looks:
        row = next((r for r in look.rows if r.dimension == OVERALL), None)
        if row is not None:
            points.append((look.units, row.lo, row.hi, row.diff))
    last = looks[-1] if looks else None
    with _fonts():  # drawn on its own (the gate's page), in the run's language
        return _interval_plot(
            points, margin, last.stopped if last else "", last.available if last else 0, len(looks)
        )


def _interval_plot(
    points: list[tuple[int, float | None, float | None, float | None]],
    margin: float,
    stopped: str,
    available: int,
    waves: int,
) -> Plot:
    from matplotlib.ticker import MaxNLocator

    fig = _figure(6.4, 3.2)
    ax = fig.add_subplot()
    xs, lo, hi, mid = [], [], [], []
    for units, low, high, diff in points:
        if low is None or high is None or diff is None:
            continue
        xs.append(units)
        lo.append(low)
        hi.append(high)
        mid.append(diff)
    if len(xs) == 1:
        # One look (a gate settled at its first wave): a band of no width would not show,
        # so the interval is a bar, on the units available.
        ax.vlines(xs, lo, hi, color="#56B4E9", linewidth=10, alpha=0.6, label=tr("card.seq_plot_interval"))
        ax.set_xlim(0, max(available, xs[0]) * 1.05)
    elif xs:
        ax.fill_between(
            xs, lo, hi, step=None, color="#56B4E9", alpha=0.35, label=tr("card.seq_plot_interval")
        )
    if xs:
        ax.plot(xs, mid, marker="o", color="#0072B2", label=tr("card.seq_plot_estimate"))
    # Units are counted whole: no tick at 19.25 units.
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    # −margin as the card's caption writes it ("clears −5"), with the typographic minus
    # the plot's own tick labels use: not "−margin (-5.0)" with two different minus signs.
    shown = f"−{margin:g}" if margin else "0"
    ax.axhline(-margin, color="#D55E00", linestyle="--", label=tr("card.seq_plot_margin", margin=shown))
    ax.axhline(0.0, color="#000000", linewidth=0.6)
    if stopped and xs:
        ax.axvline(xs[-1], color="#CC79A7", linestyle=":", label=tr("card.seq_plot_stopped"))
    ax.set_xlabel(tr("card.seq_plot_x"))
    ax.set_ylabel(tr("card.seq_plot_y"))
    ax.legend(fontsize=7, loc="lower right")
    png, svg = _images(fig)
    desc = (
        tr(
            "card.seq_plot_desc_one" if waves == 1 else "card.seq_plot_desc",
            waves=waves,
            units=xs[-1],
            available=available,
            stopped=stopped_words(stopped) if stopped else tr("card.seq_plot_not_yet"),
        )
        if xs
        else tr("card.seq_plot_empty")
    )
    return Plot(name=SEQUENCE_PLOT, title=tr("card.seq_plot_title"), description=desc, png=png, svg=svg)
