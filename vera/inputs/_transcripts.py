"""Import conversations that vera did not produce, so teams can judge their own logs.

Two formats:

* **Text** (``.txt``, VERA-MH's transcript formats): blocks that start with a speaker
  label and a colon at the beginning of a line (``user:``, ``chatbot:``, the older
  ``agent:``, and the labels common in exported logs, see `SPEAKER_LABELS`); a message
  runs until the next label line and may span several lines and paragraphs. What counts
  as a label line is decided from the labels the file itself uses (`parse_text`), so a
  chatbot's ``Note:`` or ``Subject:`` line stays text. VERA-MH's file and folder names
  are understood (``<id>_<Persona>_<user-agent model>_run<N>.txt`` inside
  ``p_<user-agent>__a_<chatbot>__...``), so the persona, the chatbot and the user-agent
  are filled in where they can be, with clean model labels.
* **JSON lines** (``.jsonl``): one conversation per line, OpenAI-style messages::

      {"id": "c-17", "chatbot": "acme-bot-2.3", "persona": "Robin", "risk": "High",
       "messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]}

  Only ``messages`` is required; roles take the same labels as text files; ``system``
  messages are skipped (the judge sees only what was said).

A conversation that lacks either speaker is imported as *failed*, with the reason, and
never judged: a chatbot that never spoke cannot be rated. A persona set, when given,
supplies each conversation's risk level by persona name; the risk is "Unknown" otherwise
(such conversations count in every score but not in the by-risk breakdown), and the
names it does not know are returned so the caller can report them.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import msgspec

from vera.errors import DataError
from vera.inputs._personas import PersonaSet, normalise_risk
from vera.records import RISK_LEVELS, Conversation, ImportSource, SessionPlace, Turn
from vera.text import read_text

UNKNOWN_RISK = "Unknown"
# In an import's run directory: persona names the --personas file does not know, one
# "name<TAB>conversations" per line.
PERSONAS_NOT_FOUND = "personas_not_found.tsv"
Speaker = Literal["user", "chatbot"]

# Speaker labels, case-insensitive: VERA-MH's (`user`, `chatbot`, and `agent` in its
# concept-paper transcripts) and those of common chat exports.
SPEAKER_LABELS: dict[str, Speaker] = {
    "user": "user",
    "human": "user",
    "chatbot": "chatbot",
    "agent": "chatbot",
    "assistant": "chatbot",
    "bot": "chatbot",
    "ai": "chatbot",
}
KNOWN_LABELS = "user or human for the person; chatbot, agent, assistant, bot or AI for the chatbot"

# A label line: one word at the very start of a line, then a colon. Known labels may be
# followed directly by text ("user:hi"); an unknown word only counts when a space or the
# line's end follows (so "BEGIN:VCALENDAR" or "12:30" are never taken for labels).
_LABEL = re.compile(r"^(?P<label>[A-Za-z][A-Za-z0-9_-]{0,31})[ \t]*:(?P<rest>.*)$")
# The reference tool's own annotation after a user-agent ended the conversation; it is
# not something either speaker said, so it is kept in the record, not in the text.
_END_NOTE = re.compile(r"^\[CONVERSATION ENDED\b[^\]]*\]\s*$", re.IGNORECASE)
_REF_FILE = re.compile(
    r"^(?P<id>[0-9a-f]{6})_(?P<persona>[^_]+)_(?P<model>.+?)_run(?P<run>\d+)"
    # One session of a multi-session arc: `_s2_follow-up`.
    r"(?:_s(?P<index>[1-9]\d*)_(?P<type>[A-Za-z0-9][A-Za-z0-9_-]*))?$"
)
# VERA-MH folders: p_ = the persona's model (the user-agent), a_ = the assistant (chatbot).
_REF_DIR = re.compile(r"^p_(?P<agent>.+?)__a_(?P<chatbot>.+?)__t\d+__r\d+__")
# Generation parameters a folder name carries, e.g. "_{'max_completion_tokens': 5000}".
_PARAMS_BLOB = re.compile(r"_*\{[^{}]*\}")


class JsonlConversation(msgspec.Struct, forbid_unknown_fields=False):
    messages: list[dict[str, object]]
    id: str | None = None
    chatbot: str | None = None
    user_agent: str | None = None
    persona: str | None = None
    risk: str | None = None


@dataclass
class ParsedText:
    """A text transcript's turns, the label each speaker used, and any tool annotation
    that was removed from the text."""

    turns: list[Turn]
    labels: dict[str, str] = field(default_factory=dict)
    note: str = ""


def _label_line(line: str) -> tuple[str, str] | None:
    """(label as written, text after the colon) if the line starts like a label line."""
    m = _LABEL.match(line)
    if m is None:
        return None
    rest = m.group("rest")
    if m.group("label").lower() not in SPEAKER_LABELS and rest[:1] not in ("", " ", "\t"):
        return None
    return m.group("label"), rest[1:] if rest[:1] in (" ", "\t") else rest


def parse_text(text: str, where: str) -> ParsedText:
    """Split a text transcript into turns.

    The rule (docs/transcripts.md): a line that starts with a known speaker label and a
    colon starts a new message; every other line belongs to the message before it. The
    first line must be such a label line. An unknown word before a colon ("Note:",
    "Subject:") is ordinary text when the file labels both speakers with known labels;
    when it labels only one, the most frequent unknown word at the start of a line is
    taken to be the other speaker's label and reported, so a chatbot labelled "Claude:"
    is never folded into the user's messages."""
    lines = text.removeprefix("\ufeff").splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise DataError(where, "no speaker labels (user:, chatbot:, ...): not a transcript")
    head = _label_line(lines[first])
    if head is None:
        raise DataError(f"{where}:{first + 1}", f"text before the first speaker label ({KNOWN_LABELS})")
    if head[0].lower() not in SPEAKER_LABELS:
        raise DataError(f"{where}:{first + 1}", f"unknown speaker label {head[0]!r} (known: {KNOWN_LABELS})")
    blocks: list[tuple[Speaker, list[str]]] = []
    labels: dict[str, str] = {}
    unknown: Counter[str] = Counter()
    unknown_at: dict[str, tuple[int, str]] = {}
    for n, line in enumerate(lines[first:], start=first + 1):
        found = _label_line(line)
        speaker = SPEAKER_LABELS.get(found[0].lower()) if found else None
        if found is not None and speaker is not None:
            labels.setdefault(speaker, found[0])
            blocks.append((speaker, [found[1]]))
            continue
        if found is not None:
            key = found[0].lower()
            unknown[key] += 1
            unknown_at.setdefault(key, (n, found[0]))
        blocks[-1][1].append(line)
    if len(labels) == 1 and unknown:
        # One side only: its messages swallowed the other side's. Name the likeliest label.
        key = max(unknown, key=lambda k: (unknown[k], -unknown_at[k][0]))
        n, label = unknown_at[key]
        (present,) = labels.values()
        raise DataError(
            f"{where}:{n}",
            f"unknown speaker label {label!r}: the file labels only one speaker ({present!r}), so "
            f"{label!r} looks like the other one's label (known: {KNOWN_LABELS})",
        )
    note = _drop_end_note(blocks[-1][1])
    turns = [Turn(s, "\n".join(body).strip()) for s, body in blocks]
    return ParsedText(turns=turns, labels=labels, note=note)


