"""Run configs in JSON, as the reference keeps them: a `.json` file, `--config -` (standard
input) and `$VERA_RUN_CONFIG` (inline), with vera's keys; a mistake is one line naming
where the config came from."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from vera.inputs import load_config

from .conftest import ROOT


def vera(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vera", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def test_a_json_file_reads_as_its_toml_twin(tmp_path):
    (tmp_path / "run.json").write_text(
        json.dumps({"seeds": [3, 4], "persona_limit": 2, "conversation": {"max_turns": 8, "min_turns": 2}})
    )
    (tmp_path / "run.toml").write_text(
        "seeds = [3, 4]\npersona_limit = 2\n[conversation]\nmax_turns = 8\nmin_turns = 2\n"
    )
    a, b = load_config(tmp_path / "run.json"), load_config(tmp_path / "run.toml")
    assert a.fingerprint() == b.fingerprint()
    assert (a.seeds, a.persona_limit, a.conversation.max_turns) == ([3, 4], 2, 8)


def test_config_from_standard_input_and_from_the_environment(tmp_path):
    piped = vera(
        "run", "--config", "-", "--out", str(tmp_path / "a"), "--quiet", stdin='{"persona_limit": 1}'
    )
    assert piped.returncode == 0, piped.stderr
    inline = vera(
        "run", "--out", str(tmp_path / "b"), "--quiet", env={"VERA_RUN_CONFIG": '{"persona_limit": 1}'}
    )
    assert inline.returncode == 0, inline.stderr
    for run in ("a", "b"):
        manifest = json.loads((tmp_path / run / "manifest.json").read_text())
        assert manifest["config"]["persona_limit"] == 1


def test_a_mistake_names_where_the_config_came_from(tmp_path):
    bad = vera("run", "--out", str(tmp_path / "c"), env={"VERA_RUN_CONFIG": '{"persona_limt": 1}'})
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.strip() == "error: VERA_RUN_CONFIG: Object contains unknown field `persona_limt`"
    broken = vera("run", "--config", "-", "--out", str(tmp_path / "d"), stdin="{oops")
    assert broken.returncode == 1 and broken.stderr.startswith("error: <stdin>: invalid JSON:")
    assert not (tmp_path / "c").exists() and not (tmp_path / "d").exists()
