"""Merge shard run directories into one run.

`vera run --shard K/N` runs a deterministic 1/N of a sweep's jobs (by job id), so any
scheduler can spread a sweep over machines. `merge_runs` checks that the shards belong
to the same sweep (same inputs, models and settings; only the shard differs), copies
their records into one directory (every job once), writes the merged manifest and
scores it.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from vera.errors import UserError
from vera.records import RunManifest
from vera.report import score_run
from vera.store import RunStore

# Fields that legitimately differ between the shards of one sweep.
_PER_SHARD = ("run_id", "created_at", "updated_at", "shard", "jobs_planned")


def _identity(m: RunManifest) -> dict:
    data = msgspec.to_builtins(m)
    for key in _PER_SHARD:
        data.pop(key, None)
    for key in ("rubric", "personas", "user_prompts", "judge_prompts"):
        data[key].pop("path", None)  # machines may keep the data in different places
    data.get("config", {}).pop("base_dir", None)
    return data


def merge_runs(out: Path, shards: list[Path]) -> list[str]:
    notes: list[str] = []
    manifests: list[RunManifest] = []
    for d in shards:
        s = RunStore(d)
        m = s.read_manifest()
        s.close()
        if m is None:
            raise UserError(f"{d}: not a vera run directory (no manifest.json)")
        manifests.append(m)
    first = _identity(manifests[0])
    for d, m in zip(shards[1:], manifests[1:], strict=True):
        other = _identity(m)
        if other != first:
            keys = sorted(k for k in first if first.get(k) != other.get(k))
            raise UserError(
                f"{d}: not a shard of the same sweep as {shards[0]} (differs in: {', '.join(keys)})"
            )
    labels = [m.shard for m in manifests]
    counts = {lab.split("/")[1] for lab in labels if lab}
    if len(counts) > 1:
        raise UserError(f"shards of different splits: {', '.join(str(x) for x in labels)}")
    if counts:
        n = int(counts.pop())
        have = sorted(int(lab.split("/")[0]) for lab in labels if lab)
        if len(set(have)) != len(have):
            raise UserError(f"the same shard given twice: {have}")
        missing = sorted(set(range(1, n + 1)) - set(have))
        if missing:
            notes.append(f"incomplete sweep: shards {', '.join(map(str, missing))} of {n} are missing")
    if out.exists() and any(out.iterdir()):
        raise UserError(f"{out}: not empty; merge into a new directory")
    target = RunStore(out)
    try:
        for d in shards:
            src = RunStore(d)
            for c in src.conversations.values():
                target.add_conversation(c)
            for j in src.judgements.values():
                target.add_judgement(j)
            for call in src.calls():
                target.add_call(call)
            src.close()
        merged = msgspec.structs.replace(
            manifests[0],
            run_id=out.name,
            shard=None,
            jobs_planned=sum(m.jobs_planned for m in manifests),
            created_at=min(m.created_at for m in manifests),
            updated_at=max(m.updated_at for m in manifests),
        )
        target.write_manifest(merged)
    finally:
        target.close()
    score_run(out)
    return notes
