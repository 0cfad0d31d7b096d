"""`[judge] terminal_semantics`: validated on load, recorded in the manifest and on the
card, in the judgement ids only when not the default, and never mixed by `vera compare`
or `vera gate`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.engine._plan import digest, judgement_id
from vera.errors import ConfigError
from vera.inputs._config import load_config
from vera.records import ModelSpec

from .conftest import offline_config, run_vera


def with_semantics(folder: Path, value: str) -> Path:
    path = offline_config(folder)
    text = path.read_text().replace("max_attempts = 3", f'max_attempts = 3\nterminal_semantics = "{value}"')
    out = folder / f"semantics-{value}.toml"
    out.write_text(text)
    return out


def test_an_unknown_value_is_one_line_naming_the_field(tmp_path):
    with pytest.raises(ConfigError) as exc:
        load_config(with_semantics(tmp_path, "strict"))
    message = str(exc.value)
    assert message == "judge.terminal_semantics must be 'vera' or 'reference', not 'strict'"


def test_the_default_keeps_fingerprints_and_judgement_ids(tmp_path):
    default = load_config(offline_config(tmp_path))
    vera = load_config(with_semantics(tmp_path, "vera"))
    reference = load_config(with_semantics(tmp_path, "reference"))
    assert default.judge.terminal_semantics == "vera" and reference.judge.terminal_semantics == "reference"
    assert vera.fingerprint() == default.fingerprint() != reference.fingerprint()

    judge = ModelSpec(ref="offline/lexical-judge", provider="offline", protocol="offline", model="lexical")
    args = ("c0ffee", judge, 1, "a" * 64, "b" * 64, 3)
    # The id a judgement had before the choice existed is the "vera" id.
    assert (
        judgement_id(*args) == judgement_id(*args, "vera") == digest("judgement", *args) == "61fc3d7d7ea67550"
    )
    assert judgement_id(*args, "reference") != judgement_id(*args)


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("semantics")
    out = folder / "reference"
    cfg = with_semantics(folder, "reference")
    run_vera(
        "run", "--config", str(cfg), "--out", str(out), "--seed", "1", "--limit-personas", "6", "--quiet"
    )
    return out


def test_the_manifest_and_card_say_which_semantics_judged(reference_run, offline_run):
    assert json.loads((reference_run / "manifest.json").read_text())["terminal_semantics"] == "reference"
    assert json.loads((reference_run / "card.json").read_text())["terminal_semantics"] == "reference"
    assert json.loads((offline_run / "card.json").read_text())["terminal_semantics"] == "vera"
    md = (reference_run / "card.md").read_text()
    assert "**Terminal semantics:** reference: an END makes every dimension Not Relevant" in md
    html = (reference_run / "card.html").read_text()
    assert "Terminal semantics" in html and "as VERA-MH&#x27;s judge does" in html


def test_compare_and_gate_refuse_runs_judged_with_different_semantics(reference_run, offline_run, tmp_path):
    for args in (
        ["compare", str(offline_run), str(reference_run)],
        ["compare", str(offline_run), str(reference_run), "--force"],
        ["compare", str(offline_run), str(reference_run), "--gate", "--force"],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "different terminal semantics" in lines[0], lines
        assert "'vera'" in lines[0] and "'reference'" in lines[0]
    # The same semantics compare as before.
    twin = tmp_path / "twin"
    shutil.copytree(reference_run, twin)
    manifest = json.loads((twin / "manifest.json").read_text())
    manifest["run_id"] = "twin"
    (twin / "manifest.json").write_text(json.dumps(manifest))
    result = CliRunner().invoke(main, ["compare", str(reference_run), str(twin), "--resamples", "50"])
    assert result.exit_code == 0, result.output
