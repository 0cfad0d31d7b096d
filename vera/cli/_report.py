"""`vera report`: reports read out of a finished run, beside the card."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click

from vera.inputs import run_strings, tr, use_strings
from vera.report import (
    DEFAULT_EXEMPLARS,
    DEFAULT_LOW_SAMPLE,
    DEFAULT_TOP_QUESTIONS,
    MAX_EXEMPLARS,
    ImprovementsFormat,
    write_improvements,
)
from vera.store import check_output, read_manifest


@click.group()
def report() -> None:
    """Reports on a finished run, beside its card."""


@report.command("improvements")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "html", "json"]),
    default="html",
    show_default=True,
    help="Markdown, a self-contained HTML page, or JSON.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    help="File to write (default: improvements.<format> in RUN_DIR; - = stdout).",
)
@click.option(
    "--exemplars",
    type=click.IntRange(0, MAX_EXEMPLARS),
    default=DEFAULT_EXEMPLARS,
    show_default=True,
    help="Examples per question: the judge's reasoning and the chatbot turn it quotes.",
)
@click.option(
    "--top-questions",
    type=click.IntRange(1, 1000),
    default=DEFAULT_TOP_QUESTIONS,
    show_default=True,
    help="In the reference's summary: questions shown per band and dimension.",
)
@click.option(
    "--low-sample-threshold",
    type=click.IntRange(0, 1_000_000),
    default=DEFAULT_LOW_SAMPLE,
    show_default=True,
    help="Fewer judgements than this per chatbot: the report says its percentages are noisy.",
)
def improvements(
    run_dir: str, fmt: str, out: str | None, exemplars: int, top_questions: int, low_sample_threshold: int
) -> None:
    """What to fix first: per chatbot and dimension, the rubric questions whose answer
    made a rating High Potential for Harm or Suboptimal, harm first, then by how many
    conversations; the share of the conversations where the dimension was relevant;
    and examples linked to each conversation's page (docs/improvements.md)."""
    check_output(out, "--out", runs=[run_dir])
    # The page and the lines below in the words of the run's locale pack, as its card
    # (English for a run without one); the JSON keeps the records' values.
    with use_strings(run_strings([read_manifest(Path(run_dir))])):
        written = write_improvements(
            run_dir,
            fmt=cast(ImprovementsFormat, fmt),
            output=out,
            exemplars=exemplars,
            top_questions=top_questions,
            low_sample_threshold=low_sample_threshold,
        )
        if written.path is None:
            click.echo(written.text, nl=False)
        if written.pages_note:
            click.echo(tr("cli.note", note=written.pages_note), err=True)
        where = tr("cli.improvements_stdout") if written.path is None else str(written.path)
        pages = tr("cli.improvements_pages", n=written.pages_added) if written.pages_added else ""
        click.echo(tr("cli.improvements", n=written.findings, where=where, pages=pages), err=True)
