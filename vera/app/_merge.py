"""Merge shard run directories into one run.

`vera run --shard K/N` runs a deterministic 1/N of a sweep's jobs (by job id), so any
scheduler can spread a sweep over machines. `merge_runs` checks that the shards belong
to the same sweep (same inputs, models and settings; only the shard differs) and
that together they make the whole sweep, copies their records into one directory (every
job once), writes the merged manifest and scores it.

An incomplete set of shards is refused unless `allow_partial`: then the merged
manifest records the missing shards, and the card says so at the top.

The merged run is built in a hidden folder beside `out` and renamed to `out` once its
card is written, so an interrupted or failed merge leaves no half-merged run (and no
folder that a second try would refuse as not empty). No event loop and no model call
here: a store is all a merge needs, not a RunSession.
"""

from __future__ import annotations

import os
import shutil
from collections import OrderedDict
from pathlib import Path
from typing import Any

import msgspec

from vera.app._resume import check_schema, resume_command
from vera.errors import UserError, storage_error
from vera.files import watching
from vera.records import AccountLimits, MergedShard, RunManifest
from vera.report import Exit, RunStatus, run_status, score_run
from vera.store import MANIFEST, RunStore, open_run, read_manifest

# Fields that legitimately differ between the shards of one sweep.
_PER_SHARD = (
    "run_id",
    "created_at",
    "updated_at",
    "shard",
    "jobs_planned",
    "base_dir",
    "stopped",
    "limits",  # what a shard's accounts ran with (machines may use different keys)
    "merged_from",  # set only in a merged run
    "killed_sessions",  # what a shard's killed sessions had in flight: kept, all of them
)


def _identity(m: RunManifest) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(m)
    for key in _PER_SHARD:
        data.pop(key, None)
    for key in ("rubric", "personas", "user_prompts", "judge_prompts"):
        data[key].pop("path", None)  # machines may keep the data in different places
    # Settings that define results are in config_sha256; the rest of the config (paths,
    # concurrency, budget: what a shard was run with) may differ between machines.
    data.pop("config", None)
    return data


def merge_runs(out: Path, shards: list[Path], *, allow_partial: bool = False) -> RunStatus:
    """Merge `shards` into `out`, score it, and return how the merged sweep stands."""
    manifests: list[RunManifest] = []
    for d in shards:
        manifests.append(read_manifest(d))  # names a folder that is not a run
        check_schema(manifests[-1], d / MANIFEST)  # its fields this vera does not know would be lost
    if len(shards) > 1:
        # Records are keyed by job id, but calls and planned jobs add up: a whole run
        # beside its shards (or twice) would count every call twice and leave the
        # merged run "incomplete" with jobs that all ran.
        for d, m in zip(shards, manifests, strict=True):
            if m.shard is None:
                raise UserError(
                    f"{d}: not a shard run (made without --shard, or merged); vera merge "
                    "combines the shards of one sweep (vera pool pools separate runs)"
                )
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
        seen: dict[str | None, Path] = {}
        for d, lab in zip(shards, labels, strict=True):
            if lab in seen:
                same = seen[lab].resolve() == d.resolve()
                raise UserError(
                    f"shard {lab} given twice: {d}"
                    if same
                    else f"shard {lab} given twice: {seen[lab]} and {d}"
                )
            seen[lab] = d
        missing = [f"{k}/{n}" for k in sorted(set(range(1, n + 1)) - set(have))]
    else:
        missing = []
    if missing and not allow_partial:
        raise UserError(
            f"incomplete sweep: shard(s) {', '.join(missing)} missing; give every shard, or "
            "--allow-partial to merge these and mark the card as partial"
        )
    if out.exists() and any(out.iterdir()):
        raise UserError(f"{out}: not empty; merge into a new directory")
    # Compared resolved, so neither a symlink nor `..` gets around it: a merged run inside
    # a shard would sit in that run's evidence (in its plots/ or conversations/, where the
    # shard's next card writes).
    where = out.expanduser().resolve()
    for d in shards:
        if where.is_relative_to(d.expanduser().resolve()):
            raise UserError(f"{out}: inside the shard run {d}; merge into a folder outside every shard")
    building = out.parent / f".{out.name}.merging-{os.getpid()}"
    try:
        shutil.rmtree(building, ignore_errors=True)  # left by a merge killed with this pid
        building.mkdir(parents=True)
    except OSError as exc:
        raise storage_error(out.parent, "the merged run", exc) from None
    try:
        # The shards' corrupt lines (when they may be skipped) are not copied: the
        # merged card names them, as a card scored over them would.
        with watching() as copied:
            merged = _merge_into(building, out.name, shards, manifests, missing)
        score_run(building, skipped=list(copied.lines.values()))
        if out.exists():
            out.rmdir()  # empty (checked above); a rename replaces no folder with content
        building.rename(out)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    records = open_run(out)
    return run_status(
        merged,
        records.conversation_heads(),
        records.judgement_heads(),
        stopped=None,
        allow_failures=merged.config.allow_failures,
    )


