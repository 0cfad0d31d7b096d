"""Values checked where they enter (issue 27): every seed in one documented range, NaN
and infinities refused for every number, contradictory, duplicated and empty options
refused. Each refusal is one `error:` line on stderr, exit code 1, no traceback, and
nothing written; a value the help documents as valid (`bench --latency-ms 0`) runs."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from vera.cli._door import Number
from vera.cli._main import main
from vera.ranges import SEED, SEED_MAX

from .conftest import ROOT
from .door import BOT, KEY_ENV, PASTED_KEY, invoke, profiles_folder, refused, snapshot
from .door import runs as runs  # the fixture
from .run_config import write_run_config

TOO_BIG = str(2**64)  # past 64 bits, and past the 32-bit range of every seed


OPTIONS: list[tuple[str, list[str], tuple[str, ...]]] = [
    # numbers: NaN, seeds past their range, margins that can never fail
    ("confidence-nan", ["score", "{run}", "--confidence", "nan"], ("'--confidence'", "nan")),
    ("bootstrap-seed-negative", ["score", "{run}", "--bootstrap-seed", "-1"], ("--bootstrap-seed", "4,294,967,295")),
    ("bootstrap-seed-65-bits", ["score", "{run}", "--bootstrap-seed", TOO_BIG], ("--bootstrap-seed",)),
    ("compare-seed-65-bits", ["compare", "{run}", "--seed", TOO_BIG], ("'--seed'", TOO_BIG)),
    ("compare-confidence-inf", ["compare", "{run}", "--confidence", "inf"], ("'--confidence'",)),
    ("plan-seed-65-bits", ["ratings", "plan", "{run}", "--width", "10", "--seed", TOO_BIG], ("'--seed'",)),
    ("plan-width-nan", ["ratings", "plan", "{run}", "--width", "nan"], ("'--width'",)),
    ("review-seed-negative", ["review", "{run}", "--rater", "ann", "--seed", "-1"], ("'--seed'",)),
    ("run-seed-huge", ["run", "--seed", "99999999999999999999999", "--out", "{out}"], ("'--seed'",)),
    ("run-seeds-list-huge", ["run", "--seeds", f"1,{SEED_MAX + 1}", "--out", "{out}"], ("--seeds", "is not a seed")),
    ("gate-margin-nan", ["compare", "{run}", "{run2}", "--gate", "--margin", "nan"], ("'--margin'", "nan")),
    ("gate-margin-inf", ["compare", "{run}", "{run2}", "--gate", "--margin", "inf"], ("'--margin'", "inf")),
    ("gate-margin-past-100", ["compare", "{run}", "{run2}", "--gate", "--margin", "101"], ("from 0 to 100",)),
    ("max-cost-inf", ["run", "--max-cost", "inf", "--out", "{out}"], ("'--max-cost'",)),
    ("allow-failures-nan", ["run", "--allow-failures", "nan", "--out", "{out}"], ("'--allow-failures'",)),
    ("bench-latency-nan", ["bench", "--latency-ms", "nan"], ("'--latency-ms'", "nan")),
    ("persona-turns-crossed", ["personas", "show", "x", "--min-turns", "20", "--max-turns", "10"], ("--min-turns 20",)),
    # empty paths and lists
    ("out-empty", ["run", "--out", ""], ("'--out'", "empty path")),
    ("config-empty", ["run", "--config", "", "--out", "{out}"], ("'--config'", "empty path")),
    ("personas-empty", ["run", "--personas", "", "--out", "{out}"], ("'--personas'",)),
    ("cache-dir-empty", ["run", "--cache-dir", "", "--out", "{out}"], ("'--cache-dir'",)),
    ("judge-empty", ["run", "--judge", "", "--out", "{out}"], ("'--judge'", "empty value")),
    ("seeds-empty", ["run", "--seeds", "", "--out", "{out}"], ("'--seeds'",)),
    ("target-empty", ["run", "--target", "", "--out", "{out}"], ("'--target'",)),
    ("shard-empty", ["run", "--shard", "", "--out", "{out}"], ("'--shard'",)),
    ("json-empty", ["compare", "{run}", "--json", ""], ("'--json'",)),
    ("export-output-empty", ["export", "{run}", "-o", ""], ("'-o' / '--output'",)),
    ("improvements-out-empty", ["report", "improvements", "{run}", "--out", ""], ("'--out'",)),
    ("transcripts-empty", ["judge", "--transcripts", ""], ("'--transcripts'",)),
    # --rater is required: "leave the option out" would only earn "Missing option".
    ("rater-empty", ["review", "{run}", "--rater", " "], ("'--rater'", "empty value; give one (see")),
    # options that contradict each other
    ("seed-and-seeds", ["run", "--seed", "1", "--seeds", "3", "--out", "{out}"], ("--seed 1 and --seeds 3",)),
    ("no-cache-and-cache-dir", ["run", "--no-cache", "--cache-dir", "{tmp}/cache", "--out", "{out}"], ("--no-cache",)),
    ("shard-limits-alone", ["run", "--shard-limits", "full", "--out", "{out}"], ("--shard-limits full", "--shard K/N")),
    ("user-memory-alone", ["run", "--user-memory", "--out", "{out}"], ("--user-memory", "--sessions")),
    ("gate-by-seed", ["compare", "{run}", "{run2}", "--gate", "--by-seed"], ("--by-seed",)),
    ("gate-html", ["compare", "{run}", "{run2}", "--gate", "--html", "{tmp}/gate.html"], ("--html",)),
    # the same model twice: a run that could never finish, a judge pooled twice
    ("providers-twice", ["run", "--providers", "offline/best-practice,offline/best-practice", "--out", "{out}"], ("--providers", "listed twice")),
    ("judge-twice", ["run", "--judge", "offline/lexical-judge", "--judge", "offline/lexical-judge", "--out", "{out}"], ("--judge", "listed twice")),
    ("user-agent-twice", ["run", "--user-agent", "offline/scripted-user", "--user-agent", "offline/scripted-user", "--out", "{out}"], ("--user-agent", "listed twice")),
]  # fmt: skip


@pytest.mark.parametrize(("args", "fragments"), [c[1:] for c in OPTIONS], ids=[c[0] for c in OPTIONS])
def test_a_bad_option_is_one_line_and_writes_nothing(runs, tmp_path, args, fragments) -> None:
    out = tmp_path / "out"
    values = {**{k: str(v) for k, v in runs.items()}, "out": str(out), "tmp": str(tmp_path)}
    before = {name: snapshot(folder) for name, folder in runs.items()}
    refused(invoke([a.format(**values) for a in args]), *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no run, cache, page or report made
    assert {name: snapshot(folder) for name, folder in runs.items()} == before  # no run touched


def test_every_float_option_refuses_nan_and_infinities() -> None:
    from benchmarks.harness import bench
    from vera.cli._door import _Finite, guard
    from vera.cli._main import _Dollars as Dollars
    from vera.cli._main import _Duration as Duration

    guard(bench)  # as `vera bench` does
    found = 0

    def visit(command: click.Command) -> None:
        nonlocal found
        for param in command.params:
            kind = param.type
            if isinstance(kind, _Finite | Dollars | Duration) or (
                isinstance(kind, Number) and not kind.kind.whole
            ):
                for value in ("nan", "inf", "-inf"):
                    with pytest.raises(click.BadParameter):
                        kind.convert(value, param, None)
                found += 1
            assert not isinstance(kind, click.types.FloatParamType), (
                f"{command.name} {param.name}: not guarded"
            )
        if isinstance(command, click.Group):
            for sub in command.commands.values():
                visit(sub)

    visit(main)
    visit(bench)
    assert found >= 15  # --max-cost, --allow-failures, --confidence, --margin, --width, --latency-ms, ...


def test_every_seed_option_takes_the_one_seed_range() -> None:
    seeds = []

    def visit(command: click.Command) -> None:
        for param in command.params:
            flag = isinstance(param, click.Option) and param.is_flag  # --by-seed
            if param.name is not None and "seed" in param.name and param.name != "seeds_opt" and not flag:
                seeds.append(param)
        if isinstance(command, click.Group):
            for sub in command.commands.values():
                visit(sub)

    visit(main)
    names = sorted({p.name or "" for p in seeds})
    assert (
        names == ["bootstrap_seed", "sample_seed", "seed"] and len(seeds) >= 5
    )  # run, simulate, compare, agreement, plan, review, judge --sample-seed
    for param in seeds:
        assert isinstance(param.type, Number) and param.type.kind == SEED, param
        assert param.type.convert(str(SEED_MAX), param, None) == SEED_MAX
        for bad in ("-1", str(SEED_MAX + 1), TOO_BIG, "1.5", "nan"):
            with pytest.raises(click.BadParameter):
                param.type.convert(bad, param, None)


def test_resamples_and_confidence_are_one_option_each_in_every_command() -> None:
    """`--resamples` and `--confidence` of compare, agreement, score and pool come from
    one factory each (vera/cli/_door.py): the same range, the same refusals and the same
    help, which differs only in where the default comes from or when the option applies."""
    from vera.records import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES

    helps: dict[str, list[str]] = {"resamples": [], "confidence": []}
    for name in ("compare", "agreement", "score", "pool"):
        params = {p.name: p for p in main.commands[name].params if isinstance(p, click.Option)}
        resamples, confidence = params["resamples"], params["confidence"]
        assert resamples.default in (None, DEFAULT_RESAMPLES) and confidence.default in (
            None,
            DEFAULT_CONFIDENCE,
        )
        assert (resamples.default is None) == (confidence.default is None), name
        for bad in ("0", "100001", "1.5", "nan"):
            with pytest.raises(click.BadParameter):
                resamples.type.convert(bad, resamples, None)
        assert resamples.type.convert("100000", resamples, None) == 100_000
        for bad in ("0", "1", "-0.5", "nan", "inf"):
            with pytest.raises(click.BadParameter):
                confidence.type.convert(bad, confidence, None)
        assert confidence.type.convert("0.9", confidence, None) == 0.9
        helps["resamples"].append(resamples.help or "")
        helps["confidence"].append(confidence.help or "")
    assert all(h.startswith("Bootstrap resamples") for h in helps["resamples"])
    assert all(h.startswith("Interval level between 0 and 1, e.g. 0.95") for h in helps["confidence"])
    # compare and score take them from a run's config by default, and say so in both.
    assert [h.endswith("config).") for h in helps["resamples"]] == [True, False, True, False]
    assert [h.endswith("config).") for h in helps["confidence"]] == [True, False, True, False]


def test_ratings_plan_resamples_is_the_shared_option_with_its_own_default() -> None:
    """`vera ratings plan --resamples` had a range of its own (50 to 100,000) and no help:
    it is the shared option now, refusing what the others refuse and accepting what they
    accept, with a smaller default (it runs one bootstrap per number of ratings tried)
    that its help explains."""
    from vera.report import PLAN_RESAMPLES

    plan = main.commands["ratings"].commands["plan"]  # type: ignore[attr-defined]
    params = {p.name: p for p in plan.params if isinstance(p, click.Option)}
    resamples, shared = (
        params["resamples"],
        {p.name: p for p in main.commands["agreement"].params if isinstance(p, click.Option)}["resamples"],
    )
    assert resamples.default == PLAN_RESAMPLES == 500 and resamples.show_default
    assert (
        type(resamples.type) is type(shared.type)
        and resamples.type.to_info_dict() == shared.type.to_info_dict()
    )
    for bad in ("0", "100001", "1.5", "nan"):
        with pytest.raises(click.BadParameter):
            resamples.type.convert(bad, resamples, None)
    assert resamples.type.convert("1", resamples, None) == 1  # the old floor was 50
    help_text = resamples.help or ""
    assert (
        help_text.startswith("Bootstrap resamples (") and "one bootstrap per number of ratings" in help_text
    )
    refused = CliRunner().invoke(main, ["ratings", "plan", ".", "--width", "10", "--resamples", "0"])
    assert refused.exit_code == 1 and refused.output.count("\n") == 1, refused.output
    assert "'--resamples': 0 is not in the range 1<=x<=100000" in refused.output


@pytest.mark.slow
def test_bench_takes_a_latency_of_zero() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "vera", "bench", "--latency-ms", "0", "--conversations", "2", "--turns", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    failed = next(line for line in proc.stdout.splitlines() if "failed conversations" in line)
    assert "0 ms latency" in proc.stdout and failed.split()[-1] == "0", proc.stdout
    assert "efficiency" not in proc.stdout  # no ideal rate to measure it against


def test_a_pasted_key_is_named_as_a_key_and_never_printed(tmp_path) -> None:
    folder = profiles_folder(tmp_path, bot=BOT.replace(KEY_ENV, PASTED_KEY))
    cfg = write_run_config(
        tmp_path / "run.toml", providers=folder, runs_dir=tmp_path / "runs", chatbots=["bot"]
    )
    for args in (["validate", "config", str(cfg)], ["run", "--config", str(cfg)]):
        result = invoke(args)
        assert result.exit_code == 1 and "looks like a key, not a variable name" in result.output
        assert PASTED_KEY not in result.output and PASTED_KEY[8:20] not in result.output
