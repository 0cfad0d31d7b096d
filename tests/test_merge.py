"""Merging shards: an incomplete set is refused unless --allow-partial, and then the
card says at the top which shards are missing."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from .test_cli import assert_one_line_error, vera


def run_shards(folder: Path, of: int, ks: tuple[int, ...], personas: int) -> list[str]:
    """Offline shards K/`of` for each K in `ks`, in `folder`/sK; their folders."""
    for k in ks:
        out = folder / f"s{k}"
        proc = vera(
            "run", "--limit-personas", str(personas), "--shard", f"{k}/{of}", "--out", str(out), "--quiet"
        )
        assert proc.returncode == 0, proc.stderr
    return [str(folder / f"s{k}") for k in ks]


def test_an_incomplete_set_of_shards_is_refused_unless_allowed_and_then_marked(tmp_path):
    shards = run_shards(tmp_path, 3, (1, 3), personas=6)
    out = tmp_path / "merged"
    assert_one_line_error(
        vera("merge", str(out), *shards), "incomplete sweep: shard(s) 2/3 missing", "--allow-partial"
    )
    assert not out.exists()
    proc = vera("merge", str(out), *shards, "--allow-partial")
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.strip()
        .splitlines()[-1]
        .startswith("status: complete — partial sweep, shard(s) 2/3 missing")
    )
    card = json.loads((out / "card.json").read_text())
    assert list(card)[:3] == ["schema_version", "run_id", "status"]
    assert card["status"]["missing_shards"] == ["2/3"]
    warning = "Partial sweep: shard(s) 2/3 are missing"
    # The warning follows the title and the status line, before any number.
    lines = (out / "card.md").read_text().splitlines()
    assert lines[2].startswith("**Run status:**")
    assert lines[4] == f"> **{warning}; every number below covers only the shards that were merged.**"
    assert warning in (out / "card.html").read_text()


def test_an_interrupted_merge_leaves_nothing_half_made_and_can_be_run_again(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from vera.app import _merge as merging
    from vera.cli._main import main

    shards = run_shards(tmp_path, 2, (1, 2), personas=4)
    out = tmp_path / "merged"

    def interrupted(run_dir, **_):
        assert (run_dir / "manifest.json").is_file()  # the records were all copied by now
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(merging, "score_run", interrupted)
        result = CliRunner().invoke(main, ["merge", str(out), *shards])
    assert result.exit_code == 130
    # No half-merged run, nothing hidden left beside it: the same command works again.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s1", "s2"]
    again = CliRunner().invoke(main, ["merge", str(out), *shards])
    assert again.exit_code == 0, again.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["merged", "s1", "s2"]
    assert json.loads((out / "card.json").read_text())["run_id"] == "merged"
    assert not any(".merging-" in p.read_text() for p in out.glob("*.json*"))


def _exported(run: Path, tmp_path: Path) -> list[str]:
    """`vera export --calls` of a run: one canonical JSON line per call."""
    from click.testing import CliRunner

    from vera.cli._main import main

    target = tmp_path / f"{run.name}-calls.jsonl"
    result = CliRunner().invoke(main, ["export", "--calls", str(run), "-o", str(target)])
    assert result.exit_code == 0, result.output
    return [json.dumps(json.loads(line), sort_keys=True) for line in target.read_text().splitlines()]


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_the_merged_run_carries_every_calls_body(tmp_path):
    shards = [Path(s) for s in run_shards(tmp_path, 2, (1, 2), personas=4)]
    out = tmp_path / "merged"
    proc = vera("merge", str(out), *map(str, shards))
    assert proc.returncode == 0, proc.stderr
    assert (out / "call_bodies.vlog").is_file()
    merged = _exported(out, tmp_path)
    # Every call of the merged run, with its request and response, as the shards had it.
    assert len(merged) == _lines(out / "calls.jsonl") == sum(_lines(s / "calls.jsonl") for s in shards) > 0
    assert sorted(merged) == sorted(_exported(shards[0], tmp_path) + _exported(shards[1], tmp_path))
    assert all(json.loads(c)["request"]["messages"] and json.loads(c)["response"] for c in merged)


def test_a_shard_in_format_1_merges_with_one_in_format_2(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from vera.cli._main import main
    from vera.store import _bodies

    old = tmp_path / "s1"
    with monkeypatch.context() as m:
        m.setattr(_bodies, "WRITE_FORMAT", 1)  # the format an earlier vera wrote
        result = CliRunner().invoke(
            main, ["run", "--limit-personas", "4", "--shard", "1/2", "--out", str(old), "--quiet"]
        )
    assert result.exit_code == 0, result.output
    assert (old / "call_bodies.sqlite").is_file() and not (old / "call_bodies.vlog").exists()
    new = Path(run_shards(tmp_path, 2, (2,), personas=4)[0])
    assert (new / "call_bodies.vlog").is_file()
    out = tmp_path / "merged"
    proc = vera("merge", str(out), str(old), str(new))
    assert proc.returncode == 0, proc.stderr
    assert (out / "call_bodies.vlog").is_file() and not (out / "call_bodies.sqlite").exists()
    merged = _exported(out, tmp_path)
    assert len(merged) == _lines(out / "calls.jsonl")
    assert sorted(merged) == sorted(_exported(old, tmp_path) + _exported(new, tmp_path))


def test_a_shard_without_bodies_merges_and_its_calls_have_none(tmp_path):
    bare = tmp_path / "s1"
    proc = vera(
        "run", "--limit-personas", "4", "--shard", "1/2", "--out", str(bare), "--quiet", "--no-call-bodies"
    )
    assert proc.returncode == 0, proc.stderr
    assert not (bare / "call_bodies.vlog").exists()
    kept = Path(run_shards(tmp_path, 2, (2,), personas=4)[0])
    out = tmp_path / "merged"
    proc = vera("merge", str(out), str(bare), str(kept))
    assert proc.returncode == 0, proc.stderr
    assert _lines(out / "calls.jsonl") == _lines(bare / "calls.jsonl") + _lines(kept / "calls.jsonl")
    merged = [json.loads(c) for c in _exported(out, tmp_path)]
    with_body = [json.dumps(c, sort_keys=True) for c in merged if c["request"] is not None]
    assert sorted(with_body) == sorted(_exported(kept, tmp_path))
    # The calls of the shard that kept none are there too, each saying it has no body.
    bare_calls = [json.loads(x) for x in (bare / "calls.jsonl").read_text().splitlines()]
    without = [c for c in merged if c["request"] is None]
    assert [c["call"] for c in without] == bare_calls
    assert all(c["response"] is None and "--no-call-bodies" in c["no_body"] for c in without)
    # Each names the shard run it came from, so a reader knows where its body is not.
    assert {c["no_body"] for c in without} == {
        "no request or response was kept for this call: it was merged from the shard run "
        f"{bare.resolve()} (shard 1/2), made with --no-call-bodies"
    }
    # The command's own line does not claim every call has its request and response.
    proc = vera("export", "--calls", str(out), "-o", str(tmp_path / "again.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == (
        f"wrote {len(merged):,} calls to {tmp_path / 'again.jsonl'}; {len(without):,} of them without "
        "their request and response (each one's no_body says why)"
    )
    # The merged run keeps bodies, though its first shard kept none: the card does not
    # say "not kept" (it writes call_bodies only when false).
    assert json.loads((bare / "card.json").read_text())["settings"]["call_bodies"] is False
    assert '"call_bodies"' not in (out / "card.json").read_text()
    # The viewer's pages (here in the static bundle) name the calls that have none.
    from click.testing import CliRunner

    from vera.cli._main import main
    from vera.viewer.bundle import page_file

    bundle = tmp_path / "bundle"
    result = CliRunner().invoke(main, ["view", str(out), "--bundle", str(bundle)])
    assert result.exit_code == 0, result.output
    note = "No request or response is shown for call(s)"
    for convs, said in ((bare, True), (kept, False)):
        ids = {json.loads(x)["id"] for x in (convs / "conversations.jsonl").read_text().splitlines()}
        assert ids
        for cid in ids:
            page = next(bundle.rglob(page_file(cid))).read_text()
            assert (note in page) is said, cid
            # A call's number links to its body only where the body is on the page.
            links = set(re.findall(r'href="#call-(\d+)"', page))
            bodies = set(re.findall(r'class="call-body" id="call-(\d+)"', page))
            assert links == bodies and bool(links) is not said, cid


def test_a_damaged_call_line_is_left_out_with_its_body_under_skip_corrupt(tmp_path):
    shards = [Path(s) for s in run_shards(tmp_path, 2, (1, 2), personas=4)]
    calls = shards[0] / "calls.jsonl"
    lines = calls.read_bytes().splitlines(keepends=True)
    # Damaged in place (same length), so every other line and body keeps its place.
    lines[1] = b"#" * (len(lines[1]) - 1) + b"\n"
    calls.write_bytes(b"".join(lines))
    out = tmp_path / "merged"
    refused = vera("merge", str(out), *map(str, shards))
    assert_one_line_error(refused, "calls.jsonl:2")
    proc = vera("merge", str(out), *map(str, shards), "--skip-corrupt")
    assert proc.returncode == 0, proc.stderr
    assert "calls.jsonl:2" in proc.stderr
    merged = [json.loads(c) for c in _exported(out, tmp_path)]
    assert len(merged) == len(lines) - 1 + _lines(shards[1] / "calls.jsonl")
    assert all(c["request"] is not None for c in merged)


def test_merging_zh_cn_shards_says_so_in_the_runs_words(tmp_path):
    """Shards run with `--locale zh-CN` speak Chinese (as `vera run` and `vera card` on
    them do); the merge's own lines were English."""
    shards = []
    for k in (1, 2):
        out = tmp_path / f"s{k}"
        proc = vera(
            "run",
            "--limit-personas",
            "4",
            "--shard",
            f"{k}/2",
            "--locale",
            "zh-CN",
            "--out",
            str(out),
            "--quiet",
        )
        assert proc.returncode == 0, proc.stderr
        shards.append(str(out))
    merged = tmp_path / "merged"
    proc = vera("merge", str(merged), *shards)
    assert proc.returncode == 0, proc.stderr
    first, last = proc.stdout.strip().splitlines()
    assert first == f"已合并 2 个运行 → {merged}"
    assert last.startswith("状态：已完成 — ") and last.endswith("（退出码 0）")


