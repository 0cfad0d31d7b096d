"""The gate's verdict in words: its tables, the Monte Carlo notes and the one-line
verdict that `vera compare --gate` prints (the verdict itself: vera.report.compare._gate),
in the active locale pack's words (the JSON keeps its English values)."""

from __future__ import annotations

from collections.abc import Callable

from vera.inputs import tr, ui_short
from vera.records import OVERALL
from vera.report.card._sequence import not_rated_words, verdict_words, with_why
from vera.report.card._text import state_words
from vera.report.compare._gate import UNDECIDED_REASONS, GateRow, GateVerdict
from vera.report.shared._numbers import MISSING, interval, num
from vera.report.shared._table import Table
from vera.report.shared._terminal import render, rich_table
from vera.stats import NOT_WORSE, WORSE


def gate_verdict(result: GateVerdict) -> str:
    """The last line, naming the verdict as `vera gate` does: WORSE with the exit code and
    what is worse; NOT WORSE when every row is; or UNDECIDED with its exit code, why (intervals that settle neither
    way, rows not rated in the candidate) and what would settle it."""
    if result.verdict == WORSE:
        rows = _rows_by_bot(result, lambda r: r.worse)
        return tr(
            "cli.fixed_gate_failed",
            verdict=verdict_words(result.verdict),
            code=result.exit_code,
            below=_below(result.margin),
            rows=rows,
        )
    if result.verdict == NOT_WORSE:
        return tr(
            "cli.fixed_gate_not_worse", verdict=verdict_words(result.verdict), above=_above(result.margin)
        )
    compared = [r for p in result.pairs for r in p.rows if r.checked_at[0] is not None]
    why, settle = [], []
    # Each cause with what would settle it: an interval that reaches −margin needs more
    # data or a wider margin; a row not rated in the candidate needs its ratings.
    if any(r.status != NOT_WORSE for r in compared):
        why.append(
            tr("cli.fixed_gate_why_intervals", below=_below(result.margin), above=_above(result.margin))
        )
        # At the largest margin (100 points: vera.ranges.MARGIN) only more data can help.
        settle.append(tr("cli.fixed_gate_settle" if result.margin < 100 else "cli.fixed_gate_settle_data"))
    if not_rated := _rows_by_bot(result, lambda r: r.reason in UNDECIDED_REASONS):
        why.append(tr("cli.fixed_gate_why_not_rated", rows=not_rated))
        settle.append(tr("cli.fixed_gate_settle_not_rated"))
    if result.unfinished:
        runs = {"baseline": result.baseline, "candidate": result.candidate}
        why.append(
            tr(
                "cli.fixed_gate_why_unfinished",
                runs=tr("cli.fixed_gate_why_sep").join(
                    tr(
                        f"cli.fixed_gate_unfinished_{side}",
                        run=runs[side].path,
                        state=state_words(runs[side].state),
                    )
                    for side in result.unfinished
                ),
            )
        )
        settle.append(tr("cli.fixed_gate_settle_unfinished"))
    if not why:  # every row left out: the baseline rated none of them
        why.append(tr("cli.fixed_gate_why_nothing"))
        settle.append(tr("cli.fixed_gate_settle_nothing"))
    line = tr(
        "cli.fixed_gate_undecided",
        verdict=verdict_words(result.verdict),
        code=result.exit_code,
        why=tr("cli.fixed_gate_why_sep").join(why),
    )
    # Each settling sentence brings its own leading space where the language has one.
    return "".join([line, *settle])


def _rows_by_bot(result: GateVerdict, chosen: Callable[[GateRow], bool]) -> str:
    """The `chosen` rows, "chatbot: dimension, dimension; chatbot: ..." (empty if none)."""
    by_bot: dict[str, list[str]] = {}
    for p in result.pairs:
        if rows := [ui_short(r.dimension) for r in p.rows if chosen(r)]:
            by_bot[p.chatbot] = rows
    return "; ".join(f"{bot}: {', '.join(dims)}" for bot, dims in by_bot.items())


def _below(margin: float) -> str:
    return (
        tr("cli.fixed_gate_below_zero") if margin == 0 else tr("cli.fixed_gate_below", margin=f"{margin:g}")
    )


def _above(margin: float) -> str:
    return (
        tr("cli.fixed_gate_above_zero") if margin == 0 else tr("cli.fixed_gate_above", margin=f"{margin:g}")
    )


def level_words(level: float | None) -> str:
    """A one-sided level as a percentage with the digits it has: 0.025 → "2.5%",
    0.0125 → "1.25%"."""
    return MISSING if level is None else f"{100 * level:.3g}%"


