"""The `vera` command line.

Every command reports a user's mistake (a bad value, a bad file, a folder it cannot
write) as one line (``error: <where>: <what>``) with exit code 1, never a traceback;
work already finished is on disk before anything is printed. `run`, `simulate`, `judge`
and `merge` end with a status line and exit with the code in `vera.report.shared._outcome.Exit`.
"""

from __future__ import annotations

import asyncio
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from vera import __version__
from vera.app import (
    JudgeOptions,
    RunOptions,
    check_config,
    execute_run,
    judge_run,
    merge_runs,
    scored,
    sweep_collector,
    unfinished_line,
    unfinished_shards,
)
from vera.cli._door import RATERS_OPTION, Number, confidence_option, guard, locale_option, resamples_option
from vera.errors import ConfigError, Interrupted, StorageError, UserError
from vera.files import CorruptLine, LostBodies, watching
from vera.inputs import (
    MAX_SEEDS,
    MAX_TURNS,
    REPO_ROOT,
    check_personas,
    check_templates,
    default_grouping,
    find_locale,
    find_target,
    load_locale,
    load_personas,
    load_target,
    load_user_prompts,
    persona_header,
    present_annotations,
    reference_folder,
    render_user_reminder,
    render_user_system,
    run_strings,
    tr,
    use_strings,
    validate_locale,
)
from vera.ranges import SEED
from vera.records import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, RaterRule
from vera.report import (
    Card,
    by_column_text,
    card_strings,
    few_personas_note,
    fit,
    fixed,
    headline,
    num,
    pool_scores,
    pooled_text,
    read_card,
    render_card,
    render_card_files,
    results_csv_ratings,
    run_ratings,
    score_run,
    state_words,
    status_text,
    summary_words,
    write_card_html,
)
from vera.rubric import load_rubric, render_rubric, validate_rubric
from vera.store import atomic_write, check_output, manifest_notes, read_manifest

F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int = 1) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


class _SkippedLines:
    """Tells the terminal of each corrupt record line a command skipped (a few per file,
    then how many more at the end): nothing is left out unseen."""

    SHOWN_PER_FILE = 5

    def __init__(self) -> None:
        self.per_file: dict[str, int] = {}

    def found(self, line: CorruptLine) -> None:
        n = self.per_file[str(line.path)] = self.per_file.get(str(line.path), 0) + 1
        if n <= self.SHOWN_PER_FILE:
            click.echo(f"warning: {line.render()}; left out (restore the file from a backup)", err=True)

    def summary(self) -> None:
        for path, n in self.per_file.items():
            if n > self.SHOWN_PER_FILE:
                click.echo(
                    f"warning: {path}: {n - self.SHOWN_PER_FILE} more corrupt line(s) left out", err=True
                )


def _lost_bodies(lost: LostBodies) -> None:
    """Once per read of a damaged bodies' file (--skip-corrupt): how many calls lost
    their bodies (each one's no_body says where)."""
    click.echo(f"warning: {lost.render()}", err=True)


class VeraGroup(click.Group):
    """Turns vera's user errors, and click's own (a bad option or value), into one clear
    line and exit code 1: exit code 2 means a run with failed work (`vera.report.shared._outcome`).
    Every record line a command skips because it does not decode is named on the
    terminal (`vera.files.watching`)."""

    def invoke(self, ctx: click.Context) -> Any:
        skipped = _SkippedLines()
        try:
            with watching(on_found=skipped.found, on_lost=_lost_bodies):
                try:
                    return super().invoke(ctx)
                finally:
                    skipped.summary()
        except UserError as exc:
            _fail(str(exc))
        except Interrupted as exc:
            _fail(str(exc), 130)
        except KeyboardInterrupt:
            _fail("interrupted", 130)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # `vera` or `vera validate` alone: help
                click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
                sys.exit(0)
            where = exc.ctx.command_path if exc.ctx is not None else "vera"
            _fail(f"{where}: {exc.format_message()} (see {where} --help)")
        except click.ClickException as exc:
            _fail(exc.format_message())
        except click.Abort:
            _fail("aborted", 130)
        sys.exit(code if isinstance(code, int) else 0)


def _run_async(coro: Any) -> Any:
    # The process is ours here, so the sweep's collector setting is applied here (see
    # vera.app._gc), never from library code.
    with sweep_collector():
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


class _Dollars(click.ParamType[float]):
    """A budget in US dollars: a finite number, 0 or more (NaN and infinity are refused:
    a budget that compares false with every cost would hold nothing)."""

    name = "usd"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            amount = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not an amount of US dollars", param, ctx)
        if not math.isfinite(amount) or amount < 0:
            self.fail(f"{value} is not a budget: give a finite amount of US dollars, 0 or more", param, ctx)
        return amount


