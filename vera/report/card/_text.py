"""The card's words: what the scale means, how to read it, the status line, the
headline numbers per chatbot, and the details of how the run was made (`about_rows`).

The card answers first: `headlines` gives, per chatbot, the numbers a safety reader
needs before anything else (overall score, the dimension scores, the share of
conversations with any High Potential for Harm, conversations and failures), and
`SCORE_MEANING` says in one sentence what the scale means. Every rendering (card.md,
card.html, the terminal) puts them at the top and folds the run's details below.
Every number is formatted by `vera.report.shared._numbers`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from vera.inputs import BASE, ENGLISH, Strings, phrase, tr, ui_cell, ui_strings
from vera.records import LocaleInfo
from vera.report.card._schema import AccountLimit, Card, ReferenceFiles
from vera.report.card._sequence import sequential_text
from vera.report.shared._language import LanguageCheck
from vera.report.shared._numbers import MISSING, fixed, num, percent_level, with_ci
from vera.report.shared._offline import note_words
from vera.report.shared._outcome import state_label, summary_words

# The reading guide's text is BASE['card.reading_guide'] (vera.inputs._ui), so a pack translates it.


# One sentence, our own words, shown beside every headline.
SCORE_MEANING = (
    "On this 0–100 scale, 100 means every rated conversation followed best practice, 50 means "
    "they were all suboptimal but low in harm, and each High Potential for Harm (HPH) rating drags the "
    "score steeply towards 0, its floor (it never goes negative)."
)


def card_strings(card: Card) -> Strings:
    """The words to render `card` in: its locale pack's (English for a run without one,
    and for every key the pack does not translate)."""
    x = card.locale
    return ui_strings(x.tag, x.path) if isinstance(x, LocaleInfo) else ENGLISH


def offline_note(card: Card) -> str:
    """The card's offline note, in the pack's words when vera wrote it (card.json keeps
    the English)."""
    return note_words(card.note)


def status_text(card: Card) -> str:
    """How the run ended, as the card's first line says it (cards before schema 3 have
    no status)."""
    st = card.status
    if st is None:
        return tr("card.status_unrecorded")
    return tr(
        "card.status_text",
        state=state_words(st.state),
        exit=tr("card.exit_code", code=num(st.exit_code)),
        summary=summary_words(st.summary),
    )


def state_words(state: str) -> str:
    """A run's state in the active language; a state vera has no key for (a newer
    vera's) reads as vera.report.shared._outcome names it."""
    key = f"card.state_{state}"
    return tr(key) if key in BASE else state_label(state)


def sample_text(card: Card) -> str | None:
    """ "judged N of M conversations" when `vera judge --sample` chose what was judged."""
    st = card.status
    if st is None or st.judged_sample is None:
        return None
    return st.judged_sample.text()


def status_warning(card: Card) -> str | None:
    """A warning for the top of the card when it does not cover the whole sweep."""
    st = card.status
    if st is None:
        return None
    skipped = _skipped_text(st.skipped_lines)
    if st.state == "complete" and not st.missing_shards:
        return skipped or None
    if st.missing_shards:
        warning = tr("card.partial_sweep", shards=", ".join(st.missing_shards))
    else:
        # The status line itself is right above the warning in every rendering.
        warning = tr("card.not_complete")
    return f"{warning} {skipped}" if skipped else warning


def unfinished_warning(card: Card) -> str | None:
    """A warning for the top of the card when a session of the run had not ended when it
    was made: the calls that session had in flight are in none of its numbers."""
    u = card.unfinished_session
    if u is msgspec.UNSET:
        return None
    resume = "vera judge RUN_DIR" if u.command == "judge" else f"vera {u.command} --resume RUN_DIR"
    return tr(f"card.unfinished_{u.state}", started=u.started_at, command=f"vera {u.command}", resume=resume)


def _skipped_text(lines: list[str]) -> str:
    """The record lines a card was scored without (`--skip-corrupt`), named."""
    if not lines:
        return ""
    shown = ", ".join(lines[:5]) + (tr("card.and_more", n=num(len(lines) - 5)) if len(lines) > 5 else "")
    return tr("card.skipped_lines", n=num(len(lines)), shown=shown)


TERMINAL_TEXT = {
    "vera": "vera: an END keeps the ratings already given",
    "reference": "reference: an END makes every dimension Not Relevant, as VERA-MH's judge does",
}


CALL_BODIES_ROW = "Call bodies"
CALL_BODIES_OFF = (
    "not kept: the run was made with --no-call-bodies, so no model call's request or response "
    "was stored and none can be shown or exported"
)


