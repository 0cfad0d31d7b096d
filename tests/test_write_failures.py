"""Failures to read or write met by an unprivileged user or on a full disk, made without either:
the OS's answer (EACCES, ENOSPC) is injected at the standard library's boundary, so the
tests hold when run as root (which ignores file permissions). Each failure is one
`error:` line that says what to do next, with no traceback, and nothing finished is lost."""

from __future__ import annotations

import builtins
import errno
import io
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main

from .conftest import ROOT

OFFLINE = str(ROOT / "configs" / "offline.toml")
SMALL = ("--limit-personas", "4", "--quiet")


def refuse_open(monkeypatch: pytest.MonkeyPatch, when: Callable[[str], bool], code: int) -> None:
    """`os.open` of a path `when` picks fails with `code`, as the OS would answer it."""
    real = os.open

    def refusing(path, flags, *args, **kwargs):  # os.open's own signature
        if when(os.fspath(path)):
            raise OSError(code, os.strerror(code), os.fspath(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)


def error_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert "Traceback" not in output and lines and lines[-1].startswith("error: "), output
    assert sum(line.startswith("error: ") for line in lines) == 1, output
    return lines[-1]


def test_a_full_disk_while_writing_the_card_says_the_work_is_saved_and_how_to_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    refuse_open(monkeypatch, lambda p: Path(p).name.startswith(".card.json."), errno.ENOSPC)
    r = CliRunner().invoke(
        main, ["run", "--config", OFFLINE, "--out", str(out), "--limit-personas", "3", "--quiet"]
    )
    assert r.exit_code == 1, r.output
    line = error_line(r.output)
    assert f"{out / 'card.json'}: cannot write the score card: No space left on device" in line
    # Every record was written before the card: the line says so and how to write the card.
    assert "finished work is saved" in line and f"run --resume {out}" in line, line
    assert len((out / "judgements.jsonl").read_text().splitlines()) == 6
    monkeypatch.undo()
    r = CliRunner().invoke(main, ["run", "--resume", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "0 new, 6 reused" in r.output and (out / "card.json").is_file()


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("refusals") / "run"
    r = CliRunner().invoke(
        main, ["run", "--config", OFFLINE, "--out", str(out), "--limit-personas", "2", "--quiet"]
    )
    assert r.exit_code == 0, r.output
    return out


def refuse_reading(monkeypatch: pytest.MonkeyPatch, target: Path) -> None:
    """`open` of `target` fails with EACCES, as for a file another user owns (chmod 000)."""
    real = builtins.open

    def refusing(file, *args, **kwargs):  # open's own signature
        if isinstance(file, (str, os.PathLike)) and Path(file) == target:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing)
    monkeypatch.setattr(io, "open", refusing)  # what pathlib's Path.open calls


@pytest.mark.parametrize(
    "command",
    [
        "score {run}",
        "export {run} -o -",
        "pool {run}",
        "report improvements {run} --out -",
        "run --resume {run} --quiet",
        "judge {run}",
        "merge {tmp}/merged {run}",
        "view {run} --bundle {tmp}/bundle",
    ],
)
@pytest.mark.parametrize("name", ["judgements.jsonl", "conversations.jsonl"])
def test_a_record_file_vera_cannot_read_is_one_line_naming_it(
    small_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, name: str
) -> None:
    before = {p.name: p.read_bytes() for p in small_run.iterdir() if p.is_file()}
    refuse_reading(monkeypatch, small_run / name)
    args = command.format(run=small_run, tmp=tmp_path).split()
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1, r.output
    assert error_line(r.output) == f"error: {small_run / name}: cannot read: Permission denied"
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in small_run.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("command", ["export --calls {run} -o -", "view {run} --bundle {tmp}/bundle"])
def test_a_calls_file_vera_cannot_read_is_named_as_read_not_as_a_bundle_it_cannot_write(
    small_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """The call bodies' reader opens calls.jsonl itself: refused, it is named as a file
    vera cannot read (not a traceback, and not "cannot write the bundle")."""
    refuse_reading(monkeypatch, small_run / "calls.jsonl")
    r = CliRunner().invoke(main, command.format(run=small_run, tmp=tmp_path).split())
    assert r.exit_code == 1, r.output
    assert error_line(r.output) == f"error: {small_run / 'calls.jsonl'}: cannot read: Permission denied"
    assert not (tmp_path / "bundle").exists() and not list(tmp_path.glob(".bundle*"))


def test_a_card_vera_cannot_read_is_one_line_naming_it(
    small_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse_reading(monkeypatch, small_run / "card.json")
    r = CliRunner().invoke(main, ["card", str(small_run)])
    assert r.exit_code == 1, r.output
    assert error_line(r.output) == f"error: {small_run / 'card.json'}: cannot read: Permission denied"


def test_a_bundle_of_a_run_whose_call_bodies_cannot_be_read_is_refused_not_said_to_hold_them(
    small_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unreadable bodies (another user's run) made a bundle whose every page said the
    file "cannot be read; restore it from a backup", while the command said it wrote the
    conversations "with call bodies". A file the user only has to make readable is not
    damage: the bundle is refused, naming it and --no-call-bodies."""
    bodies = small_run / "call_bodies.vlog"
    assert bodies.is_file()
    refuse_reading(monkeypatch, bodies)
    r = CliRunner().invoke(main, ["view", str(small_run), "--bundle", str(tmp_path / "bundle")])
    assert r.exit_code == 1, r.output
    assert error_line(r.output) == (
        f"error: {bodies}: cannot read the call bodies: Permission denied; make it readable, "
        "or give --no-call-bodies to write the bundle without them"
    )
    assert not (tmp_path / "bundle").exists() and not list(tmp_path.glob(".bundle*"))
    r = CliRunner().invoke(
        main, ["view", str(small_run), "--bundle", str(tmp_path / "bundle"), "--no-call-bodies"]
    )
    assert r.exit_code == 0 and "without call bodies" in r.output, r.output


def test_a_folder_of_runs_names_the_runs_and_folders_it_cannot_read(
    small_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`vera view FOLDER` lists an unreadable run as unreadable ("one unreadable run does
    not hide the others"), but a run whose manifest the user may not read, or a folder
    it may not list, vanished from the list without a word."""
    from io import StringIO

    from vera.viewer.runs import Folder

    root = tmp_path / "runs"
    for name in ("ok", "locked", "hidden/inside"):
        shutil.copytree(small_run, root / name)
    refuse_reading(monkeypatch, root / "locked" / "manifest.json")
    real_scandir = os.scandir

    def refusing_scandir(path=".", *args, **kwargs):  # os.scandir's own signature
        if Path(path) == root / "hidden":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_scandir(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", refusing_scandir)
    err = StringIO()
    folder = Folder.open(root, err=err)
    rows = {r.folder: r for r in folder.rows}
    assert set(rows) == {"ok", "locked"}
    assert rows["ok"].state != "unreadable"
    assert rows["locked"].state == "unreadable" and "manifest.json" in rows["locked"].error
    assert "Permission denied" in rows["locked"].error
    said = err.getvalue().splitlines()
    assert said == [
        "vera view: hidden: cannot read the folder (Permission denied); runs in it are not listed",
        f"vera view: locked: not shown ({rows['locked'].error})",
    ], said


@pytest.fixture(scope="module")
def gate_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A one-chatbot baseline and a finished gate on it: (baseline, gate's run). Twelve
    personas: the first eight have no risk, so every rating of theirs is Not Relevant, and
    a gate refuses a baseline that rated nothing."""
    root = tmp_path_factory.mktemp("gate")
    base, gate = root / "base", root / "gate"
    r = CliRunner().invoke(
        main,
        ["run", "--config", OFFLINE, "--providers", "offline/best-practice", "--out", str(base),
         "--limit-personas", "12", "--quiet"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(
        main, ["gate", str(base), "--candidate", "offline/best-practice", "--out", str(gate), "--quiet"]
    )
    assert r.exit_code in (0, 5), r.output
    return base, gate


@pytest.mark.parametrize("name", ["gate.json", "sequence.jsonl"])
def test_a_gate_file_vera_cannot_read_is_one_line_saying_so(
    gate_run: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Rerunning a gate whose sequence.jsonl the user may not read was a traceback; its
    gate.json was called "not a gate's settings", which it is: it only cannot be read."""
    base, gate = gate_run
    refuse_reading(monkeypatch, gate / name)
    r = CliRunner().invoke(
        main, ["gate", str(base), "--candidate", "offline/best-practice", "--out", str(gate), "--quiet"]
    )
    assert r.exit_code == 1, r.output
    assert error_line(r.output) == f"error: {gate / name}: cannot read: Permission denied"


def _unenterable(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """`folder` as a folder without search permission: every stat of an entry in it
    fails with EACCES (root ignores a real chmod, so the tests say it through os.stat)."""
    real_stat = os.stat

    def refusing_stat(path, *args, **kwargs):  # os.stat's own signature
        if Path(os.fspath(path)).parent == folder:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", refusing_stat)


def test_a_locale_pack_vera_cannot_read_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--locale DIR` on a folder the user may not enter was a traceback from the search
    for its locale.toml."""
    pack = tmp_path / "pack"
    shutil.copytree(ROOT / "locales" / "zh-CN", pack)
    _unenterable(monkeypatch, pack)
    r = CliRunner().invoke(
        main, ["run", "--config", OFFLINE, "--locale", str(pack), "--out", str(tmp_path / "run")]
    )
    assert r.exit_code == 1, r.output
    assert error_line(r.output) == f"error: {pack / 'locale.toml'}: cannot read: Permission denied"
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", ["strings.toml", "personas.tsv", "rubric.tsv", "resources.toml"])
def test_validate_locale_lists_a_file_it_cannot_read_as_one_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """`vera validate locale DIR` lists every problem, one line each; a file of the pack
    the user may not read was a traceback instead."""
    pack = tmp_path / "pack"
    shutil.copytree(ROOT / "locales" / "zh-CN", pack)
    refuse_reading(monkeypatch, pack / name)
    r = CliRunner().invoke(main, ["validate", "locale", str(pack)])
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output, r.output
    said = [line for line in r.output.splitlines() if line.startswith(f"{pack / name}: error: cannot read")]
    assert len(said) == 1 and said[0].endswith(": Permission denied"), r.output


def test_a_providers_folder_vera_cannot_read_is_said_by_run_and_validate_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unreadable providers folder was read as empty: `vera run --providers
    openai/gpt-4o` said the model was unknown, and `vera validate config` said "ok"."""
    providers = tmp_path / "providers"
    shutil.copytree(ROOT / "providers", providers)
    text = Path(OFFLINE).read_text(encoding="utf-8").replace('"../', f'"{ROOT}/')
    config = tmp_path / "config.toml"
    config.write_text(text.replace(f'"{ROOT}/providers"', f'"{providers}"'), encoding="utf-8")
    real_scandir = os.scandir

    def refusing_scandir(path=".", *args, **kwargs):  # os.scandir's own signature
        if Path(os.fspath(path)) == providers:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_scandir(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", refusing_scandir)
    said = f"{providers}: cannot read the providers folder: Permission denied"
    r = CliRunner().invoke(main, ["validate", "config", str(config)])
    listed = f"{providers}: error: cannot read the providers folder: Permission denied"
    assert r.exit_code == 1 and listed in r.output.splitlines() and "Traceback" not in r.output, r.output
    r = CliRunner().invoke(
        main, ["run", "--config", str(config), "--providers", "openai/gpt-4o", "--out", str(tmp_path / "run")]
    )
    assert r.exit_code == 1, r.output
    assert error_line(r.output) == f"error: {said}"
    assert not (tmp_path / "run").exists()


def test_a_target_folder_vera_cannot_enter_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--target DIR` on a folder the user may not enter was a traceback from the search
    for its target.toml (Path.is_file does not swallow EACCES)."""
    target = tmp_path / "target"
    shutil.copytree(ROOT / "targets" / "vera-si", target)
    _unenterable(monkeypatch, target)
    r = CliRunner().invoke(
        main, ["run", "--config", OFFLINE, "--target", str(target), "--out", str(tmp_path / "run")]
    )
    assert r.exit_code == 1, r.output
    assert error_line(r.output) == f"error: {target / 'target.toml'}: cannot read target: Permission denied"
    assert not (tmp_path / "run").exists()


def test_a_reference_data_folder_vera_cannot_enter_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--target reference:SI` with VERA_MH_DATA naming a folder the user may not enter."""
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("VERA_MH_DATA", str(data))
    _unenterable(monkeypatch, data)
    r = CliRunner().invoke(main, ["run", "--target", "reference:SI", "--out", str(tmp_path / "run")])
    assert r.exit_code == 1, r.output
    assert error_line(r.output) == f"error: {data / 'SI'}: cannot read target: Permission denied"


def test_call_bodies_vera_cannot_read_are_named_once_in_plain_words(
    small_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`vera export --calls` of a run whose bodies the user may not read said the path
    twice: "...vlog: cannot read the call bodies: [Errno 13] Permission denied: '...vlog'"."""
    bodies = small_run / "call_bodies.vlog"
    refuse_reading(monkeypatch, bodies)
    r = CliRunner().invoke(main, ["export", "--calls", str(small_run), "-o", "-"])
    assert r.exit_code == 1, r.output
    assert error_line(r.output) == f"error: {bodies}: cannot read the call bodies: Permission denied"