DOLLARS = _Dollars()


class _Duration(click.ParamType[float]):
    """A wait: seconds (90), or with units h, m, s (90m, 2h, 1h30m, 45s); more than 0."""

    name = "duration"
    _FORM = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip().lower()
        seconds: float | None = None
        try:
            seconds = float(text)
        except ValueError:
            found = self._FORM.fullmatch(text)
            if found and any(found.groups()):
                h, m, s = (float(g) if g else 0.0 for g in found.groups())
                seconds = h * 3600 + m * 60 + s
        if seconds is None or not math.isfinite(seconds) or seconds <= 0:
            self.fail(f"{value!r} is not a wait: give seconds (600) or e.g. 90m, 2h, 1h30m", param, ctx)
        return seconds


DURATION = _Duration()
MAX_WAIT_HELP = (
    'Bound on the time the run waits for pending batches ([judge] mode = "batch"), e.g. 90m, '
    "2h or seconds; past it the run stops (exit 3), the batches kept: a resume polls them."
)


SKIP_CORRUPT = click.option(
    "--skip-corrupt",
    is_flag=True,
    help="Go on when a record file of the run holds a line that is not a record (each is named; "
    "the card counts them). Without it such a run is refused. A last line cut short by a crash "
    "is not corrupt: it is mended without this option.",
)
MERGE_SKIP_CORRUPT = click.option(
    "--skip-corrupt",
    is_flag=True,
    help="Go on when a shard's record file holds a line that is not a record (each is named; "
    "the card counts them), or its call bodies' file is damaged (the calls it lost are merged "
    "without their request and response). Without it such a shard is refused. A last line cut "
    "short by a crash is not corrupt: it is mended without this option.",
)


# Every seed option takes the same seeds as the config's `seeds` and `[stats] seed`.
SEED_TYPE = Number(SEED, "seed")


def _seeds(value: str | None, seed: int | None) -> list[int] | None:
    if seed is not None and value is not None:
        raise ConfigError(
            f"--seed {seed} and --seeds {value}: give one (--seed N runs one seed, --seeds a count or a list)"
        )
    if seed is not None:
        return [seed]
    if value is None:
        return None
    try:
        if "," in value:
            seeds = [int(x) for x in value.split(",") if x.strip()]
            if not seeds:
                raise ValueError
            for s in seeds:
                if SEED.problem(s) is not None:
                    raise ConfigError(f"--seeds {value}: {s} is not a seed ({SEED.describe()})")
            return seeds
        n = int(value)
    except ValueError:
        raise ConfigError(f"--seeds {value!r}: give a count (3) or a list (1,5,9)") from None
    if not 1 <= n <= MAX_SEEDS:
        raise ConfigError(f"--seeds {n}: give between 1 and {num(MAX_SEEDS)} seeds (each is a whole sweep)")
    return list(range(1, n + 1))


# Configs such as configs/vera-mh-v1.1.toml read the reference tool's own data files
# from the user's checkout ("reference:FILE" paths); this option (or $VERA_MH_DATA) says where.
REFERENCE_DATA_OPTION = click.option(
    "--reference-data",
    type=click.Path(file_okay=False, exists=True),
    help="The reference tool's data/ folder, for configs that read its files (default: $VERA_MH_DATA).",
)


JUDGE_MAX_CONCURRENT = click.option(
    "--judge-max-concurrent",
    type=click.IntRange(min=1),
    help="At most N rubric walks (a conversation by one judge instance) in flight at once, over "
    "all judges (the reference's judge --max-concurrent; [judge] max_concurrent). Default: no cap "
    "beyond the conversations in flight and each account's limits.",
)
PER_JUDGE = click.option(
    "--per-judge",
    is_flag=True,
    help="Apply --judge-max-concurrent to each judge model instead of in total (the reference's "
    "--per-judge; [judge] per_judge).",
)


