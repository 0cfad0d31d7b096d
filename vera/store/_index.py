"""Where each record that counts sits in a run's JSONL files, found by one streaming scan.

`vera view` and `vera export` must stay light on a run of 10,000 conversations: they
never hold every transcript in memory. `open_run` reads conversations.jsonl and
judgements.jsonl once, line by line, keeping of each record only a small head (the
fields a list or a filter needs) and where its line is (byte offset and length). A whole
record is read again by offset when someone opens it.

`open_run` is the one way a finished or running run is read: the card, merge, compare,
gate, agreement, the viewer and export all go through it. The records that count are
the ones `RunStore` keeps (`store.keep_latest`: the last record of a job wins, a complete
one is never replaced by a failed one). A torn last line (a run being written, or a
crash mid-write) is skipped; any other line that does not decode is handed to the
watcher of the reads (`vera.files.watching`), which refuses or counts it. By default nothing is
repaired, so a run that is still being written (or an archive on a read-only disk) is
only read; `repair=True` first mends a last line a crash tore, as `RunStore` does when
it opens a run to append to it, for readers that write from what they read (the card
and merge).
"""

from __future__ import annotations

import contextlib
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import msgspec

from vera.errors import StorageError, UserError
from vera.files import (
    LostBodies,
    RecordReader,
    RecordRef,
    StaleIndexError,
    current_damage,
    decoded,
    read_record,
    records,
)
from vera.ranges import SEED
from vera.records import (
    HIGH_POTENTIAL_FOR_HARM,
    MANIFEST_SCHEMA_VERSION,
    CallBody,
    CallRecord,
    Conversation,
    Judgement,
    RunManifest,
    SessionPlace,
    UserCheck,
)
from vera.store._bodies import BodyReader, bodies_path, has_bodies
from vera.store._bodylog import BODY_HINT, DamagedRecord, Gap, Row
from vera.store._writer import CALLS, CONVERSATIONS, JUDGEMENTS, MANIFEST, keep_latest, repair_run

__all__ = [
    "RecordRef",
    "RunRecords",
    "StaleIndexError",
    "calls_with_bodies",
    "conversation_calls_with_bodies",
    "open_run",
    "placed_calls_with_bodies",
    "read_manifest",
    "recorded_spend",
    "replayable_bodies",
]


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
    annotations: dict[str, str] | None = None
    session: SessionPlace | None = None
    truncated_turns: list[int] = []


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
    unused_questions: int = 0  # asked ahead, not reached: in the call log's totals
    user_check: UserCheck | None = None  # the simulated-user check (small: its flags)


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

    def conversation_heads(self) -> dict[str, ConversationHead]:
        return {cid: head for cid, (head, _) in self.conversations.items()}

    def judgement_heads(self) -> dict[str, JudgementHead]:
        return {jid: head for jid, (head, _) in self.judgements.items()}

    def read_conversation(self, conversation_id: str) -> Conversation:
        _, ref = self.conversations[conversation_id]
        return read_record(self.root / CONVERSATIONS, ref, Conversation, conversation_id)

    def read_judgement(self, judgement_id: str) -> Judgement:
        _, ref = self.judgements[judgement_id]
        return read_record(self.root / JUDGEMENTS, ref, Judgement, judgement_id)

    # -- streaming whole records, one at a time, in the order they were first written --

    def iter_conversations(self) -> Iterator[Conversation]:
        """Every conversation that counts, read by place one at a time."""
        with RecordReader(self.root / CONVERSATIONS) as reader:
            for cid, (_, ref) in self.conversations.items():
                yield reader.read(ref, Conversation, cid)

    def iter_judgements(self, ids: Iterator[str] | None = None) -> Iterator[Judgement]:
        """Every judgement that counts (or those of `ids`), read by place one at a time."""
        with RecordReader(self.root / JUDGEMENTS) as reader:
            for jid in ids if ids is not None else iter(self.judgements):
                yield reader.read(self.judgements[jid][1], Judgement, jid)

    def complete_pairs(self, *, harmful_only: bool = False) -> Iterator[tuple[ConversationHead, Judgement]]:
        """(conversation head, judgement) for every complete judgement of a complete
        conversation, in the order the judgements were first written: what the ratings
        frame and the card's harm list are made of. The head carries every field of the
        conversation a rating row needs; only the judgement is read whole. With
        `harmful_only`, only judgements with a High Potential for Harm rating are read."""
        wanted: list[tuple[str, ConversationHead]] = []
        for jid, (head, _) in self.judgements.items():
            conv = self.conversations.get(head.conversation_id)
            if head.status != "complete" or conv is None or conv[0].status != "complete":
                continue
            if harmful_only and not any(r.rating == HIGH_POTENTIAL_FOR_HARM for r in head.ratings):
                continue
            wanted.append((jid, conv[0]))
        heads = iter(wanted)
        for judgement in self.iter_judgements(jid for jid, _ in wanted):
            _, conv_head = next(heads)
            yield conv_head, judgement

    def calls(self) -> Iterator[CallRecord]:
        """Every call record, in file order, one at a time."""
        return records(self.root / CALLS, CallRecord)

    def calls_with_bodies(self) -> Iterator[tuple[CallRecord, CallBody | None]]:
        """Every call record with its body (see `calls_with_bodies`)."""
        return calls_with_bodies(self.root)


