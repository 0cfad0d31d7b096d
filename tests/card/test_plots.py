"""The plots: each rating told apart by more than colour, colours that stay apart under
simulated colour-vision deficiency, no empty risk level on the axis edge, long labels
wrapped."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from vera.report.card import _plots as plots
from vera.report.card._plots import (
    RATING_STYLES,
    ScorePoint,
    chatbot_scores_plot,
    risk_scores_plot,
    short_label,
)
from vera.report.card._schema import DimensionScore, Interval, Section
from vera.report.card._score import read_card

RATINGS = [(letters, colour, hatch) for _, letters, _, colour, hatch, _ in RATING_STYLES] + [
    ("NR", plots.NR_COLOUR, plots.NR_HATCH)
]

# Machado, Oliveira & Fernandes (2009), severity 1.0, applied to linear RGB.
SIMULATIONS = {
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
}


def _linear(hex_colour: str) -> np.ndarray:
    c = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(linear: np.ndarray) -> np.ndarray:
    to_xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = to_xyz @ np.clip(linear, 0, 1) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


@pytest.mark.parametrize("deficiency", sorted(SIMULATIONS))
def test_rating_colours_stay_apart_under_colour_vision_deficiency(deficiency):
    matrix = SIMULATIONS[deficiency]
    for (a, ca, _), (b, cb, _) in itertools.combinations(RATINGS, 2):
        distance = np.linalg.norm(_lab(matrix @ _linear(ca)) - _lab(matrix @ _linear(cb)))
        # CIE76 ΔE above 20: clearly different patches, not merely "just noticeable".
        assert distance > 20, (deficiency, a, b, round(float(distance), 1))


def test_each_rating_has_its_own_hatching_and_letters():
    assert len({hatch for _, _, hatch in RATINGS}) == 4
    assert [letters for letters, _, _ in RATINGS] == ["BP", "SUB", "HPH", "NR"]


def test_the_ratings_plot_carries_letters_and_hatching(offline_run):
    svg = plots.rating_shares_plot(plots.rated_chatbots(read_card(offline_run))).svg.decode()
    assert "BP 100" in svg and re.search(r"HPH \d+", svg) and "NR: all Not Relevant" in svg
    assert "<pattern" in svg  # hatching is drawn as SVG patterns


def _bot(levels: dict[str, float | None]) -> plots.Rated:
    def stats(score: float | None) -> DimensionScore:
        ci = Interval(score, score)
        return DimensionScore(1, 1, 1, 0, 0, 0, score, ci, None, ci, None, ci, None, ci, None, ci, None)

    def section(score: float | None) -> Section:
        return Section(stats(score), {}, 1, 1, 1)

    return plots.Rated("bot", stats(None), {}, {lvl: section(s) for lvl, s in levels.items()})


def test_an_empty_first_risk_level_keeps_its_slot(monkeypatch):
    captured = {}
    real = plots._images

    def keep(fig):
        captured["ax"] = fig.axes[0]
        return real(fig)

    monkeypatch.setattr(plots, "_images", keep)
    risk_scores_plot([_bot({"None": None, "Low": 80.0, "High": 60.0})])
    lo, hi = captured["ax"].get_xlim()
    # The "None" tick (x = 0) sits inside the axes, not on its edge.
    assert lo == pytest.approx(-0.5) and hi == pytest.approx(2.5)


def test_long_labels_are_wrapped_or_shortened():
    assert short_label("offline/best-practice") == "offline/best-practice"
    wrapped = short_label("run-2026-12-03-release-candidate:vendor/model-large")
    assert wrapped.count("\n") == 1 and all(len(line) <= 24 for line in wrapped.splitlines())
    assert wrapped.startswith("run-2026") and wrapped.endswith("model-large")
    long_name = "x" * 80
    assert all(len(line) <= 24 for line in short_label(long_name).splitlines())


def test_the_scores_chart_shows_long_labels_wrapped():
    label = "a-very-long-run-identifier-2026:provider/a-very-long-model-name"
    svg = chatbot_scores_plot(
        [ScorePoint(label, 50.0, 40.0, 60.0), ScorePoint("b", 70.0, 60.0, 80.0)]
    ).svg.decode()
    assert label not in svg and "provider/a-very-long-mo" not in svg.replace("\n", "")
    assert "a-very-long-" in svg and "-model-name" in svg
