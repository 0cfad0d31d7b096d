"""The `vera` command line.

Every command reports a user's mistake as one line (``error: <where>: <what>``) with exit
code 1, never a traceback; work already finished is on disk before anything is printed.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from vera import __version__
from vera.errors import ConfigError, UserError

F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int = 1) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


class VeraGroup(click.Group):
    """Turns vera's user errors into one clear line and exit code 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except UserError as exc:
            _fail(str(exc))
        except KeyboardInterrupt:
            _fail("interrupted", 130)


def _run_async(coro: Any) -> Any:
    try:
        import uvloop
    except ImportError:  # not on Windows
        return asyncio.run(coro)
    return uvloop.run(coro)


@click.group(cls=VeraGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vera")
def main() -> None:
    """vera: clinically grounded VERA-MH safety evaluations of mental-health chatbots.

    `vera run` simulates conversations between simulated users (personas) and the
    chatbots under test, judges each with the rubric, and writes a score card.
    """


# ---------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------


def _seeds(value: str | None, seed: int | None) -> list[int] | None:
    if seed is not None:
        return [seed]
    if not value:
        return None
    try:
        if "," in value:
            return [int(x) for x in value.split(",") if x.strip()]
        n = int(value)
    except ValueError:
        raise ConfigError(f"--seeds {value!r}: give a count (3) or a list (1,5,9)") from None
    if n < 1:
        raise ConfigError("--seeds must be at least 1")
    return list(range(1, n + 1))


# Configs such as configs/vera-mh-v1.1.toml read the reference tool's own data files
# from the user's checkout ("reference:FILE" paths); this option (or $VERA_MH_DATA) says where.
REFERENCE_DATA_OPTION = click.option(
    "--reference-data",
    type=click.Path(file_okay=False, exists=True),
    help="The reference tool's data/ folder, for configs that read its files (default: $VERA_MH_DATA).",
)


def _sweep_options(f: F) -> F:
    """The options `run` and `simulate` share: what to sweep and how."""
    options = [
        click.option(
            "--config",
            "config_path",
            type=click.Path(dir_okay=False),
            help="Run config (TOML). Default: built-in offline evaluation.",
        ),
        click.option(
            "--providers",
            help="Chatbots to evaluate: comma-separated profile names or provider/model refs, or 'all'.",
        ),
        click.option(
            "--seed", type=int, help="One seed for every random choice (overrides the config's seeds)."
        ),
        click.option(
            "--seeds", "seeds_opt", help="Seeds as replicates: a count (3 → 1,2,3) or a list (1,5,9)."
        ),
        click.option(
            "--out",
            type=click.Path(file_okay=False),
            help="Run directory (default: a new one under runs/). Rerunning on it resumes.",
        ),
        click.option("--max-concurrency", type=int, help="Conversations in flight at once."),
        click.option(
            "--personas", type=click.Path(dir_okay=False), help="Persona file (TSV) instead of the config's."
        ),
        click.option("--limit-personas", type=int, help="Use only the first N personas (quick trials)."),
        click.option("--user-agent", "user_agents", multiple=True, help="User-agent model ref (repeatable)."),
        click.option("--shard", help="Run only shard K of N (K/N) of the jobs, deterministically."),
        click.option(
            "--max-cost",
            type=float,
            help="Stop launching work before the accounted cost would pass this (USD).",
        ),
        click.option(
            "--no-cache",
            is_flag=True,
            help="Do not replay cached responses (they are still not paid twice within a run).",
        ),
        click.option(
            "--cache-dir", type=click.Path(file_okay=False), help="A response cache shared between runs."
        ),
        REFERENCE_DATA_OPTION,
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _run_options(
    *,
    config_path: str | None,
    providers: str | None,
    seed: int | None,
    seeds_opt: str | None,
    out: str | None,
    max_concurrency: int | None,
    personas: str | None,
    limit_personas: int | None,
    user_agents: tuple[str, ...],
    shard: str | None,
    max_cost: float | None,
    no_cache: bool,
    cache_dir: str | None,
    reference_data: str | None,
    **extra: Any,
) -> Any:
    from vera.runner import RunOptions

    return RunOptions(
        config_path=config_path,
        providers=providers,
        seeds=_seeds(seeds_opt, seed),
        out=out,
        max_concurrency=max_concurrency,
        personas=personas,
        limit_personas=limit_personas,
        user_agents=list(user_agents),
        shard=shard,
        cache=False if no_cache else None,
        cache_dir=cache_dir,
        max_cost=max_cost,
        reference_data=reference_data,
        **extra,
    )


@main.command()
@_sweep_options
@click.option(
    "--resume",
    type=click.Path(file_okay=False, exists=True),
    help="Finish an interrupted run in this directory.",
)
@click.option(
    "--judge", "judges", multiple=True, help="Judge model ref (repeatable) instead of the config's."
)
@click.option("--quiet", is_flag=True, help="Do not print the card at the end.")
def run(resume: str | None, judges: tuple[str, ...], quiet: bool, **sweep: Any) -> None:
    """Simulate, judge and score: a complete evaluation into one run directory.

    Rerunning the same command with the same --out (or --resume DIR) skips every job
    already done. Ctrl-C stops gracefully; a second Ctrl-C exits at once."""
    from vera.runner import execute_run

    if resume:
        sweep["out"] = resume
    opts = _run_options(**sweep, resume=resume is not None, judges=list(judges), judge=True)
    outcome = _run_async(execute_run(opts))
    _print_outcome(outcome, quiet=quiet)
    if outcome.result.stopped and outcome.result.stopped.startswith("interrupted"):
        sys.exit(130)


@main.command()
@_sweep_options
def simulate(**sweep: Any) -> None:
    """Only simulate conversations (no judging); judge later with `vera judge RUN_DIR`."""
    from vera.runner import execute_run

    outcome = _run_async(execute_run(_run_options(**sweep, judge=False)))
    click.echo(
        f"{outcome.result.conversations} conversations simulated "
        f"({outcome.result.conversations_failed} failed) → {outcome.run_dir}"
    )


@main.command()
@click.argument("run_dir", required=False, type=click.Path(file_okay=False, exists=True))
@click.option(
    "--transcripts",
    type=click.Path(exists=True),
    help="Import these transcripts (.txt / .jsonl file or folder) into a new run and judge them.",
)
@click.option("--out", type=click.Path(file_okay=False), help="Run directory for imported transcripts.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="Run config (rubric, judge prompts, providers) for imports.",
)
@click.option(
    "--personas",
    type=click.Path(dir_okay=False),
    help="Persona file giving imported conversations their risk level by name.",
)
@click.option("--judge", "judges", multiple=True, help="Judge model ref (repeatable) instead of the run's.")
@REFERENCE_DATA_OPTION
@click.option("--instances", type=int, help="Judge instances per judge.")
@click.option("--max-concurrency", type=int)
@click.option("--max-cost", type=float, help="Budget in USD.")
@click.option("--no-cache", is_flag=True)
@click.option("--quiet", is_flag=True)
def judge(
    run_dir: str | None,
    transcripts: str | None,
    out: str | None,
    config_path: str | None,
    personas: str | None,
    judges: tuple[str, ...],
    reference_data: str | None,
    instances: int | None,
    max_concurrency: int | None,
    max_cost: float | None,
    no_cache: bool,
    quiet: bool,
) -> None:
    """Judge conversations that are not judged yet, then score.

    Either RUN_DIR (e.g. after `vera simulate`, or with other judges), or
    --transcripts PATH: conversations vera did not produce, in VERA-MH's text format
    (`user:` / `chatbot:` or `agent:` blocks) or as JSON lines (see docs/transcripts.md)."""
    from vera.runner import JudgeOptions, judge_run

    if bool(run_dir) == bool(transcripts):
        raise ConfigError("give either RUN_DIR or --transcripts PATH")
    opts = JudgeOptions(
        run_dir=run_dir,
        transcripts=transcripts,
        out=out,
        config_path=config_path,
        judges=list(judges),
        instances=instances,
        personas=personas,
        max_concurrency=max_concurrency,
        cache=False if no_cache else None,
        max_cost=max_cost,
        reference_data=reference_data,
    )
    outcome = _run_async(judge_run(opts))
    _print_outcome(outcome, quiet=quiet)


@main.command()
@click.argument("out", type=click.Path(file_okay=False))
@click.argument("shards", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
def merge(out: str, shards: tuple[str, ...]) -> None:
    """Combine shard run directories (`vera run --shard K/N`) into one run and score it.

    The shards must belong to the same sweep (same inputs, models and settings)."""
    from vera.merge import merge_runs

    notes = merge_runs(Path(out), [Path(s) for s in shards])
    for line in notes:
        click.echo(line, err=True)
    click.echo(f"merged {len(shards)} run(s) → {out}")


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--resamples", type=int, help="Bootstrap resamples (default: the run's config).")
@click.option("--confidence", type=float, help="Interval level, e.g. 0.95.")
@click.option("--bootstrap-seed", type=int, help="Seed of the bootstrap.")
def score(run_dir: str, resamples: int | None, confidence: float | None, bootstrap_seed: int | None) -> None:
    """Recompute ratings.parquet, answers.parquet and the card (card.json, card.md,
    card.html, plots/) from a run's records, e.g. with other interval settings."""
    from vera.report import score_run

    score_run(run_dir, resamples=resamples, confidence=confidence, seed=bootstrap_seed)
    click.echo(f"scored → {Path(run_dir) / 'card.json'}")


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--html", "html_only", is_flag=True, help="Only write card.html and print its path.")
def card(run_dir: str, html_only: bool) -> None:
    """Print a run's score card; re-render card.md, card.html and plots/ from card.json."""
    from vera.card_text import render_markdown
    from vera.report import read_card, render_card_files

    c = read_card(run_dir)
    html = render_card_files(c, run_dir)
    if html_only:
        click.echo(str(html))
        return
    click.echo(render_markdown(c))
    click.echo(f"HTML card: {html}", err=True)


# ---------------------------------------------------------------------------------------
# validate, rubric, personas
# ---------------------------------------------------------------------------------------


@main.group()
def validate() -> None:
    """Check data files; every problem is listed with its line; exit 1 on errors."""


@validate.command("rubric")
@click.argument("file", type=click.Path(dir_okay=False))
def validate_rubric_cmd(file: str) -> None:
    """Check a rubric's flow as a graph: dangling GOTOs, cycles, unreachable questions,
    missing options, unknown severities and dimensions."""
    from vera.rubric import load_rubric, validate_rubric

    rubric = load_rubric(file)
    problems = validate_rubric(rubric)
    for p in problems:
        click.echo(p.render(file))
    n = len(rubric.questions)
    if problems:
        _fail(f"{file}: {len(problems)} problem(s) in {n} questions")
    click.echo(
        f"{file}: ok — {rubric.name} {rubric.version} ({rubric.format} format), {n} questions, "
        f"{len(rubric.dimensions)} dimensions: {', '.join(rubric.dimensions)}"
    )


@validate.command("personas")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--prompts",
    type=click.Path(file_okay=False),
    help="Also check the user-agent templates in this prompt folder.",
)
@REFERENCE_DATA_OPTION
def validate_personas_cmd(file: str, prompts: str | None, reference_data: str | None) -> None:
    """Check a persona file: required fields, risk labels, duplicates, and that every
    template placeholder resolves. Prints the risk distribution."""
    from vera.config import REPO_ROOT, reference_folder
    from vera.personas import check_personas, check_templates
    from vera.prompts import load_user_prompts

    pset, issues = check_personas(file)
    folder = Path(prompts) if prompts else REPO_ROOT / "personas" / "prompts"
    if pset is not None and folder.exists():
        up = load_user_prompts(folder, lambda: reference_folder(reference_data or ""))
        issues += check_templates(up, pset.columns)
    for i in issues:
        click.echo(i.render(file))
    errors = [i for i in issues if i.severity == "error"]
    if pset is not None:
        dist = ", ".join(f"{k} {v}" for k, v in pset.distribution().items())
        click.echo(
            f"{file}: {len(pset.personas)} personas ({dist}); {pset.version.name} {pset.version.version}"
        )
    if errors:
        _fail(f"{file}: {len(errors)} error(s)")


@validate.command("config")
@click.argument("file", type=click.Path(dir_okay=False))
@REFERENCE_DATA_OPTION
def validate_config_cmd(file: str, reference_data: str | None) -> None:
    """Check a run config and every file it points to, without running anything."""
    from vera.config import load_config
    from vera.pipeline import Inputs

    cfg = load_config(file)
    if reference_data:
        cfg.reference.data = str(Path(reference_data).resolve())
    inputs = Inputs.load(cfg)
    click.echo(
        f"{file}: ok — rubric {inputs.rubric.key}, {len(inputs.selected_personas())} personas, "
        f"{len(cfg.chatbots)} chatbot(s), {len(cfg.user_agents)} user-agent(s), {len(cfg.judges)} judge(s)"
    )
    if (ref := inputs.reference) is not None:
        pins = (
            "every file matches the hash the config pins" if ref.pinned else "files not pinned by the config"
        )
        click.echo(
            f"reference data: {ref.name} {ref.version} in {ref.path}: {len(ref.files)} file(s) used, {pins}"
        )


@main.group()
def rubric() -> None:
    """Work with rubric files."""


@rubric.command("render")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="Write the Markdown here instead of stdout."
)
def rubric_render(file: str, output: str | None) -> None:
    """Render a rubric as Markdown a clinician can read (questions, guidance, flow)."""
    from vera.rubric import load_rubric
    from vera.rubric_doc import render_rubric

    text = render_rubric(load_rubric(file))
    if output:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}")
    else:
        click.echo(text)


@main.group()
def personas() -> None:
    """Work with persona sets."""


@personas.command("show")
@click.argument("name")
@click.option(
    "--file", "file", type=click.Path(dir_okay=False), help="Persona file (default: the built-in set)."
)
@click.option("--prompts", type=click.Path(file_okay=False), help="User-agent prompt folder.")
@click.option("--min-turns", type=int, default=10, show_default=True)
@click.option("--max-turns", type=int, default=30, show_default=True)
@REFERENCE_DATA_OPTION
def personas_show(
    name: str,
    file: str | None,
    prompts: str | None,
    min_turns: int,
    max_turns: int,
    reference_data: str | None,
) -> None:
    """Print the exact system prompt and reminder a user-agent receives for a persona."""
    from vera.config import REPO_ROOT, reference_folder
    from vera.personas import load_personas, render_user_reminder, render_user_system
    from vera.prompts import load_user_prompts

    pset = load_personas(file or REPO_ROOT / "personas" / "vera-personas.tsv")
    up = load_user_prompts(
        prompts or REPO_ROOT / "personas" / "prompts", lambda: reference_folder(reference_data or "")
    )
    p = pset.by_name(name)
    click.echo(f"# system prompt ({up.version.name} {up.version.version})\n")
    click.echo(render_user_system(p, up, min_turns=min_turns, max_turns=max_turns))
    click.echo("\n# reminder (attached to every user turn)\n")
    click.echo(render_user_reminder(p, up, min_turns=min_turns, max_turns=max_turns))


# ---------------------------------------------------------------------------------------


def _print_outcome(outcome: Any, *, quiet: bool) -> None:
    from vera.card_text import render_markdown

    r = outcome.result
    if not quiet and outcome.card is not None:
        click.echo(render_markdown(outcome.card, brief=True))
    for line in outcome.notes:
        click.echo(line, err=True)
    click.echo(
        f"run directory: {outcome.run_dir}\n"
        f"conversations: {r.conversations} new, {r.conversations_reused} reused, {r.conversations_failed} failed · "
        f"judgements: {r.judgements} new, {r.judgements_reused} reused, {r.judgements_failed} failed · "
        f"{r.wall_s:.1f} s"
    )
    if outcome.card is not None:
        click.echo(f"card: {Path(outcome.run_dir) / 'card.md'} · {Path(outcome.run_dir) / 'card.html'}")


from vera.cli_stats import agreement, compare  # noqa: E402  (the statistics commands live in vera.cli_stats)

main.add_command(compare)
main.add_command(agreement)

from vera.bench import bench  # noqa: E402  (the benchmark lives in vera.bench)

main.add_command(bench)

from vera.cli_view import export, view  # noqa: E402  (the viewer and the export live in vera.cli_view)

main.add_command(view)
main.add_command(export)

if __name__ == "__main__":
    main()
