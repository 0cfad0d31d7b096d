"""`vera ratings`: the human ratings of a run (import ratings made elsewhere; plan how
many conversations clinicians should rate)."""

from __future__ import annotations

from pathlib import Path

import click

from vera.cli._door import Number, resamples_option
from vera.errors import UserError
from vera.inputs import run_strings, tr, use_strings
from vera.ranges import SEED
from vera.report import (
    PLAN_RESAMPLES,
    ChatbotPlan,
    ImportSummary,
    fixed,
    import_human_ratings,
    plan_ratings,
    read_run,
)
from vera.store import (
    HUMAN_RATINGS,
    check_transcripts,
    open_run,
    read_human_ratings_numbered,
    read_manifest,
    unchecked_note,
)


@click.group()
def ratings() -> None:
    """Human ratings of a run: they calibrate its scores (see docs/statistics.md).
    `vera export RUN_DIR --humans` writes them as a table beside the judge's."""


def _lines(lines: list[int]) -> str:
    shown = ", ".join(map(str, lines[:5]))
    return shown + (", ..." if len(lines) > 5 else "")


@ratings.command("import")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--skip-unmatched",
    is_flag=True,
    help="Import the rows whose conversation is in the run and leave out the others.",
)
@click.option(
    "--allow-other-transcripts",
    is_flag=True,
    help="Import ratings made on a different transcript than this run's (another run of the same "
    "config): you know they judge conversations nobody read in this run. They are marked so.",
)
def import_(run_dir: str, file: str, skip_unmatched: bool, allow_other_transcripts: bool) -> None:
    """Add the ratings in FILE (the reference's clinician_ratings.csv, the long format
    item_id,rater,dimension,rating, or the human_ratings.jsonl of a copy of this run that
    another rater reviewed) to RUN_DIR/human_ratings.jsonl. Items are matched to the
    run's conversations as `vera agreement` matches them; a bad row is an error naming
    its line, and then nothing is added. A row repeated exactly counts once; two rows of
    one rater for one conversation and dimension that disagree are refused, as `vera
    agreement` refuses them; so is a row whose user_profile column names another persona
    than the run's conversation has. A rating that carries the fingerprint of the
    transcript it was made on (every `vera review` rating; a CSV's optional
    transcript_sha256 column) must have been made on this run's transcript. A rating the
    run holds already is left out. `vera score RUN_DIR` then calibrates."""
    done = import_human_ratings(
        run_dir, file, skip_unmatched=skip_unmatched, allow_other_transcripts=allow_other_transcripts
    )
    # In the words of the run's locale pack, as its card and `vera review` (English for a
    # run without one); the ratings file keeps the records' values.
    with use_strings(run_strings([read_manifest(Path(run_dir))])):
        _report_import(done, run_dir, file)


def _report_import(done: ImportSummary, run_dir: str, file: str) -> None:
    click.echo(
        tr(
            "cli.ratings_imported",
            ratings=done.ratings,
            conversations=done.conversations,
            raters=done.raters,
            path=Path(run_dir) / "human_ratings.jsonl",
        )
    )
    if done.already:
        click.echo(tr("cli.ratings_already", n=done.already), err=True)
    if done.duplicates:
        click.echo(
            tr("cli.ratings_duplicates", n=len(done.duplicates), lines=_lines(done.duplicates)), err=True
        )
    if done.unchecked:
        click.echo(unchecked_note(file, done.unchecked), err=True)
    if done.other_transcripts:
        click.echo(tr("cli.ratings_other_imported", n=done.other_transcripts), err=True)
    if done.skipped:
        click.echo(tr("cli.ratings_skipped", n=len(done.skipped), lines=_lines(done.skipped)), err=True)


@ratings.command("plan")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option(
    "--width",
    type=click.FloatRange(0, 100, min_open=True),
    required=True,
    help="The calibrated overall score's interval width wanted, in score points (e.g. 10).",
)
# The shared --resamples (range, type, help), with its own default, 500, not the other
# commands' 2000: the plan runs a bootstrap per number of ratings it tries (up to 18)
# and one for the floor, per chatbot, and the bootstrap's time grows with the resamples
# (0.21 s at 500 against 0.41 s at 2000 for the 26 conversations of an offline run; a
# large run tries more numbers); and a plan made before keeps its numbers. Its range
# was 50 to 100,000 and is now the shared 1 to 100,000, the range the docs give.
@resamples_option(
    default=PLAN_RESAMPLES,
    scope="of each width tried: one bootstrap per number of ratings, so fewer by default than elsewhere",
)
@click.option(
    "--seed",
    type=Number(SEED, "seed"),
    default=0,
    show_default=True,
    help="Seed of the bootstrap resamples: the same seed gives the same plan.",
)
def plan(run_dir: str, width: float, resamples: int, seed: int) -> None:
    """Propose how many of each chatbot's conversations humans should rate so that the
    calibrated overall score's 95 % interval is about WIDTH points wide. With 20 or more
    ratings in the run, from the interval they give now; before that, conservatively,
    as if the judge were no help. The sampling of personas sets a floor no number of
    ratings removes; a width below it is reported as not reachable."""
    run = read_run(run_dir)
    if run.ratings.height == 0:
        raise UserError(f"{run_dir}: no complete judgements to plan from")
    # In the words of the run's locale pack, as `vera ratings import` (English without one).
    with use_strings(run_strings([read_manifest(Path(run_dir))])):
        numbered = read_human_ratings_numbered(Path(run_dir))
        check_transcripts(Path(run_dir) / HUMAN_RATINGS, numbered, open_run(run_dir))
        plans = plan_ratings(run.ratings, [h for _, h in numbered], width, resamples=resamples, seed=seed)
        click.echo(tr("cli.ratings_plan_intro", width=f"{width:g}"))
        for p in plans:
            _print_plan(p, width)


def _print_plan(p: ChatbotPlan, width: float) -> None:
    if p.n_needed is not None:
        need = tr(
            "cli.ratings_plan_need",
            n=p.n_needed,
            total=p.n_conversations,
            share=f"{p.n_needed / p.n_conversations:.0%}",
        )
    elif p.floor is not None and width <= p.floor:
        need = tr("cli.ratings_plan_floor_unreachable", floor=fixed(p.floor, 1))
    elif p.n_conversations in p.widths:
        need = tr(
            "cli.ratings_plan_all_unreachable",
            n=p.n_conversations,
            width=fixed(p.widths[p.n_conversations], 1),
        )
    else:  # too few conversations for an interval to have a width at all
        need = tr("cli.ratings_plan_too_few", n=p.n_conversations)
    more = (
        tr("cli.ratings_plan_more", n=max(0, p.n_needed - p.n_rated))
        if p.n_needed is not None and p.n_rated
        else ""
    )
    # The basis is recorded in English (vera.report's ChatbotPlan); shown in the pack's words.
    basis = tr(_BASIS[p.basis]) if p.basis in _BASIS else p.basis
    click.echo(
        tr("cli.ratings_plan_row", chatbot=p.chatbot, need=need, rated=p.n_rated, more=more, basis=basis)
    )
    if p.widths:
        shown = ", ".join(f"{n}: {fixed(w, 1)}" for n, w in p.widths.items())
        click.echo(tr("cli.ratings_plan_widths", shown=shown))
    if p.floor is not None:
        click.echo(tr("cli.ratings_plan_floor", floor=fixed(p.floor, 1)))


_BASIS = {
    "human ratings so far": "cli.ratings_plan_basis_humans",
    "judge's ratings as if uncorrected": "cli.ratings_plan_basis_judge",
}
