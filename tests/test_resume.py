"""Resume means resume: `vera run --resume DIR` alone restores the run from its manifest;
an option that disagrees is refused naming it and both values; a changed or missing
input file is named with what the run expects; every printed resume hint works verbatim
(run, simulate, judge); a kill -9 then `--resume DIR` alone gives the uninterrupted card."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT
from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config
from .test_cli import assert_one_line_error, vera


def jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip().endswith("}")]


def card_without_volatile(run_dir: Path) -> dict:
    card = json.loads((run_dir / "card.json").read_text())
    card.pop("run_id")
    card.pop("accounting")
    return card


def own_config(folder: Path) -> Path:
    """The offline config with absolute paths, in a folder of its own (so a test can
    delete it) and a persona set copied beside it (so a test can change or move it)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("vera-personas.tsv", "vera-personas.toml"):
        shutil.copy(ROOT / "personas" / name, folder / name)
    text = (ROOT / "configs" / "offline.toml").read_text()
    text = text.replace('"../personas/vera-personas.tsv"', '"vera-personas.tsv"')
    for name in ("rubrics/vera-si.tsv", "personas/prompts", "rubrics/prompts", "providers"):
        text = text.replace(f'"../{name}"', f'"{ROOT / name}"')
    text = text.replace('"../runs"', f'"{folder / "runs"}"')
    path = folder / "run.toml"
    path.write_text(text)
    return path


