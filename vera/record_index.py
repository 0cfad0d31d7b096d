"""Where each record that counts sits in a run's JSONL files, found by one streaming scan.

`vera view` and `vera export` must stay light on a run of 10,000 conversations: they
never hold every transcript in memory. `scan_run` reads conversations.jsonl and
judgements.jsonl once, line by line, keeping of each record only a small head (the
fields a list or a filter needs) and where its line is (byte offset and length). A whole
record is read again by offset when someone opens it.

The records that count are the ones `RunStore` and `read_run` use (`store.keep_latest`:
the last record of a job wins, a complete one is never replaced by a failed one). Lines
that do not decode (a torn last line while a run is being written) are skipped, as
`read_records` skips them; nothing is repaired: the run is only read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, TypeVar

import msgspec

from vera.errors import UserError
from vera.records import Conversation, Judgement, RunManifest
from vera.store import CONVERSATIONS, JUDGEMENTS, MANIFEST, keep_latest


class RecordRef(NamedTuple):
    """A record's line in its file: byte offset and length (without the newline)."""

    offset: int
    length: int


class _Skipped(msgspec.Struct):
    """A turn decoded without any of its fields: counted, its text never kept."""


class ConversationHead(msgspec.Struct, kw_only=True):
    """What a list of conversations shows and filters on; the turns are only counted."""

    id: str
    chatbot: str
    user_agent: str
    persona: str
    risk: str
    seed: int
    turns: list[_Skipped] = []
    n_turns: int = 0
    status: str = "complete"
    ended_by: str = "max_turns"
    error: str | None = None
    replicate: int = 0
    source: str | None = None


class RatingHead(msgspec.Struct):
    dimension: str
    rating: str


class JudgementHead(msgspec.Struct, kw_only=True):
    """A judgement without its answers and reasoning: who judged and what it rated."""

    id: str
    conversation_id: str
    judge: str
    instance: int
    status: str
    ratings: list[RatingHead] = []
    error: str | None = None


H = TypeVar("H", ConversationHead, JudgementHead)
T = TypeVar("T")


@dataclass
class RunRecords:
    """One run directory, scanned: its manifest, and the head and place of every
    conversation and judgement that counts, in the order they were first written."""

    root: Path
    manifest: RunManifest
    conversations: dict[str, tuple[ConversationHead, RecordRef]]
    judgements: dict[str, tuple[JudgementHead, RecordRef]]
    _by_conversation: dict[str, list[str]] | None = field(default=None, repr=False)

    def judgements_of(self, conversation_id: str) -> list[JudgementHead]:
        """The judgements of one conversation, by judge and instance."""
        if self._by_conversation is None:
            index: dict[str, list[str]] = {}
            for jid, (head, _) in self.judgements.items():
                index.setdefault(head.conversation_id, []).append(jid)
            self._by_conversation = index
        heads = [self.judgements[j][0] for j in self._by_conversation.get(conversation_id, [])]
        return sorted(heads, key=lambda h: (h.judge, h.instance, h.id))

    def read_conversation(self, conversation_id: str) -> Conversation:
        _, ref = self.conversations[conversation_id]
        return _read_record(self.root / CONVERSATIONS, ref, Conversation, conversation_id)

    def read_judgement(self, judgement_id: str) -> Judgement:
        _, ref = self.judgements[judgement_id]
        return _read_record(self.root / JUDGEMENTS, ref, Judgement, judgement_id)


def read_manifest(root: Path) -> RunManifest:
    """A run's manifest, or a UserError naming the directory."""
    path = root / MANIFEST
    if not path.is_file():
        raise UserError(f"{root}: not a vera run directory (no manifest.json)")
    try:
        return msgspec.json.decode(path.read_bytes(), type=RunManifest)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise UserError(f"{path}: not a readable run manifest ({e})") from None


def scan_run(run_dir: str | Path) -> RunRecords:
    """Scan a run directory once (see the module docstring)."""
    root = Path(run_dir)
    manifest = read_manifest(root)
    return RunRecords(
        root=root,
        manifest=manifest,
        conversations=_scan(root / CONVERSATIONS, ConversationHead),
        judgements=_scan(root / JUDGEMENTS, JudgementHead),
    )


def _scan(path: Path, head_type: type[H]) -> dict[str, tuple[H, RecordRef]]:
    decoder = msgspec.json.Decoder(head_type)
    heads: dict[str, H] = {}
    refs: dict[str, RecordRef] = {}
    for ref, line in _lines(path):
        try:
            head = decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue  # a damaged or torn line: `read_records` skips it too
        if isinstance(head, ConversationHead):
            head.n_turns, head.turns = len(head.turns), []
        before = heads.get(head.id)
        keep_latest(heads, head)  # type: ignore[type-var]  # the heads carry the same id and status
        if heads[head.id] is not before:
            refs[head.id] = ref
    return {key: (head, refs[key]) for key, head in heads.items()}


def _lines(path: Path) -> Iterator[tuple[RecordRef, bytes]]:
    """Every non-empty line of a file with its place, read in one pass."""
    if not path.exists():
        return
    offset = 0
    with open(path, "rb") as f:
        for raw in f:
            line = raw.rstrip(b"\r\n")
            if line.strip():
                yield RecordRef(offset, len(line)), line
            offset += len(raw)


def _read_record(path: Path, ref: RecordRef, type_: type[T], expected_id: str) -> T:
    """One record by its place. The files are append-only, so a place found by the scan
    stays valid; if the record there is not the one expected, the file was rewritten
    since (e.g. replaced by a merge) and the scan must be redone."""
    with open(path, "rb") as f:
        f.seek(ref.offset)
        data = f.read(ref.length)
    try:
        record = msgspec.json.decode(data, type=type_)
    except (msgspec.DecodeError, msgspec.ValidationError):
        record = None
    if record is None or getattr(record, "id", None) != expected_id:
        raise StaleIndexError(f"{path}: the file changed since it was scanned; restart to read it again")
    return record


class StaleIndexError(UserError):
    """A record is no longer where the scan found it."""
