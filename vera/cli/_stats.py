"""`vera compare` and `vera agreement`: the statistics commands.

Both read run directories without writing to them, print aligned tables (or, with
`--json`, one JSON object), and report a user's mistake as one `error: ...` line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

import click
import msgspec

from vera.cli._door import (
    ALPHA,
    RATER_RULES,
    RATERS_OPTION,
    alpha_option,
    confidence_option,
    locale_option,
    margin_option,
    resamples_option,
    seed_option,
)
from vera.errors import ConfigError
from vera.inputs import ENGLISH, Strings, locale_strings, tr, ui_strings, use_strings
from vera.records import LocaleInfo, RaterRule
from vera.report import (
    JudgeConsensusReport,
    agreement_against_text,
    agreement_humans_text,
    agreement_report,
    compare_runs,
    compare_tables,
    comparison_plots,
    confusion_csv_text,
    fit,
    gate,
    gate_text,
    gate_verdict,
    percent_level,
    render_compare_html,
    sequential_failed_note,
    sequential_note,
    state_label,
    text_tables,
    user_check_agreement,
    user_check_agreement_table,
)
from vera.stats import DEFAULT_RATER_RULE
from vera.store import atomic_write, check_output, read_manifest

# Only the names of the literal types: vera.stats (polars, numpy) loads when a command runs.
NRTreatment = Literal["category", "exclude"]
TieRule = Literal["exclude", "severest"]


def _write_json(obj: Any, path: str | None) -> None:
    # allow_nan=False: an undefined statistic is None (null), never NaN.
    text = json.dumps(obj, indent=2, allow_nan=False) + "\n"
    if path is None or path == "-":
        click.echo(text, nl=False)
    else:
        atomic_write(Path(path), text.encode(), what="the JSON report")


# ---------------------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------------------


@click.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@click.option("--force", is_flag=True, help="Compare even if rubric, persona or prompt versions differ.")
@click.option("--by-seed", is_flag=True, help="Line up each chatbot's seed replicates too.")
@click.option(
    "--json", "json_path", type=click.Path(dir_okay=False), help="Write the result as JSON (- = stdout)."
)
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML page."
)
@resamples_option(default_from="the first run's config")
@confidence_option(default_from="the first run's config")
@seed_option("Seed of the bootstrap.", default=None)
@click.option(
    "--gate",
    is_flag=True,
    help="Release gate: BASELINE_RUN CANDIDATE_RUN; exit 0 NOT WORSE, 4 WORSE, 5 UNDECIDED (see --margin).",
)
@margin_option(0.0, "With --gate: score points the candidate may lose before its interval counts as worse.")
@alpha_option(
    "With --gate: the chance of a wrong WORSE over all rows (split as vera gate splits it: Overall α/2, "
    "the dimensions the rest); each row's NOT WORSE end at α/2. [default: 0.05]",
    default=None,
)
@click.option(
    "--calibrated",
    is_flag=True,
    help="With --gate: gate on the scores calibrated by each run's human ratings (both runs need them).",
)
@RATERS_OPTION
def compare(
    run_dirs: tuple[str, ...],
    force: bool,
    by_seed: bool,
    json_path: str | None,
    html_path: str | None,
    resamples: int | None,
    confidence: float | None,
    seed: int | None,
    gate: bool,
    margin: float,
    alpha: float | None,
    calibrated: bool,
    raters: RaterRule | None,
) -> None:
    """Compare the chatbots of one or more runs on their shared personas.

    Prints each chatbot's scores with confidence intervals and, for every pair, the score
    difference with a paired bootstrap interval over the personas both talked to; a
    difference whose interval excludes 0 is flagged. Runs made with different rubric,
    persona or prompt versions are refused unless --force.

    With --gate, the two runs are BASELINE_RUN CANDIDATE_RUN and the command is a
    release gate with vera gate's exit codes: 4 WORSE when, on the overall score or any
    dimension, the paired interval of candidate − baseline lies entirely below −margin
    (each row at its share of --alpha, as vera gate splits it), naming each; 0 NOT WORSE
    only when every interval lies above −margin; 5 UNDECIDED otherwise, and when a row
    the baseline rated was not rated in the candidate (more personas or seeds, or a wider
    --margin, would settle it; vera plan sizes a design).
    """
    check_output(json_path, "--json", runs=run_dirs)
    check_output(html_path, "--html", runs=run_dirs)
    if gate and (by_seed or html_path):
        flag = "--by-seed" if by_seed else "--html"
        raise ConfigError(f"{flag} applies to a comparison, not to --gate (the gate prints its verdict)")
    if raters is not None and not (gate and calibrated):
        raise ConfigError(
            "--raters applies only with --gate --calibrated (human ratings calibrate that gate)"
        )

    for run_dir in run_dirs:
        # A sequential gate's run holds a random subset of its baseline's units: say so.
        if (note := sequential_note(run_dir)) is not None:
            click.echo(f"note: {note}", err=True)
            # And the units it left out as failed, as the gate said it, in the run's words.
            with use_strings(_runs_strings((run_dir,))):
                if (failed := sequential_failed_note(run_dir)) is not None:
                    click.echo(f"note: {run_dir}: {failed}", err=True)
    if gate:
        if confidence is not None:
            raise ConfigError("--confidence applies to a comparison; the gate's levels come from --alpha")
        _gate(
            run_dirs,
            force,
            json_path,
            margin,
            resamples,
            ALPHA if alpha is None else alpha,
            seed,
            calibrated,
            raters,
        )
        return
    if margin != 0.0:
        raise ConfigError("--margin applies only with --gate")
    if alpha is not None:
        raise ConfigError("--alpha applies only with --gate")
    if calibrated:
        raise ConfigError("--calibrated applies only with --gate")
    result = compare_runs(
        run_dirs, force=force, by_seed=by_seed, resamples=resamples, confidence=confidence, seed=seed
    )
    for problem in result.forced_differences:
        click.echo(f"warning: {problem}", err=True)
    if json_path == "-":
        _write_json(msgspec.to_builtins(result), "-")
    else:
        # In the words of the runs' locale pack when they share one (English otherwise).
        with use_strings(_runs_strings(run_dirs)):
            click.echo(text_tables(compare_tables(result).all()), nl=False)
            flagged = [e for e in result.comparisons if e.overall.excludes_zero]
            pairs_line = tr(
                "cli.pairs_differ",
                flagged=len(flagged),
                pairs=len(result.comparisons),
                level=percent_level(result.bootstrap.confidence),
            )
            click.echo(f"\n{pairs_line}")
        if json_path:
            _write_json(msgspec.to_builtins(result), json_path)
            click.echo(f"JSON: {json_path}", err=True)
    if html_path:
        with use_strings(_runs_strings(run_dirs)):  # the page in the runs' pack's words, as the tables
            page = render_compare_html(result, comparison_plots(result))
        atomic_write(Path(html_path), page.encode(), what="the comparison page")
        click.echo(f"HTML: {html_path}", err=True)


def _runs_strings(run_dirs: tuple[str, ...]) -> Strings:
    """The words of the locale pack every one of `run_dirs` was made with; English when
    they differ or any was made without one (a table must not mix two languages)."""
    packs = [read_manifest(Path(d)).locale for d in run_dirs]
    first = packs[0] if packs else None
    if not isinstance(first, LocaleInfo) or any(
        not isinstance(x, LocaleInfo) or x.tag != first.tag for x in packs
    ):
        return ENGLISH
    return ui_strings(first.tag, first.path)


def _gate(
    run_dirs: tuple[str, ...],
    force: bool,
    json_path: str | None,
    margin: float,
    resamples: int | None,
    alpha: float,
    seed: int | None,
    calibrated: bool = False,
    raters: RaterRule | None = None,
) -> None:
    """`vera compare BASELINE CANDIDATE --gate`: the verdict, the numbers behind it, and
    its exit code: 4 (`Exit.WORSE`) WORSE, 5 (`Exit.UNDECIDED`) UNDECIDED, 0 NOT WORSE."""
    if len(run_dirs) != 2:
        raise ConfigError(f"--gate takes exactly two runs, BASELINE_RUN CANDIDATE_RUN (got {len(run_dirs)})")
    result = gate(
        run_dirs[0],
        run_dirs[1],
        margin=margin,
        force=force,
        resamples=resamples,
        alpha=alpha,
        seed=seed,
        calibrated=calibrated,
        raters=raters,
    )
    for problem in result.forced_differences:
        click.echo(f"warning: {problem}", err=True)
    # A run cut short is named before the numbers, whatever the verdict: in a CI log the
    # reviewer sees that the gate stood on part of the work (and could not pass).
    for side in result.unfinished:
        run = result.baseline if side == "baseline" else result.candidate
        click.echo(
            f"warning: the {side} run {run.path} is not finished (status: {state_label(run.state)} — "
            f"{run.summary}): the gate compares only its finished work and cannot pass",
            err=True,
        )
    # In the words of the runs' locale pack when they share one; the JSON keeps English values.
    with use_strings(_runs_strings(run_dirs)):
        if json_path == "-":
            _write_json(msgspec.to_builtins(result), "-")
        else:
            click.echo(gate_text(result), nl=False)
            if json_path:
                _write_json(msgspec.to_builtins(result), json_path)
                click.echo(f"JSON: {json_path}", err=True)
        # One whole line in a pipe or a CI log, as `vera run`'s status line: a build step
        # greps the last line (`gate: ...`) for the verdict. Wrapped only on a terminal.
        to_stderr = json_path == "-"
        terminal = (sys.stderr if to_stderr else sys.stdout).isatty()
        click.echo(fit(gate_verdict(result), terminal=terminal), err=to_stderr)
    if result.exit_code:
        sys.exit(result.exit_code)


# ---------------------------------------------------------------------------------------
# agreement
# ---------------------------------------------------------------------------------------


@click.command()
@click.argument("ratings_file", type=click.Path(dir_okay=False, exists=True), required=False)
@click.option(
    "--users",
    "users_run",
    type=click.Path(file_okay=False, exists=True),
    help="A run directory: agreement between its simulated-user checks and the clinicians' "
    "realism ratings in its human_ratings.jsonl (vera review); no RATINGS_FILE.",
)
@click.option(
    "--unrealistic-at",
    type=click.IntRange(1, 4),
    default=2,
    show_default=True,
    help="With --users: a conversation whose mean realism rating (1-5) is at most this is "
    "unrealistic to the clinicians.",
)
@click.option(
    "--against",
    type=click.Path(file_okay=False, exists=True),
    help="A run directory: agreement between the humans' consensus and its judges.",
)
@click.option(
    "--nr",
    type=click.Choice(["category", "exclude"]),
    default="category",
    show_default=True,
    help="Not Relevant as a rating of its own, or as a missing rating.",
)
@click.option(
    "--ties",
    type=click.Choice(["exclude", "severest"]),
    help="With --against and no --raters: set the judges against the majority vote of the raters "
    "(the consensus before issue 28), a tie left out (exclude) or settled to the most severe "
    "rating (severest). Never used for the raters' agreement among themselves.",
)
@click.option(
    "--raters",
    type=click.Choice(RATER_RULES),
    help="With --against: the rule combining raters who disagree into the consensus, as `vera score` "
    "and the calibrated gate combine them: severest (the default unless --ties is given), majority "
    "(ties: severest) or mean.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option(
    "--confusion-csv",
    type=click.Path(dir_okay=False),
    help="With --against: also write the confusion matrices (judge × clinicians) as CSV.",
)
@click.option(
    "--allow-other-transcripts",
    is_flag=True,
    help="With --against: compare ratings made on a different transcript "
    "than the run's (another run of the same config) instead of refusing them.",
)
@resamples_option(scope="with --against")
@confidence_option(scope="with --against")
@seed_option("Seed of the bootstrap (--against).")
@locale_option(
    "A locale pack (a tag such as zh-CN, or a pack folder) to print the tables in its words. "
    "Default: the pack --against's run was made with; English without --against."
)
def agreement(
    ratings_file: str | None,
    users_run: str | None,
    unrealistic_at: int,
    against: str | None,
    nr: NRTreatment,
    ties: TieRule | None,
    raters: RaterRule | None,
    as_json: bool,
    confusion_csv: str | None,
    allow_other_transcripts: bool,
    resamples: int,
    confidence: float,
    seed: int,
    locale: str | None,
) -> None:
    """Agreement among human raters, per dimension and overall.

    RATINGS_FILE is the reference clinician file (clinician_ratings.csv), the long
    format `item_id,rater,dimension,rating`, or a run's human_ratings.jsonl (`vera
    review`; each rater's latest rating counts). A CSV row repeated exactly counts once;
    two rows of one rater for one item and dimension that disagree are refused, as
    `vera ratings import` refuses them. With --against RUN_DIR: agreement between
    the raters' per-conversation consensus (their ratings combined by --raters, severest
    by default as in `vera score`; with --ties, the majority vote) and the run's judges, with
    bootstrap intervals over conversations, and the confusion matrix of judge rating ×
    consensus rating per dimension and pooled (in the JSON as `confusion`; as CSV with
    --confusion-csv). Conversations imported from transcripts are matched to items by
    the 6-hex prefix of the transcript's file name.

    With --users RUN_DIR (and no RATINGS_FILE): agreement between the run's
    simulated-user checks (the model check, and the offline heuristic) and the
    clinicians' realism ratings of its simulated users (docs/realism.md).
    """
    if users_run is not None:
        if ratings_file is not None or against is not None:
            raise ConfigError(
                "--users RUN_DIR reads the run's own human ratings: give no RATINGS_FILE or --against"
            )
        _user_check_agreement(users_run, unrealistic_at, as_json)
        return
    if ratings_file is None:
        raise ConfigError("vera agreement needs RATINGS_FILE, or --users RUN_DIR")
    # A pack named here wins; else the run's, as its card (read before any work is done,
    # so a wrong --locale is one line and nothing else).
    strings = locale_strings(locale) if locale else _runs_strings((against,)) if against else ENGLISH

    if raters is not None and against is None:
        raise ConfigError(
            "--raters needs --against RUN_DIR (it forms the consensus the judges are set against)"
        )
    if confusion_csv is not None and against is None:
        raise ConfigError("--confusion-csv needs --against RUN_DIR (judges to set against the raters)")
    check_output(
        confusion_csv,
        "--confusion-csv",
        runs=[against] if against else [],
        inputs=[(ratings_file, "ratings file")],
    )
    raters = _consensus_rule(against, ties, raters)

    def collapsed(lines: list[int]) -> None:
        # A row copied twice counts once, as `vera ratings import` counts it, and says so.
        with use_strings(strings):
            shown = ", ".join(map(str, lines[:5])) + (", ..." if len(lines) > 5 else "")
            click.echo(tr("cli.ratings_duplicates", n=len(lines), lines=shown), err=True)

    result = agreement_report(
        ratings_file,
        against=against,
        nr=nr,
        ties=ties or "exclude",
        raters=raters,
        resamples=resamples,
        confidence=confidence,
        seed=seed,
        allow_other_transcripts=allow_other_transcripts,
        on_collapsed=collapsed,
    )
    if confusion_csv is not None and isinstance(result, JudgeConsensusReport):
        atomic_write(
            Path(confusion_csv), confusion_csv_text(result.judges.confusion).encode(), what="the CSV"
        )
    if as_json:
        _write_json(result.to_builtins(), "-")
    elif isinstance(result, JudgeConsensusReport):
        with use_strings(strings):
            click.echo(agreement_against_text(result), nl=False)
    else:
        with use_strings(strings):
            click.echo(agreement_humans_text(result), nl=False)
    if confusion_csv is not None:
        click.echo(f"confusion matrices: {confusion_csv}", err=True)


def _consensus_rule(against: str | None, ties: TieRule | None, raters: RaterRule | None) -> RaterRule | None:
    """The rule forming the consensus of `vera agreement --against` (None: the majority
    vote, ties as `--ties` says). By default the one `vera score` and the calibrated gate
    use (issue 28), so the three set the judges against the same human labels; a
    `--ties` without `--raters` keeps the majority it always meant, with a note."""
    if against is None:
        return raters
    if raters is not None:
        if ties is not None:
            click.echo(f"note: --ties is not used: --raters {raters} forms the consensus", err=True)
        return raters
    if ties is not None:
        click.echo(
            f"note: --ties {ties}: the consensus is the raters' majority vote, as before issue 28; "
            f"without --ties it is --raters {DEFAULT_RATER_RULE}, as `vera score` and the calibrated "
            "gate form it",
            err=True,
        )
        return None
    return DEFAULT_RATER_RULE


def _user_check_agreement(run_dir: str, unrealistic_at: int, as_json: bool) -> None:
    report = user_check_agreement(run_dir, unrealistic_at=unrealistic_at)
    if as_json:
        _write_json(report.to_builtins(), "-")
    else:
        click.echo(text_tables([user_check_agreement_table(report)]), nl=False)