def test_merging_english_shards_reads_as_before(tmp_path):
    shards = run_shards(tmp_path, 2, (1, 2), personas=4)
    merged = tmp_path / "merged"
    proc = vera("merge", str(merged), *shards)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"merged 2 run(s) → {merged}",
        "status: complete — 8 of 8 conversations complete, 0 failed; 8 of 8 judgements complete, 0 failed "
        "(exit code 0)",
    ]


def _offline_run(out: Path, *args: str) -> None:
    """An offline run of 4 personas, in process (faster than a subprocess)."""
    from click.testing import CliRunner

    from vera.cli._main import main

    result = CliRunner().invoke(main, ["run", "--limit-personas", "4", "--out", str(out), "--quiet", *args])
    assert result.exit_code == 0, result.output


def test_a_run_made_without_shard_is_refused_beside_others(tmp_path):
    # Merging keys records by job id, but adds up every run's calls and planned jobs: a
    # whole run given beside its shards (or twice) counted every call twice and called
    # the merged run incomplete, exit code 3, with jobs "not run yet" that all ran.
    whole, again = tmp_path / "whole", tmp_path / "again"
    _offline_run(whole)
    _offline_run(again)
    _offline_run(tmp_path / "s1", "--shard", "1/2")
    for runs in ([whole, tmp_path / "s1"], [whole, again], [whole, whole]):
        out = tmp_path / "merged"
        assert_one_line_error(
            vera("merge", str(out), *map(str, runs)), f"{whole}: not a shard run", "vera pool"
        )
        assert not out.exists()
    # One whole run alone still merges (a copy of it, scored).
    proc = vera("merge", str(tmp_path / "copy"), str(whole))
    assert proc.returncode == 0, proc.stderr
    assert _lines(tmp_path / "copy" / "calls.jsonl") == _lines(whole / "calls.jsonl")


