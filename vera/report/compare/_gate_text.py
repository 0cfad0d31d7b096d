"""The gate's verdict in words: its tables, the Monte Carlo notes and the one-line
verdict that `vera compare --gate` prints (the verdict itself: vera.report.compare._gate),
in the active locale pack's words (the JSON keeps its English values)."""

from __future__ import annotations

from vera.inputs import tr, ui_short
from vera.records import OVERALL
from vera.report.card._sequence import verdict_words
from vera.report.compare._gate import GateVerdict
from vera.report.shared._numbers import MISSING, interval, num
from vera.report.shared._outcome import Exit
from vera.report.shared._table import Table
from vera.report.shared._terminal import render, rich_table
from vera.stats import NOT_WORSE, WORSE


def gate_verdict(result: GateVerdict) -> str:
    """The last line: failed with the exit code and what is worse, or passed, saying
    whether every row is NOT WORSE or the verdict is UNDECIDED."""
    if result.verdict == WORSE:
        by_bot: dict[str, list[str]] = {}
        for p in result.pairs:
            if bad := [ui_short(r.dimension) for r in p.rows if r.worse]:
                by_bot[p.chatbot] = bad
        rows = "; ".join(f"{bot}: {', '.join(dims)}" for bot, dims in by_bot.items())
        return tr("cli.fixed_gate_failed", code=int(Exit.WORSE), below=_below(result.margin), rows=rows)
    key = "cli.fixed_gate_not_worse" if result.verdict == NOT_WORSE else "cli.fixed_gate_undecided"
    return tr(
        key,
        verdict=verdict_words(result.verdict),
        below=_below(result.margin),
        above=_above(result.margin),
    )


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
            diff = interval(r.diff, r.diff_ci[0], r.diff_ci[1]) if r.diff is not None else undefined
            low, high = r.checked_at
            t.rows.append(
                [
                    ui_short(r.dimension),
                    num(r.baseline) if r.baseline is not None else undefined,
                    num(r.candidate) if r.candidate is not None else undefined,
                    diff,
                    f"{level_words(low)} / {level_words(high)}" if low is not None else MISSING,
                    verdict_words(r.status) if low is not None else MISSING,
                ]
            )
        tables.append(t)
    return render([intro, *(rich_table(t) for t in tables), *_mc_notes(result)])


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
