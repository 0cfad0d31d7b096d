"""Newcomer friction (issue 27): `make eval` installs only what running needs; `vera card`
leaves the files of an unchanged card alone; a run that cannot connect says why at once;
messages show paths as typed; `ratings plan` never says "nan"; a resume with nothing to do
leaves the manifest's config as it was; a missing `--prompts` folder and a report on a
run nobody judged are refused in one `error:` line."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import msgspec
import pytest

from .conftest import ROOT
from .door import BOT, KEY_ENV, invoke, profiles_folder, refused, snapshot
from .door import runs as runs  # the fixture
from .run_config import write_run_config

REFUSED = [
    (
        "missing-prompts",
        ["validate", "personas", str(ROOT / "personas" / "vera-personas.tsv"), "--prompts", "{tmp}/nowhere"],
        ("'--prompts'", "does not exist"),
    ),
    ("improvements-unjudged", ["report", "improvements", "{sim}"], ("no conversation is judged yet",)),
]


@pytest.mark.parametrize(("args", "fragments"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_missing_folder_or_a_run_with_nothing_judged_is_one_line(runs, tmp_path, args, fragments) -> None:
    values = {**{k: str(v) for k, v in runs.items()}, "tmp": str(tmp_path)}
    before = {name: snapshot(folder) for name, folder in runs.items()}
    refused(invoke([a.format(**values) for a in args]), *fragments)
    assert list(tmp_path.iterdir()) == [] and {n: snapshot(f) for n, f in runs.items()} == before


@pytest.mark.slow
def test_make_eval_installs_what_running_needs_and_test_and_lint_add_the_tools(tmp_path) -> None:
    def planned(target: str) -> str:
        proc = subprocess.run(
            ["make", "-n", target, f"VENV={tmp_path / 'venv'}"], capture_output=True, text=True, cwd=ROOT
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    eval_ = planned("eval")
    assert "pip install --quiet --disable-pip-version-check -e .\n" in eval_ and "[dev]" not in eval_
    for target in ("test", "lint", "venv"):
        assert "-e '.[dev]'" in planned(target)


def test_vera_card_leaves_files_of_an_unchanged_card_alone(runs, tmp_path) -> None:
    run = tmp_path / "run"
    shutil.copytree(runs["run"], run)
    assert invoke(["card", str(run)]).exit_code == 0
    files = ["card.md", "card.html", *(f"plots/{p.name}" for p in (run / "plots").glob("*.png"))]
    stamps = {f: (run / f).stat().st_mtime_ns for f in files}
    assert invoke(["card", str(run)]).exit_code == 0
    assert {f: (run / f).stat().st_mtime_ns for f in files} == stamps  # nothing redrawn
    (run / "plots" / "scores.png").unlink()  # a file gone: everything is drawn again
    assert invoke(["card", str(run)]).exit_code == 0
    assert (run / "plots" / "scores.png").is_file() and (run / "card.md").stat().st_mtime_ns != stamps[
        "card.md"
    ]
    redrawn = (run / "card.md").stat().st_mtime_ns
    assert invoke(["score", str(run), "--confidence", "0.8"]).exit_code == 0  # another card: drawn
    assert (run / "card.md").stat().st_mtime_ns != redrawn


@pytest.mark.slow
def test_a_run_that_cannot_connect_says_why_within_seconds(tmp_path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    folder = profiles_folder(tmp_path, bot=BOT.replace("127.0.0.1:9", f"127.0.0.1:{port}"))
    cfg = write_run_config(
        tmp_path / "run.toml", providers=folder, runs_dir=tmp_path / "runs", chatbots=["bot"], persona_limit=2
    )
    env = {**os.environ, KEY_ENV: "test-key"}
    with subprocess.Popen(
        [sys.executable, "-m", "vera", "run", "--config", str(cfg), "--quiet"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=env,
    ) as proc:
        try:
            assert proc.stderr is not None
            line = ""
            while not line.startswith("warning: cannot connect"):
                line = proc.stderr.readline()
                assert line, "the run ended without saying it cannot connect"
            # said while the retries go on (the default retries of two conversations take
            # ~40 s), not in the summary once they are exhausted
            still_retrying = proc.poll() is None
        finally:
            proc.send_signal(signal.SIGINT)
            proc.send_signal(signal.SIGINT)  # the second: at once
            proc.wait(timeout=60)
    assert f"cannot connect to 127.0.0.1:{port}[{KEY_ENV}]" in line and "retrying" in line
    assert still_retrying


def test_messages_show_a_path_as_the_user_reaches_it_not_where_a_link_points(tmp_path) -> None:
    real = tmp_path / "disk" / "evals"
    real.mkdir(parents=True)
    (real / "run.toml").write_text('rubric = "missing.tsv"\n')
    (tmp_path / "evals").symlink_to(real)
    cfg = tmp_path / "evals" / "run.toml"
    line = refused(invoke(["run", "--config", str(cfg), "--out", str(tmp_path / "out")]))
    assert str(tmp_path / "evals" / "missing.tsv") in line and "disk" not in line
    checked = invoke(["validate", "config", str(cfg)])
    assert str(tmp_path / "evals" / "missing.tsv") in checked.stdout and "disk" not in checked.stdout


def test_ratings_plan_on_a_small_run_says_what_it_cannot_estimate(runs) -> None:
    result = invoke(["ratings", "plan", str(runs["run"]), "--width", "1"])
    assert result.exit_code == 0, result.output
    assert "nan" not in result.output and "cannot be estimated from 2 conversation(s)" in result.output


def test_a_resume_with_nothing_to_do_leaves_the_manifests_config_as_it_was(runs, tmp_path) -> None:
    run = tmp_path / "run"
    shutil.copytree(runs["run"], run)
    before = msgspec.json.decode((run / "manifest.json").read_bytes())
    assert invoke(["run", "--resume", str(run), "--quiet"]).exit_code == 0
    after = msgspec.json.decode((run / "manifest.json").read_bytes())
    assert after["config"] == before["config"] and after["config"]["rubric"] == "rubrics/vera-si.tsv"
    assert {k: v for k, v in after.items() if k != "updated_at"} == {
        k: v for k, v in before.items() if k != "updated_at"
    }