def test_the_merged_run_is_never_written_inside_a_shard(tmp_path):
    # A merged run inside a shard's folder puts a run in the shard's evidence, and in
    # its plots/ or conversations/ one that the shard's next card writes over.
    shards = [Path(s) for s in run_shards(tmp_path, 2, (1, 2), personas=4)]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for out in (shards[0] / "merged", shards[1] / "plots" / "merged", tmp_path / "link" / "merged"):
        if out.parent.name == "link":
            out.parent.symlink_to(shards[0])
        assert_one_line_error(
            vera("merge", str(out), *map(str, shards)), f"{out}: inside the shard run", "outside"
        )
    (tmp_path / "link").unlink()
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_merge_of_an_unfinished_shard_names_it_and_how_to_finish_it(tmp_path):
    # The merge of a shard stopped half-way said "incomplete — N planned job(s) not run
    # yet" and nothing about which shard, nor how to go on.
    shards = [Path(s) for s in run_shards(tmp_path, 2, (1, 2), personas=6)]
    # Shard 2 as a kill leaves it: its first conversation's records and nothing after.
    cut = shards[1] / "conversations.jsonl"
    cut.write_text(cut.read_text().splitlines(keepends=True)[0])
    judged = shards[1] / "judgements.jsonl"
    judged.write_text(judged.read_text().splitlines(keepends=True)[0])
    out = tmp_path / "merged"
    proc = vera("merge", str(out), *map(str, shards))
    assert proc.returncode == 3, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[1] == (
        f"shard 2/2 in {shards[1]} is not finished (incomplete): "
        f"continue it with `{sys.executable} -m vera run --resume {shards[1]}`, then merge again"
    )
    assert lines[-1].startswith("status: incomplete — ")


