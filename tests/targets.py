"""What the target tests share: the DEMO target of our own (tests/fixtures/targets), a
copy of it to edit, the reference's HFO folder, and running vera as a user would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES, ROOT

DEMO = FIXTURES / "targets" / "DEMO"
HFO = ROOT.parent / "shared" / "reference" / "vera-mh-2.0" / "data" / "HFO"
V11_SAMPLE = ROOT.parent / "shared" / "reference" / "vera-mh-v1.1" / "judge_output_sample" / "results.csv"


def vera(*args: str) -> subprocess.CompletedProcess[str]:
    """The real entry point in a subprocess."""
    return subprocess.run([sys.executable, "-m", "vera", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """DEMO run offline with two seeds, once per test module that imports it: its folder
    and what `vera run` printed."""
    out = tmp_path_factory.mktemp("demo") / "run"
    result = vera("run", "--target", str(DEMO), "--seeds", "2", "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stdout + result.stderr
    return out, result


def copy_demo(tmp_path: Path) -> Path:
    """The DEMO target and its shared prompts, in a folder the test may edit."""
    root = tmp_path / "data"
    shutil.copytree(FIXTURES / "targets", root)
    return root / "DEMO"


def edit_manifest(demo: Path, **changes: object) -> None:
    """Set (or, with None, remove) keys of a target's manifest.json."""
    data = json.loads((demo / "manifest.json").read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    (demo / "manifest.json").write_text(json.dumps(data, indent=2) + "\n")


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a refused command (exit 1, no traceback)."""
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]
