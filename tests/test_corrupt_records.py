"""Corrupt records are named, never skipped in silence (issue 27, item 2).

A line of a run's record file that does not decode is reported with its file and line
by every command that reads it; `run --resume`, `judge`, `score` and `merge` refuse to
go on unless given `--skip-corrupt`, and the card made with it names the lines it left
out (card.json, card.md, card.html and the terminal). A torn last line (a crash
mid-write) is not corruption: it is mended as before, without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vera.files import CorruptLine, CorruptRecordError, watching
from vera.store import RunStore, open_run
from vera.viewer.catalogue import Catalogue

from .door import invoke, refused, snapshot
from .door import run as run  # the fixture
from .door import runs as runs  # the fixture

GARBAGE = b"this line is not a record\n"


def corrupt(path: Path, after: int = 1) -> int:
    """Put a garbage line after the first `after` lines; return its line number."""
    lines = path.read_bytes().splitlines(keepends=True)
    assert len(lines) > after
    path.write_bytes(b"".join(lines[:after]) + GARBAGE + b"".join(lines[after:]))
    return after + 1


def warnings_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning: ")]


@pytest.mark.parametrize("name", ["conversations.jsonl", "judgements.jsonl", "calls.jsonl"])
def test_resume_and_score_refuse_a_corrupt_line_naming_file_and_line(run, name) -> None:
    number = corrupt(run / name)
    before = snapshot(run)
    where = f"{run / name}:{number}"
    line = refused(invoke(["run", "--resume", str(run), "--quiet"]), where, "--skip-corrupt")
    assert "not a record" in line
    refused(invoke(["score", str(run)]), where)
    assert snapshot(run) == before  # nothing rewritten, not even the manifest


def test_judge_refuses_a_corrupt_judgement_line(run) -> None:
    number = corrupt(run / "judgements.jsonl")
    refused(invoke(["judge", str(run), "--quiet"]), f"{run / 'judgements.jsonl'}:{number}")


def test_skip_corrupt_goes_on_and_the_card_names_the_lines(run) -> None:
    number = corrupt(run / "conversations.jsonl")
    resumed = invoke(["run", "--resume", str(run), "--skip-corrupt", "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    warned = warnings_of(resumed.stderr)
    assert warned and f"{run / 'conversations.jsonl'}:{number}" in warned[0]
    card = json.loads((run / "card.json").read_text())
    assert card["status"]["skipped_lines"] == [f"conversations.jsonl:{number}"]
    for page in ("card.md", "card.html"):
        assert "1 corrupt record line(s) skipped" in (run / page).read_text()
    shown = invoke(["card", str(run)])
    assert "1 corrupt record line(s) skipped" in shown.output
    scored = invoke(["score", str(run), "--skip-corrupt"])
    assert scored.exit_code == 0, scored.output
    assert json.loads((run / "card.json").read_text())["status"]["skipped_lines"] == [
        f"conversations.jsonl:{number}"
    ]


def test_score_with_skip_corrupt_counts_a_lost_judgement(run) -> None:
    path = run / "judgements.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1][: len(lines[1]) // 2] + b"\n" + b"".join(lines[2:]))
    scored = invoke(["score", str(run), "--skip-corrupt"])
    assert scored.exit_code == 0, scored.output
    card = json.loads((run / "card.json").read_text())
    assert card["status"]["skipped_lines"] == ["judgements.jsonl:2"]
    assert "judgements.jsonl:2" in (run / "card.md").read_text()


@pytest.mark.parametrize("command", ["compare", "export"])
def test_readers_go_on_and_name_each_corrupt_line(run, runs, command) -> None:
    number = corrupt(run / "judgements.jsonl")
    args = (
        ["compare", str(runs["run2"]), str(run)] if command == "compare" else ["export", str(run), "-o", "-"]
    )
    result = invoke(args)
    assert result.exit_code == 0, result.output
    warned = warnings_of(result.stderr)
    assert len(warned) == 1 and f"{run / 'judgements.jsonl'}:{number}" in warned[0]


def test_the_viewer_and_every_reader_hear_of_a_corrupt_line(run) -> None:
    number = corrupt(run / "conversations.jsonl", after=2)
    heard: list[CorruptLine] = []
    with watching(on_found=heard.append):
        records = open_run(run)
    assert [(h.path.name, h.number) for h in heard] == [("conversations.jsonl", number)]
    assert len(records.conversations) == 4  # every record around it is still read
    with watching(refuse=True), pytest.raises(CorruptRecordError):
        open_run(run)
    heard.clear()
    with watching(on_found=heard.append):  # what `vera view` indexes at its start
        Catalogue.open([str(run)])
    assert [(h.path.name, h.number) for h in heard] == [("conversations.jsonl", number)]


def test_many_corrupt_lines_are_summed_up_after_the_first_few(run) -> None:
    path = run / "judgements.jsonl"
    for _ in range(8):
        corrupt(path)
    result = invoke(["export", str(run), "-o", "-"])
    assert result.exit_code == 0
    warned = warnings_of(result.stderr)
    assert len(warned) == 6 and warned[-1] == f"warning: {path}: 3 more corrupt line(s) left out"


def test_merge_refuses_a_corrupt_shard_unless_told(run, tmp_path) -> None:
    corrupt(run / "judgements.jsonl")
    refused(invoke(["merge", str(tmp_path / "merged"), str(run)]), "judgements.jsonl:2")
    assert not (tmp_path / "merged").exists()
    merged = invoke(["merge", str(tmp_path / "merged"), str(run), "--skip-corrupt"])
    assert merged.exit_code == 0, merged.output
    assert "judgements.jsonl:2" in merged.stderr
    # The merged card names the line it left out, and the shard run it was in.
    card = json.loads((tmp_path / "merged" / "card.json").read_text())
    assert card["status"]["skipped_lines"] == [f"{run / 'judgements.jsonl'}:2"]
    assert f"{run / 'judgements.jsonl'}:2" in (tmp_path / "merged" / "card.md").read_text()


def test_a_torn_last_line_is_mended_without_a_word(run) -> None:
    path = run / "judgements.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"id": "torn", "conversation_id"')  # kill -9 mid-write: no newline
    scored = invoke(["score", str(run)])
    assert scored.exit_code == 0, scored.output
    assert not warnings_of(scored.stderr)
    assert path.read_bytes().endswith(b"\n")  # cut back to the last whole record
    assert json.loads((run / "card.json").read_text())["status"]["skipped_lines"] == []
    resumed = invoke(["run", "--resume", str(run), "--quiet"])
    assert resumed.exit_code == 0, resumed.output


def test_the_store_refuses_under_a_refusing_watcher_and_counts_otherwise(run) -> None:
    corrupt(run / "conversations.jsonl")
    with watching(refuse=True), pytest.raises(CorruptRecordError, match=r"conversations\.jsonl:2"):
        RunStore(run)
    with watching() as damage:
        RunStore(run).close()
    assert [line.number for line in damage.lines.values()] == [2]


def test_the_viewer_names_a_damaged_call_line_on_the_conversation_page(run) -> None:
    from vera.viewer.calls import CallIndex, corrupt_html

    path = run / "calls.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    job = json.loads(lines[0])["job_id"]
    # The line still names its job (so the page looks for it) but is not a call record.
    damaged = b'{"job_id":"' + job.encode() + b'","not":"a call"}\n'
    path.write_bytes(lines[0] + damaged + b"".join(lines[1:]))
    index = CallIndex(run)
    calls, corrupt_lines = index.calls_and_damage([job])
    assert corrupt_lines == [2]
    assert calls and all(c.job_id == job for c in calls)  # the calls around it are shown
    assert f"{path}: line(s) 2 not a call record" in corrupt_html(path, corrupt_lines)
    assert corrupt_html(path, []) == ""


def test_a_garbage_call_line_costs_the_viewer_no_body(run, tmp_path) -> None:
    # A garbage line among the calls moves every later line from the place its body
    # names. The viewer pairs the bodies with the lines as the export does (it used to
    # read each body's call from that place, and refused the bundle): every page shows
    # the bodies it showed before, and nothing blames call_bodies.vlog (which is whole).
    def pages(bundle: Path) -> dict[str, str]:
        result = invoke(["view", str(run), "--bundle", str(bundle)])
        assert result.exit_code == 0, result.output
        assert "call_bodies" not in result.stderr
        return {p.name: p.read_text() for p in (bundle / "runs" / "0" / "conversations").glob("*.html")}

    before = pages(tmp_path / "before")
    corrupt(run / "calls.jsonl", after=3)
    after = pages(tmp_path / "after")
    assert after.keys() == before.keys() and after
    for name, page in after.items():
        assert "call_bodies" not in page and 'id="calls-no-body"' not in page
        section = before[name].split('<section id="call-bodies"', 1)[1].split("</section>", 1)[0]
        assert section in page, name


def test_a_line_added_to_the_call_log_hides_no_other_calls_body(run, tmp_path) -> None:
    # A line added to calls.jsonl moves every later line from the place its body names:
    # each body is found again by what it holds of its call, so every call keeps its own
    # (the garbage line itself is named and left out).
    whole = tmp_path / "whole.jsonl"
    assert invoke(["export", "--calls", str(run), "-o", str(whole)]).exit_code == 0
    number = corrupt(run / "calls.jsonl", after=3)
    target = tmp_path / "calls.jsonl"
    result = invoke(["export", "--calls", str(run), "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert f"{run / 'calls.jsonl'}:{number}" in warnings_of(result.stderr)[0]
    assert target.read_bytes() == whole.read_bytes()
    assert "each with its request and response" in result.stderr