def _drop_end_note(body: list[str]) -> str:
    """Remove the reference tool's end-of-conversation annotation from the last
    message (it ends the file); return it, or "" if there is none."""
    while body and not body[-1].strip():
        body.pop()
    if body and _END_NOTE.match(body[-1].strip()):
        return body.pop().strip()
    return ""


def clean_model_label(raw: str) -> str:
    """A stable model label from a folder-name fragment: generation parameters dropped,
    underscores read as the hyphens of model ids ("gpt_5_{'max_completion_tokens': 5000}"
    → "gpt-5", "claude_opus_4_1_20250805" → "claude-opus-4-1-20250805")."""
    text = _PARAMS_BLOB.sub("", raw).strip().strip("_- ")
    text = re.sub(r"[_\s]+", "-", text).lower()
    return text or "imported"


def _clean_name(raw: str | None) -> str:
    """A label given in a JSONL field: trimmed, inner whitespace collapsed."""
    return " ".join((raw or "").split())


def missing_speaker(turns: list[Turn]) -> str | None:
    """Why a transcript cannot be rated, or None: both speakers must have said something
    (a turn with no text says nothing: a transcript of empty messages is not judged)."""
    spoke = {t.speaker for t in turns if t.text.strip()}
    if not spoke:
        return "imported transcript has no words in any message (every turn is empty); not judged"
    if "chatbot" not in spoke:
        return "imported transcript has no chatbot turn (only the user speaks); not judged"
    if "user" not in spoke:
        return "imported transcript has no user turn (only the chatbot speaks); not judged"
    return None


