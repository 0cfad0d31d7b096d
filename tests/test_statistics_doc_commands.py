"""docs/statistics.md names, beside each figure, the benchmarks/ command that prints it.
Every named command must exist, run, and accept the options the doc gives it, so the
doc cannot point a reader at a command that is gone or was renamed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "statistics.md"
# `python benchmarks/bench_x.py ARGS` (with or without .venv/bin/), as the doc writes it
COMMAND = re.compile(r"`(?:\.venv/bin/)?python (benchmarks/[\w/]+\.py)([^`]*)`")


def named_commands() -> dict[str, set[str]]:
    """Each benchmarks/ script the doc names, with the options it is given there."""
    found: dict[str, set[str]] = {}
    for script, args in COMMAND.findall(DOC.read_text(encoding="utf-8")):
        found.setdefault(script, set()).update(re.findall(r"--[\w-]+", args))
    return found


def test_the_doc_names_a_command_beside_its_figures():
    names = named_commands()
    # the figures of the calibrated estimator, the boundary intervals and the gates
    for script in (
        "benchmarks/bench_boundary.py",
        "benchmarks/bench_calibration.py",
        "benchmarks/bench_plan.py",
        "benchmarks/bench_rare_harm.py",
        "benchmarks/bench_ratings_plan.py",
        "benchmarks/bench_reference_calibration.py",
        "benchmarks/bench_sequential.py",
        "benchmarks/bench_stats.py",
    ):
        assert script in names, script
    assert len(re.findall(r"`\s+prints (?:this|these)", DOC.read_text(encoding="utf-8"))) >= 8


@pytest.mark.parametrize(("script", "options"), sorted(named_commands().items()))
def test_each_named_command_exists_runs_and_takes_its_options(script: str, options: set[str]):
    path = ROOT / script
    assert path.is_file(), f"docs/statistics.md names {script}, which does not exist"
    result = subprocess.run(
        [sys.executable, str(path), "--help"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    missing = sorted(o for o in options if o not in result.stdout)
    assert not missing, f"{script} does not take {missing}, which docs/statistics.md gives it"
