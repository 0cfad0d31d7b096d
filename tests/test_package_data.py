"""An installed vera (a wheel, not this checkout) has its built-in data and writes runs
under the working directory, never inside site-packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout, unpacked into a folder of its own."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            dist,
            ROOT,
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("vera_eval-*.whl")
    target = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(target)
    return target


def _vera(installed: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The unpacked wheel comes first on the path, ahead of this checkout's editable install.
    env = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run(
        [sys.executable, "-m", "vera", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_wheel_carries_the_built_in_data(installed: Path) -> None:
    data = installed / "vera" / "_data"
    for name in (
        "personas/vera-personas.tsv",
        "rubrics/vera-si.tsv",
        "providers/openai.toml",
        "configs/offline.toml",
        "configs/recommended.toml",
    ):
        assert (data / name).is_file(), name
    # The benchmark harness and tests are not part of the wheel.
    assert not (installed / "benchmarks").exists() and not (installed / "tests").exists()
    assert not (installed / "vera" / "bench.py").exists()
    assert not list(installed.rglob("harness.py"))


def test_an_installed_vera_bench_says_in_one_line_that_it_needs_a_source_checkout(
    installed: Path, tmp_path: Path
) -> None:
    r = _vera(installed, tmp_path, "bench")
    assert r.returncode == 1
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("error: ") and "source checkout" in line, r.stderr


def test_an_installed_vera_runs_its_defaults_from_package_data(installed: Path, tmp_path: Path) -> None:
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import vera, vera.inputs._defaults as d; print(vera.__file__); print(d.data_root())",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(installed)},
        capture_output=True,
        text=True,
        check=True,
    )
    module, root = probe.stdout.split()
    assert module.startswith(str(installed)) and root == str(installed / "vera" / "_data")

    r = _vera(installed, tmp_path, "run", "--limit-personas", "2", "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    (run,) = (tmp_path / "runs").iterdir()
    assert json.loads((run / "card.json").read_text())["chatbots"]
    assert not (installed / "vera" / "_data" / "runs").exists()


def test_a_shipped_config_is_found_by_name(installed: Path, tmp_path: Path) -> None:
    r = _vera(installed, tmp_path, "run", "--config", "offline", "--limit-personas", "2", "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(list((tmp_path / "runs").iterdir())) == 1
    assert not (installed / "vera" / "_data" / "runs").exists()
