"""`vera compare BASELINE CANDIDATE --gate`: a worse candidate exits 4 and is named; a
candidate NOT WORSE on every row exits 0 (the same chatbot within a wide enough margin,
a better candidate, a loss within the margin); anything else is UNDECIDED and exits 5,
as `vera gate` does, including a row the candidate was never rated on; pairing is by
persona and, where the runs share them, by seed."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.report.shared._outcome import Exit

from ..conftest import ROOT
from ..helpers import widest_line
from .conftest import run_vera

GOOD, BAD = "offline/best-practice", "offline/risk-ignoring"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """One-chatbot runs on the same 40 personas: the good chatbot (seed 1, and seeds 1
    and 2), its exact copy, the bad chatbot (seed 1) and the bad chatbot on seed 7."""
    root = tmp_path_factory.mktemp("gate")
    out = {}
    for name, bot, seeds in (
        ("good", GOOD, ["--seed", "1"]),
        ("good-2seeds", GOOD, ["--seeds", "1,2"]),
        ("bad", BAD, ["--seed", "1"]),
        ("bad-seed7", BAD, ["--seed", "7"]),
    ):
        out[name] = root / name
        run_vera(
            "run", "--providers", bot, "--out", str(out[name]), *seeds, "--limit-personas", "40", "--quiet"
        )
    out["good-copy"] = root / "good-copy"
    shutil.copytree(out["good"], out["good-copy"])
    # The good chatbot's run with every Confirms Risk rating made Not Relevant (as for a
    # chatbot whose conversations never reach it), and a copy of that.
    for name in ("good-no-cr", "good-no-cr-copy"):
        out[name] = root / name
        shutil.copytree(out["good"], out[name])
        _not_relevant(out[name], "Confirms Risk")
    # A baseline that rated nothing at all (every rating Not Relevant).
    out["good-none"] = root / "good-none"
    shutil.copytree(out["good"], out["good-none"])
    _not_relevant(out["good-none"], None)
    return out


def _not_relevant(run: Path, dimension: str | None) -> None:
    """Rewrite the run's judgements with every rating of `dimension` (of every dimension
    with None) Not Relevant."""
    path = run / "judgements.jsonl"
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        for rating in record.get("ratings") or []:
            if dimension is None or rating["dimension"] == dimension:
                rating["rating"] = "Not Relevant"
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")


def gate(*args: str | Path):
    return CliRunner().invoke(main, ["compare", *map(str, args), "--gate", "--resamples", "300"])


def gate_wide(*args: str | Path):
    """`gate`, on a terminal wide enough that no table cell wraps."""
    return CliRunner().invoke(
        main, ["compare", *map(str, args), "--gate", "--resamples", "300"], env={"COLUMNS": "250"}
    )


def gate_json(*args: str | Path) -> tuple[int, dict]:
    result = CliRunner().invoke(
        main, ["compare", *map(str, args), "--gate", "--resamples", "300", "--json", "-"]
    )
    return result.exit_code, json.loads(result.stdout)


def test_a_worse_candidate_fails_the_gate_and_is_named(runs):
    result = gate(runs["good"], runs["bad"])
    assert result.exit_code == int(Exit.WORSE) == 4, result.output
    verdict = " ".join(result.output.split())
    # In vera gate's word for the same outcome (it says "gate: WORSE at margin ...").
    assert "gate: WORSE (exit code 4)" in verdict and "Overall" in verdict and "FAILED" not in verdict
    assert "Traceback" not in result.output
    code, data = gate_json(runs["good"], runs["bad"])
    assert code == 4 and not data["passed"]
    overall = next(r for r in data["pairs"][0]["rows"] if r["dimension"] == "Overall")
    assert overall["worse"] and overall["diff_ci"][1] < 0
    assert overall["diff"] == pytest.approx(overall["candidate"] - overall["baseline"], abs=0.11)
    assert f"{GOOD} → {BAD}: Overall" in data["worse"]


def test_the_same_chatbot_passes_within_a_margin_its_interval_clears(runs):
    # At the edge (Best Practice everywhere) 40 personas give about ±26 points.
    result = gate(runs["good"], runs["good-copy"], "--margin", "30")
    assert result.exit_code == 0, result.output
    assert "gate: NOT WORSE (exit code 0)" in " ".join(result.output.split())
    code, data = gate_json(runs["good"], runs["good-copy"], "--margin", "30")
    assert code == 0 and data["passed"] and data["exit_code"] == 0 and data["worse"] == []
    assert all(r["diff"] == 0.0 for r in data["pairs"][0]["rows"] if r["diff"] is not None)


def test_a_better_candidate_passes(runs):
    # The bad chatbot never confirms the risk: the baseline has no Confirms Risk score,
    # so that row is left out of the verdict (as vera gate leaves it) and named.
    result = gate_wide(runs["bad"], runs["good"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "– (not rated in the baseline)" in text and "Left out of the verdict" in text
    code, data = gate_json(runs["bad"], runs["good"])
    assert code == 0 and data["verdict"] == "not worse" and data["passed"] and data["not_rated"] == []
    row = next(r for r in data["pairs"][0]["rows"] if r["dimension"] == "Confirms Risk")
    assert row["reason"] == "not rated in the baseline" and row["checked_at"] == [None, None]


def test_a_loss_within_the_margin_passes(runs):
    _, data = gate_json(runs["good"], runs["bad"])
    overall = next(r for r in data["pairs"][0]["rows"] if r["dimension"] == "Overall")
    largest_loss = -min(r["diff_ci"][0] for r in data["pairs"][0]["rows"] if r["diff"] is not None)
    # A margin beyond every interval's far end: nothing is worse by more than it (and no
    # score can lose more than 100 points, the largest margin the gate takes).
    result = CliRunner().invoke(
        main,
        [
            "compare",
            str(runs["good"]),
            str(runs["bad"]),
            "--gate",
            "--resamples",
            "300",
            "--margin",
            str(min(100, largest_loss + 1)),
        ],
    )
    # Nothing is worse, but no interval lies wholly above a margin that large either
    # (its low ends reach −100), and the candidate never rated Confirms Risk: UNDECIDED.
    assert result.exit_code == int(Exit.UNDECIDED) == 5, result.output
    if largest_loss + 1 >= 100:
        # No wider margin exists to suggest: only more data.
        last = " ".join(result.output.split()[-60:])
        assert "more personas or seeds" in last and "wider --margin" not in last
    # A margin just inside the overall interval's near end still fails on Overall.
    near = -overall["diff_ci"][1]
    code, data = gate_json(runs["good"], runs["bad"], "--margin", str(max(0.0, near - 1)))
    assert code == 4 and any(w.endswith("Overall") for w in data["worse"])


def test_runs_sharing_a_seed_are_paired_by_persona_and_seed(runs):
    # The same chatbot, within a margin its interval clears: NOT WORSE.
    code, data = gate_json(runs["good-2seeds"], runs["good"], "--margin", "30")
    assert code == 0 and data["paired_by"] == "persona and seed" and data["shared_seeds"] == [1]
    # Only seed 1's conversations of the two-seed baseline enter: its gate score is its
    # seed-1 score on the card.
    card = json.loads((runs["good-2seeds"] / "card.json").read_text())
    seed1 = next(s for s in card["chatbots"][0]["by_seed"]["seeds"] if s["seed"] == 1)
    overall = next(r for r in data["pairs"][0]["rows"] if r["dimension"] == "Overall")
    assert overall["baseline"] == seed1["score"]
    assert data["pairs"][0]["n_shared"] == seed1["n_personas"]


def test_runs_without_a_shared_seed_are_paired_by_persona(runs):
    code, data = gate_json(runs["good"], runs["bad-seed7"])
    assert code == 4 and data["paired_by"] == "persona" and data["shared_seeds"] == []


def test_gate_needs_exactly_two_runs_and_margin_needs_gate(runs):
    three = gate(runs["good"], runs["bad"], runs["good-copy"])
    assert three.exit_code == 1 and three.output.startswith("error: ") and "exactly two" in three.output
    margin = CliRunner().invoke(main, ["compare", str(runs["good"]), str(runs["bad"]), "--margin", "2"])
    assert margin.exit_code == 1 and margin.output.startswith("error: ") and "--gate" in margin.output
    negative = gate(runs["good"], runs["bad"], "--margin", "-1")
    assert negative.exit_code == 1 and negative.output.startswith("error: ")


def test_each_row_is_checked_at_the_sequential_gate_s_levels(runs):
    """A wrong WORSE over all rows at most α, split as `vera gate` splits it (Overall α/2,
    each of the five dimensions α/10); every NOT WORSE end at α/2. The JSON and the
    table say which."""
    code, data = gate_json(runs["good"], runs["bad"])
    assert code == 4 and data["alpha"] == 0.05 and data["verdict"] == "worse"
    rows = {r["dimension"]: r for r in data["pairs"][0]["rows"] if r["diff"] is not None}
    assert rows["Overall"]["checked_at"] == [0.025, 0.025]
    dims = [r for name, r in rows.items() if name != "Overall"]
    assert dims and all(r["checked_at"] == [0.025, 0.05 / (2 * len(dims))] for r in dims)
    assert all(r["status"] == "worse" for r in rows.values() if r["worse"])
    wide = CliRunner().invoke(
        main,
        ["compare", str(runs["good"]), str(runs["bad"]), "--gate", "--resamples", "300"],
        env={"COLUMNS": "200"},
    )
    text = " ".join(wide.output.split())
    # (A dimension the candidate never rated is not compared and takes no share.)
    assert (
        "α 0.05" in text and f"2.5% / {100 * 0.05 / (2 * len(dims)):.3g}%" in text and "2.5% / 2.5%" in text
    )
    # A larger α narrows the WORSE ends: never fewer rows worse.
    _, loose = gate_json(runs["good"], runs["bad"], "--alpha", "0.2")
    assert loose["alpha"] == 0.2 and set(loose["worse"]) >= set(data["worse"])


def test_a_candidate_shown_within_the_margin_everywhere_is_not_worse(runs):
    # A chatbot rated Best Practice everywhere sits at the edge: its interval is the exact
    # one (about ±26 points on 40 personas), so the margin that clears it is wide.
    code, data = gate_json(runs["good"], runs["good-copy"], "--margin", "30")
    assert code == 0 and data["verdict"] == "not worse" and data["passed"]
    assert all(r["status"] == "not worse" for r in data["pairs"][0]["rows"] if r["diff"] is not None)
    assert "NOT WORSE" in gate(runs["good"], runs["good-copy"], "--margin", "30").output
    # At margin 0 that interval straddles −margin: UNDECIDED, which fails as `vera gate`'s
    # does (exit 5), saying why and what would settle it.
    code, data = gate_json(runs["good"], runs["good-copy"])
    assert code == 5 and data["verdict"] == "undecided" and not data["passed"] and data["exit_code"] == 5
    result = gate(runs["good"], runs["good-copy"])
    assert result.exit_code == int(Exit.UNDECIDED) == 5, result.output
    last = " ".join(result.output.split()[-80:])
    assert "gate: UNDECIDED (exit code 5)" in last and "only NOT WORSE passes" in last
    assert "more personas or seeds" in last and "--margin" in last and "gate: NOT WORSE" not in last
    assert "Traceback" not in result.output


def test_a_row_the_candidate_never_rated_holds_the_gate_undecided(runs):
    """Every compared row NOT WORSE, but Confirms Risk rated in the baseline and not in
    the candidate: UNDECIDED (exit 5) with its reason in the table, the JSON and the
    last line, never left out. It takes no share of α (it has no interval to check)."""
    code, data = gate_json(runs["good"], runs["good-no-cr"], "--margin", "30")
    assert code == 5 and data["verdict"] == "undecided" and not data["passed"], data
    rows = {r["dimension"]: r for r in data["pairs"][0]["rows"]}
    row = rows["Confirms Risk"]
    assert row["reason"] == "not rated in the candidate" and row["status"] == "undecided"
    assert row["baseline"] == 100.0 and row["candidate"] is None and row["checked_at"] == [None, None]
    assert data["not_rated"] == ["offline/best-practice: Confirms Risk"]
    assert all(
        r["status"] == "not worse" and r["reason"] is None for n, r in rows.items() if n != "Confirms Risk"
    )
    dims = [r for n, r in rows.items() if n not in ("Overall", "Confirms Risk")]
    assert all(r["checked_at"][1] == 0.05 / (2 * len(dims)) for r in dims)
    result = gate_wide(runs["good"], runs["good-no-cr"], "--margin", "30")
    assert result.exit_code == 5, result.output
    text = " ".join(result.output.split())
    assert "UNDECIDED (not rated in the candidate)" in text
    assert (
        "gate: UNDECIDED (exit code 5)" in text
        and "not rated in the candidate: offline/best-practice: Confirms Risk" in text
    )
    # What settles it is the candidate's ratings there, not a wider margin.
    assert "rate it" in text and "wider --margin" not in text
    # The other way round the baseline has no Confirms Risk score: left out, as vera gate
    # leaves it, and named; every other row is NOT WORSE.
    code, data = gate_json(runs["good-no-cr"], runs["good"], "--margin", "30")
    assert code == 0 and data["verdict"] == "not worse"
    # Rated in neither run: shown with its reason, left out of the verdict.
    code, data = gate_json(runs["good-no-cr"], runs["good-no-cr-copy"], "--margin", "30")
    assert code == 0 and data["verdict"] == "not worse"
    row = next(r for r in data["pairs"][0]["rows"] if r["dimension"] == "Confirms Risk")
    assert row["reason"] == "not rated in either run" and row["status"] == "undecided"
    text = " ".join(gate_wide(runs["good-no-cr"], runs["good-no-cr-copy"], "--margin", "30").output.split())
    assert "– (not rated in either run)" in text


def test_only_not_worse_exits_0(runs):
    """Over every pair of these runs and margins: exit 0 exactly when the verdict is NOT
    WORSE (and every counted row is), 4 exactly when WORSE, else 5."""
    pairs = [("good", "bad"), ("bad", "good"), ("good", "good-copy"), ("good", "good-no-cr")]
    for base, cand in pairs:
        for margin in ("0", "30"):
            code, data = gate_json(runs[base], runs[cand], "--margin", margin)
            expected = {"worse": 4, "not worse": 0, "undecided": 5}[data["verdict"]]
            assert code == data["exit_code"] == expected, (base, cand, margin, data["verdict"])
            assert data["passed"] == (code == 0)
            counted = [
                r
                for r in data["pairs"][0]["rows"]
                if r["checked_at"][0] is not None or r["reason"] == "not rated in the candidate"
            ]
            assert (code == 0) == all(r["status"] == "not worse" for r in counted), (base, cand, margin)


def test_alpha_needs_the_gate_and_confidence_is_not_the_gate_s(runs):
    alone = CliRunner().invoke(main, ["compare", str(runs["good"]), str(runs["bad"]), "--alpha", "0.1"])
    assert alone.exit_code == 1 and alone.output.startswith("error: ") and "--gate" in alone.output
    conf = gate(runs["good"], runs["bad"], "--confidence", "0.9")
    assert conf.exit_code == 1 and conf.output.startswith("error: ") and "--alpha" in conf.output
    wide = gate(runs["good"], runs["bad"], "--alpha", "0.6")
    assert wide.exit_code == 1 and wide.output.startswith("error: ") and "Traceback" not in wide.output


def test_a_dimension_s_worse_end_comes_from_its_own_level() -> None:
    """`_at_levels` takes a dimension's WORSE end (compare's low end of baseline −
    candidate), its Monte Carlo error and its settling from the rows at 1 − 2·(its
    level), and every NOT WORSE end from the rows at 1 − α."""
    import polars as pl

    from vera.report.compare._gate import _at_levels

    asked: list[float] = []

    def diffs_at(confidence: float) -> pl.DataFrame:
        asked.append(round(confidence, 6))
        names = ["Confirms Risk", "Detects Potential Risk", "Overall"]
        return pl.DataFrame(
            {
                "dimension": names,
                "diff": [1.0, 1.0, 1.0],
                "diff_lo": [confidence] * 3,
                "diff_hi": [10 + confidence] * 3,
                "diff_lo_mc": [confidence / 10] * 3,
                "diff_hi_mc": [0.0] * 3,
                "settled": [confidence > 0.96] * 3,
                "bootstrap_resamples": [2000 if confidence < 0.96 else 8000] * 3,
            }
        )

    out, levels = _at_levels(diffs_at, 0.05)
    assert asked == [0.95, 0.975]  # two dimensions: α/4 each
    assert levels == {
        "Confirms Risk": (0.025, 0.0125),
        "Detects Potential Risk": (0.025, 0.0125),
        "Overall": (0.025, 0.025),
    }
    rows = {r["dimension"]: r for r in out.iter_rows(named=True)}
    assert rows["Overall"]["diff_lo"] == 0.95 and not rows["Overall"]["settled"]
    assert rows["Confirms Risk"]["diff_lo"] == 0.975 and rows["Confirms Risk"]["settled"]
    assert rows["Confirms Risk"]["diff_lo_mc"] == pytest.approx(0.0975)
    assert all(r["diff_hi"] == 10.95 for r in rows.values())
    assert all(r["bootstrap_resamples"] == 8000 for r in rows.values() if r["dimension"] != "Overall")


def _gate_process(runs, *, tty: bool) -> tuple[int, str]:
    """`vera compare good bad --gate` as a CI step runs it (a subprocess, CI=true), its
    standard output a pipe or, with `tty`, an 80-column terminal: the exit code and the
    output."""
    args = [sys.executable, "-m", "vera", "compare", str(runs["good"]), str(runs["bad"]), "--gate"]
    env = {**os.environ, "CI": "true", "COLUMNS": "80", "NO_COLOR": "1"}
    if not tty:
        done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        return done.returncode, done.stdout
    main_fd, child_fd = pty.openpty()
    with subprocess.Popen(args, stdout=child_fd, stderr=subprocess.DEVNULL, cwd=ROOT, env=env) as proc:
        os.close(child_fd)
        chunks = []
        while True:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = proc.wait(timeout=300)
    os.close(main_fd)
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def test_the_gate_report_fits_an_80_column_terminal(runs):
    code, output = _gate_process(runs, tty=True)
    assert code == 4
    assert widest_line(output) <= 80
    assert output.strip().splitlines()[-1].startswith("  ")  # the verdict wrapped, indented


def test_in_a_pipe_the_verdict_is_the_whole_last_line(runs):
    """A CI log is no terminal: the verdict stays one line, the last, so `tail -n 1` or
    `grep '^gate:'` gives all of it (as `vera run`'s status line), whatever COLUMNS says."""
    code, output = _gate_process(runs, tty=False)
    assert code == 4
    last = output.strip().splitlines()[-1]
    assert last.startswith("gate: WORSE (exit code 4) — the candidate is worse than the baseline")
    assert last.endswith("Overall.") and "\x1b" not in output and "\r" not in output


def _one_look(lo: float, hi: float, units: int = 20):
    from vera.report import GateLook
    from vera.stats import SequenceRow

    row = SequenceRow(dimension="Overall", diff=-97.1, lo=lo, hi=hi, status="worse")
    return [GateLook(wave=1, drawn=units, units=units, available=100, rows=[row], verdict="worse",
                     stopped="settled: WORSE")]  # fmt: skip


def test_a_gate_that_stopped_at_its_first_wave_draws_its_interval_on_whole_units() -> None:
    # A far worse candidate settles at the first wave: its one interval was a band of no
    # width (invisible), and the axis counted units in quarters (19.25, 19.5, ...).
    import re

    from vera.report import sequence_plot

    wide = sequence_plot(_one_look(-100.0, -38.4), 5.0)
    narrow = sequence_plot(_one_look(-100.0, -90.0), 5.0)
    assert wide.svg != narrow.svg and wide.png != narrow.png  # the interval is drawn
    ticks = [t for t in re.findall(rb">\s*([0-9.]+)\s*<", wide.svg)]
    assert ticks and all(b"." not in t for t in ticks), ticks


def test_the_gate_s_plot_writes_minus_one_way() -> None:
    # The legend read "−margin (-5.0)": a typographic minus, then a hyphen. It now writes
    # −margin as the card's caption does ("clears −5"), with the minus sign (U+2212) the
    # plot's tick labels use, and no hyphen-minus stands for a negative number anywhere.
    import re

    from vera.report import sequence_plot

    svg = sequence_plot(_one_look(-100.0, -38.4), 5.0).svg.decode()
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "−margin (−5)" in texts, texts
    assert any(t.startswith("−") and t[1:].isdigit() for t in texts), texts  # a negative tick
    assert not any(re.search(r"(^|[\s(])-\d", t) for t in texts), texts


def test_a_baseline_that_rated_nothing_is_undecided_and_says_why(runs):
    # Every row is left out (no baseline score): the verdict cannot pass, and its line
    # says why instead of an empty "()".
    result = gate_wide(runs["good-none"], runs["good"])
    assert result.exit_code == int(Exit.UNDECIDED) == 5, result.output
    text = " ".join(result.output.split())
    assert "()" not in text
    assert "no row was rated in the baseline, so there is nothing to compare" in text
    assert "check the baseline run" in text
    code, data = gate_json(runs["good-none"], runs["good"])
    assert code == 5 and data["verdict"] == "undecided" and not data["passed"]
    assert {r["reason"] for r in data["pairs"][0]["rows"]} == {"not rated in the baseline"}


def _cut_short(run: Path, to: Path) -> Path:
    """A copy of `run` as a kill left it half-way: its last judgements never written
    (records are appended as work finishes), and no card yet."""
    shutil.copytree(run, to)
    path = to / "judgements.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[: len(lines) // 2]))
    for name in ("card.json", "card.md", "card.html"):
        (to / name).unlink(missing_ok=True)
    return to


def test_an_unfinished_run_cannot_pass_the_gate_and_is_named(runs, tmp_path):
    """A CI job whose candidate run was cut short (killed, interrupted, stopped on its
    budget, failed work beyond --allow-failures) but whose gate step ran anyway: the gate
    compares what the run finished, says so, and never passes it; the JSON names it."""
    cut = _cut_short(runs["good-copy"], tmp_path / "cut")
    # On the half it finished the same chatbot is within 60 points: before, it passed.
    result = gate(runs["good"], cut, "--margin", "60")
    assert result.exit_code == 5, result.output
    text = " ".join(result.output.split())
    assert f"warning: the candidate run {cut} is not finished (status: incomplete —" in text
    assert "gate: UNDECIDED (exit code 5)" in text and f"the candidate {cut} is incomplete" in text
    assert "vera run --resume RUN_DIR" in text
    code, data = gate_json(runs["good"], cut, "--margin", "60")
    assert code == 5 and not data["passed"] and data["unfinished"] == ["candidate"]
    assert all(r["status"] == "not worse" for r in data["pairs"][0]["rows"] if r["diff"] is not None)
    assert data["candidate"]["state"] == "incomplete" and data["baseline"]["state"] == "complete"
    # An unfinished baseline holds the gate the same way.
    code, data = gate_json(cut, runs["good"], "--margin", "60")
    assert code == 5 and data["unfinished"] == ["baseline"]
    # WORSE stands on the work finished: an unfinished worse candidate still fails.
    bad_cut = _cut_short(runs["bad"], tmp_path / "bad-cut")
    code, data = gate_json(runs["good"], bad_cut)
    assert code == 4 and data["verdict"] == "worse" and data["unfinished"] == ["candidate"]