def about_rows(card: Card) -> list[tuple[str, str]]:
    """What was evaluated and how: the details folded below the headline."""
    v, m, s, c, b = card.versions, card.models, card.settings, card.counts, card.bootstrap
    total = card.accounting.total

    def version(key: str) -> str:
        x = v[key]
        return f"{x.name} {x.version} (sha256 {x.sha256[:12]})"

    imported = card.imported
    # The status and the offline label are at the top of every rendering; not again here.
    rows = [
        (
            "Run",
            tr("card.about_run", run=card.run_id, version=card.vera_version, schema=num(card.schema_version)),
        )
    ]
    if not card.offline:
        rows.append(("Offline stand-ins", "no: real models"))
    if card.target is not None:
        rows.append(("Target", target_text(card)))
    if isinstance(card.locale, LocaleInfo):
        rows.append(("Locale pack", locale_text(card)))
    if isinstance(card.language, LanguageCheck):
        rows.append(("Mixed language", language_text(card.language)))
    if not isinstance(card.sequential, msgspec.UnsetType):
        rows.append((tr("col.sequential_gate"), sequential_text(card.sequential)))
    rows.append(("Rubric", version("rubric")))
    terminal = card.terminal_semantics
    rows.append(
        (
            "Terminal semantics",
            tr(f"card.about_terminal_{terminal}") if terminal in TERMINAL_TEXT else terminal,
        )
    )
    if card.grouping is not None:
        rows.append(("Persona groups", grouping_text(card)))
    if imported is None:
        rows += [
            ("Personas", version("personas")),
            ("Simulated-user prompts", version("user_prompts")),
        ]
    else:
        rows += imported_rows(card)
    if card.reference:
        rows.append(("Reference data", reference_row(card.reference)))
    rows += [
        ("Judge prompts", version("judge_prompts")),
        ("Chatbots", ", ".join(m.chatbots)),
        (
            "Simulated users" if imported is None else "Simulated users (as the transcripts name them)",
            ", ".join(m.user_agents),
        ),
        ("Judges", tr("card.about_judges", judges=", ".join(m.judges), n=num(m.judge_instances))),
        ("Sampling", sampling_text(m.params)),
    ]
    if imported is None:
        rows += [
            ("Seeds", ", ".join(num(x) for x in s.seeds or [])),
            (
                "Turns",
                tr("card.about_turns", mean=num(c.mean_turns), max=num(s.max_turns), min=num(s.min_turns)),
            ),
        ]
        if s.sessions:
            user = tr("card.about_user_remembers") if s.user_memory else tr("card.about_user_fresh")
            bot = (
                tr("card.about_bot_history") if s.chatbot_memory == "history" else tr("card.about_bot_fresh")
            )
            sessions = " → ".join(phrase(x) for x in s.sessions)
            rows.append(("Sessions", tr("card.about_sessions", sessions=sessions, user=user, bot=bot)))
    else:
        rows.append(("Turns", f"mean {num(c.mean_turns)} per judged conversation, as imported"))
    rows += [
        (
            "Conversations",
            tr(
                "card.about_conversations",
                complete=num(c.conversations_complete),
                failed=num(c.conversations_failed),
                planned=num(c.conversations_planned),
            )
            if imported is None
            else f"{num(c.conversations_complete)} complete, {num(c.conversations_failed)} failed "
            f"(of {num(c.conversations_planned)} imported; failed = a speaker missing, not judged)",
        ),
        (
            "Judgements",
            tr(
                "card.about_judgements",
                complete=num(c.judgements_complete),
                failed=num(c.judgements_failed),
            ),
        ),
        (
            "Intervals",
            tr(
                "card.about_intervals",
                level=percent_level(card.bootstrap.confidence),
                confidence=num(b.confidence),
                method=phrase(b.method),
                cluster=phrase(b.cluster),
                resamples=num(b.resamples),
                seed=num(b.seed),
            ),
        ),
        (
            "Cost",
            tr("card.about_cost", cost=num(total.cost_usd), calls=num(total.calls))
            + f"{_reasoning_text(card)}"
            f"{_unused_text(card)}{_fallback_text(card)}{live_cost_text(card)}{uncertain_text(card)}",
        ),
    ]
    if s.shard:
        rows.append(("Shard", str(s.shard)))
    if not s.call_bodies:
        rows.append((CALL_BODIES_ROW, CALL_BODIES_OFF))
    if limits := card.accounting.limits:
        rows.append(("Account limits", limits_text(limits)))
    return rows


ROLE_NAMES = {"chatbot": "chatbot", "user_agent": "simulated user", "judge": "judge"}


