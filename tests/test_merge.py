"""Merging shards: an incomplete set is refused unless --allow-partial, and then the
card says at the top which shards are missing."""

from __future__ import annotations

import json

from .test_cli import assert_one_line_error, vera


def test_an_incomplete_set_of_shards_is_refused_unless_allowed_and_then_marked(tmp_path):
    for k in (1, 3):
        proc = vera(
            "run", "--limit-personas", "6", "--shard", f"{k}/3", "--out", str(tmp_path / f"s{k}"), "--quiet"
        )
        assert proc.returncode == 0, proc.stderr
    shards = [str(tmp_path / "s1"), str(tmp_path / "s3")]
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
