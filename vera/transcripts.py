"""Import conversations that vera did not produce, so teams can judge their own logs.

Two formats:

* **Text** (``.txt``, VERA-MH's transcript format): blocks that start with ``user:`` or
  ``chatbot:`` at the beginning of a line; a message runs until the next such line and
  may span several lines and paragraphs. VERA-MH's file and folder names are understood
  (``<id>_<Persona>_<user-agent model>_run<N>.txt`` inside ``p_<user-agent>__a_<chatbot>__...``), so
  the persona, the chatbot and the user-agent are filled in where they can be.
* **JSON lines** (``.jsonl``): one conversation per line, OpenAI-style messages::

      {"id": "c-17", "chatbot": "acme-bot-2.3", "persona": "Robin", "risk": "High",
       "messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]}

  Only ``messages`` is required; ``assistant`` (or ``chatbot``) is the chatbot, ``user``
  the person; ``system`` messages are skipped (the judge sees only what was said).

A persona set, when given, supplies each conversation's risk level by persona name; the
risk is "Unknown" otherwise (such conversations count in every score but not in the
by-risk breakdown).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import msgspec

from vera.errors import DataError
from vera.personas import PersonaSet
from vera.records import Conversation, Turn

UNKNOWN_RISK = "Unknown"
_SPEAKER = re.compile(r"^(user|chatbot|assistant)\s*:\s?(.*)$", re.IGNORECASE)
_REF_FILE = re.compile(r"^(?P<id>[0-9a-f]{6})_(?P<persona>[^_]+)_(?P<model>.+?)_run(?P<run>\d+)$")
# VERA-MH folders: p_ = the persona's model (the user-agent), a_ = the assistant (chatbot).
_REF_DIR = re.compile(r"^p_(?P<agent>.+?)__a_(?P<chatbot>.+?)__t\d+__r\d+__")


class JsonlConversation(msgspec.Struct, forbid_unknown_fields=False):
    messages: list[dict[str, str]]
    id: str | None = None
    chatbot: str | None = None
    user_agent: str | None = None
    persona: str | None = None
    risk: str | None = None


def parse_text(text: str, where: str) -> list[Turn]:
    turns: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = _SPEAKER.match(line)
        if m:
            speaker = "user" if m.group(1).lower() == "user" else "chatbot"
            turns.append((speaker, [m.group(2)]))
        elif turns:
            turns[-1][1].append(line)
        elif line.strip():
            raise DataError(f"{where}:1", "text before the first 'user:' or 'chatbot:' line")
    if not turns:
        raise DataError(where, "no 'user:' or 'chatbot:' lines: not a transcript")
    return [Turn(s, "\n".join(lines).strip()) for s, lines in turns]  # type: ignore[arg-type]


def _risk(persona: str, personas: PersonaSet | None) -> str:
    if personas is None:
        return UNKNOWN_RISK
    for p in personas.personas:
        if p.name.lower() == persona.lower():
            return p.risk
    return UNKNOWN_RISK


def _id(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


def read_text_transcript(path: Path, root: Path, personas: PersonaSet | None) -> Conversation:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(str(path), f"cannot read transcript: {exc}") from None
    turns = parse_text(text, str(path))
    name = _REF_FILE.match(path.stem)
    folder = _REF_DIR.match(path.parent.name)
    persona = name.group("persona") if name else path.stem
    return Conversation(
        id=_id("imported", str(path.relative_to(root)) if path.is_relative_to(root) else path.name, text),
        chatbot=folder.group("chatbot") if folder else "imported",
        user_agent=folder.group("agent") if folder else (name.group("model") if name else "imported"),
        persona=persona,
        risk=_risk(persona, personas),
        seed=0,
        turns=turns,
        ended_by="imported",
        source=str(path),
    )


def read_jsonl_transcripts(path: Path, personas: PersonaSet | None) -> list[Conversation]:
    out: list[Conversation] = []
    decoder = msgspec.json.Decoder(JsonlConversation)
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise DataError(str(path), f"cannot read transcripts: {exc.strerror or exc}") from None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec = decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise DataError(where, f"not a conversation object: {exc}") from None
        turns: list[Turn] = []
        for i, m in enumerate(rec.messages):
            role, content = m.get("role", ""), m.get("content")
            if role == "system":
                continue
            if role not in ("user", "assistant", "chatbot") or not isinstance(content, str):
                raise DataError(
                    where, f"message {i + 1}: role must be user/assistant/chatbot with text content"
                )
            turns.append(Turn("user" if role == "user" else "chatbot", content))
        if not turns:
            raise DataError(where, "no user or assistant messages")
        persona = rec.persona or "unknown"
        out.append(
            Conversation(
                id=rec.id or _id("imported", path.name, str(lineno), line.decode("utf-8", "replace")),
                chatbot=rec.chatbot or "imported",
                user_agent=rec.user_agent or "imported",
                persona=persona,
                risk=rec.risk if rec.risk else _risk(persona, personas),
                seed=0,
                turns=turns,
                ended_by="imported",
                source=f"{path}:{lineno}",
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
    return convs
