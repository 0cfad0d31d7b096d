"""`vera view`, `vera review` and `vera export`: reading a run's conversations in a browser,
rating a sample of them, or taking them as a table."""

from __future__ import annotations

from pathlib import Path

import click

from vera.app import unfinished_line
from vera.cli._door import seed_option, serve_options
from vera.errors import ConfigError
from vera.files import watching
from vera.report import export_calls, export_humans, export_reference, export_run, num
from vera.store import CALLS_EXPORT, check_output, manifest_notes
from vera.viewer.app import serve
from vera.viewer.bundle import write_bundle
from vera.viewer.review import serve_review
from vera.viewer.runs import find_runs, is_run_dir


@click.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@serve_options("viewer", "whoever has the address printed can then read every transcript")
@click.option(
    "--bundle",
    "bundle_out",
    type=click.Path(file_okay=False),
    metavar="OUT",
    help="Instead of serving: write the viewer of one run to the folder OUT, as static files "
    "that open from disk in a browser with no server (a new folder, or a previous bundle to replace).",
)
@click.option(
    "--no-call-bodies",
    is_flag=True,
    help="With --bundle: leave out what each model call was sent and answered (for sharing).",
)
def view(
    run_dirs: tuple[str, ...],
    port: int,
    host: str,
    allow_remote: bool,
    allowed_hosts: tuple[str, ...],
    open_browser: bool,
    bundle_out: str | None,
    no_call_bodies: bool,
) -> None:
    """Browse the conversations of one or more runs in a local, read-only web app.

    Lists every conversation with its ratings; filter by run, chatbot, persona, risk
    level, seed, user-agent, judge, dimension and rating, and status; open one to read
    the transcript beside the judge's walk of the rubric. Ctrl-C stops it.

    Given one folder that is not a run, lists every run under it (status, chatbots,
    scores, date, target) and opens each in the same server. With --bundle OUT, writes a
    copy of one run's viewer that opens from disk instead."""
    if no_call_bodies and bundle_out is None:
        raise ConfigError("--no-call-bodies applies to --bundle")
    for note in (n for d in run_dirs for n in manifest_notes(d)):
        click.echo(note, err=True)
    # A folder of runs: each run under it that did not end says so, as a run given would.
    if len(run_dirs) == 1 and not is_run_dir(Path(run_dirs[0])):
        shown: list[str | Path] = list(find_runs(Path(run_dirs[0]))[0])
    else:
        shown = list(run_dirs)
    for line in filter(None, map(unfinished_line, shown)):
        click.echo(line, err=True)
    if bundle_out is not None:
        if len(run_dirs) != 1:
            raise ConfigError("--bundle writes one run: give one run directory")
        done = write_bundle(run_dirs[0], bundle_out, call_bodies=not no_call_bodies)
        bodies = "with" if done.call_bodies else "without"
        click.echo(
            f"wrote {done.path}: {num(done.conversations)} conversation(s) {bodies} call bodies, "
            f"{num(done.files)} files, {done.bytes / 1e6:.1f} MB in {done.seconds:.1f} s; "
            f"open {done.path / 'index.html'} in a browser",
            err=True,
        )
        return

    # A refusal (a network --host without --allow-remote, a bad --allowed-host) is a
    # UserError: one line and exit code 1, as in `vera review`.
    serve(
        list(run_dirs),
        host=host,
        port=port,
        allow_remote=allow_remote,
        allowed_hosts=allowed_hosts,
        open_browser=open_browser,
    )


@click.command()
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option(
    "--rater", required=True, help="Your name or initials, stored with each rating; the same name resumes."
)
@click.option(
    "--size",
    type=click.IntRange(min=1),
    help="How many conversations to sample (split over chatbots and persona groups in proportion).",
)
@click.option(
    "--width",
    type=click.FloatRange(0, 100, min_open=True),
    help="Propose the size, per chatbot, for a 95% interval this many percentage points wide on a "
    "rating's share (e.g. % Best Practice) from the human ratings alone (default 20 when --size is "
    "not given). For the calibrated score's interval, `vera ratings plan` proposes a --size.",
)
@seed_option("Seed of the sample and of your order; raters who share a sample share a seed.", default=1)
@serve_options("review", "transcripts and ratings cross the network")
def review(
    run_dir: str,
    rater: str,
    size: int | None,
    width: float | None,
    seed: int,
    port: int,
    host: str,
    allow_remote: bool,
    allowed_hosts: tuple[str, ...],
    open_browser: bool,
) -> None:
    """Rate a random sample of a run's judged conversations in the browser, blind to the
    judge's ratings (shown after you save, if you ask).

    The sample is stratified by chatbot and persona group; each rater meets it in their
    own order. Every saved rating is appended to human_ratings.jsonl in RUN_DIR (nothing
    else there is written); start again with the same --rater to go on where you stopped.
    Ctrl-C stops it."""
    if size is not None and width is not None:
        raise ConfigError(
            "--size and --width: give one (the size, or the interval width it is proposed from)"
        )
    serve_review(
        run_dir,
        rater=rater,
        size=size,
        width=width,
        seed=seed,
        host=host,
        port=port,
        allow_remote=allow_remote,
        allowed_hosts=allowed_hosts,
        open_browser=open_browser,
    )


