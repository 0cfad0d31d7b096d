"""Command-line behaviour: one clear line and exit code 1 for a user's mistake, never a
traceback; validation commands; the persona prompt view."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.report.shared._scoring import score

from .conftest import FIXTURES, REFERENCE, ROOT


def vera(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the real entry point in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "vera", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for f in fragments:
        assert f in err[0]


@pytest.mark.slow
def test_unknown_config_key_names_file_and_field(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('chatbotz = ["offline/best-practice"]\n')
    assert_one_line_error(vera("run", "--config", str(cfg)), "c.toml", "chatbotz")


@pytest.mark.slow
def test_bad_values_and_references_are_one_line(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[conversation]\nmax_turns = 1\n")
    assert_one_line_error(vera("run", "--config", str(cfg)), "max_turns")
    assert_one_line_error(
        vera("run", "--providers", "nowhere/model-x", "--limit-personas", "1", "--out", str(tmp_path / "r")),
        "unknown model reference 'nowhere/model-x'",
    )
    assert not (tmp_path / "r").exists()  # refused before any work: no run directory left behind
    assert_one_line_error(
        vera("run", "--config", str(tmp_path / "missing.toml")), "missing.toml", "cannot read config"
    )


@pytest.mark.slow
def test_a_broken_persona_file_is_named_with_its_line(tmp_path):
    p = tmp_path / "people.tsv"
    p.write_text("Name\tShort Current Suicide Risk Level\nAda\tHigh\nBo\tMaybe\n")
    proc = vera("run", "--personas", str(p), "--out", str(tmp_path / "r"))
    assert_one_line_error(proc, "people.tsv:3", "'Maybe'")
    assert not (tmp_path / "r").exists()  # nothing started, nothing left behind


@pytest.mark.slow
def test_lexical_judge_refuses_other_rubrics(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'rubric = "{FIXTURES / "rubrics" / "flow.tsv"}"\npersonas = "{ROOT / "personas" / "vera-personas.tsv"}"\n'
        f'user_prompts = "{ROOT / "personas" / "prompts"}"\njudge_prompts = "{ROOT / "rubrics" / "prompts"}"\n'
        f'providers = "{ROOT / "providers"}"\n'
    )
    # Chosen on the command line, it refuses (a config's default judges give way to the
    # dry-run judge instead: tests/test_target_runs.py).
    assert_one_line_error(
        vera("run", "--config", str(cfg), "--judge", "offline/lexical-judge", "--out", str(tmp_path / "r")),
        "lexical judge",
        "flow-fixture",
    )


@pytest.mark.slow
def test_validate_rubric_lists_problems_with_rows_and_exits_1():
    proc = vera("validate", "rubric", str(FIXTURES / "rubrics" / "broken.tsv"))
    assert proc.returncode == 1
    assert "broken.tsv:3: question A1: GOTO 'Z9' points to no question (dangling)" in proc.stdout
    assert "broken.tsv:10: question A6 is unreachable" in proc.stdout
    ok = vera("validate", "rubric", "rubrics/vera-si.tsv")
    assert ok.returncode == 0 and "36 questions" in ok.stdout


@pytest.mark.skipif(not REFERENCE.exists(), reason="reference data absent")
def test_validate_reference_files():
    r = CliRunner().invoke(main, ["validate", "rubric", str(REFERENCE / "data" / "rubric.tsv")])
    assert r.exit_code == 0 and "vera-mh format" in r.output
    p = CliRunner().invoke(main, ["validate", "personas", str(REFERENCE / "data" / "personas.tsv")])
    assert p.exit_code == 0, p.output  # one malformed field is a warning
    assert "warning: Skylar" in p.output and "None 10, Low 30, High 30, Immediate 30" in p.output


def test_validate_our_personas_and_show_a_prompt():
    r = CliRunner().invoke(main, ["validate", "personas", "personas/vera-personas.tsv"])
    assert r.exit_code == 0, r.output
    assert "None 10, Low 30, High 30, Immediate 30" in r.output
    import polars as pl

    name = pl.read_csv(ROOT / "personas" / "vera-personas.tsv", separator="\t", quote_char=None)["Name"][0]
    s = CliRunner().invoke(main, ["personas", "show", name])
    assert s.exit_code == 0 and name in s.output and "# reminder" in s.output


def test_personas_show_takes_a_locale_pack():
    # A zh-CN clinician reviewing a persona's prompt: --locale zh-CN, as vera run takes it.
    s = CliRunner().invoke(main, ["personas", "show", "刘长海", "--locale", "zh-CN"])
    assert s.exit_code == 0, s.output
    assert "vera-user-prompts-zh-CN" in s.output and "你是刘长海" in s.output
    base = CliRunner().invoke(
        main, ["personas", "show", "Kayla", "--locale", "en-GB"]
    )  # no personas: the base's
    assert base.exit_code == 0 and "(vera-user-prompts 1.0.0)" in base.output
    both = CliRunner().invoke(main, ["personas", "show", "x", "--locale", "zh-CN", "--target", "y"])
    assert both.exit_code == 1 and "give one" in both.output


def test_rubric_render_shows_every_question_and_route():
    r = CliRunner().invoke(main, ["rubric", "render", "rubrics/vera-si.tsv"])
    assert r.exit_code == 0
    for qid in ("D1", "C0", "G0", "G11", "G12", "S7", "B7"):
        assert f"### {qid}." in r.output
    assert "Confirms Risk is Not Relevant; go to **G0**" in r.output


def test_every_command_has_help():
    for cmd in (
        ["run"],
        ["simulate"],
        ["judge"],
        ["score"],
        ["card"],
        ["validate", "rubric"],
        ["validate", "personas"],
        ["rubric", "render"],
        ["personas", "show"],
    ):
        r = CliRunner().invoke(main, [*cmd, "--help"])
        assert r.exit_code == 0 and "Usage:" in r.output, cmd


def test_starting_the_cli_does_not_load_scipy_or_matplotlib():
    # Every command, `vera --help` included, paid ~1 s for them before they were
    # imported where intervals and figures are made.
    probe = "import sys, vera.cli; print(sorted(m for m in ('scipy', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("bp", "hph", "expected"),
    [(54.7, 8.3, 65.0), (0, 0, 50.0), (100, 0, 100.0), (0, 100, 0.0), (0, 50, 12.5), (40, 10, 56.7)],
)
def test_score_formula_and_the_published_check(bp, hph, expected):
    assert round(score(bp, hph), 1) == expected


@pytest.mark.slow
def test_make_clean_removes_build_artefacts_and_never_runs(tmp_path):
    import shutil as sh

    if sh.which("make") is None:
        pytest.skip("make is not installed")
    sh.copy(ROOT / "Makefile", tmp_path / "Makefile")
    run = tmp_path / "runs" / "20260101-000000-paid"
    run.mkdir(parents=True)
    (run / "card.json").write_text("{}")
    for junk in (
        ".venv/bin",
        ".pytest_cache",
        ".ruff_cache",
        "build",
        "dist",
        "vera.egg-info",
        "vera/__pycache__",
    ):
        (tmp_path / junk).mkdir(parents=True)
    proc = subprocess.run(["make", "clean"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (run / "card.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Makefile", "runs", "vera"]
    assert not (tmp_path / "vera" / "__pycache__").exists()


@pytest.mark.slow
def test_usage_errors_are_one_line_with_exit_1_and_bare_commands_show_help():
    bad = vera("run", "--bogus")
    assert_one_line_error(bad, "No such option '--bogus'", "--help")
    bare = vera()
    assert bare.returncode == 0 and bare.stdout.startswith("Usage:") and "Commands:" in bare.stdout
    group = vera("validate")
    assert group.returncode == 0 and "config" in group.stdout and not group.stderr