def test_a_shard_given_twice_is_named_with_both_folders(tmp_path):
    # "the same shard given twice: [1, 1, 2]" did not say which folders those were.
    shards = [Path(s) for s in run_shards(tmp_path, 2, (1, 2), personas=4)]
    copy = tmp_path / "copy-of-s1"
    shutil.copytree(shards[0], copy)
    out = tmp_path / "merged"
    assert_one_line_error(
        vera("merge", str(out), *map(str, shards), str(copy)),
        f"shard 1/2 given twice: {shards[0]} and {copy}",
    )
    assert not out.exists()


def test_the_merged_run_holds_the_sum_of_its_shards_budgets(tmp_path):
    # Each shard holds --max-cost for its own folder; the merged manifest kept the first
    # shard's, so a resume of the merged run (which counts every shard's spend) stopped
    # on its budget at once.
    for k, budget in ((1, "4"), (2, "6")):
        _offline_run(tmp_path / f"s{k}", "--shard", f"{k}/2", "--max-cost", budget)
    _offline_run(tmp_path / "t1", "--shard", "1/2", "--max-cost", "4")
    _offline_run(tmp_path / "t2", "--shard", "2/2")  # no budget
    for shards, expected in ((("s1", "s2"), 10.0), (("t1", "t2"), 0.0)):
        out = tmp_path / f"merged-{shards[0]}"
        proc = vera("merge", str(out), *(str(tmp_path / s) for s in shards))
        assert proc.returncode == 0, proc.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["config"]["max_cost_usd"] == expected


def test_the_merged_run_keeps_every_shard_s_killed_sessions(tmp_path):
    # The merged manifest is the first shard's with fields combined: killed sessions
    # were the first shard's alone, so the card lost the calls another shard's kill left
    # unrecorded.
    shards = run_shards(tmp_path, 2, (1, 2), personas=2)
    for k, shard in enumerate(shards, 1):
        path = Path(shard) / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["killed_sessions"] = [
            {"started_at": f"2026-12-07T10:0{k}:00.000+00:00", "found_at": "2026-12-07T10:09:00.000+00:00"}
            | {"calls": k, "conversations": k, "judgements": 0, "per_judgement": 36, "jobs_calls": k}
            | {"max_in_flight": 64, "worst_usd": 0.01 * k}
        ]
        path.write_text(json.dumps(manifest))
    out = tmp_path / "merged"
    proc = vera("merge", str(out), *shards)
    assert proc.returncode == 0, proc.stderr
    killed = json.loads((out / "card.json").read_text())["accounting"]["killed_sessions"]
    assert [k["calls"] for k in killed] == [1, 2]
    assert "with up to 3 call(s) in flight" in (out / "card.md").read_text()


def test_a_merged_run_resumed_or_judged_again_keeps_its_shards(tmp_path):
    """`merged_from` names the shard each call came from (a call without a body says which
    shard kept none); a session on the merged run does not set it, and must not drop it.
    With nothing left to do, the manifest is left byte for byte as it was."""
    shards = run_shards(tmp_path, 2, (1, 2), personas=4)
    out = tmp_path / "merged"
    assert vera("merge", str(out), *shards).returncode == 0
    before = (out / "manifest.json").read_bytes()
    assert json.loads(before)["merged_from"]
    for command in (("run", "--resume", str(out)), ("judge", str(out))):
        proc = vera(*command, "--quiet")
        assert proc.returncode == 0, proc.stderr
        assert (out / "manifest.json").read_bytes() == before, command
