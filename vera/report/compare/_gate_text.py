"""The gate's verdict in words: its tables, the Monte Carlo notes and the one-line
verdict that `vera compare --gate` prints (the verdict itself: vera.report.compare._gate)."""

from __future__ import annotations

from vera.records import OVERALL
from vera.report.compare._gate import GateVerdict
from vera.report.shared._numbers import MISSING, interval, num, percent_level
from vera.report.shared._outcome import Exit
from vera.report.shared._table import Table
from vera.report.shared._terminal import render, rich_table


def gate_verdict(result: GateVerdict) -> str:
    """The last line: passed, or failed with the exit code and what is worse."""
    if result.passed:
        verdict = f"gate: passed — no paired interval of candidate − baseline lies {_below(result.margin)}."
    else:
        by_bot: dict[str, list[str]] = {}
        for p in result.pairs:
            if bad := [r.dimension for r in p.rows if r.worse]:
                by_bot[p.chatbot] = bad
        verdict = (
            f"gate: FAILED (exit code {int(Exit.WORSE)}) — the candidate is worse than the baseline "
            f"(paired interval {_below(result.margin)}) on "
            + "; ".join(f"{bot}: {', '.join(dims)}" for bot, dims in by_bot.items())
            + "."
        )
    return verdict


def _below(margin: float) -> str:
    return "below 0" if margin == 0 else f"below −{margin:g} point" + ("" if margin == 1 else "s")


def gate_text(result: GateVerdict) -> str:
    """The gate's tables: per chatbot, baseline and candidate scores and the paired
    difference, each row marked worse or not."""
    level = percent_level(result.bootstrap.confidence)
    intro = (
        f"Release gate: candidate {result.candidate.run_id} against baseline "
        f"{result.baseline.run_id}; paired by {result.paired_by}"
        + (f" (seeds {', '.join(map(str, result.shared_seeds))})" if result.shared_seeds else "")
        + f"; worse = the {level} interval of candidate − baseline lies {_below(result.margin)}."
        + (f" Scores: {result.scores}." if result.scores != "judge-only" else "")
    )
    tables = []
    for p in result.pairs:
        t = Table(
            ["Dimension", "Baseline", "Candidate", f"Candidate − baseline [{level} CI]", "Worse"],
            caption=f"{p.chatbot}: {p.n_shared} shared personas",
        )
        for r in p.rows:
            if r.dimension == OVERALL:
                t.emphasise.add(len(t.rows))
            undefined = f"{MISSING} (a score is undefined)"
            diff = interval(r.diff, r.diff_ci[0], r.diff_ci[1]) if r.diff is not None else undefined
            t.rows.append(
                [
                    r.dimension,
                    num(r.baseline) if r.baseline is not None else undefined,
                    num(r.candidate) if r.candidate is not None else undefined,
                    diff,
                    "WORSE" if r.worse else ("no" if r.settled else "undecided"),
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
        raised = f", raised from {num(asked)} to settle the verdict" if used > asked else ""
        notes.append(
            f"Monte Carlo error of the interval ends: at most {max(errors):g} points "
            f"({num(used)} resamples{raised})."
        )
    undecided = [f"{p.chatbot}: {r.dimension}" for p in result.pairs for r in p.rows if not r.settled]
    if undecided:
        notes.append(
            f"Undecided ({'; '.join(undecided)}): the interval's upper end stays within Monte Carlo "
            f"error of {_below(result.margin).removeprefix('below ')} at {num(boot.max_resamples)} "
            "resamples, so the data cannot say the candidate is worse; not counted as worse."
        )
    return notes
