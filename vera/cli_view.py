"""`vera view` and `vera export`: reading a run's conversations, in a browser or as a table."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "parquet"]),
    default="csv",
    show_default=True,
    help="Table format.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="File to write (default: results.csv or results.parquet in RUN_DIR; - = stdout for csv).",
)
def export(run_dir: str, fmt: str, output: str | None) -> None:
    """Write one row per conversation × judge × instance × dimension: persona, risk,
    chatbot, user-agent, judge, seed, rating, the deciding question and the reasoning.

    Failed conversations and judgements are rows too, with an empty rating and the
    error, so nothing is silently left out."""
    from vera.export import export_run

    target = output or str(Path(run_dir) / f"results.{fmt}")
    summary = export_run(run_dir, fmt=fmt, output=target)
    if target != "-":
        click.echo(summary.describe(target), err=True)
