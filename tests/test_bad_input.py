"""Inputs that used to give a traceback or be accepted silently: each is one clear line
naming the file, row or field, a non-zero exit code, and nothing made or lost."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES, ROOT
from .diskfs import in_private_mounts, needs_mounts

pytestmark = pytest.mark.slow


def vera(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vera", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def one_line(proc: subprocess.CompletedProcess[str], code: int = 1) -> str:
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def persona_file(tmp_path: Path, last_cell: str) -> Path:
    rows = (ROOT / "personas" / "vera-personas.tsv").read_text().splitlines()
    cells = rows[1].split("\t")
    cells[-1] = last_cell
    path = tmp_path / "personas.tsv"
    path.write_text(rows[0] + "\n" + "\t".join(cells) + "\n")
    return path


def test_a_cell_over_128_kib_is_read_and_one_too_big_to_read_is_named(tmp_path):
    long = persona_file(tmp_path, "a long seed phrase " * 8000)  # ~150 KiB: Python's csv limit is 128
    proc = vera("validate", "personas", str(long))
    assert proc.returncode == 0, proc.stderr
    huge = persona_file(tmp_path, '"' + "x" * (17 * 2**20))  # an unclosed quote running past 16 MiB
    line = one_line(vera("validate", "personas", str(huge)))
    assert line.startswith(f"error: {huge}:2: a cell cannot be read")


def test_a_ratings_cell_that_cannot_be_read_is_named(tmp_path):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text('item_id,rater,dimension,rating\nabc,r1,Confirms Risk,"' + "x" * (17 * 2**20) + "\n")
    line = one_line(vera("agreement", str(ratings)))
    assert line.startswith(f"error: {ratings}:") and "a cell cannot be read" in line


def test_an_unknown_dimension_in_a_ratings_file_is_named_with_its_line(tmp_path):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(
        "item_id,rater,dimension,rating\nabc,r1,Confirms Risk,Best Practice\nabc,r1,Empathy,Best Practice\n"
    )
    line = one_line(vera("agreement", str(ratings)))
    assert line.startswith(f"error: {ratings}:3: unknown dimension 'Empathy': expected one of Detects")


def test_seed_counts_and_plans_too_big_for_memory_are_refused_before_anything_is_made(tmp_path):
    out = tmp_path / "run"
    assert "between 1 and 10,000 seeds" in one_line(vera("run", "--seeds", "100000000", "--out", str(out)))
    line = one_line(vera("run", "--seeds", "9000", "--out", str(out)))
    assert "the sweep plans 1,800,000 conversations (9,000 seed(s) × 2 chatbot(s)" in line
    assert "--shard K/N" in line
    assert not out.exists()


def test_an_empty_providers_list_is_refused(tmp_path):
    for value in ("", " , "):
        line = one_line(vera("run", "--providers", value, "--out", str(tmp_path / "run")))
        assert "names no chatbot" in line or "'--providers': an empty value" in line


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("[conversation]\nmax_turns = 100000\n", "conversation.max_turns must be between 2 and 1,000"),
        ("[stats]\nresamples = 1000000\n", "stats.resamples must be between 1 and 100,000"),
    ],
)
def test_settings_beyond_sane_bounds_are_refused(tmp_path, setting, message):
    cfg = tmp_path / "run.toml"
    cfg.write_text('target = "vera-si"\n' + setting)
    assert message in one_line(vera("run", "--config", str(cfg), "--out", str(tmp_path / "run")))


def test_resamples_beyond_the_bound_are_refused_on_the_command_line(tmp_path):
    line = one_line(vera("score", str(tmp_path), "--resamples", "1000000000"))
    assert "--resamples" in line and "100000" in line


def profiles(tmp_path: Path, extra: str) -> Path:
    folder = tmp_path / "providers"
    folder.mkdir()
    (folder / "bot.toml").write_text(f'protocol = "openai"\nmodel = "m"\napi_key_env = "BOT_KEY"\n{extra}')
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'target = "vera-si"\nproviders = "{folder}"\nchatbots = ["bot"]\n')
    return cfg


def test_max_retries_beyond_the_bound_names_the_profile_line(tmp_path):
    cfg = profiles(tmp_path, "max_retries = 1000\n")
    line = one_line(vera("run", "--config", str(cfg), "--out", str(tmp_path / "run")))
    assert line.startswith(f"error: {tmp_path / 'providers' / 'bot.toml'}:4:") and "max_retries" in line


@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/v1", "http://[fd00:ec2::254]/v1", "http://metadata.google.internal/v1"]
)
def test_a_link_local_or_metadata_base_url_is_refused_unless_the_profile_says_so(tmp_path, url):
    cfg = profiles(tmp_path, f'base_url = "{url}"\n')
    where = f"{tmp_path / 'providers' / 'bot.toml'}:4"
    line = one_line(vera("run", "--config", str(cfg), "--out", str(tmp_path / "run")))
    assert line.startswith(f"error: {where}: base_url") and "allow_link_local = true" in line
    assert not (tmp_path / "run").exists()
    checked = vera("validate", "config", str(cfg))
    assert checked.returncode == 1 and f"{where}: error: base_url" in checked.stdout
    # Said explicitly, the profile is accepted (the key warning remains a warning).
    (tmp_path / "providers" / "bot.toml").write_text(
        f'protocol = "openai"\nmodel = "m"\napi_key_env = "BOT_KEY"\nbase_url = "{url}"\nallow_link_local = true\n'
    )
    assert vera("validate", "config", str(cfg)).returncode == 0


def test_a_transcript_of_empty_messages_is_failed_not_judged(tmp_path):
    folder = tmp_path / "transcripts"
    folder.mkdir()
    (folder / "abc123_Ann_bot_run1.txt").write_text("user: \n\nchatbot:   \n\nuser:\n")
    proc = vera("judge", "--transcripts", str(folder), "--out", str(tmp_path / "run"), "--quiet")
    assert proc.returncode == 2, proc.stderr
    assert "no words in any message" in proc.stdout + proc.stderr
    judged = tmp_path / "run" / "judgements.jsonl"
    assert not judged.exists() or not judged.read_text().strip()


def test_rendering_a_rubric_with_a_broken_flow_says_to_validate_it():
    broken = FIXTURES / "rubrics" / "broken.tsv"
    line = one_line(vera("rubric", "render", str(broken)))
    assert line.startswith(f"error: {broken}:") and "vera validate rubric" in line


def test_bench_takes_h_and_refuses_a_zero_rate():
    helped = vera("bench", "-h")
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: vera bench")
    line = one_line(vera("bench", "--rpm", "0"))
    assert "--rpm" in line and "0.0 is not in the range x>0" in line


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("small") / "run"
    assert vera("run", "--limit-personas", "2", "--out", str(out), "--quiet").returncode == 0
    return out


@pytest.mark.parametrize(
    ("manifest", "message"),
    [("garbage\n", "not a readable run manifest"), ('{"schema_version": 1}\n', "missing required field")],
)
def test_the_card_of_a_run_whose_manifest_is_garbage_is_refused(small_run, tmp_path, manifest, message):
    run = tmp_path / "run"
    run.mkdir()
    for f in small_run.iterdir():
        if f.is_file():
            (run / f.name).write_bytes(f.read_bytes())
    (run / "manifest.json").write_text(manifest)
    line = one_line(vera("card", str(run)))
    assert line.startswith(f"error: {run / 'manifest.json'}: ") and message in line


@needs_mounts
def test_a_read_only_out_does_not_suggest_a_resume_that_cannot_work(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    err = tmp_path / "stderr"
    q = shlex.quote
    proc = in_private_mounts(
        f"mount --bind {q(str(out))} {q(str(out))} && mount -o remount,bind,ro {q(str(out))} && "
        f"$VERA run --limit-personas 2 --out {q(str(out))} 2> {q(str(err))}; echo rc=$?"
    )
    assert "rc=1" in proc.stdout, proc.stdout + proc.stderr
    text = err.read_text()
    assert "Read-only file system" in text and "resume" not in text, text
