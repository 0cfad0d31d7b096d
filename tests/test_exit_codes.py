"""Exit codes a script can trust, run as a user runs vera (a subprocess): 0 only when all
planned work completed, 1 a user error, 2 finished with failed work (more than
--allow-failures, or nothing succeeded), 3 stopped early (a bad key, the budget), 130
interrupted (see test_resume). The card and the last line of output say the same."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT
from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config


def run(*args: str, key: str = KEY) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SWEEP_TEST_KEY": key}
    return subprocess.run(
        [sys.executable, "-m", "vera", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout.strip().splitlines()[-1]


def status(run_dir: Path) -> dict:
    return json.loads((run_dir / "card.json").read_text())["status"]


@pytest.mark.slow
def test_all_work_complete_is_0(tmp_path):
    proc = run("run", "--limit-personas", "4", "--out", str(tmp_path / "r"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc).startswith("status: complete — 8 of 8 conversations complete, 0 failed")
    assert status(tmp_path / "r") | {"summary": ""} == {
        "state": "complete",
        "exit_code": 0,
        "summary": "",
        "missing_shards": [],
        "skipped_lines": [],
        "judged_sample": None,  # the whole run was judged, not a sample
    }


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_run_whose_every_conversation_failed_is_2_even_when_failures_are_allowed(tmp_path):
    providers = tmp_path / "providers"
    providers.mkdir()
    (providers / "gone.toml").write_text(
        f'protocol = "openai"\nbase_url = "http://127.0.0.1:{closed_port()}/v1"\nmodel = "m"\n'
        "max_retries = 0\ntimeout_s = 5\n"
    )
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'providers = "{providers}"\nchatbots = ["gone"]\npersonas = "{ROOT / "personas" / "vera-personas.tsv"}"\n'
        f'rubric = "{ROOT / "rubrics" / "vera-si.tsv"}"\nuser_prompts = "{ROOT / "personas" / "prompts"}"\n'
        f'judge_prompts = "{ROOT / "rubrics" / "prompts"}"\n'
    )
    out = tmp_path / "r"
    proc = run(
        "run", "--config", str(cfg), "--limit-personas", "3", "--out", str(out), "--allow-failures", "1"
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert last_line(proc).startswith("status: finished with failed work — no conversation completed")
    assert status(out)["state"] == "failed" and status(out)["exit_code"] == 2
    card_md = (out / "card.md").read_text()
    assert (
        "finished with failed work (exit code 2)" in card_md
        and "Not every planned job is complete" in card_md
    )
    # No dimension has a score to show: its table, a header with no rows, is left out of
    # card.md and of the card printed at the end (it read as a rendering fault).
    assert "Dimension score [CI]" not in card_md and "Dimension score [CI]" not in proc.stdout
    # Nor is "Fix first" a heading and its guide over nothing, in card.md or card.html.
    assert "Fix first" not in card_md and "Fix first" not in (out / "card.html").read_text()


@pytest.mark.slow
def test_failed_work_is_2_unless_allowed_and_then_0_naming_the_failures(tmp_path):
    with SweepServer(faults=Faults(fail_user_for="Mateus")) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=6, max_retries=0)
        strict = run("run", "--config", str(cfg), "--out", str(tmp_path / "strict"), "--quiet")
        lenient = run(
            "run",
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "lenient"),
            "--quiet",
            "--allow-failures",
            "0.25",
        )
    assert strict.returncode == 2, strict.stderr
    assert "2 failed" in last_line(strict) and "(16.7% failed, --allow-failures 0)" in last_line(strict)
    assert (
        f"to continue this run: {sys.executable} -m vera run --resume {tmp_path / 'strict'}" in strict.stderr
    )
    assert lenient.returncode == 0, lenient.stderr
    assert "within 16.7% failed, --allow-failures 0.25" in last_line(lenient)
    assert status(tmp_path / "lenient")["state"] == "complete"


@pytest.mark.slow
def test_a_bad_key_stops_the_run_early_with_3(tmp_path):
    with SweepServer() as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=4)
        proc = run(
            "run", "--config", str(cfg), "--out", str(tmp_path / "r"), "--quiet", key="sk-wrong-key-000000"
        )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert last_line(proc).startswith("status: stopped early — [fake-")
    assert "401" in last_line(proc) and "sk-wrong" not in proc.stdout + proc.stderr
    assert status(tmp_path / "r")["state"] == "stopped"


@pytest.mark.slow
def test_a_budget_reached_is_3_and_the_hint_continues(tmp_path):
    with SweepServer() as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=10, max_concurrency=2, max_tokens=512)
        out = tmp_path / "r"
        proc = run("run", "--config", str(cfg), "--out", str(out), "--quiet", "--max-cost", "0.02")
        assert proc.returncode == 3, proc.stderr
        assert last_line(proc).startswith("status: stopped: budget reached — $0.0")
        hint = f"{sys.executable} -m vera run --resume {out} --max-cost 0.04"
        assert hint in last_line(proc)
        more = run("run", "--resume", str(out), "--quiet", "--max-cost", "10")
    assert more.returncode == 0, more.stderr


@pytest.mark.slow
def test_a_user_error_is_1_with_one_line(tmp_path):
    proc = run("run", "--max-concurrency", "0", "--out", str(tmp_path / "r"))
    assert proc.returncode == 1
    assert (
        proc.stderr.startswith("error: ") and "run: Invalid value for '--max-concurrency': 0" in proc.stderr
    )
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "r").exists()


def test_the_readme_documents_every_exit_code():
    from vera.report.shared._outcome import Exit

    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("### Exit codes") :]
    codes = {int(m) for m in re.findall(r"^\| (\d+) \|", table, flags=re.M)}
    assert codes == {int(e) for e in Exit}
