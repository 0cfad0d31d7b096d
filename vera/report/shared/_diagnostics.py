"""Run diagnostics: how the conversations went, beside what the judge made of them.

A score is only as good as the conversations and the judge's walks behind it, so the
card says, per chatbot: how conversations ended (the user-agent's end marker, the turn
limit, a word limit, a failed call, an import), how many turns they ran, how many of the
chatbot's replies were empty or cut at the output limit (a `length` finish), how often
the judge had to be asked again and how many walks found no valid answer at all; and
each chatbot's scores by user-agent and by persona column (disclosure style by default,
beside the risk level the card always breaks down by). Other harnesses that run VERA-MH
report the same, so a reader can tell a low score from a broken run.

The numbers are read from the records as they are: conversations.jsonl (`ended_by`,
`turns`, `truncated_turns`, which runs from before it lack: read as none), the judge
answers' `attempts` and the failed judgements' reasons.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import msgspec
import polars as pl

from vera.errors import DataError, UserError
from vera.inputs import DISCLOSURE, NAME, group_value, read_persona_rows
from vera.records import OVERALL, Conversation, RunManifest

# Every way a conversation can end, in the order the card lists them.
END_REASONS: tuple[str, ...] = ("end_marker", "max_turns", "max_words", "error", "imported")
END_LABELS: dict[str, str] = {
    "end_marker": "end marker",
    "max_turns": "turn limit",
    "max_words": "word limit",
    "error": "error",
    "imported": "imported",
}
# What a failed judgement's reason starts with when the judge never gave a valid answer
# (vera.engine's InvalidAnswerError), as opposed to a provider that failed.
INVALID_ANSWER = "InvalidAnswerError"
# The persona column the card breaks scores down by when none is asked for.
DEFAULT_BY = (DISCLOSURE,)


class TurnCounts(msgspec.Struct, frozen=True, gc=False):
    """How many turns the complete conversations ran: the spread, and each count's
    number of conversations (`counts`: turns → conversations, in increasing turns)."""

    n: int
    min: int | None
    median: float | None
    max: int | None
    mean: float | None
    counts: dict[str, int]


class Diagnostics(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One chatbot's run diagnostics (see the module's docstring)."""

    chatbot: str
    conversations: int
    ended_by: dict[str, int]  # END_REASONS → conversations, every reason listed
    turns: TurnCounts
    chatbot_turns: int
    empty_chatbot_turns: int
    truncated_chatbot_turns: int  # cut at the output limit (finish reason "length")
    conversations_with_empty_or_truncated: int
    judge_answers: int  # answers asked of a judge model (auto answers not counted)
    judge_reasks: int  # extra attempts: an answer asked again after an invalid one
    answers_reasked: int  # answers that needed more than one attempt
    invalid_answers: int  # judgements failed for want of a valid answer


class GroupScore(msgspec.Struct, frozen=True, gc=False):
    """A chatbot's overall score over one group of its conversations."""

    n_conversations: int
    n_personas: int
    score: float | None
    score_ci: tuple[float | None, float | None]
    pct_conversations_any_hph: float | None


class _Tally:
    __slots__ = ("empty", "ended", "flawed", "n", "truncated", "turns", "turns_chatbot")

    def __init__(self) -> None:
        self.n = 0
        self.ended: Counter[str] = Counter()
        self.turns: list[int] = []
        self.turns_chatbot = 0
        self.empty = 0
        self.truncated = 0
        self.flawed = 0


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 1) + 0.0


def turn_counts(turns: Sequence[int]) -> TurnCounts:
    counts = Counter(turns)
    return TurnCounts(
        n=len(turns),
        min=min(turns) if turns else None,
        median=_round(statistics.median(turns)) if turns else None,
        max=max(turns) if turns else None,
        mean=_round(sum(turns) / len(turns)) if turns else None,
        counts={str(k): counts[k] for k in sorted(counts)},
    )


