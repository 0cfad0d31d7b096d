"""Read-only run folders and full disks, made for real (a read-only bind mount, a small
tmpfs) in a private mount namespace: every failure is one line naming the path and what
could not be written, nothing half-written or temporary is left behind, and a run that
filled the disk resumes once space is freed."""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main

from .conftest import ROOT
from .diskfs import fill, in_private_mounts, needs_mounts, read_only, small_disk

pytestmark = needs_mounts
OFFLINE = str(ROOT / "configs" / "offline.toml")


def offline_run(out: Path, *args: str) -> None:
    r = CliRunner().invoke(main, ["run", "--config", OFFLINE, "--out", str(out), "--quiet", *args])
    assert r.exit_code == 0, r.output


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` (hidden ones too) with the hash of its content."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def one_error_line(text: str) -> str:
    """The one `error:` line, last in the output (a run's progress line may precede it)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], text
    assert "Traceback" not in text and len(lines) <= 2, text
    return errors[0]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("disks") / "run"
    offline_run(out, "--limit-personas", "6")
    return out


def q(p: Path) -> str:
    return shlex.quote(str(p))


@pytest.mark.slow
def test_card_of_a_read_only_run_is_printed_and_nothing_is_written(small_run):
    # Without the note of what was last drawn, `vera card` must draw the files again.
    (small_run / "plots" / ".rendered.json").unlink(missing_ok=True)
    before = snapshot(small_run)
    proc = in_private_mounts(f"{read_only(small_run)} && $VERA card {q(small_run)}")
    assert proc.returncode == 0, proc.stderr
    assert "Dimension score [CI]" in proc.stdout and "Traceback" not in proc.stderr
    assert "card files not re-rendered" in proc.stderr and "Read-only file system" in proc.stderr
    assert snapshot(small_run) == before


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "written"),
    [
        ("score {run}", "ratings.parquet: cannot write the ratings frame"),
        ("card {run} --html", "card.html: cannot write the score card (HTML)"),
        # The manifest is left alone; the session's mark (session.json, before any call)
        # is the first file a resume writes.
        ("run --resume {run}", "session.json: cannot write the open session's mark"),
        ("judge {run}", "events.jsonl: cannot write the event log"),
    ],
)
def test_writing_into_a_read_only_run_is_one_line_naming_the_file(small_run, tmp_path, command, written):
    before = snapshot(small_run)
    err = tmp_path / "stderr"
    args = command.format(run=q(small_run))
    proc = in_private_mounts(f"{read_only(small_run)} && $VERA {args} 2> {q(err)}; echo rc=$?")
    assert "rc=1" in proc.stdout, proc.stdout + proc.stderr
    line = one_error_line(err.read_text())
    assert f"{small_run}/{written}: Read-only file system" in line
    assert snapshot(small_run) == before


@pytest.mark.slow
def test_a_bundle_into_a_read_only_folder_is_one_line_naming_it(small_run, tmp_path):
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    err = tmp_path / "stderr"
    bundle = shelf / "pages"
    proc = in_private_mounts(
        f"{read_only(shelf)} && $VERA view {q(small_run)} --bundle {q(bundle)} 2> {q(err)}; echo rc=$?"
    )
    assert "rc=1" in proc.stdout, proc.stdout + proc.stderr
    assert (
        one_error_line(err.read_text()) == f"error: {bundle}: cannot write the bundle: Read-only file system"
    )
    assert not any(shelf.iterdir())


@pytest.mark.slow
def test_a_full_disk_during_score_keeps_the_old_card_and_leaves_no_temporary_file(small_run, tmp_path):
    disk, saved = tmp_path / "disk", tmp_path / "saved"
    disk.mkdir()
    run = disk / "run"
    script = "; ".join(
        [
            small_disk(disk, "4m"),
            f"cp -r {q(small_run)} {q(run)}",
            fill(disk),
            f"$VERA score {q(run)} 2> {q(tmp_path / 'err1')}",
            "echo rc1=$?",
            f"cp -r {q(run)} {q(saved)}",  # the run as the failed score left it
            f"rm {q(disk / 'filler')}",
            f"$VERA score {q(run)} > /dev/null 2>&1",
            "echo rc2=$?",
        ]
    )
    proc = in_private_mounts(script)
    assert "rc1=1" in proc.stdout and "rc2=0" in proc.stdout, proc.stdout + proc.stderr
    line = one_error_line((tmp_path / "err1").read_text())
    assert "cannot write" in line and "No space left on device" in line and str(run) in line
    assert not [p.name for p in saved.rglob("*.tmp")], "a temporary file was left behind"
    assert (saved / "card.json").read_bytes() == (small_run / "card.json").read_bytes()


@pytest.mark.slow
def test_a_run_that_fills_the_disk_stops_with_one_line_and_resumes_when_space_is_freed(tmp_path):
    reference = tmp_path / "reference"
    args = ["--limit-personas", "10", "--seeds", "2"]
    offline_run(reference, *args)
    disk, saved = tmp_path / "disk", tmp_path / "saved"
    disk.mkdir()
    run = disk / "run"
    first = f"$VERA run --config {q(Path(OFFLINE))} --out {q(run)} --quiet {' '.join(args)}"
    script = "; ".join(
        [
            # The whole run takes about 2.4 MiB (call bodies, pages and plots included):
            # the disk must hold it once the filler is gone.
            small_disk(disk, "16m"),
            # The sweep writes about 1.2 MiB; 300 KiB left fills the disk well inside
            # it, whatever order the job ids put the conversations in.
            fill(disk, leave_kib=300),
            f"{first} > /dev/null 2> {q(tmp_path / 'err1')}",
            "echo rc1=$?",
            f"cp {q(run / 'conversations.jsonl')} {q(tmp_path / 'partial.jsonl')}",
            f"rm {q(disk / 'filler')}",
            f"$VERA run --resume {q(run)} --quiet > {q(tmp_path / 'out2')} 2>&1",
            "echo rc2=$?",
            f"cp -r {q(run)} {q(saved)}",
        ]
    )
    proc = in_private_mounts(script)
    assert "rc1=1" in proc.stdout, proc.stdout + proc.stderr + (tmp_path / "err1").read_text()
    line = one_error_line((tmp_path / "err1").read_text())
    assert (
        "No space left on device" in line
        and f"resume with: {sys.executable} -m vera run --resume {run}" in line
    )
    partial = [ln for ln in (tmp_path / "partial.jsonl").read_text().splitlines() if ln.endswith("}")]
    assert 0 < len(partial) < 40, "the disk must fill in the middle of the sweep"
    assert "rc2=0" in proc.stdout, (tmp_path / "out2").read_text()
    cards = [json.loads((d / "card.json").read_text()) for d in (reference, saved)]
    for card in cards:
        card.pop("run_id")
        card.pop("accounting")
    assert cards[0] == cards[1]


@pytest.mark.parametrize("write_format", [1, 2])
def test_a_killed_runs_unfolded_call_bodies_export_from_a_read_only_folder(
    tmp_path, monkeypatch, write_format
):
    # A run killed before its call bodies were closed, on a read-only mount: a reader
    # reads what was written (format 1: the log beside the database, which it cannot
    # fold and must not try to; format 2: the records, without their closing index),
    # and exports what the closed run exports.
    from vera.store import _bodies

    from .test_call_bodies_log import _killed_and_folded

    monkeypatch.setattr(_bodies, "WRITE_FORMAT", write_format)
    killed, folded, _ = _killed_and_folded(tmp_path)
    before = snapshot(killed)
    out = tmp_path / "killed.jsonl"
    proc = in_private_mounts(f"{read_only(killed)} && $VERA export --calls {q(killed)} -o {q(out)}")
    assert proc.returncode == 0, proc.stderr
    assert snapshot(killed) == before
    if write_format == 1:
        assert (killed / "call_bodies.sqlite-log").exists()
    else:
        assert not (killed / "call_bodies.vlog").read_bytes().endswith(b"VBINDEX\n")
    r = CliRunner().invoke(main, ["export", "--calls", str(folded), "-o", str(tmp_path / "folded.jsonl")])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == (tmp_path / "folded.jsonl").read_bytes() and out.stat().st_size > 0
