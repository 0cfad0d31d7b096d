"""`vera export --calls`: every model call of a run, one JSON object per line, with its
full request (messages, parameters, schema) and response (text, structured answer,
finish reason, usage) beside its accounting record, in the order of calls.jsonl.

The bodies are read back from the run's content-addressed store (vera.store's call
bodies), one call at a time, so a run of any size is written in bounded memory. The file
appears whole or not at all, and is never one of the run's own files.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, Any, NamedTuple

import msgspec

from vera.errors import UserError
from vera.inputs import mask_url
from vera.records import CallBody, CallRecord, MergedShard, WireRequest
from vera.store import atomic_file, check_output, has_bodies, placed_calls_with_bodies, read_manifest


def exported_call(body: CallBody) -> dict[str, Any]:
    """One call as `vera export --calls` writes it (and the viewer shows it)."""
    return {
        "call": msgspec.to_builtins(body.call),
        "conversation_id": body.conversation_id,
        "question_id": body.question_id,
        "request": {
            "messages": [{"role": m.role, "content": m.content} for m in body.messages],
            "params": body.params,
            "schema": body.schema,
            "reask": body.reask,
            # What a team's own chatbot (protocol `http`) received: the body rendered
            # from its template, the method and the URL; null for the other protocols.
            "wire": _wire(body.wire),
        },
        "response": msgspec.to_builtins(body.response) if body.response is not None else None,
    }


def _wire(wire: WireRequest | None) -> dict[str, str] | None:
    """The request as sent, its URL's credential parameters masked once more: a run
    recorded by a vera before `mask_url` kept a key written in the profile's URL."""
    if wire is None:
        return None
    return {"method": wire.method, "url": mask_url(wire.url), "body": wire.body}


# Why a call of a run that keeps bodies has none, when the run does not say which shard
# it came from: a merge by an earlier vera of a shard that kept none, or a calls.jsonl
# changed after the run wrote it (a line added or removed moves every line after it
# away from the place its body names).
NO_BODY = (
    "no request or response was found for this call: it was merged from a shard run with "
    "--no-call-bodies or by a vera from before call bodies, or calls.jsonl was changed "
    "after the run wrote it (a line added or removed before this one)"
)


def no_body_reason(source: MergedShard | None) -> str:
    """Why a call of a merged run has no body, naming the shard run it came from when
    the merge recorded it (merges by an earlier vera did not)."""
    if source is None:
        return NO_BODY
    label = f" (shard {source.shard})" if source.shard else ""
    how = "made with --no-call-bodies" if not source.call_bodies else "that kept no body for it"
    return (
        f"no request or response was kept for this call: it was merged from the shard run "
        f"{source.run_dir}{label}, {how}"
    )


def source_of(offset: int, sources: list[MergedShard]) -> MergedShard | None:
    """The shard run whose calls hold the merged calls.jsonl line at `offset`."""
    for source in sources:
        if offset < source.calls_end:
            return source
    return None


def bodiless_call(
    call: CallRecord, source: MergedShard | None = None, why: str | None = None
) -> dict[str, Any]:
    """A call that has no body, as `vera export --calls` writes it: its accounting
    record, null where the request and response would be, and why (`why`: a damaged
    bodies' file lost it, said so)."""
    return {
        "call": msgspec.to_builtins(call),
        "conversation_id": None,
        "question_id": None,
        "request": None,
        "response": None,
        "no_body": why if why is not None else no_body_reason(source),
    }


def no_bodies_reason(run_dir: Path) -> str | None:
    """Why a run has no call bodies to show (None: it has them)."""
    if has_bodies(run_dir):
        return None
    manifest = read_manifest(run_dir) if (run_dir / "manifest.json").exists() else None
    if manifest is not None and manifest.config.call_bodies is False:
        return "the run was made with --no-call-bodies: no call's request or response was kept"
    return (
        "the run keeps no call bodies (made before vera kept them, before any call, or "
        "merged from shards that kept none)"
    )


class Exported(NamedTuple):
    calls: int  # calls written
    bodiless: int  # of them, calls written without a request and response (`no_body`)


def export_calls(run_dir: str | Path, output: str | Path) -> Exported:
    """Write every call of the run with its body to `output` ("-" = stdout); how many
    calls were written, and how many of them had no body."""
    root = Path(run_dir)
    reason = no_bodies_reason(root)
    if reason is not None:
        raise UserError(f"{root}: {reason}")
    if str(output) != "-":
        target = Path(output)
        if target.is_dir():
            raise UserError(f"{target}: is a directory")
        # Never over the run's own records (the guard every output option shares).
        check_output(target, "-o", runs=[root])
    if str(output) == "-":
        return _write(root, sys.stdout.buffer)
    with atomic_file(Path(output), what="the exported calls") as f:
        return _write(root, f)


def _write(root: Path, f: IO[bytes]) -> Exported:
    encoder = msgspec.json.Encoder()
    merged_from = read_manifest(root).merged_from if (root / "manifest.json").exists() else msgspec.UNSET
    sources = merged_from if isinstance(merged_from, list) else []
    n = bodiless = 0
    for offset, call, body in placed_calls_with_bodies(root):
        if body is None or isinstance(body, str):
            row = bodiless_call(call, source_of(offset, sources), body)
            bodiless += 1
        else:
            row = exported_call(body)
        f.write(encoder.encode(row) + b"\n")
        n += 1
    f.flush()
    return Exported(n, bodiless)
