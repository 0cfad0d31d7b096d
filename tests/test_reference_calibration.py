"""The reference's human-validation conversations, judged by the offline judge: half of
the clinicians' ratings bring the score closer to the clinicians' own than the judge
alone gets (benchmarks/bench_reference_calibration.py on fewer splits)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from benchmarks.bench_reference_calibration import splits
from vera.cli._main import main

from .conftest import REFERENCE

CLINICIANS = REFERENCE / "human_validation" / "clinician_ratings.csv"


@pytest.mark.skipif(not CLINICIANS.exists(), reason="reference data absent")
def test_half_the_clinicians_ratings_bring_the_offline_judge_to_the_clinicians_score(tmp_path):
    out = tmp_path / "ref"
    judged = CliRunner().invoke(
        main,
        [
            "judge",
            "--transcripts",
            str(REFERENCE / "human_validation" / "conversations"),
            "--personas",
            str(REFERENCE / "data" / "personas.tsv"),
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert judged.exit_code == 0, judged.output
    imported = CliRunner().invoke(main, ["ratings", "import", str(out), str(CLINICIANS)])
    assert imported.exit_code == 0, imported.output
    r = splits(out, 12, resamples=300)
    assert r["conversations"] == 90 and r["labelled_per_split"] == 45
    assert r["calibrated_distance_mean"] < r["judge_only_distance"] / 2
    assert r["calibrated_closer_share"] >= 0.9
    assert r["calibrated_ci_covers_clinicians"] >= 0.9
    assert not r[
        "judge_only_ci_covers_clinicians"
    ]  # the lexical judge is off, and its interval says nothing of it
