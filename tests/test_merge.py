"""Merging shards: an incomplete set is refused unless --allow-partial, and then the
card says at the top which shards are missing."""

from __future__ import annotations

import json
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