def calls_with_bodies(run_dir: Path) -> Iterator[tuple[CallRecord, CallBody | None]]:
    """Every call record of a run, in file order, one at a time, each with its body
    (None: the run kept none for it: a shard merged from a run made with
    --no-call-bodies, or before vera kept them; or, with --skip-corrupt, a damaged
    bodies' file lost it)."""
    for _, call, body in placed_calls_with_bodies(run_dir):
        yield call, body if not isinstance(body, str) else None


# How many bodies are read ahead of the lines, to find a body whose line moved (a line
# added to or removed from calls.jsonl before it): no further than this.
_LOOKAHEAD = 256
# How many of the bodies after a moved one must sit where their lines are, moved as
# much, before the move is believed (a body is never paired with a call by chance).
_CONFIRM = 2


def _same(row: Row, ref: RecordRef, call: CallRecord) -> bool:
    """Whether a body can be the call's: what the body holds of its call (the line's
    length, the job) is what the line holds."""
    return row.length == ref.length and row.job_id == call.job_id


def _problem(exc: StorageError, path: Path) -> str:
    """What a refusal to read the bodies says, without its file and its way past it
    (a call's no_body names the file, and the way past was taken)."""
    return str(exc).removeprefix(f"{path}: ").removesuffix(f"; {BODY_HINT}")


def _lost_reason(gap: Gap) -> str:
    if gap.number is None:
        return (
            f"the request and response of this call were lost: {gap.path.name} could not be read "
            f"({gap.problem}); restore it from a backup to get them back"
        )
    return (
        f"the request and response of this call were lost: {gap.path.name} is damaged at "
        f"record {gap.number}; restore it from a backup to get them back"
    )


class _Pairing:
    """Pairs the lines of calls.jsonl with the bodies, both in file order. A body names
    the place its call's line had when it was written: a line there of the same length
    and job is its call. When none is (a line added or removed before it moved every
    later line), the body is looked for ahead by what it holds of its call (the length,
    the job, and the reply's usage, which the call record repeats), and believed only
    if the bodies after it sit where their lines are, moved as much: so a line added or
    removed loses its own body only, and a body that matches no line is left out, never
    given to another call."""

    def __init__(self, rows: Iterator[Row | Gap], path: Path, *, skip: bool) -> None:
        self._rows = rows
        self._path = path
        self._skip = skip
        self._ahead: deque[Row | Gap] = deque()
        self._done = False
        self._delta = 0  # how far the lines have moved from where the bodies place them

    def _fill(self) -> None:
        while not self._done and len(self._ahead) < _LOOKAHEAD:
            try:
                item = next(self._rows, None)
            except StorageError as exc:
                if not self._skip:
                    raise
                # Format 1 unreadable from here: the calls after have no body.
                item = Gap(self._path, None, _problem(exc, self._path))
                self._done = True
            if item is None:
                self._done = True
                return
            self._ahead.append(item)

    def _take(self, i: int) -> Row:
        for _ in range(i):  # bodies whose line is gone (removed, or not a record)
            self._ahead.popleft()
        row = self._ahead.popleft()
        if not isinstance(row, Row):
            raise TypeError("a gap taken as a body")  # `body` takes rows only
        return row

    def _confirmed(self, i: int, delta: int, following: list[tuple[RecordRef, CallRecord]]) -> bool:
        after = [r for r in itertools.islice(self._ahead, i + 1, None) if isinstance(r, Row)][:_CONFIRM]
        if len(after) < _CONFIRM and not self._done:
            return False  # not enough read ahead to believe it
        if len(following) < len(after):
            return False
        return all(
            r.offset + delta == ref.offset and _same(r, ref, call)
            for r, (ref, call) in zip(after, following, strict=False)
        )

    def body(
        self, ref: RecordRef, call: CallRecord, following: list[tuple[RecordRef, CallRecord]]
    ) -> Row | Gap | None:
        """The body of the line at `ref` (None: none; a `Gap`: a damaged file lost it).
        `following`: the next lines, to confirm a moved body by."""
        self._fill()
        first: int | None = None  # where the first body sits, moved as the lines are
        for i, item in enumerate(self._ahead):
            if isinstance(item, Gap):
                continue
            at = item.offset + self._delta
            if first is None:
                first = at
            if at == ref.offset and _same(item, ref, call):
                return self._take(i)
            if at >= ref.offset:
                break
        # A body at or before this line that is not its call: lines moved. One ahead
        # that is this call by all it holds of it, with the next ones moved as much.
        if first is not None and first <= ref.offset:
            for i, item in enumerate(self._ahead):
                if (
                    isinstance(item, Row)
                    and item.usage is not None
                    and _same(item, ref, call)
                    and item.usage == call.usage
                    and self._confirmed(i, ref.offset - item.offset, following)
                ):
                    self._delta = ref.offset - item.offset
                    return self._take(i)
        for item in self._ahead:
            if isinstance(item, Gap):
                return item
            if item.offset + self._delta > ref.offset:
                break
        return None


