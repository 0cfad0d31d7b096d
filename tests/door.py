"""Helpers for the tests of values checked where they enter (issue 27): invoking the
command in-process and asserting that a refusal is one `error:` line, exit code 1 and no
traceback; small runs to point commands at; provider profiles to write."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from vera.cli._main import main

KEY_ENV = "VERA_INPUT_CHECKS_KEY"
# A profile whose key goes where it says: nothing listens on port 9.
BOT = f'protocol = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = "{KEY_ENV}"\n'
PASTED_KEY = "sk-proj-Zq81xVbT4LmP0aRw93HsKd72NcYe5JgU"


def invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, args, env=env)


def refused(result: Result, *fragments: str, code: int = 1) -> str:
    """The one `error:` line of a refused command (asserting exit code and no traceback)."""
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def make_runs(root: Path) -> dict[str, Path]:
    """A small judged run, a copy of it, and a run simulated but not judged."""
    done = root / "done"
    assert invoke(["run", "--limit-personas", "2", "--out", str(done), "--quiet"]).exit_code == 0
    copy = root / "copy"
    shutil.copytree(done, copy)
    sim = root / "simulated"
    assert invoke(["simulate", "--limit-personas", "1", "--out", str(sim), "--quiet"]).exit_code == 0
    return {"run": done, "run2": copy, "sim": sim}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`make_runs`, once for each test module that asks for it (import it there)."""
    return make_runs(tmp_path_factory.mktemp("runs"))


@pytest.fixture
def run(runs: dict[str, Path], tmp_path: Path) -> Path:
    """A fresh copy of the judged run, so a test that damaged it could not harm another."""
    copy = tmp_path / "run"
    shutil.copytree(runs["run"], copy)
    return copy


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def profiles_folder(tmp: Path, **profiles: str) -> Path:
    folder = tmp / "providers"
    folder.mkdir(exist_ok=True)
    for name, text in profiles.items():
        (folder / f"{name}.toml").write_text(text)
    return folder