def run_diagnostics(
    chatbots: Sequence[str],
    conversations: Iterable[Conversation],
    answers: pl.DataFrame,
    failed_judgements: Iterable[tuple[str, str | None]],
) -> list[Diagnostics]:
    """Each chatbot's diagnostics, in `chatbots` order, from its conversations (streamed
    whole, one at a time), the answers frame (complete judgements) and the failed
    judgements as (conversation id, reason)."""
    tallies = {c: _Tally() for c in chatbots}
    owner: dict[str, str] = {}
    for conv in conversations:
        t = tallies.setdefault(conv.chatbot, _Tally())
        owner[conv.id] = conv.chatbot
        t.n += 1
        t.ended[conv.ended_by] += 1
        cut = set(conv.truncated_turns)
        empty = sum(1 for turn in conv.turns if turn.speaker == "chatbot" and not turn.text.strip())
        t.turns_chatbot += sum(1 for turn in conv.turns if turn.speaker == "chatbot")
        t.empty += empty
        t.truncated += len(cut)
        t.flawed += bool(empty or cut)
        if conv.status == "complete":
            t.turns.append(len(conv.turns))
    asked = answers.filter(~pl.col("auto")) if answers.height else answers
    per_bot: dict[str, tuple[int, int, int]] = {}
    if asked.height:
        bots = pl.DataFrame(
            {"conversation_id": list(owner), "chatbot": list(owner.values())},
            schema={"conversation_id": pl.Utf8, "chatbot": pl.Utf8},
        )
        grouped = (
            asked.join(bots, on="conversation_id", how="inner")
            .group_by("chatbot")
            .agg(
                pl.len().alias("n"),
                (pl.col("attempts") - 1).clip(lower_bound=0).sum().alias("reasks"),
                (pl.col("attempts") > 1).sum().alias("reasked"),
            )
        )
        per_bot = {r["chatbot"]: (r["n"], r["reasks"], r["reasked"]) for r in grouped.iter_rows(named=True)}
    invalid: Counter[str] = Counter()
    for cid, reason in failed_judgements:
        if reason is not None and reason.startswith(INVALID_ANSWER) and cid in owner:
            invalid[owner[cid]] += 1
    out: list[Diagnostics] = []
    for bot, t in tallies.items():
        n, reasks, reasked = per_bot.get(bot, (0, 0, 0))
        out.append(
            Diagnostics(
                chatbot=bot,
                conversations=t.n,
                ended_by={r: t.ended.get(r, 0) for r in END_REASONS}
                | {r: k for r, k in t.ended.items() if r not in END_REASONS},
                turns=turn_counts(t.turns),
                chatbot_turns=t.turns_chatbot,
                empty_chatbot_turns=t.empty,
                truncated_chatbot_turns=t.truncated,
                conversations_with_empty_or_truncated=t.flawed,
                judge_answers=n,
                judge_reasks=reasks,
                answers_reasked=reasked,
                invalid_answers=invalid.get(bot, 0),
            )
        )
    return out


# ---------------------------------------------------------------------------------------
# Scores by user-agent and by persona column
# ---------------------------------------------------------------------------------------


def persona_columns(
    manifest: RunManifest, columns: Sequence[str]
) -> tuple[dict[str, dict[str, str]], list[str]]:
    """The values of `columns` for every persona of the run, by persona name, read from
    the run's persona files (as they are now) and, for a target's annotation columns,
    from the conversations' own record (the caller adds those); and the columns no
    persona file has. A persona file that is gone gives no values (every column absent)."""
    values: dict[str, dict[str, str]] = {}
    headers: set[str] = set()
    if manifest.imported is None or manifest.imported.personas:
        files = manifest.personas.files if manifest.imported is None else (manifest.imported.personas or "",)
        for f in files:
            if not f or not Path(f).is_file():
                continue
            try:
                header, rows, _ = read_persona_rows(f, (NAME,))
            except (DataError, UserError, OSError):
                continue
            headers |= set(header)
            for _, row in rows:
                values.setdefault(row.get(NAME, ""), {}).update({c: row[c] for c in columns if c in row})
    return values, [c for c in columns if c not in headers]


def group_frame(
    frame: pl.DataFrame,
    column: str,
    values: Mapping[str, Mapping[str, str]],
    annotations: Mapping[str, Mapping[str, str]],
) -> pl.DataFrame:
    """`frame` with a `group` column: each conversation's persona's value of `column`
    (its label: the text before any description), from its annotations first, then the
    persona file; "Unknown" where neither has it."""
    ids = frame.get_column("conversation_id").unique().to_list()
    persona_of = dict(zip(frame.get_column("conversation_id"), frame.get_column("persona"), strict=True))
    groups: list[str] = []
    for cid in ids:
        raw = (annotations.get(cid) or {}).get(column) or values.get(persona_of[cid], {}).get(column, "")
        groups.append(group_value(raw) if raw.strip() else "Unknown")
    lookup = pl.DataFrame(
        {"conversation_id": ids, "group": groups}, schema={"conversation_id": pl.Utf8, "group": pl.Utf8}
    )
    return frame.join(lookup, on="conversation_id", how="left")


def group_scores(summary: pl.DataFrame, chatbot: str, key: str) -> dict[str, GroupScore]:
    """The Overall rows of a summary by (chatbot, `key`), as scores by group."""
    rows = summary.filter((pl.col("chatbot") == chatbot) & (pl.col("dimension") == OVERALL)).sort(key)
    return {
        str(r[key]): GroupScore(
            n_conversations=r["n_conversations"],
            n_personas=r["n_clusters"],
            score=_round(r["score"]),
            score_ci=(_round(r["score_lo"]), _round(r["score_hi"])),
            pct_conversations_any_hph=_round(r["pct_conversations_any_hph"]),
        )
        for r in rows.iter_rows(named=True)
    }