def placed_calls_with_bodies(run_dir: Path) -> Iterator[tuple[int, CallRecord, CallBody | str | None]]:
    """`calls_with_bodies`, each call with the offset of its line in calls.jsonl, and
    in place of a body a string when a damaged bodies' file lost it: why (only under a
    watcher that lets damaged bodies be gone past, --skip-corrupt; otherwise the
    damage is refused, naming the option). Each body is checked against its line
    (`_Pairing`): a line added or removed loses its own body, not every later one's."""
    decoder = msgspec.json.Decoder(CallRecord)
    lines = decoded(run_dir / CALLS, decoder)
    if not has_bodies(run_dir):
        for ref, call in lines:
            yield ref.offset, call, None
        return
    # Only the lines already written when the bodies are read: a line a run still
    # writing adds later may have a body the reader was too early to see.
    try:
        end = (run_dir / CALLS).stat().st_size
    except FileNotFoundError:
        end = 0
    damage = current_damage()
    skip = damage is not None and damage.bodies
    lost = 0
    where: dict[str, None] = {}
    path = bodies_path(run_dir)
    for ref, call, found in _paired(run_dir, None, (x for x in lines if x[0].offset < end), skip=skip):
        if isinstance(found, Gap):
            lost += 1
            where[f"record {found.number}" if found.number is not None else "unreadable"] = None
            yield ref.offset, call, _lost_reason(found)
        else:
            yield ref.offset, call, found
    if lost and damage is not None:
        damage.lost_bodies(LostBodies(path, lost, ", ".join(where)))


def conversation_calls_with_bodies(
    run_dir: Path, conversation_id: str, lines: Iterable[tuple[RecordRef, CallRecord]]
) -> Iterator[tuple[CallRecord, CallBody | Gap | None]]:
    """The viewer's: the calls of one conversation (its own and its judgements', the
    `lines` of calls.jsonl its page shows, in file order) each with its body, paired
    as `placed_calls_with_bodies` pairs them (a line added, removed or edited loses its
    own body, never shows another's), and a damaged bodies' file gone past: a `Gap` in
    place of each body it lost."""
    for _, call, found in _paired(run_dir, conversation_id, iter(lines), skip=True):
        yield call, found


def _paired(
    run_dir: Path,
    conversation: str | None,
    lines: Iterator[tuple[RecordRef, CallRecord]],
    *,
    skip: bool,
) -> Iterator[tuple[RecordRef, CallRecord, CallBody | Gap | None]]:
    """Each line with its body (None: none; a `Gap`, with `skip`: a damaged file lost
    it), the bodies being those of `conversation` (None: all)."""
    with contextlib.ExitStack() as stack:
        try:
            reader = stack.enter_context(BodyReader(run_dir))
            path, rows = reader.path, reader.rows(skip=skip, conversation=conversation)
        except StorageError as exc:
            if not skip:
                raise
            path = bodies_path(run_dir)
            rows = iter([Gap(path, None, _problem(exc, path))])
        pairing = _Pairing(rows, path, skip=skip)
        ahead: deque[tuple[RecordRef, CallRecord]] = deque()
        ahead.extend(itertools.islice(lines, _CONFIRM + 1))
        while ahead:
            ref, call = ahead.popleft()
            ahead.extend(itertools.islice(lines, _CONFIRM + 1 - len(ahead)))
            found = pairing.body(ref, call, list(ahead))
            if isinstance(found, Row):
                try:
                    yield ref, call, found.build(call)
                    continue
                except DamagedRecord as exc:  # a text it needs is in a damaged record
                    if not skip:
                        raise
                    found = Gap(exc.path, exc.number, _problem(exc, exc.path))
                except StorageError as exc:
                    if not skip:
                        raise
                    found = Gap(path, None, _problem(exc, path))
            yield ref, call, found


