"""`vera ratings`: the human ratings of a run (import ratings made elsewhere; plan how
many conversations clinicians should rate)."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def ratings() -> None:
    """Human ratings of a run: they calibrate its scores (see docs/statistics.md)."""


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
def import_(run_dir: str, file: str, skip_unmatched: bool) -> None:
    """Add the ratings in FILE (the reference's clinician_ratings.csv, or the long format
    item_id,rater,dimension,rating) to RUN_DIR/human_ratings.jsonl. Items are matched
    to the run's conversations as `vera agreement` matches them; a bad row is an error
    naming its line, and then nothing is added. `vera score RUN_DIR` then calibrates."""
    from vera.report import import_human_ratings

    done = import_human_ratings(run_dir, file, skip_unmatched=skip_unmatched)
    click.echo(
        f"imported {done.ratings} rating(s) of {done.conversations} conversation(s) by "
        f"{done.raters} rater(s) → {Path(run_dir) / 'human_ratings.jsonl'}"
    )
    if done.repeated:
        click.echo(
            f"note: {len(done.repeated)} rating(s) given again later in the file; the later one "
            f"counts, both are kept (earlier at line(s) {_lines(done.repeated)})",
            err=True,
        )
    if done.skipped:
        click.echo(
            f"note: {len(done.skipped)} row(s) name no conversation of the run and were left out "
            f"(line(s) {_lines(done.skipped)})",
            err=True,
        )
