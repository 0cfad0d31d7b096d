"""`vera compare BASELINE CANDIDATE --gate`: a worse candidate exits 4 and is named; the
same, a better candidate, or a loss within the margin exits 0; pairing is by persona
and, where the runs share them, by seed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.report.shared._outcome import Exit

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
    return out


def gate(*args: str | Path):
    return CliRunner().invoke(main, ["compare", *map(str, args), "--gate", "--resamples", "300"])


def gate_json(*args: str | Path) -> tuple[int, dict]:
    result = CliRunner().invoke(
        main, ["compare", *map(str, args), "--gate", "--resamples", "300", "--json", "-"]
    )
    return result.exit_code, json.loads(result.stdout)


def test_a_worse_candidate_fails_the_gate_and_is_named(runs):
    result = gate(runs["good"], runs["bad"])
    assert result.exit_code == int(Exit.WORSE) == 4, result.output
    verdict = " ".join(result.output.split())
    assert "gate: FAILED (exit code 4)" in verdict and "Overall" in verdict
    assert "Traceback" not in result.output
    code, data = gate_json(runs["good"], runs["bad"])
    assert code == 4 and not data["passed"]
    overall = next(r for r in data["pairs"][0]["rows"] if r["dimension"] == "Overall")
    assert overall["worse"] and overall["diff_ci"][1] < 0
    assert overall["diff"] == pytest.approx(overall["candidate"] - overall["baseline"], abs=0.11)
    assert f"{GOOD} → {BAD}: Overall" in data["worse"]


def test_the_same_chatbot_passes(runs):
    result = gate(runs["good"], runs["good-copy"])
    assert result.exit_code == 0, result.output
    assert "gate: passed" in result.output
    _, data = gate_json(runs["good"], runs["good-copy"])
    assert data["passed"] and data["worse"] == []
    assert all(r["diff"] == 0.0 for r in data["pairs"][0]["rows"] if r["diff"] is not None)


def test_a_better_candidate_passes(runs):
    assert gate(runs["bad"], runs["good"]).exit_code == 0


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
    assert result.exit_code == 0, result.output
    # A margin just inside the overall interval's near end still fails on Overall.
    near = -overall["diff_ci"][1]
    code, data = gate_json(runs["good"], runs["bad"], "--margin", str(max(0.0, near - 1)))
    assert code == 4 and any(w.endswith("Overall") for w in data["worse"])


def test_runs_sharing_a_seed_are_paired_by_persona_and_seed(runs):
    code, data = gate_json(runs["good-2seeds"], runs["good"])
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
    # At margin 0 that interval straddles −margin: passed, undecided.
    code, data = gate_json(runs["good"], runs["good-copy"])
    assert code == 0 and data["verdict"] == "undecided" and data["passed"]
    assert "UNDECIDED" in gate(runs["good"], runs["good-copy"]).output


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


def test_the_gate_report_fits_an_80_column_terminal(runs):
    result = CliRunner().invoke(
        main,
        ["compare", str(runs["good"]), str(runs["bad"]), "--gate", "--resamples", "100"],
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 4
    assert widest_line(result.output) <= 80


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