def make_run(folder: Path) -> tuple[Path, Path]:
    cfg = own_config(folder / "cfg")
    out = folder / "run"
    proc = vera(
        "run", "--config", str(cfg), "--out", str(out), "--seeds", "1,2", "--limit-personas", "3",
        "--providers", "offline/best-practice", "--quiet",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return cfg, out


@pytest.fixture
def made(tmp_path) -> tuple[Path, Path]:
    """(config, run) — a finished offline run made with flags, from a config file."""
    return make_run(tmp_path)


@pytest.fixture(scope="module")
def untouched(tmp_path_factory) -> tuple[Path, Path]:
    """The same, shared by tests whose resume is refused (a refused resume writes nothing)."""
    return make_run(tmp_path_factory.mktemp("untouched"))


@pytest.mark.slow
def test_resume_alone_restores_every_setting_without_the_config_file(made):
    cfg, out = made
    before = card_without_volatile(out)
    calls = len(jsonl(out / "calls.jsonl"))
    shutil.rmtree(cfg.parent / "runs", ignore_errors=True)
    cfg.unlink()  # the run needs its inputs, not the config file: the manifest has the config
    proc = vera("run", "--resume", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "0 new, 6 reused" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1].startswith("status: complete")
    assert card_without_volatile(out) == before and len(jsonl(out / "calls.jsonl")) == calls


@pytest.mark.slow
def test_options_that_agree_or_only_change_how_are_accepted(made):
    cfg, out = made
    proc = vera(
        "run", "--resume", str(out), "--seeds", "1,2", "--limit-personas", "3", "--config", str(cfg),
        "--providers", "offline/best-practice", "--max-concurrency", "3", "--no-cache", "--quiet",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # the config alone gives both chatbots: without --providers it disagrees with the run
    assert_one_line_error(
        vera("run", "--resume", str(out), "--config", str(cfg)),
        f"--config {cfg}: chatbots: this run used offline/best-practice; "
        "the config gives offline/best-practice,offline/risk-ignoring",
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--seeds", "1"], "--seeds: this run used 1,2; you gave 1"),
        (["--seed", "7"], "--seed: this run used 1,2; you gave 7"),
        (["--limit-personas", "2"], "--limit-personas: this run used the first 3 personas; you gave the first 2"),
        (["--providers", "offline/risk-ignoring"], "--providers: this run used offline/best-practice; you gave offline/risk-ignoring"),
        (["--judge", "offline/best-practice"], "--judge: this run used offline/lexical-judge; you gave offline/best-practice"),
        (["--shard", "1/2"], "--shard: this run used no shard; you gave 1/2"),
    ],
)  # fmt: skip
def test_an_option_that_disagrees_is_named_with_both_values(untouched, options, message):
    _, out = untouched
    before = (out / "manifest.json").read_bytes()
    assert_one_line_error(vera("run", "--resume", str(out), *options), f"cannot resume {out}", message)
    assert (out / "manifest.json").read_bytes() == before


@pytest.mark.slow
def test_a_config_that_disagrees_names_the_setting(untouched, tmp_path):
    cfg, out = untouched
    other = cfg.parent / "other.toml"
    other.write_text(cfg.read_text().replace("max_turns = 30", "max_turns = 20"))
    assert_one_line_error(
        vera("run", "--resume", str(out), "--config", str(other)),
        f"--config {other}: conversation.max_turns: this run used 30; the config gives 20",
    )


@pytest.mark.slow
def test_a_changed_input_file_is_named_with_old_and_new_version_and_hash(made):
    cfg, out = made
    tsv, side = cfg.parent / "vera-personas.tsv", cfg.parent / "vera-personas.toml"
    old = json.loads((out / "manifest.json").read_text())["personas"]
    tsv.write_text(tsv.read_text().replace("\t", "\t ", 1))  # a one-character edit in the header
    side.write_text(re.sub(r'version = "[^"]*"', 'version = "9.9.9"', side.read_text()))
    proc = vera("run", "--resume", str(out))
    assert_one_line_error(
        proc,
        f"the persona set changed: this run used vera-personas {old['version']} (sha256 {old['sha256'][:12]})",
        f"{tsv} now holds vera-personas 9.9.9 (sha256 ",
    )


def _personas_moved(cfg: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The run's persona file moved elsewhere under another name: (where it was, the copy)."""
    tsv = cfg.parent / "vera-personas.tsv"
    copy = tmp_path / "elsewhere" / "people.tsv"
    copy.parent.mkdir()
    shutil.copy(tsv, copy)
    tsv.unlink()
    return tsv, copy


@pytest.mark.slow
def test_a_missing_input_file_is_named_and_a_copy_can_stand_in(made, tmp_path):
    cfg, out = made
    tsv, copy = _personas_moved(cfg, tmp_path)
    assert_one_line_error(
        vera("run", "--resume", str(out)),
        f"the persona set this run used is gone: {tsv} (vera-personas",
        "point --personas FILE or --config at a copy with the same content",
    )
    proc = vera("run", "--resume", str(out), "--personas", str(copy), "--quiet")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_a_copy_standing_in_keeps_the_name_and_version_the_run_recorded(made, tmp_path):
    # The copy's own name would otherwise replace the run's ("people unversioned"): the
    # card would name another persona set, and `vera compare` would refuse the run beside
    # a twin made from the original file although the content is the same.
    cfg, out = made
    _, copy = _personas_moved(cfg, tmp_path)
    proc = vera("run", "--resume", str(out), "--personas", str(copy), "--quiet")
    assert proc.returncode == 0, proc.stderr
    personas = json.loads((out / "manifest.json").read_text())["personas"]
    assert (personas["name"], personas["version"], personas["path"]) == ("vera-personas", "1.0.0", str(copy))
    assert json.loads((out / "card.json").read_text())["versions"]["personas"]["version"] == "1.0.0"
    _, twin = make_run(tmp_path / "twin")
    compared = vera("compare", str(out), str(twin))
    assert compared.returncode == 0, compared.stderr
    # and the next resume alone finds the input where the copy is
    assert vera("run", "--resume", str(out), "--quiet").returncode == 0


@pytest.mark.slow
def test_resume_of_a_folder_without_a_run_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_one_line_error(vera("run", "--resume", str(tmp_path / "empty")), "nothing to resume")


# ---------------------------------------------------------------------------------------
# Hints printed after an interrupt work verbatim
# ---------------------------------------------------------------------------------------


def _wait_for(path: Path, n: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until `path` holds `n` complete records (or the process ended)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if len(jsonl(path)) >= n or proc.poll() is not None:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {n} records")


def _hint(text: str) -> str:
    """The command of the last 'resume with:' / 'to continue …:' hint vera printed."""
    hints = re.findall(r"(?:resume with|to continue this run|to continue judging): ([^\n]+)", text)
    assert hints, text
    return hints[-1]


def _interrupt(args: list[str], watch: Path, env: dict[str, str]) -> tuple[int, str, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "vera", *args], env=env, cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _wait_for(watch, 1, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def _run_hint(hint: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Paste the hint into a shell, as a user would (plus --quiet)."""
    return subprocess.run(
        f"{hint} --quiet", shell=True, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
    )


# Started as `python -m vera`, vera names itself that way in its hints.
VERA = f"{shlex.quote(sys.executable)} -m vera"


@pytest.mark.slow
def test_every_hint_printed_after_ctrl_c_works_verbatim(tmp_path):
    env = {**os.environ, "SWEEP_TEST_KEY": KEY}
    with SweepServer(faults=Faults(latency=0.03)) as server:
        cfg = write_sweep_config(
            tmp_path, server.base_url, personas=4, max_concurrency=2, extra="grace_s = 5"
        )
        flags = ["--config", str(cfg), "--seeds", "1,2", "--limit-personas", "4"]
        # vera run
        run = tmp_path / "run"
        code, out, err = _interrupt(["run", *flags, "--out", str(run)], run / "conversations.jsonl", env)
        assert code == 130, err
        assert out.strip().splitlines()[-1].startswith("status: interrupted"), out
        assert json.loads((run / "card.json").read_text())["status"]["state"] == "interrupted"
        hint = _hint(err + out)
        assert hint == f"{VERA} run --resume {run}"
        done = _run_hint(hint, env)
        assert done.returncode == 0, done.stderr
        assert json.loads((run / "card.json").read_text())["status"]["state"] == "complete"
        # vera simulate
        sim = tmp_path / "sim"
        code, out, err = _interrupt(["simulate", *flags, "--out", str(sim)], sim / "conversations.jsonl", env)
        assert code == 130, err
        hint = _hint(err + out)
        assert hint == f"{VERA} simulate --resume {sim}"
        done = _run_hint(hint, env)
        assert done.returncode == 0, done.stderr
        assert len(jsonl(sim / "conversations.jsonl")) == 8 and not (sim / "judgements.jsonl").exists()
        # vera judge
        code, out, err = _interrupt(["judge", str(sim)], sim / "judgements.jsonl", env)
        assert code == 130, err
        hint = _hint(err + out)
        assert hint == f"{VERA} judge {sim}"
        done = _run_hint(hint, env)
        assert done.returncode == 0, done.stderr
        judged = {j["conversation_id"] for j in jsonl(sim / "judgements.jsonl") if j["status"] == "complete"}
        assert len(judged) == 8


@pytest.mark.slow
def test_kill_9_in_a_four_seed_run_then_resume_alone_gives_the_uninterrupted_card(tmp_path):
    args = ["--config", str(ROOT / "configs" / "offline.toml"), "--seeds", "4", "--limit-personas", "40"]
    whole = tmp_path / "whole"
    assert vera("run", *args, "--out", str(whole), "--quiet").returncode == 0
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vera", "run", *args, "--out", str(killed), "--quiet"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _wait_for(killed / "conversations.jsonl", 20, proc)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    done_before = len({c["id"] for c in jsonl(killed / "conversations.jsonl")})
    assert 20 <= done_before < 320, "killed when some but not all work was done"
    assert not (killed / "card.json").exists()
    resumed = vera("run", "--resume", str(killed), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{done_before} reused" in resumed.stdout
    assert card_without_volatile(killed) == card_without_volatile(whole)


def test_the_hint_names_vera_the_way_it_was_started(monkeypatch, tmp_path):
    from vera.app._resume import resume_command

    monkeypatch.setattr(sys, "argv", [".venv/bin/vera", "run"])
    monkeypatch.setenv("PATH", str(tmp_path))  # no vera on PATH, as after `make eval`
    assert resume_command("run", Path("runs/my run")) == ".venv/bin/vera run --resume 'runs/my run'"
    monkeypatch.setattr(sys, "argv", ["vera", "judge"])
    assert resume_command("judge", Path("r")) == "vera judge r"


@pytest.mark.slow
def test_judging_needs_only_what_it_reads(made):
    cfg, out = made
    (cfg.parent / "vera-personas.tsv").unlink()  # judging reads the rubric and judge prompts only
    proc = vera("judge", str(out), "--instances", "2", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "judgements: 6 new, 6 reused" in proc.stdout
    assert_one_line_error(
        vera("judge", str(out), "--config", str(cfg)), "--config is for importing --transcripts"
    )


def test_ctrl_c_while_the_card_is_written_names_the_command_that_writes_it(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import vera.app._result
    from vera.cli._main import main

    cfg = own_config(tmp_path / "cfg")
    out = tmp_path / "run"

    def interrupted(run_dir: Path, **_: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(vera.app._result, "score_run", interrupted)
        result = CliRunner().invoke(
            main, ["run", "--config", str(cfg), "--out", str(out), "--limit-personas", "2", "--quiet"]
        )
    # The sweep was over: every record is saved, and the message says how to get the card.
    assert result.exit_code == 130, result.output
    message = result.output.strip().splitlines()[-1]
    assert message.startswith("error: interrupted while writing the card; all finished work is saved: ")
    assert message.endswith(f"run --resume {out} writes it")
    assert not (out / "card.json").exists() and len(jsonl(out / "judgements.jsonl")) == 4
    done = CliRunner().invoke(main, ["run", "--resume", str(out), "--quiet"])
    assert done.exit_code == 0, done.output
    assert json.loads((out / "card.json").read_text())["status"]["state"] == "complete"


@pytest.mark.parametrize(
    ("argv0", "want"),
    [
        ("vera", "vera"),
        ("/opt/env/lib/python3.11/site-packages/vera/__main__.py", f"{shlex.quote(sys.executable)} -m vera"),
        # Another program's __main__ (pytest's, when it is run as `python -m pytest`).
        ("/opt/env/lib/python3.11/site-packages/pytest/__main__.py", "vera"),
    ],
)
def test_the_resume_line_names_vera_as_it_was_started(monkeypatch, argv0: str, want: str) -> None:
    from vera.app._resume import program

    monkeypatch.setattr(sys, "argv", [argv0])
    assert program() == want