@click.command()
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "parquet", "reference"]),
    default="csv",
    show_default=True,
    help="Table format; reference = VERA-MH's results.csv layout, for its scoring and summary scripts.",
)
@click.option(
    "--wide",
    is_flag=True,
    help="One row per conversation: a numeric score per dimension and overall beside the ratings.",
)
@click.option(
    "--calls",
    is_flag=True,
    help="Instead of the ratings: every model call as JSON lines, with its full request "
    "(messages, parameters, schema) and response (default file: calls_full.jsonl in RUN_DIR).",
)
@click.option(
    "--humans",
    is_flag=True,
    help="Instead of the judge's ratings: the human ratings (vera review, vera ratings import), "
    "one row per rater × conversation × dimension (each rater's latest), the judge's rating "
    "beside each; csv or parquet (default file: human_ratings.csv or .parquet in RUN_DIR).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(),
    help="File to write (default: results.csv or results.parquet in RUN_DIR; - = stdout for csv). "
    "With --format reference: a folder holding one <chatbot>/results.csv per chatbot (default "
    "RUN_DIR/reference), or with one chatbot a .csv file or -; with --calls: default "
    "RUN_DIR/calls_full.jsonl, - = stdout; with --humans: default RUN_DIR/human_ratings.csv "
    "(or .parquet).",
)
@click.option(
    "--chatbot",
    help="With --format reference: export this chatbot's results only.",
)
@click.option(
    "--skip-corrupt",
    is_flag=True,
    help="With --calls: go on when the run's call bodies' file is damaged; the calls whose "
    "request and response it lost are written without them, each one's no_body saying where. "
    "Without it such a run is refused.",
)
def export(
    run_dir: str,
    fmt: str,
    wide: bool,
    calls: bool,
    humans: bool,
    output: str | None,
    chatbot: str | None,
    skip_corrupt: bool,
) -> None:
    """Write one row per conversation × judge × instance × dimension: persona, risk,
    chatbot, user-agent, judge, seed, rating, the deciding question and the reasoning.

    Failed conversations and judgements are rows too, with an empty rating and the
    error, so nothing is silently left out. With --format reference: one row per
    complete judgement in VERA-MH's results.csv layout, one file per chatbot as the
    reference scores them (docs/targets.md). With --humans: the human ratings of the
    run instead, beside the judge's (docs/viewer.md)."""
    check_output(output, "-o", runs=[run_dir])
    if skip_corrupt and not calls:
        raise ConfigError("--skip-corrupt applies to --calls (a damaged call bodies file)")
    if line := unfinished_line(run_dir):
        click.echo(line, err=True)

    if humans:
        if calls or wide or fmt == "reference" or chatbot:
            raise ConfigError(
                "--humans writes a table of its own; give it without --calls, --wide, --chatbot "
                "or --format reference"
            )
        target = output or str(Path(run_dir) / f"human_ratings.{fmt}")
        if target != "-" and Path(target).is_dir():
            raise ConfigError(f"{target}: is a directory; give a file")
        done = export_humans(run_dir, fmt=fmt, output=target)
        if target != "-":
            click.echo(done.describe(target), err=True)
        return
    if calls:
        if wide or fmt != "csv" or chatbot:
            raise ConfigError(
                "--calls writes JSON lines of its own; give it without --format, --wide or --chatbot"
            )
        target = output or str(Path(run_dir) / CALLS_EXPORT)
        with watching(bodies=skip_corrupt):
            n, bodiless = export_calls(run_dir, target)
        if target != "-" and not bodiless:
            click.echo(f"wrote {num(n)} calls, each with its request and response, to {target}", err=True)
        elif target != "-":
            # Not "each with its request and response": some came from a shard run that
            # kept none, and each of those says so in its no_body field.
            click.echo(
                f"wrote {num(n)} calls to {target}; {num(bodiless)} of them without their request "
                "and response (each one's no_body says why)",
                err=True,
            )
        return
    if fmt == "reference":
        if wide:
            raise ConfigError(
                "--wide and --format reference: the reference layout has its own shape; give one"
            )
        for f in export_reference(run_dir, output, chatbot=chatbot):
            if f.path != "-":
                click.echo(
                    f"wrote {num(f.rows)} rows (one per complete judgement) of {f.chatbot} to {f.path}",
                    err=True,
                )
        return
    if chatbot is not None:
        raise ConfigError("--chatbot applies to --format reference")
    if output is not None and output != "-" and Path(output).is_dir():
        raise ConfigError(f"{output}: is a directory; give a file")
    target = output or str(Path(run_dir) / f"results{'_wide' if wide else ''}.{fmt}")
    summary = export_run(run_dir, fmt=fmt, output=target, wide=wide)
    if target != "-":
        click.echo(summary.describe(target, "scored conversations" if wide else "ratings"), err=True)
