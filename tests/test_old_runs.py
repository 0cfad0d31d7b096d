"""Runs left by earlier versions, and resumes with nothing to do (issue 27, leftovers of
items 3-6): a manifest whose seed an earlier vera let through (beyond 64 bits) is one
line for every reader, never a traceback; a resume or a judging with nothing left to do
leaves manifest.json byte for byte as it was; `vera judge` runs the pre-flight of `run`
on what judging uses; a target reached through a symlink is named as typed."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from .door import BOT, KEY_ENV, invoke, profiles_folder, refused
from .door import run as run  # the fixture
from .door import runs as runs  # the fixture

HUGE = 99999999999999999999999  # what `vera run --seed` once accepted


def with_huge_seed(run: Path) -> None:
    """The run as an earlier vera wrote it from `--seed 99999999999999999999999`."""
    path = run / "manifest.json"
    data = msgspec.json.decode(path.read_bytes())
    data["seeds"] = [HUGE]
    data["config"]["seeds"] = [HUGE]
    path.write_bytes(msgspec.json.encode(data))
    for name in ("conversations.jsonl", "judgements.jsonl"):
        records = [msgspec.json.decode(line) for line in (run / name).read_bytes().splitlines()]
        for r in records:
            if "seed" in r:
                r["seed"] = HUGE
        (run / name).write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in records))


@pytest.mark.parametrize(
    "args",
    [
        ["view", "{run}"],
        ["compare", "{run}", "{other}"],
        ["export", "{run}", "-o", "-"],
        ["score", "{run}"],
        ["report", "improvements", "{run}", "--out", "-"],
    ],
)
def test_a_seed_beyond_the_range_from_an_earlier_vera_is_one_line(run, runs, args) -> None:
    with_huge_seed(run)
    filled = [a.format(run=run, other=runs["run2"]) for a in args]
    refused(invoke(filled), f"{run / 'manifest.json'}: seed {HUGE} is not a whole number from 0 to")


def test_a_resume_with_nothing_to_do_does_not_rewrite_the_manifest(run) -> None:
    before = (run / "manifest.json").read_bytes()
    stamp = (run / "manifest.json").stat().st_mtime_ns
    for args in (["run", "--resume", str(run), "--quiet"], ["judge", str(run), "--quiet"]):
        result = invoke(args)
        assert result.exit_code == 0, result.output
        assert (run / "manifest.json").read_bytes() == before
    assert (run / "manifest.json").stat().st_mtime_ns == stamp


def test_a_resume_that_does_work_still_records_it(runs, tmp_path) -> None:
    sim = tmp_path / "sim"
    shutil.copytree(runs["sim"], sim)
    before = msgspec.json.decode((sim / "manifest.json").read_bytes())
    judged = invoke(["judge", str(sim), "--quiet"])
    assert judged.exit_code == 0, judged.output
    after = msgspec.json.decode((sim / "manifest.json").read_bytes())
    assert after["judges"] and after["updated_at"] >= before["updated_at"]


def test_judging_transcripts_runs_the_preflight_of_run(tmp_path) -> None:
    transcripts = tmp_path / "t.txt"
    transcripts.write_text("user: hello\nchatbot: hi, how are you feeling today?\n")
    folder = profiles_folder(tmp_path, bot=BOT)
    config = tmp_path / "run.toml"
    config.write_text(f'providers = "{folder}"\njudges = ["bot/m"]\n')
    line = refused(
        invoke(
            [
                "judge",
                "--transcripts",
                str(transcripts),
                "--config",
                str(config),
                "--out",
                str(tmp_path / "o"),
            ]
        ),
        KEY_ENV,
    )
    assert "is not set" in line
    assert not (tmp_path / "o").exists()  # refused before any run directory was made


def test_a_target_reached_through_a_symlink_is_named_as_typed(tmp_path) -> None:
    real = tmp_path / "disk" / "target"
    real.mkdir(parents=True)
    (real / "target.toml").write_text(
        'name = "t"\nversion = "1"\nrubric = "missing.tsv"\npersonas = ["p.tsv"]\n'
        'user_prompts = "up"\njudge_prompts = "jp"\n'
    )
    (tmp_path / "mine").symlink_to(real)
    line = refused(invoke(["run", "--target", str(tmp_path / "mine"), "--out", str(tmp_path / "o")]))
    assert str(tmp_path / "mine" / "target.toml") in line and "disk" not in line