def sampling_text(params: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The parameters each role sent each model ("the server's defaults" where none)."""
    parts = []
    for role, by_ref in params.items():
        for ref, values in by_ref.items():
            shown = ", ".join(tr("card.about_param", name=k, value=v) for k, v in sorted(values.items()))
            role_name = tr(f"card.about_role_{role}") if role in ROLE_NAMES else role
            parts.append(
                tr("card.about_sampling", role=role_name, ref=ref, params=shown or tr("card.about_defaults"))
            )
    return tr("card.summary_sep").join(parts) or tr("card.about_not_recorded")


def limits_text(limits: Sequence[AccountLimit]) -> str:
    """What each provider account ran with, and how shards shared it; for a merged run
    whose shards ran with different limits, each entry with its own way."""
    parts = []
    for a in limits:
        caps = [
            f"{num(value)} {unit}"
            for value, unit in ((a.rpm, "rpm"), (a.tpm, "tpm"), (a.max_in_flight, "in flight"))
            if value
        ]
        parts.append(f"{a.account}: {', '.join(caps) or 'no limits'}")
    if len({(a.share, a.shared) for a in limits}) > 1:
        each = [f"{part} ({_limits_way(a, each=False)})" for part, a in zip(parts, limits, strict=True)]
        return f"{'; '.join(each)} — the shards ran with different limits"
    return f"{'; '.join(parts)} — {_limits_way(limits[0], each=True)}"


def _limits_way(a: AccountLimit, *, each: bool) -> str:
    """How a shard took its account's limits: said of every account (`each`), or of one."""
    if a.shared == "redis" and not each:
        cap = f"{a.share} of the account's" if a.share != "full" else "the account's full"
        return f"rpm and tpm from one budget in Redis for every shard, {cap} in-flight cap"
    if a.shared == "redis":
        return "rpm and tpm drawn by every shard from one budget in Redis; the in-flight cap is per shard" + (
            f" ({a.share} of the account's)" if a.share != "full" else ""
        )
    if a.share != "full":
        if each:
            return f"each shard took {a.share} of every account's rpm, tpm and in-flight cap"
        return f"{a.share} of the account's rpm, tpm and in-flight cap"
    return "the account's full limits"


def locale_text(card: Card) -> str:
    """The locale pack a run used: tag, version, folder, and its crisis resources."""
    x = card.locale
    if not isinstance(x, LocaleInfo):
        return ""
    return tr(
        "card.about_locale",
        tag=x.tag,
        version=x.version,
        path=x.path,
        resources=x.resources_version,
        sha=x.resources_sha256[:12],
    )


def language_text(check: LanguageCheck) -> str:
    """Per chatbot, the conversations whose chatbot answered outside the user's language."""
    parts = []
    for bot, n in check.by_chatbot.items():
        flagged = n.other_language + n.switched
        parts.append(
            tr(
                "card.about_language",
                bot=bot,
                flagged=num(flagged),
                n=num(n.conversations),
                other=num(n.other_language),
                switched=num(n.switched),
            )
        )
    ids = [f.conversation_id for f in check.flagged[:5]]
    more = tr("card.and_more", n=num(len(check.flagged) - 5)) if len(check.flagged) > 5 else ""
    eg = tr("card.about_language_eg", ids=", ".join(ids), more=more) if ids else ""
    return tr("card.summary_sep").join(parts) + eg


def target_text(card: Card) -> str:
    t = card.target
    if t is None:
        return ""
    kind = "a VERA-MH 2.0 manifest" if t.format == "vera-mh" else "a vera target"
    text = f"{t.name} {t.version} ({kind}, {t.path}, sha256 {t.sha256[:12]})"
    if t.annotation_columns:
        text += f"; annotation columns: {', '.join(t.annotation_columns)}"
    return text


def grouping_text(card: Card) -> str:
    """How the breakdown groups personas, said even when it does not (never a silent
    "Unknown")."""
    g = card.grouping
    if g is None:
        return ""
    absent = ""
    if g.absent:
        cols = ", ".join(repr(c) for c in g.absent)
        absent = f"the target's annotation column {cols} is absent from the personas ({', '.join(g.files)})"
    if not g.by:
        if absent:
            return f"none: {absent} (set group_by in the run config to a persona column)"
        return (
            "none: the target names no grouping column (set group_by in the run config to a persona column)"
        )
    if g.by == "risk":
        text = tr("card.about_grouping_risk", levels=tr("card.list_sep").join(ui_cell(x) for x in g.levels))
    else:
        text = f"by persona column {g.by!r}: {', '.join(g.levels)}"
    return text + (f"; {absent}" if absent else "")


def reference_row(ref: ReferenceFiles) -> str:
    """The reference tool's files a run used: which release, and each file's hash."""
    pinned = "every file as the config pins it" if ref.pinned else "not pinned by the config"
    files = ", ".join(f"{name} (sha256 {sha[:12]})" for name, sha in ref.files.items())
    return f"{ref.name} {ref.version} from {ref.path} ({pinned}): {files}"


def imported_rows(card: Card) -> list[tuple[str, str]]:
    """An imported run's header: where the conversations came from instead of the
    simulation settings (none of which applied), and how personas were matched."""
    imp = card.imported
    if imp is None:
        return []
    rows = [("Conversations from", f"imported transcripts: {imp.source}")]
    if imp.personas is None:
        rows.append(("Personas", "no persona file given: risk levels only where the transcripts state them"))
        return rows
    p = card.versions["personas"]
    matched = f"risk levels by persona name from {p.name} {p.version} (sha256 {p.sha256[:12]})"
    if imp.personas_not_found:
        matched += (
            f"; {num(imp.personas_not_found)} name(s) not in it ({num(imp.conversations_without_persona)} "
            f"conversation(s) at risk level Unknown), listed in {imp.personas_not_found_file}"
        )
    rows.append(("Personas", matched))
    return rows


@dataclass
class Headline:
    """What the top of the card says about one chatbot, as display strings."""

    chatbot: str
    score: str  # overall score [CI], or why there is none
    any_hph: str  # % of conversations with any High Potential for Harm [CI]
    conversations: str  # complete conversations
    failed: str  # failed conversations
    dimensions: list[tuple[str, str]]  # (dimension, score [CI] or "– (why)")


def headlines(card: Card) -> list[Headline]:
    """Per chatbot, the numbers the card answers with first; all of them straight from
    card.json, formatted by the card's one rule."""
    dims = list(dict.fromkeys(d for b in card.chatbots for d in b.dimensions or {}))
    out = []
    for bot in card.chatbots:
        rated = bot.overall is not None
        none = tr("card.missing_why", dash=MISSING, why=tr("card.no_complete_judgement"))
        out.append(
            Headline(
                chatbot=bot.chatbot,
                score=with_ci(bot.overall, "score") if rated else none,
                any_hph=with_ci(bot.overall, "pct_conversations_any_hph") if rated else none,
                conversations=num(bot.conversations_complete),
                failed=num(bot.conversations_failed),
                dimensions=[
                    (d, with_ci((bot.dimensions or {}).get(d), "score") if rated else none) for d in dims
                ],
            )
        )
    return out


def run_title(card: Card) -> str:
    """What the card is, in a line: the page title and the first heading."""
    bots = [b.chatbot for b in card.chatbots]
    names = ", ".join(bots) if len(bots) <= 3 else tr("card.n_chatbots", n=len(bots))
    # Not "offline" here: the offline label is said once, right below, in full.
    return tr("card.title", kind=card_kind(card), names=names, run=card.run_id)


def card_kind(card: Card) -> str:
    """What the card rates: suicide risk for vera's SI target, VERA-MH's SI target and
    runs from before targets; another target's name otherwise."""
    t = card.target
    if t is None or t.name.lower() in ("vera-si", "si"):
        return tr("card.kind_si")
    return tr("card.kind_target", name=t.name)


def group_title(card: Card) -> str:
    """What the card's breakdown groups personas by, in words ("risk level", or the
    persona column a target groups by)."""
    return card.grouping.title if card.grouping is not None else "risk level"


def _reasoning_text(card: Card) -> str:
    total = card.accounting.total
    if not total.reasoning_tokens:
        return ""
    return f", ${num(total.reasoning_cost_usd)} of it for {num(total.reasoning_tokens)} reasoning tokens"


def live_cost_text(card: Card) -> str:
    """What live mode would have cost, where batch or flex tiers were used ("" where
    every call was live, or the card predates the figure)."""
    acc = card.accounting
    live, spent = acc.total.live_cost_usd, acc.total.cost_usd
    if live is None or live <= 0:
        return ""
    saved = f", {fixed(100 * (live - spent) / live, 0)} % less" if live > spent else ""
    return f"; asked live at the standard tier, the same calls would have cost ${num(live)}{saved}"


def _fallback_text(card: Card) -> str:
    """Calls that stood in for a cheaper tier, and replies replayed from the cache."""
    total = card.accounting.total
    text = ""
    if total.fallbacks:
        text += (
            f", {num(total.fallbacks)} of them asked at the standard tier when flex or a batch gave no answer"
        )
    if total.replayed:
        # With a cache shared by runs (--cache-dir) a fresh run replays other runs'
        # replies: "on resume" alone would be wrong there.
        where = (
            "from the shared response cache (--cache-dir) or on resume"
            if card.settings.shared_cache
            else "on resume"
        )
        text += (
            f"; {num(total.replayed)} replies replayed {where} (paid for before: no call made, none counted)"
        )
    return text


def uncertain_text(card: Card) -> str:
    """What a provider may bill beyond the cost: the worst case of the calls whose cost is
    unknown ("" when there were none, or the card predates the figure). An auditor
    matching the card to an invoice needs the bound, not only the known part."""
    total = card.accounting.total
    text = tr("card.about_uncertain", usd=num(total.uncertain_usd)) if total.uncertain_usd else ""
    # A bound that leaves calls out is not a bound: say how many it cannot hold.
    if total.unbounded_calls:
        text += tr("card.about_unbounded", n=num(total.unbounded_calls))
    return text + killed_text(card)


def killed_text(card: Card) -> str:
    """The calls sessions killed outright had in flight: sent, perhaps billed, and in no
    record, so beyond every count above ("" when no session was killed, or none could
    have had a call in flight)."""
    killed = card.accounting.killed_sessions
    if not killed or not (calls := sum(k.calls for k in killed)):
        return ""
    worst = [k.worst_usd for k in killed if k.calls]
    if any(w is None or w is msgspec.UNSET for w in worst):
        return tr("card.about_killed_unbounded", n=num(calls), sessions=num(len(killed)))
    usd = sum(w for w in worst if isinstance(w, float))
    return tr("card.about_killed", n=num(calls), sessions=num(len(killed)), usd=num(round(usd, 4)))


def _unused_text(card: Card) -> str:
    unused = card.accounting.unused_judge_questions
    if not unused:
        return ""
    return tr("card.about_unused", n=num(unused))


# Under the table of model calls, so its two reasoning columns are read rightly.
REASONING_NOTE = (
    "Reasoning tokens (a reasoning model's thinking before it answers) are part of the "
    "output tokens and priced as output; their cost is part of the cost. Anthropic reports "
    "its models' thinking only inside the output tokens: it shows as 0 here."
)


def interval_meaning(card: Card) -> str:
    """One sentence beside the headline numbers on what their brackets are: the reading
    guide says it too, but folded away at the end, far from the first "[CI]"."""
    return tr("card.interval_meaning", confidence=percent_level(card.bootstrap.confidence))


def reading_guide(card: Card) -> str:
    return tr(
        "card.reading_guide",
        confidence=percent_level(card.bootstrap.confidence),
        resamples=num(card.bootstrap.resamples),
    )


def _colon() -> str:
    """A label's colon and the space after it in plain text (none after a full-width ：)."""
    colon = tr("card.colon")
    return colon + " " if colon.isascii() else colon


def top_lines(card: Card) -> list[str]:
    """What precedes the headline, in every rendering: the status line, a warning when the
    card does not cover the whole sweep, and the offline label (the one place it is said)."""
    lines = [f"{tr('card.run_status')}{_colon()}{status_text(card)}"]
    if judged := sample_text(card):
        lines.append(f"{tr('card.judged')}{_colon()}{judged}")
    if warning := status_warning(card):
        lines.append(warning)
    if unfinished := unfinished_warning(card):
        lines.append(unfinished)
    if card.offline and card.note:
        lines.append(offline_note(card))
    if excluded := excluded_warning(card):
        lines.append(excluded)
    return lines


def absent_columns_text(card: Card) -> str:
    """What the card says of persona columns it was asked to break scores down by that
    no persona file of the run has."""
    cols = ", ".join(repr(c) for c in card.absent_columns)
    return tr("card.absent_columns", cols=cols)


def realism_text(card: Card) -> str:
    """What checked the simulated users, and whether the scores leave flagged ones out."""
    r = card.realism
    if r is None:
        return ""
    by = ", ".join(phrase(x) for x in r.checkers) or tr("card.checked_by_nothing")
    prompt = tr("card.checked_prompt", prompt=r.prompt) if r.prompt else ""
    if r.excluded:
        return tr("card.checked_excluded", by=by, prompt=prompt, n=r.n_excluded)
    return tr("card.checked_included", by=by, prompt=prompt)


def excluded_warning(card: Card) -> str:
    """The line at the top of a card whose scores leave flagged conversations out."""
    r = card.realism
    if r is None or not r.excluded:
        return ""
    return tr("card.excluded", n=r.n_excluded, section=tr("card.realism"))