def replayable_bodies(run_dir: Path, finished: Callable[[str], bool]) -> Iterator[CallBody]:
    """The bodies of the calls that answered (status ok, with a reply) and belong to a
    job `finished` says is not done: what a resume may replay (vera.clients.replay).

    Only the bodies of those jobs are read whole, each with its own line of calls.jsonl
    (read at the place the body names, and checked to be the same length and job). What
    cannot be read so (a damaged record, a line moved by a hand edit, a file that does
    not open) is left out: the resume asks for that call again, which costs a request,
    never a wrong answer."""
    calls = run_dir / CALLS
    if not has_bodies(run_dir) or not calls.is_file():
        return
    decoder = msgspec.json.Decoder(CallRecord)
    with contextlib.ExitStack() as stack:
        try:
            reader = stack.enter_context(BodyReader(run_dir))
            lines = stack.enter_context(open(calls, "rb"))
            rows = reader.rows(skip=True)
            for row in rows:
                if isinstance(row, Gap) or row.usage is None or finished(row.job_id):
                    continue
                lines.seek(row.offset)
                line = lines.read(row.length + 1)  # a line's length leaves out its newline
                if len(line) != row.length + 1 or not line.endswith(b"\n"):
                    continue
                try:
                    call = decoder.decode(line[:-1])
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                if call.job_id != row.job_id or call.status != "ok":
                    continue
                try:
                    body = row.build(call)
                except StorageError:  # a text it needs is in a damaged record
                    continue
                if body.response is not None:
                    yield body
        except (StorageError, OSError):
            return  # nothing more can be read: the rest is asked again


class _Spend(msgspec.Struct):
    """What a call record says about money, and nothing else (a quick scan)."""

    cost_usd: float = 0.0
    uncertain_usd: float = 0.0


def recorded_spend(root: Path) -> tuple[float, float]:
    """(spent, of it uncertain) by every call a run recorded: what earlier sessions
    spent counts against the run's budget. An uncertain call counts at its worst case."""
    spent = uncertain = 0.0
    for call in records(root / CALLS, _Spend):
        spent += call.cost_usd + call.uncertain_usd
        uncertain += call.uncertain_usd
    return spent, uncertain


def read_manifest(root: Path) -> RunManifest:
    """A run's manifest, or a UserError naming the directory."""
    path = root / MANIFEST
    if not path.is_file():
        raise UserError(f"{root}: not a vera run directory (no manifest.json)")
    try:
        # Decoded typed, the stored config included: a field of the wrong type is a bad
        # manifest here, not a traceback when the card is made.
        manifest = msgspec.json.decode(path.read_bytes(), type=RunManifest)
    except OSError as e:
        raise UserError(f"{path}: cannot read the run manifest: {e.strerror or e}") from None
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise UserError(f"{path}: not a readable run manifest ({e})") from None
    # Earlier versions let any seed through (`--seed 99999999999999999999999`); no table
    # can hold one beyond the range, so such a run is named here, not a traceback later.
    for seed in (*manifest.seeds, *manifest.config.seeds, manifest.config.stats.seed):
        if SEED.problem(seed) is not None:
            raise UserError(
                f"{path}: seed {seed} is not {SEED.describe()} (an earlier vera let it through); "
                "this vera cannot compute with it: rerun the evaluation with a seed in that range"
            )
    return manifest


def manifest_notes(run_dir: str | Path) -> list[str]:
    """What this vera does not know of a run's manifest (a later schema, fields it has no
    name for), as notes for a command that only reads the run (`vera card`, `vera view`):
    such a run reads as far as this vera knows it, and says so."""
    path = Path(run_dir) / MANIFEST
    try:
        raw = msgspec.json.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError):
        return []  # read_manifest names the problem
    if not isinstance(raw, dict):
        return []
    unknown = sorted(set(raw) - set(RunManifest.__struct_fields__))
    fields = f"fields it does not know, not shown: {', '.join(unknown)}" if unknown else ""
    schema = raw.get("schema_version")
    if isinstance(schema, int) and schema > MANIFEST_SCHEMA_VERSION:
        more = f"; {fields}" if fields else ""
        return [
            f"note: {path}: manifest schema {schema} is newer than this vera knows "
            f"({MANIFEST_SCHEMA_VERSION}); shown as far as it knows it{more}"
        ]
    return [f"note: {path}: {fields}"] if fields else []


def open_run(run_dir: str | Path, *, repair: bool = False) -> RunRecords:
    """Read a run directory: its manifest, then one scan of its record files (see the
    module docstring). With `repair`, a last line a crash tore is mended first."""
    root = Path(run_dir)
    manifest = read_manifest(root)
    if repair:
        repair_run(root)
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
    for ref, head in decoded(path, decoder):  # a corrupt line is named, a torn last one skipped
        if isinstance(head, ConversationHead):
            head.n_turns, head.turns = len(head.turns), []
        before = heads.get(head.id)
        keep_latest(heads, head)
        if heads[head.id] is not before:
            refs[head.id] = ref
    return {key: (head, refs[key]) for key, head in heads.items()}