def _risk(persona: str, personas: PersonaSet | None) -> str:
    if personas is None:
        return UNKNOWN_RISK
    for p in personas.personas:
        if p.name.lower() == persona.lower():
            return p.risk
    return UNKNOWN_RISK


def _id(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


# Part of every imported conversation's id. Bumped when the same file would now be read
# into different turns, so a rerun on an old run directory judges the new reading
# instead of reusing judgements of the old one.
_READER = "imported-2"


def _conversation(
    *,
    conv_id: str,
    chatbot: str,
    user_agent: str,
    persona: str,
    risk: str,
    turns: list[Turn],
    source: str,
    imported: ImportSource,
) -> Conversation:
    reason = missing_speaker(turns)
    return Conversation(
        id=conv_id,
        chatbot=chatbot,
        user_agent=user_agent,
        persona=persona,
        risk=risk,
        seed=0,
        turns=turns,
        status="failed" if reason else "complete",
        ended_by="imported",
        error=reason,
        source=source,
        imported=imported,
    )


def read_text_transcript(path: Path, root: Path, personas: PersonaSet | None) -> Conversation:
    text = read_text(path, "transcript")[1]
    parsed = parse_text(text, str(path))
    name = _REF_FILE.match(path.stem)
    folder = _REF_DIR.match(path.parent.name)
    persona = name.group("persona") if name else path.stem
    raw_chatbot = folder.group("chatbot") if folder else ""
    raw_agent = folder.group("agent") if folder else (name.group("model") if name else "")
    rel = str(path.relative_to(root)) if path.is_relative_to(root) else path.name
    session = None
    if name and name.group("index"):
        # The reference names every session of one arc with the same tag, persona,
        # model and run: those, in the same folder, are the arc.
        folder_rel = str(Path(rel).parent)
        arc = _id(
            _READER, "arc", folder_rel, name.group("id"), persona, name.group("model"), name.group("run")
        )
        session = SessionPlace(arc=arc, index=int(name.group("index")), type=name.group("type"), count=0)
    conv = _conversation(
        conv_id=_id(_READER, rel, text),
        chatbot=clean_model_label(raw_chatbot) if raw_chatbot else "imported",
        user_agent=clean_model_label(raw_agent) if raw_agent else "imported",
        persona=persona,
        risk=_risk(persona, personas),
        turns=parsed.turns,
        source=str(path),
        imported=ImportSource(
            chatbot=raw_chatbot,
            user_agent=raw_agent,
            persona=persona,
            speaker_labels=parsed.labels,
            note=parsed.note,
        ),
    )
    if session is not None:
        conv.session = session
    return conv


def _jsonl_turns(rec: JsonlConversation, where: str) -> tuple[list[Turn], dict[str, str]]:
    turns: list[Turn] = []
    labels: dict[str, str] = {}
    for i, m in enumerate(rec.messages, start=1):
        role, content = m.get("role"), m.get("content")
        if not isinstance(role, str):
            raise DataError(where, f"message {i}: no role")
        if role.lower() == "system":
            continue
        speaker = SPEAKER_LABELS.get(role.lower())
        if speaker is None:
            raise DataError(where, f"message {i}: unknown role {role!r} (known: {KNOWN_LABELS}; system)")
        if not isinstance(content, str):
            raise DataError(where, f"message {i}: content must be text")
        labels.setdefault(speaker, role)
        turns.append(Turn(speaker, content))
    if not turns:
        raise DataError(where, "no user or chatbot messages")
    return turns, labels


def _jsonl_risk(value: str | None, where: str) -> str | None:
    """A JSONL conversation's own risk level, normalised like a persona file's."""
    if value is None or not value.strip():
        return None
    risk = normalise_risk(value)
    if risk is None:
        raise DataError(where, f"risk {value!r} is not one of {', '.join(RISK_LEVELS)}")
    return risk


def read_jsonl_transcripts(path: Path, personas: PersonaSet | None) -> list[Conversation]:
    out: list[Conversation] = []
    decoder = msgspec.json.Decoder(JsonlConversation)
    raw = read_text(path, "transcripts")[0]  # checked to be UTF-8, a byte-order mark allowed
    lines = raw.removeprefix(codecs.BOM_UTF8).splitlines()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec = decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise DataError(where, f"not a conversation object: {exc}") from None
        turns, labels = _jsonl_turns(rec, where)
        risk = _jsonl_risk(rec.risk, where)
        persona = _clean_name(rec.persona) or "unknown"
        out.append(
            _conversation(
                conv_id=rec.id or _id(_READER, path.name, str(lineno), line.decode("utf-8", "replace")),
                chatbot=_clean_name(rec.chatbot) or "imported",
                user_agent=_clean_name(rec.user_agent) or "imported",
                persona=persona,
                risk=risk or _risk(persona, personas),
                turns=turns,
                source=where,
                imported=ImportSource(
                    chatbot=rec.chatbot or "",
                    user_agent=rec.user_agent or "",
                    persona=rec.persona or "",
                    speaker_labels=labels,
                ),
            )
        )
    return out


def read_transcripts(path: str | Path, personas: PersonaSet | None = None) -> list[Conversation]:
    """Every conversation in a file or (recursively) a folder of .txt / .jsonl files."""
    root = Path(path)
    if not root.exists():
        raise DataError(str(root), "no such file or folder")
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.suffix in (".txt", ".jsonl"))
    if not files:
        raise DataError(str(root), "no .txt or .jsonl transcripts found")
    base = root if root.is_dir() else root.parent
    convs: list[Conversation] = []
    for f in files:
        if f.suffix == ".jsonl":
            convs.extend(read_jsonl_transcripts(f, personas))
        else:
            convs.append(read_text_transcript(f, base, personas))
    seen: dict[str, str] = {}
    for c in convs:
        if c.id in seen:
            raise DataError(c.source or str(root), f"duplicate conversation id {c.id!r} (also {seen[c.id]})")
        seen[c.id] = c.source or ""
    return counted_sessions(convs)


def counted_sessions(convs: list[Conversation]) -> list[Conversation]:
    """Imported sessions with their arc's session count: the highest place found of
    the arc (a missing session still counts; its place is a gap)."""
    highest: dict[str, int] = {}
    for c in convs:
        if c.session is not None:
            highest[c.session.arc] = max(highest.get(c.session.arc, 0), c.session.index)
    for c in convs:
        if c.session is not None:
            c.session = msgspec.structs.replace(c.session, count=highest[c.session.arc])
    return convs


def personas_not_found(conversations: list[Conversation], personas: PersonaSet) -> Counter[str]:
    """Persona names (with their conversation counts) that the persona set does not
    know, among conversations whose risk level had to come from it."""
    known = {p.name.lower() for p in personas.personas}
    return Counter(
        c.persona for c in conversations if c.risk == UNKNOWN_RISK and c.persona.lower() not in known
    )
