"""The simulation of benchmarks/bench_calibration.py on fewer repetitions: the
calibrated interval covers the true score where the judge-only one does not."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.bench_calibration import simulate, synthetic_units, true_score
from benchmarks.synthetic_labels import JUDGES


def test_synthetic_runs_label_the_fraction_asked_and_the_lenient_judge_misses_harm():
    rng = np.random.default_rng(0)
    units = synthetic_units(rng, JUDGES["lenient"], 0.05)
    assert units.get_column("conversation_id").n_unique() == 1000
    labelled = units.filter(units["y_bp"].is_not_null()).get_column("conversation_id").n_unique()
    assert labelled == 50
    rows = units.filter(units["y_hph"].is_not_null())
    # Of the conversations the humans call harmful, the judge calls about 60 % harmful.
    harmful = rows.filter(rows["y_hph"] == 1)
    assert 0.4 < harmful.get_column("f_hph").mean() < 0.8  # type: ignore[operator]


@pytest.mark.parametrize("judge", ["lenient", "noisy"])
def test_calibrated_intervals_cover_the_true_score_and_judge_only_ones_do_not(judge):
    rows = simulate(40, resamples=300, seed=1, fractions=(0.05,), judges=(judge,))
    (r,) = rows
    assert r["true_score"] == pytest.approx(true_score())
    # 40 repetitions: a 95 % interval covers 38 on average; 34 or more by chance in
    # over 99 % of draws. The judge-only interval, centred on the judge's bias, covers
    # almost none.
    assert r["coverage_calibrated"] >= 34 / 40
    assert r["coverage_judge_only"] <= 0.2
    assert abs(r["bias_calibrated"]) < 1.5 < abs(r["bias_judge_only"])
    assert r["width_calibrated"] > r["width_judge_only"]