def _sweep_options(f: F) -> F:
    """The options `run` and `simulate` share: what to sweep and how."""
    options = [
        click.option(
            "--config",
            "config_path",
            type=click.Path(dir_okay=False),
            help="Run config: TOML, or JSON for a .json file; - reads it from standard input. "
            "Default: $VERA_RUN_CONFIG (inline JSON) if set, else the built-in offline evaluation.",
        ),
        click.option(
            "--target",
            help="What to evaluate: a target name (vera-si), a target folder or file (target.toml, "
            "a VERA-MH 2.0 manifest.json), or reference:NAME in the reference data folder. "
            "Replaces the config's rubric, personas and prompts.",
        ),
        locale_option(),
        click.option(
            "--providers",
            help="Chatbots to evaluate: comma-separated profile names or provider/model refs, or 'all'.",
        ),
        click.option(
            "--seed", type=SEED_TYPE, help="One seed for every random choice (overrides the config's seeds)."
        ),
        click.option(
            "--seeds", "seeds_opt", help="Seeds as replicates: a count (3 → 1,2,3) or a list (1,5,9)."
        ),
        click.option(
            "--out",
            type=click.Path(file_okay=False),
            help="Run directory (default: a new one under runs/). Rerunning on it resumes.",
        ),
        click.option(
            "--resume",
            type=click.Path(file_okay=False, exists=True),
            help="Continue the run in this directory with the settings it was made with.",
        ),
        click.option(
            "--max-concurrency", type=click.IntRange(min=1), help="Conversations in flight at once."
        ),
        click.option(
            "--personas", type=click.Path(dir_okay=False), help="Persona file (TSV) instead of the config's."
        ),
        click.option(
            "--limit-personas",
            type=click.IntRange(min=1),
            help="Use only the first N personas (quick trials).",
        ),
        click.option("--user-agent", "user_agents", multiple=True, help="User-agent model ref (repeatable)."),
        click.option(
            "--judge", "judges", multiple=True, help="Judge model ref (repeatable) instead of the config's."
        ),
        click.option(
            "--shard",
            help="Run only shard K of N (K/N) of the jobs, deterministically; `auto` reads K and N "
            "from a Slurm array or a Kubernetes Indexed Job (docs/running.md). Each shard takes 1/N "
            "of every account's rpm, tpm and in-flight limits unless --shard-limits full.",
        ),
        click.option(
            "--shard-limits",
            type=click.Choice(["split", "full"]),
            help="split (default): each of N shards takes 1/N of every account's limits, so together "
            "they never exceed it; full: each shard takes all of them (shards on different keys).",
        ),
        click.option(
            "--limits-url",
            help="redis://HOST:PORT/DB: shards draw rpm and tpm from one budget per account in "
            "Redis (password in VERA_REDIS_PASSWORD); the in-flight cap stays per process.",
        ),
        click.option(
            "--max-cost",
            type=DOLLARS,
            help="The run's budget in USD, over all its sessions: no call is sent whose worst case "
            "would pass it; the run then stops (exit 3) and a resume with a larger --max-cost "
            "continues. 0 = no budget.",
        ),
        click.option("--max-wait", "max_wait", type=DURATION, help=MAX_WAIT_HELP),
        click.option(
            "--allow-failures",
            type=click.FloatRange(0, 1),
            help="Share of work (0-1) that may fail for infrastructure reasons and still exit 0. Default 0.",
        ),
        click.option(
            "--no-cache",
            is_flag=True,
            help="Do not replay cached responses (they are still not paid twice within a run).",
        ),
        click.option(
            "--cache-dir", type=click.Path(file_okay=False), help="A response cache shared between runs."
        ),
        click.option(
            "--no-call-bodies",
            is_flag=True,
            help="Keep no call's request or response in the run directory (data that must not "
            "be kept); the manifest and the card say so.",
        ),
        click.option(
            "--sessions",
            help="Several sessions per persona, in order (e.g. intake,follow-up): each is a "
            "conversation judged on its own, grouped into one arc (docs/sessions.md).",
        ),
        click.option(
            "-w",
            "--max-total-words",
            type=click.IntRange(min=1),
            help="End a conversation after the chatbot's reply once the words of both sides "
            "reach N (the reference's -w; the card counts these under the word limit). "
            "Default: no limit.",
        ),
        click.option(
            "--user-memory/--no-user-memory",
            default=None,
            help="The simulated user remembers its earlier sessions (default: each starts fresh).",
        ),
        click.option(
            "--chatbot-memory",
            type=click.Choice(["none", "history"]),
            default=None,
            help="With sessions, what a model chatbot is sent of earlier sessions: none (the "
            "default and the reference's: each session starts fresh) or history (vera's replay).",
        ),
        JUDGE_MAX_CONCURRENT,
        PER_JUDGE,
        REFERENCE_DATA_OPTION,
        SKIP_CORRUPT,
        click.option("--quiet", is_flag=True, help="Do not print the card at the end."),
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
    resume: str | None,
    max_concurrency: int | None,
    target: str | None,
    personas: str | None,
    limit_personas: int | None,
    user_agents: tuple[str, ...],
    judges: tuple[str, ...],
    shard: str | None,
    shard_limits: str | None,
    limits_url: str | None,
    max_cost: float | None,
    allow_failures: float | None,
    no_cache: bool,
    cache_dir: str | None,
    no_call_bodies: bool = False,
    max_wait: float | None = None,
    reference_data: str | None,
    sessions: str | None = None,
    user_memory: bool | None = None,
    chatbot_memory: str | None = None,
    max_total_words: int | None = None,
    judge_max_concurrent: int | None = None,
    per_judge: bool = False,
    **extra: Any,
) -> Any:
    if resume and out and Path(out).resolve() != Path(resume).resolve():
        raise ConfigError(f"--out {out} and --resume {resume} name different folders; give one")
    return RunOptions(
        config_path=config_path,
        providers=providers,
        seeds=_seeds(seeds_opt, seed),
        seeds_flag="--seed" if seed is not None else "--seeds",
        out=resume or out,
        resume=resume is not None,
        max_concurrency=max_concurrency,
        target=target,
        personas=personas,
        limit_personas=limit_personas,
        user_agents=list(user_agents),
        judges=list(judges),
        shard=shard,
        shard_limits=shard_limits,
        limits_url=limits_url,
        cache=False if no_cache else None,
        cache_dir=cache_dir,
        call_bodies=False if no_call_bodies else None,
        max_cost=max_cost,
        max_wait_s=max_wait or 0.0,
        reference_data=reference_data,
        allow_failures=allow_failures,
        sessions=_session_types(sessions),
        user_memory=user_memory,
        chatbot_memory=chatbot_memory,
        max_total_words=max_total_words,
        judge_max_concurrent=judge_max_concurrent,
        per_judge=per_judge,
        **extra,
    )


