"""`vera gate`: the sequential release gate (vera.app._gate), and what it prints."""

from __future__ import annotations

import sys
from typing import Any

import click

from vera.app import GateOptions, GateOutcome, run_gate
from vera.cli._door import Number, alpha_option, boundary_options, margin_option, seed_option, wave_option
from vera.inputs import ENGLISH, tr, ui_short, use_strings
from vera.ranges import DOLLARS
from vera.report import (
    card_strings,
    failed_units,
    failed_words,
    left_out_line,
    row_verdict_words,
    shown_rows,
    verdict_words,
    why_stopped,
)


@click.command()
@click.argument("baseline_run", type=click.Path(file_okay=False, exists=True))
@click.option(
    "--candidate", required=True, help="The candidate chatbot: a profile name or provider/model ref."
)
@margin_option()
@alpha_option("Error rate of each wrong verdict (WORSE, NOT WORSE), at every look at once.")
@wave_option("Units per wave.")
@seed_option("Seed of the units' order.")
@click.option(
    "--max-conversations",
    type=click.IntRange(min=1),
    help="Draw at most this many units (a conversation each, or a multi-session arc); UNDECIDED "
    "if not settled by then.",
)
@click.option(
    "--max-cost",
    type=Number(DOLLARS, "usd"),
    help="The candidate run's budget in USD over all waves; UNDECIDED if it runs out first.",
)
@click.option(
    "--exact",
    is_flag=True,
    help="Use the exact betting confidence sequence instead of the default boundary: valid for any "
    "sample size and at any looks, wider (no --boundary needed; see docs/statistics.md).",
)
@click.option(
    "--allow-failures",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=False,
    help="Share of the units drawn so far (0-1) that may fail for infrastructure reasons and the gate "
    "still go on and settle on the rest (left out, never scored as the chatbot's). Default 0: a wave "
    "with a failed unit stops the gate (exit 2) and the same command retries it. May change on resume.",
)
@boundary_options("A resumed gate keeps the boundary it was started with unless told otherwise.")
@click.option("--max-concurrency", type=click.IntRange(min=1), help="Conversations at once.")
@click.option(
    "--out", type=click.Path(file_okay=False), help="The candidate's run directory (rerun to resume)."
)
@click.option(
    "--quiet", is_flag=True, help="Print only the run directory and the verdict (no progress, waves or rows)."
)
def gate(baseline_run: str, candidate: str, quiet: bool, **options: Any) -> None:
    """Sequential release gate: judge the --candidate chatbot in waves on BASELINE_RUN's own units
    (persona × user-agent × seed, in a seeded random order) until the interval of
    candidate − baseline settles, for Overall and every dimension.

    Exit codes: 0 NOT WORSE (every interval above −margin), 4 WORSE (an interval below
    −margin), 5 UNDECIDED (units, --max-conversations or --max-cost ran out first),
    2 not finished (units failed for infrastructure reasons, more than --allow-failures
    allows: rerun the same command to retry them before any new unit is drawn), 3 not finished (a wave stopped on a fatal provider error,
    e.g. a bad key: fix it and rerun the same command), 1 bad input, 130 interrupted (rerun
    the same command to resume: nothing finished is asked again)."""
    opts = GateOptions(
        baseline=baseline_run,
        candidate=candidate,
        margin=options["margin"],
        alpha=options["alpha"],
        wave=options["wave"],
        seed=options["seed"],
        max_conversations=options["max_conversations"],
        exact=options["exact"],
        boundary=options["boundary"],
        spending=options["spending"],
        max_cost=options["max_cost"],
        allow_failures=options["allow_failures"],
        max_concurrency=options["max_concurrency"],
        out=options["out"],
        progress=not quiet,
        # Before the first wave, where the user can still stop the gate and name another.
        notify=None if quiet else click.echo,
    )
    outcome = run_gate(opts)
    card = outcome.run.card if outcome.run is not None else None
    # In the words of the candidate run's locale pack, as its card (English without one);
    # the records (gate.json, sequence.jsonl) keep their English values.
    with use_strings(card_strings(card) if card is not None else ENGLISH):
        _print_gate(outcome, quiet=quiet)
    sys.exit(outcome.exit_code)


def _print_gate(outcome: GateOutcome, *, quiet: bool) -> None:
    if not quiet:
        for look in outcome.looks:
            overall = next((r for r in look.rows if r.dimension == "Overall"), None)
            interval = (
                f"{overall.diff:+.1f} [{overall.lo:+.1f}, {overall.hi:+.1f}]"
                if overall is not None
                and overall.diff is not None
                and overall.lo is not None
                and overall.hi is not None
                else tr("cli.gate_no_interval")
            )
            click.echo(
                tr(
                    "cli.gate_wave",
                    wave=look.wave,
                    units=look.units,
                    # A look's failed units after its units judged (none: nothing said).
                    failed=tr("card.seq_units_failed", failed=n) if (n := failed_units(look)) else "",
                    available=look.available,
                    overall=ui_short("Overall"),
                    interval=interval,
                    verdict=verdict_words(look.verdict),
                )
            )
        last = outcome.looks[-1] if outcome.looks else None
        if last is not None:
            # Every row, one without an interval as "–" (as sequence.md shows it): a row
            # left out looked settled, or absent, when it held the gate UNDECIDED; a row
            # the baseline never rated is named with why, as vera compare --gate does.
            for r in shown_rows(last):
                click.echo(
                    tr(
                        "cli.gate_row",
                        dimension=ui_short(r.dimension),
                        interval=f"[{r.lo:+.1f}, {r.hi:+.1f}]"
                        if r.lo is not None and r.hi is not None
                        else "–",
                        verdict=row_verdict_words(r.status, r.reason),
                    )
                )
            if left := left_out_line(last, ui_short):
                click.echo(left.strip())
    click.echo(tr("cli.run_dir", path=outcome.run_dir))
    if outcome.exit_code == 130:
        click.echo(tr("cli.gate_interrupted", command=outcome.command), err=True)
    elif outcome.unfinished:
        last = outcome.looks[-1]
        # Failed again when retried: a unit that always fails would hold the gate for ever,
        # so the line names the way past it (--allow-failures), with the share it needs.
        click.echo(
            tr(
                "cli.gate_unfinished_again" if outcome.past else "cli.gate_unfinished",
                failed=outcome.unfinished,
                drawn=last.drawn,
                run_dir=outcome.run_dir,
                command=outcome.command,
                past=outcome.past,
                code=outcome.exit_code,
            )
        )
    elif outcome.halted:
        click.echo(tr("cli.gate_halted", why=outcome.halted, command=outcome.command, code=outcome.exit_code))
    else:
        last = outcome.looks[-1] if outcome.looks else None
        if last is not None and (failed := failed_units(last)):
            # Closed with units left out (within --allow-failures): said before the verdict.
            click.echo(failed_words(failed, last.drawn, outcome.allow_failures).strip())
        said = why_stopped(outcome.verdict, outcome.stopped)
        why = tr("card.seq_why", why=said) if said else ""
        click.echo(
            tr(
                "cli.gate_verdict",
                verdict=verdict_words(outcome.verdict),
                margin=f"{outcome.settings.margin:g}",
                why=why,
                code=outcome.exit_code,
            )
        )