class Unfinished(msgspec.Struct, frozen=True):
    """A shard whose own run stopped before its work was done, and how to continue it."""

    run_dir: Path
    shard: str
    state: str  # as vera.report.shared._outcome names it: incomplete, budget, interrupted, ...
    command: str


def unfinished_shards(shards: list[Path]) -> list[Unfinished]:
    """The shards that are not finished (stopped on a budget, a signal, a fatal error,
    or killed): the merge of them is incomplete until each is continued and merged again,
    and its status alone does not say which shard that is."""
    found = []
    for d in shards:
        m = read_manifest(d)
        records = open_run(d)
        status = run_status(
            m,
            records.conversation_heads(),
            records.judgement_heads(),
            stopped=m.stopped,
            allow_failures=m.config.allow_failures,
        )
        if status.exit_code not in (Exit.STOPPED, Exit.INTERRUPTED):
            continue
        command = resume_command("run", d)
        if status.state == "budget" and m.config.max_cost_usd:
            command += f" --max-cost {m.config.max_cost_usd * 2:g}"  # as the shard's own status said
        found.append(Unfinished(run_dir=d, shard=m.shard or "", state=status.state, command=command))
    return found


# Conversations whose last history the bodies' writer keeps while a merge copies calls
# (a shard's calls interleave the conversations it ran at once); an older one is let go,
# which costs room (its next call's history is written whole), never a body.
_HISTORIES_HELD = 1024


def _merge_into(
    target_dir: Path, run_id: str, shards: list[Path], manifests: list[RunManifest], missing: list[str]
) -> RunManifest:
    """Copy every shard's records into a store at `target_dir`, one record in memory at a
    time, and write the merged manifest."""
    target = RunStore(target_dir, call_bodies=True)
    carried = 0  # calls copied with their body
    sources: list[MergedShard] = []
    try:
        for d, m in zip(shards, manifests, strict=True):
            # A line a crash tore is mended; then streamed, however big the shards are.
            src = open_run(d, repair=True)
            for c in src.iter_conversations():
                target.add_conversation(c)
            for j in src.iter_judgements():
                target.add_judgement(j)
            # Each call's body is handed over with its line, as a run does: the merged
            # run's bodies are keyed by where the line lands in the merged calls.jsonl.
            recent: OrderedDict[str, None] = OrderedDict()
            for call, body in src.calls_with_bodies():
                target.add_call(call, body)
                if body is None:
                    continue
                carried += 1
                recent[body.conversation_id] = None
                recent.move_to_end(body.conversation_id)
                if len(recent) > _HISTORIES_HELD and target.bodies is not None:
                    target.bodies.forget(recent.popitem(last=False)[0])
            if target.bodies is not None:
                for conversation in recent:
                    target.bodies.forget(conversation)
            sources.append(
                MergedShard(
                    run_dir=str(d.resolve()),
                    shard=m.shard,
                    call_bodies=m.config.call_bodies is not False,
                    calls_end=target.calls_size(),
                )
            )
        config = manifests[0].config
        # Each shard held --max-cost for its own run directory, so the shards together
        # could spend the sum: that is the merged run's budget (a resume of it counts
        # every shard's spend). A shard without a budget leaves the whole run without one.
        budgets = [m.config.max_cost_usd for m in manifests]
        config = msgspec.structs.replace(config, max_cost_usd=sum(budgets) if all(budgets) else 0.0)
        if carried and config.call_bodies is False:
            config = msgspec.structs.replace(config, call_bodies=msgspec.UNSET)  # kept
        elif not carried and any(m.config.call_bodies is False for m in manifests):
            config = msgspec.structs.replace(config, call_bodies=False)  # said why, not "none kept"
        # Every limit a shard ran with, once: shards on other keys, or run with other
        # --shard-limits or --limits-url, ran with other limits, and the card says so.
        limits: list[AccountLimits] = []
        for m in manifests:
            limits += [a for a in m.limits if a not in limits]
        # Every shard's killed sessions: the calls each had in flight are the merged run's.
        killed = [k for m in manifests for k in (m.killed_sessions or [])]
        merged = msgspec.structs.replace(
            manifests[0],
            killed_sessions=killed or msgspec.UNSET,
            config=config,
            limits=limits,
            run_id=run_id,
            shard=None,
            jobs_planned=sum(m.jobs_planned for m in manifests),
            created_at=min(m.created_at for m in manifests),
            updated_at=max(m.updated_at for m in manifests),
            stopped=None,
            missing_shards=missing,
            merged_from=sources,
        )
        target.write_manifest(merged)
    finally:
        target.close()
    return merged