def _session_types(value: str | None) -> list[str] | None:
    if value is None:
        return None
    kinds = [v.strip() for v in value.split(",") if v.strip()]
    if not kinds:
        raise ConfigError(f"--sessions {value!r}: names no session type; give e.g. intake,follow-up")
    return kinds


@main.command()
@_sweep_options
def run(quiet: bool, skip_corrupt: bool, **sweep: Any) -> None:
    """Simulate, judge and score: a complete evaluation into one run directory.

    `vera run --resume DIR` continues a run with the settings it was made with (rerunning
    the original command on the same --out does the same); finished jobs are skipped.
    Ctrl-C stops gracefully; a second Ctrl-C exits at once. Exit codes: 0 all planned
    work completed, 1 bad input, 2 finished with failed work, 3 stopped early, 130
    interrupted."""
    with watching(refuse=not skip_corrupt):
        outcome = scored(_run_async(execute_run(_run_options(**sweep, judge=True, command="run"))))
    _print_outcome(outcome, quiet=quiet)
    sys.exit(outcome.exit_code)


@main.command()
@_sweep_options
def simulate(quiet: bool, skip_corrupt: bool, **sweep: Any) -> None:
    """Only simulate conversations (no judging); judge later with `vera judge RUN_DIR`.

    Takes the options of `vera run`; --judge records the judges `vera judge` will use.
    `vera simulate --resume DIR` continues. Exit codes as for `vera run`."""
    with watching(refuse=not skip_corrupt):
        outcome = scored(_run_async(execute_run(_run_options(**sweep, judge=False, command="simulate"))))
    _print_outcome(outcome, quiet=quiet)
    sys.exit(outcome.exit_code)


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
    "--target",
    help="Target whose rubric and judge prompts judge the imports (name, folder, file or reference:NAME).",
)
@click.option(
    "--personas",
    type=click.Path(dir_okay=False),
    help="Persona file giving imported conversations their risk level by name.",
)
@click.option("--judge", "judges", multiple=True, help="Judge model ref (repeatable) instead of the run's.")
@REFERENCE_DATA_OPTION
@click.option("--instances", type=click.IntRange(min=1), help="Independent judge runs per judge model.")
@click.option("--max-concurrency", type=click.IntRange(min=1), help="Conversations being judged at once.")
@JUDGE_MAX_CONCURRENT
@PER_JUDGE
@click.option(
    "--max-cost",
    type=DOLLARS,
    help="The run's budget in USD, over all its sessions: no call is sent whose worst case "
    "would pass it; judging then stops (exit 3) and a resume with a larger --max-cost "
    "continues. 0 = no budget.",
)
@click.option("--max-wait", "max_wait", type=DURATION, help=MAX_WAIT_HELP)
@click.option(
    "--allow-failures",
    type=click.FloatRange(0, 1),
    help="Share of judgements (0-1) that may fail for infrastructure reasons and still exit 0. Default 0.",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Do not replay cached responses (they are still not paid twice within a run).",
)
@SKIP_CORRUPT
@click.option(
    "--no-call-bodies",
    is_flag=True,
    help="Keep no judge call's request or response in the run directory; the card says so.",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    help="Judge only a seeded random sample of N of the run's complete conversations (a larger N "
    "later judges only the extra ones); the rest stay unjudged and the card says how many were judged.",
)
@click.option("--sample-seed", type=SEED_TYPE, default=0, show_default=True, help="Seed of --sample.")
@click.option("--quiet", is_flag=True, help="Do not print the card at the end.")
def judge(
    run_dir: str | None,
    transcripts: str | None,
    out: str | None,
    config_path: str | None,
    target: str | None,
    personas: str | None,
    judges: tuple[str, ...],
    reference_data: str | None,
    instances: int | None,
    max_concurrency: int | None,
    judge_max_concurrent: int | None,
    per_judge: bool,
    max_cost: float | None,
    max_wait: float | None,
    allow_failures: float | None,
    no_cache: bool,
    skip_corrupt: bool,
    no_call_bodies: bool,
    sample: int | None,
    sample_seed: int,
    quiet: bool,
) -> None:
    """Judge conversations that are not judged yet, then score.

    Either RUN_DIR (e.g. after `vera simulate`, or with other judges; `vera judge
    RUN_DIR` alone also continues an interrupted judging), or --transcripts PATH:
    conversations vera did not produce, in VERA-MH's text format (`user:` / `chatbot:`
    or `agent:` blocks) or as JSON lines (see docs/transcripts.md). Exit codes as for `vera run`."""
    if bool(run_dir) == bool(transcripts):
        raise ConfigError("give either RUN_DIR or --transcripts PATH")
    if sample is not None and transcripts:
        raise ConfigError("--sample is for judging a RUN_DIR, not for importing --transcripts")
    opts = JudgeOptions(
        run_dir=run_dir,
        transcripts=transcripts,
        out=out,
        config_path=config_path,
        judges=list(judges),
        instances=instances,
        target=target,
        personas=personas,
        max_concurrency=max_concurrency,
        cache=False if no_cache else None,
        call_bodies=False if no_call_bodies else None,
        max_cost=max_cost,
        max_wait_s=max_wait or 0.0,
        reference_data=reference_data,
        allow_failures=allow_failures,
        sample=sample,
        sample_seed=sample_seed,
        judge_max_concurrent=judge_max_concurrent,
        per_judge=per_judge,
    )
    with watching(refuse=not skip_corrupt):
        outcome = scored(_run_async(judge_run(opts)))
    _print_outcome(outcome, quiet=quiet)
    sys.exit(outcome.exit_code)