def gate_text(result: GateVerdict) -> str:
    """The gate's tables: per chatbot, baseline and candidate scores, the paired
    difference, the one-sided levels its two ends were checked at, and each row's
    verdict (WORSE, NOT WORSE or UNDECIDED)."""
    paired = tr("cli.fixed_gate_by_seed") if result.shared_seeds else tr("cli.fixed_gate_by_persona")
    seeds = (
        tr("cli.fixed_gate_seeds", seeds=", ".join(map(str, result.shared_seeds)))
        if result.shared_seeds
        else ""
    )
    scores = (
        tr("cli.fixed_gate_calibrated", rule=result.scores.rsplit(": ", 1)[-1].rstrip(")"))
        if result.scores != "judge-only"
        else ""
    )
    intro = tr(
        "cli.fixed_gate_intro",
        candidate=result.candidate.run_id,
        baseline=result.baseline.run_id,
        paired=paired,
        seeds=seeds,
        alpha=f"{result.alpha:g}",
        below=_below(result.margin),
        above=_above(result.margin),
        low=level_words(result.alpha / 2.0),
        scores=scores,
    )
    tables = []
    for p in result.pairs:
        t = Table(
            [
                tr("cli.fixed_gate_col_dimension"),
                tr("cli.fixed_gate_col_baseline"),
                tr("cli.fixed_gate_col_candidate"),
                tr("cli.fixed_gate_col_diff"),
                tr("cli.fixed_gate_col_levels"),
                tr("cli.fixed_gate_col_verdict"),
            ],
            caption=tr("cli.fixed_gate_caption", chatbot=p.chatbot, n=p.n_shared),
        )
        for r in p.rows:
            if r.dimension == OVERALL:
                t.emphasise.add(len(t.rows))
            undefined = tr("cli.fixed_gate_undefined", missing=MISSING)
            not_rated = tr("card.missing_why", dash=MISSING, why=tr("card.not_rated"))
            diff = (
                interval(r.diff, r.diff_ci[0], r.diff_ci[1])
                if r.diff is not None
                # The verdict column says why; a "–" here is enough.
                else MISSING
                if r.reason is not None
                else undefined
            )
            low, high = r.checked_at
            t.rows.append(
                [
                    ui_short(r.dimension),
                    num(r.baseline) if r.baseline is not None else not_rated,
                    num(r.candidate) if r.candidate is not None else not_rated,
                    diff,
                    f"{level_words(low)} / {level_words(high)}" if low is not None else MISSING,
                    _row_verdict(r),
                ]
            )
        tables.append(t)
    return render([intro, *(rich_table(t) for t in tables), *_left_out(result), *_mc_notes(result)])


def _row_verdict(r: GateRow) -> str:
    """A row's verdict; a row without an interval says why: UNDECIDED when that holds
    the verdict (not rated in the candidate), "–" when it is left out of it."""
    if r.reason is None:
        return verdict_words(r.status) if r.checked_at[0] is not None else MISSING
    held = verdict_words(r.status) if r.reason in UNDECIDED_REASONS else MISSING
    return with_why(held, not_rated_words(r.reason))


def _left_out(result: GateVerdict) -> list[str]:
    """The rows left out of the verdict (the baseline never rated them), named under the tables."""
    rows = _rows_by_bot(result, lambda r: r.reason is not None and r.reason not in UNDECIDED_REASONS)
    return [tr("cli.fixed_gate_left_out", rows=rows)] if rows else []


def _mc_notes(result: GateVerdict) -> list[str]:
    """How precise the interval ends are, how many resamples the verdict took, and the
    rows the bootstrap cannot decide (vera.report.compare._gate)."""
    boot = result.bootstrap
    errors = [e for p in result.pairs for r in p.rows for e in r.diff_ci_mc_error if e is not None]
    used, asked = boot.resamples_used, boot.resamples
    notes = []
    if errors:
        raised = tr("cli.fixed_gate_mc_raised", asked=num(asked)) if used > asked else ""
        notes.append(tr("cli.fixed_gate_mc_error", error=f"{max(errors):g}", used=num(used), raised=raised))
    unsettled = [
        f"{p.chatbot}: {ui_short(r.dimension)}" for p in result.pairs for r in p.rows if not r.settled
    ]
    if unsettled:
        notes.append(
            tr(
                "cli.fixed_gate_mc_unsettled",
                rows="; ".join(unsettled),
                threshold=_below(result.margin),
                max=num(boot.max_resamples),
            )
        )
    return notes