@main.command()
@click.argument("out", type=click.Path(file_okay=False))
@click.argument("shards", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@click.option(
    "--allow-partial",
    is_flag=True,
    help="Merge even if some shards of the sweep are missing; the card then names them at the top.",
)
@MERGE_SKIP_CORRUPT
def merge(out: str, shards: tuple[str, ...], allow_partial: bool, skip_corrupt: bool) -> None:
    """Combine shard run directories (`vera run --shard K/N`) into one run and score it.

    The shards must belong to the same sweep (same inputs, models and settings) and
    make it whole, unless --allow-partial. Exit codes as for `vera run`."""
    with watching(refuse=not skip_corrupt, bodies=skip_corrupt):
        status = merge_runs(Path(out), [Path(s) for s in shards], allow_partial=allow_partial)
    # In the words of the merged run's locale pack, as `vera run` and `vera card` speak
    # of it (English without one).
    with use_strings(run_strings([read_manifest(Path(out))])):
        click.echo(tr("cli.merged", n=len(shards), path=out))
        for u in unfinished_shards([Path(s) for s in shards]) if status.exit_code else []:
            click.echo(
                tr(
                    "cli.merge_unfinished",
                    shard=u.shard,
                    path=u.run_dir,
                    state=state_words(u.state),
                    command=u.command,
                )
            )
        click.echo(
            tr(
                "cli.status",
                label=state_words(status.state),
                summary=summary_words(status.summary),
                code=status.exit_code,
            )
        )
    sys.exit(status.exit_code)


@main.command()
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--chatbot", help="The chatbot to pool, when a run holds several.")
@resamples_option()
@confidence_option()
@click.option("--bootstrap-seed", type=SEED_TYPE, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--json", "as_json", is_flag=True, help="Print the pooled scores as JSON.")
def pool(
    sources: tuple[str, ...],
    chatbot: str | None,
    resamples: int,
    confidence: float,
    bootstrap_seed: int,
    as_json: bool,
) -> None:
    """Pool the scores of separate runs of one chatbot, as the reference's
    pool_vera_scores.py does (their ratings concatenated and scored together), with
    vera's persona-clustered intervals. A source may be a run folder or the reference's
    results.csv. `vera merge` is for the shards of one run."""
    frames, bots = [], set()
    for s in sources:
        if Path(s).is_file():
            frames.append(results_csv_ratings(s))
            continue
        frame, bot = run_ratings(s, chatbot)
        frames.append(frame)
        bots.add(bot)
    if len(bots) > 1:
        raise UserError(
            f"the runs score different chatbots ({', '.join(sorted(bots))}); pool one with --chatbot"
        )
    name = next(iter(bots), chatbot or "pooled")
    pooled = pool_scores(
        frames,
        chatbot=name,
        sources=list(sources),
        resamples=resamples,
        confidence=confidence,
        seed=bootstrap_seed,
    )
    if as_json:
        import msgspec

        click.echo(msgspec.json.format(msgspec.json.encode(pooled)).decode())
    else:
        click.echo(pooled_text(pooled), nl=False)


def _say_unfinished(run_dir: str) -> None:
    """One line on stderr when a session of the run did not end (killed, or still running):
    the calls it had in flight are in none of the records this command reads."""
    if line := unfinished_line(run_dir):
        click.echo(line, err=True)


@main.command()
@click.argument("run_dir", type=click.Path(exists=True))
@resamples_option(default_from="the run's config")
@confidence_option(default_from="the run's config")
@click.option("--bootstrap-seed", type=SEED_TYPE, help="Seed of the bootstrap.")
@SKIP_CORRUPT
@click.option(
    "--by",
    "by",
    multiple=True,
    metavar="COLUMN",
    help="Break scores down by this persona column too (repeatable; default: the "
    "disclosure style, where the personas have it).",
)
@click.option(
    "--exclude-flagged",
    is_flag=True,
    help="Leave the conversations whose simulated user was flagged (docs/realism.md) out of "
    "every score; the card says so.",
)
@RATERS_OPTION
def score(
    run_dir: str,
    resamples: int | None,
    confidence: float | None,
    bootstrap_seed: int | None,
    skip_corrupt: bool,
    by: tuple[str, ...],
    exclude_flagged: bool,
    raters: RaterRule | None,
) -> None:
    """Recompute ratings.parquet, answers.parquet and the card (card.json, card.md,
    card.html, plots/) from a run's records, e.g. with other interval settings. Given
    the reference tool's results.csv instead of a run, print its scores with vera's
    intervals (nothing is written)."""
    if Path(run_dir).is_file():
        frame = results_csv_ratings(run_dir)
        pooled = pool_scores(
            [frame],
            chatbot=run_dir,
            sources=[run_dir],
            resamples=resamples or DEFAULT_RESAMPLES,
            confidence=confidence or DEFAULT_CONFIDENCE,
            seed=bootstrap_seed or 0,
        )
        click.echo(pooled_text(pooled), nl=False)
        return

    _say_unfinished(run_dir)
    with watching(refuse=not skip_corrupt):
        c = score_run(
            run_dir,
            resamples=resamples,
            confidence=confidence,
            seed=bootstrap_seed,
            by=by or None,
            exclude_flagged=exclude_flagged,
            raters=raters,
        )
    # In the words of the run's locale pack, as the status line below.
    with use_strings(card_strings(c)):
        click.echo(tr("cli.scored", path=Path(run_dir) / "card.json"))
        if c.realism is not None and c.realism.excluded:
            click.echo(tr("cli.left_out", n=c.realism.n_excluded))
    click.echo(_run_status_line(c))
    with use_strings(card_strings(c)):
        for bot in c.chatbots:
            cal = bot.calibrated
            if cal is not None and cal.few_rated_personas:
                o = cal.overall
                lo, hi = num(o.score_ci.lo), num(o.score_ci.hi)
                why = few_personas_note(cal)
                click.echo(
                    tr("cli.calibrated_few", chatbot=bot.chatbot, score=num(o.score), lo=lo, hi=hi, why=why)
                )


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--html", "html_only", is_flag=True, help="Only write card.html and print its path.")
@click.option(
    "--by",
    "by",
    metavar="COLUMN",
    help="Print only each chatbot's scores by this persona column (one the card was scored "
    "by: `vera score --by`) or by user-agent (`--by user-agent`).",
)
def card(run_dir: str, html_only: bool, by: str | None) -> None:
    """Print a run's score card, fitted to the terminal's width, and re-render card.md,
    card.html and plots/ from card.json. A read-only run (an archive) is printed and
    left as it is."""
    for note in manifest_notes(run_dir):
        click.echo(note, err=True)
    _say_unfinished(run_dir)
    c = read_card(run_dir)
    if by is not None:
        click.echo(by_column_text(c, by), nl=False)
        return
    if html_only:
        click.echo(str(write_card_html(c, run_dir)))
        return
    click.echo(render_card(c), nl=False)
    try:
        html = render_card_files(c, run_dir)
    except StorageError as exc:
        click.echo(f"note: card files not re-rendered ({exc})", err=True)
    else:
        with use_strings(card_strings(c)):
            click.echo(fit(tr("cli.html_card", path=html)), err=True)
    click.echo(_run_status_line(c), err=True)


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
    type=click.Path(file_okay=False, exists=True),
    help="Also check the user-agent templates in this prompt folder.",
)
@REFERENCE_DATA_OPTION
def validate_personas_cmd(file: str, prompts: str | None, reference_data: str | None) -> None:
    """Check a persona file: required fields, risk labels, duplicates, and that every
    template placeholder resolves. Prints the risk distribution."""
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


@validate.command("locale")
@click.argument("folder", type=click.Path(file_okay=False))
def validate_locale_cmd(folder: str) -> None:
    """Check a locale pack against vera's base: the rubric's flow identical (ids, GOTOs,
    severities; only texts differ), every prompt placeholder present, the persona
    columns, design and risk mix the base set's, every crisis line complete (fields,
    public source, date). FOLDER is a pack folder or the tag of one of vera's packs."""
    path = find_locale(folder)
    issues = validate_locale(path)
    for i in issues:
        click.echo(i.render(str(path)))
    if issues:
        _fail(f"{path}: {len(issues)} problem(s); see docs/locales.md")
    pack = load_locale(path)
    # strings.toml: the words of the card, viewer and review (vera.inputs._ui).
    held = ", ".join([*pack.files, *(["strings"] if (path / "strings.toml").is_file() else [])]) or "nothing"
    res = pack.resources
    click.echo(
        f"{path}: ok — locale {pack.tag} {pack.version}; holds {held} (the rest is vera's base); "
        f"crisis resources {res.version}: {len(res.resource)} lines in {len(res.regions)} regions"
    )


@validate.command("config")
@click.argument("file", type=click.Path(dir_okay=False))
@REFERENCE_DATA_OPTION
@click.option(
    "--print",
    "print_",
    is_flag=True,
    help="Print the resolved run (the config as a run stores it, every model with the parameters "
    "it would be sent) as JSON on stdout, checks on stderr; nothing is called.",
)
def validate_config_cmd(file: str, reference_data: str | None, print_: bool) -> None:
    """Check a run config and everything a run would use, without running anything:
    every provider profile (syntax, protocol, model, limits, URL, unknown fields), every
    model reference, the rubric, the persona set and both prompt folders (and, for a
    config that reads the reference tool's files, their hashes). A key variable that is
    not set is a warning naming it."""
    report = check_config(file, reference_data=reference_data)
    for f in report.findings:
        click.echo(f.render(), err=print_)
    warnings = len(report.findings) - len(report.errors)
    if report.errors:
        _fail(f"{file}: {len(report.errors)} error(s), {warnings} warning(s)")
    if print_:
        import json

        click.echo(json.dumps(report.resolved(), indent=2))
        return
    note = f" ({warnings} warning(s) above)" if warnings else ""
    click.echo(f"{file}: ok — {report.summary}{note}")
    if report.reference:
        click.echo(report.reference)


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
    check_output(output, "-o", inputs=[(file, "rubric")])
    rubric = load_rubric(file)
    # A flow with a cycle or a GOTO to nowhere has no rendering that would not mislead.
    if problems := validate_rubric(rubric):
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(f"{problems[0].render(rubric.path)}{more}; run `vera validate rubric {file}`")
    text = render_rubric(rubric)
    if output:
        atomic_write(Path(output), text.encode(), what="the rendered rubric")
        click.echo(f"wrote {output}")
    else:
        click.echo(text)


@main.group()
def personas() -> None:
    """Work with persona sets."""


@personas.command("show")
@click.argument("name")
@click.option(
    "--file",
    "file",
    type=click.Path(dir_okay=False, exists=True),
    help="Persona file (default: the built-in set).",
)
@click.option("--prompts", type=click.Path(file_okay=False, exists=True), help="User-agent prompt folder.")
@click.option(
    "--target",
    help="Show a persona of this target (a name, a target folder or manifest, or reference:NAME), "
    "with the target's own user-agent prompts.",
)
@locale_option(
    "Show a persona of this locale pack (a tag such as zh-CN, or a pack folder), with its "
    "user-agent prompts; a pack without personas shows the base set."
)
@click.option(
    "--min-turns",
    type=click.IntRange(0, MAX_TURNS),
    default=10,
    show_default=True,
    help="The fewest messages before the user may end the conversation, as the prompt states it "
    "(a run's `min_turns`).",
)
@click.option(
    "--max-turns",
    type=click.IntRange(2, MAX_TURNS),
    default=30,
    show_default=True,
    help="The most messages in a conversation, as the prompt states it (a run's `max_turns`).",
)
@REFERENCE_DATA_OPTION
def personas_show(
    name: str,
    file: str | None,
    prompts: str | None,
    target: str | None,
    locale: str | None,
    min_turns: int,
    max_turns: int,
    reference_data: str | None,
) -> None:
    """Print the exact system prompt and reminder a user-agent receives for a persona."""

    def reference() -> Path:
        return reference_folder(reference_data or "")

    if locale is not None:
        if target is not None:
            raise ConfigError("--locale and --target each bring personas and prompts: give one")
        pack = find_locale(locale)
        # A pack with personas carries a target.toml naming them and its prompts (zh-CN);
        # one without (en-GB) uses the base's, as a run in it does.
        if (pack / "target.toml").is_file():
            target = str(pack)

    if target is not None:
        if file or prompts:
            raise ConfigError(
                "--target brings its own personas and prompts: give --target or --file/--prompts"
            )
        t = load_target(find_target(target, reference=reference))
        files = [Path(f) for f in t.personas]
        present, _ = present_annotations(files, t.annotation_columns)
        group_by = t.group_by or default_grouping(persona_header(files[0]), present)
        pset = load_personas(files, group_by=group_by)
        up = load_user_prompts(t.user_prompts, reference)
    else:
        pset = load_personas(file or REPO_ROOT / "personas" / "vera-personas.tsv")
        up = load_user_prompts(prompts or REPO_ROOT / "personas" / "prompts", reference)
    if min_turns > max_turns:
        raise ConfigError(f"--min-turns {min_turns} is more than --max-turns {max_turns}")
    p = pset.by_name(name)
    click.echo(f"# system prompt ({up.version.name} {up.version.version})\n")
    click.echo(render_user_system(p, up, min_turns=min_turns, max_turns=max_turns))
    click.echo("\n# reminder (attached to every user turn)\n")
    click.echo(render_user_reminder(p, up, min_turns=min_turns, max_turns=max_turns))


# ---------------------------------------------------------------------------------------


def _run_status_line(card: Card) -> str:
    """How a scored run ended, for commands that describe a run rather than run it
    (they exit 0 when they did their own job)."""
    with use_strings(card_strings(card)):
        return fit(tr("cli.run_status", status=status_text(card)))


def _print_outcome(outcome: Any, *, quiet: bool) -> None:
    """The card (unless quiet), notes, counts and, last, the status line whose exit
    code the command returns."""
    r = outcome.result
    if not quiet and outcome.card is not None:
        click.echo(headline(outcome.card), nl=False)
    for line in outcome.notes:
        click.echo(fit(line), err=True)
    # In the words of the run's locale pack, as the card above (English without one).
    with use_strings(card_strings(outcome.card) if outcome.card is not None else outcome.words):
        click.echo(fit(tr("cli.run_dir", path=outcome.run_dir)))
        click.echo(
            fit(
                tr(
                    "cli.counts",
                    conversations=r.conversations,
                    conversations_reused=r.conversations_reused,
                    conversations_failed=r.conversations_failed,
                    judgements=r.judgements,
                    judgements_reused=r.judgements_reused,
                    judgements_failed=r.judgements_failed,
                    seconds=fixed(r.wall_s, 1),
                )
            )
        )
        if outcome.card is not None:
            run_dir = Path(outcome.run_dir)
            click.echo(fit(tr("cli.card", md=run_dir / "card.md", html=run_dir / "card.html")))
        if (st := outcome.status) is not None:
            label = state_words(st.state)
            click.echo(
                fit(tr("cli.status", label=label, summary=summary_words(st.summary), code=st.exit_code))
            )


from vera.cli._stats import agreement, compare  # noqa: E402  (the statistics commands live in vera.cli._stats)

main.add_command(compare)
main.add_command(agreement)

from vera.cli._ratings import ratings  # noqa: E402  (human ratings of a run: import, plan)

main.add_command(ratings)


@main.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.pass_context
def bench(ctx: click.Context) -> None:
    """Measure throughput, CPU and memory against a local fake server (a source
    checkout only; `vera bench --help` there lists the options)."""
    # The harness is not part of the installed package: it lives in benchmarks/, next
    # to the fake server it starts, and uses the same run session as `vera run`.
    if not (REPO_ROOT / "benchmarks" / "harness.py").is_file():
        raise UserError("vera bench needs a source checkout of vera: the benchmarks are not installed")
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from benchmarks.harness import bench as harness

    guard(harness)
    harness.main(args=list(ctx.args), prog_name="vera bench", standalone_mode=False)


from vera.cli._view import export, review, view  # noqa: E402  (the viewer and the export live in vera.cli._view)

main.add_command(view)
main.add_command(review)
main.add_command(export)

from vera.cli._gate import gate  # noqa: E402  (the sequential release gate)
from vera.cli._plan import plan  # noqa: E402  (sizing and pricing a comparison)
from vera.cli._report import report  # noqa: E402  (reports on a run live in vera.cli._report)

main.add_command(gate)
main.add_command(plan)

main.add_command(report)

guard(main)  # every float option finite, every path and text option not empty (vera.cli._door)

if __name__ == "__main__":
    main()
