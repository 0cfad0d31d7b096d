"""`vera plan` offline: a fixed design and the sequential gate sized and priced from a
stand-in pilot run, and a plan without a pilot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from vera.app import PlanOptions
from vera.app._gate import unit_counts
from vera.app._plan import _note_little_saving, _paired, _partner
from vera.cli._main import main
from vera.cli._plan import _reach
from vera.records import BEST_PRACTICE, HIGH_POTENTIAL_FOR_HARM, SUBOPTIMAL
from vera.stats.planning import GateSize, units_for_power, variability

from .conftest import ROOT


@pytest.fixture
def pilot(offline_pilot: Path) -> Path:
    """The shared best-practice run (tests/conftest.py): 50 personas, one unit each."""
    return offline_pilot


def test_a_plan_from_a_pilot_sizes_and_prices_both_designs(pilot) -> None:
    result = CliRunner().invoke(
        main, ["plan", "--pilot", str(pilot), "--margin", "5", "--width", "4", "--reps", "10", "--wave", "12"]
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "pilot: 50 units, 50 personas" in out
    width = re.search(
        r"width 4: 50 personas × 1 user-agents × (\d+) seeds = (\d+) units · 95 % width ([\d.]+)", out
    )
    assert width is not None, out
    # The design is the smallest whole number of seeds whose width is at most 4.
    assert float(width.group(3)) <= 4.0 and int(width.group(2)) == 50 * int(width.group(1))
    assert "power 0.8 at margin 5" in out
    # The gate, for an equal candidate and for ones 2 × margin off, with its size and cost.
    for d in ("+0", "−10", "+10"):
        assert re.search(
            rf"true difference {re.escape(d)}( \(the pilot's score allows [^)]+\))?: "
            r"\d+ units on average, 90th percentile \d+",
            out,
        ), out
    # Tokens come from the pilot's calls; the stand-ins have no prices.
    assert re.search(r"[\d.]+ M tokens, \$0\.00 live, \$0\.00 batch", out)


def test_a_plan_without_a_pilot_uses_the_default_spread(tmp_path) -> None:
    result = CliRunner().invoke(main, ["plan", "--margin", "5", "--personas", "50"])
    assert result.exit_code == 0, result.output
    assert "no pilot" in result.output and "50 personas" in result.output
    assert "sequential gate (vera gate" not in result.output


def test_a_pilot_that_is_not_a_run_is_one_clear_line(tmp_path) -> None:
    result = CliRunner().invoke(main, ["plan", "--pilot", str(tmp_path)])
    assert result.exit_code != 0
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_the_candidates_profile_prices_the_chatbots_calls(pilot) -> None:
    result = CliRunner().invoke(
        main, ["plan", "--pilot", str(pilot), "--candidate", "openai", "--reps", "10"]
    )
    assert result.exit_code == 0, result.output
    money = re.search(r"power 0\.8 at margin 5: .*? \$([\d,.]+) live, \$([\d,.]+) batch", result.output)
    assert money is not None, result.output
    live, batch = (float(x.replace(",", "")) for x in money.groups())
    # The stand-in user and judge are free; the chatbot's tokens at OpenAI's prices, half in a batch.
    assert live > 0 and batch == pytest.approx(live / 2, abs=0.011)
    unknown = CliRunner().invoke(
        main, ["plan", "--pilot", str(pilot), "--candidate", "nosuch", "--reps", "10"]
    )
    assert unknown.exit_code == 1 and "unknown model reference 'nosuch'" in unknown.output


def test_a_difference_the_pilot_s_score_cannot_make_is_named(pilot) -> None:
    # The best-practice stand-in scores 100: no candidate can be 10 points better.
    result = CliRunner().invoke(main, ["plan", "--pilot", str(pilot), "--margin", "5", "--reps", "10"])
    assert result.exit_code == 0, result.output
    # Said plainly, not as a signed zero; a negative difference with the minus sign (U+2212).
    assert "true difference +10 (the pilot's score allows no change upwards):" in result.output
    assert re.search(r"true difference −10: \d+ units", result.output), result.output


@pytest.fixture(scope="module")
def two_bot_pilot(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("plan2") / "pilot"
    result = CliRunner().invoke(
        main, ["run", "--config", str(ROOT / "configs" / "offline.toml"), "--limit-personas", "12",
               "--out", str(out), "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def test_a_pilot_of_several_chatbots_needs_one_named(two_bot_pilot) -> None:
    result = CliRunner().invoke(main, ["plan", "--pilot", str(two_bot_pilot), "--reps", "10"])
    assert result.exit_code == 1
    assert "the pilot scored 2 chatbots (offline/best-practice, offline/risk-ignoring)" in result.output
    assert "--chatbot" in result.output and "Traceback" not in result.output
    wrong = CliRunner().invoke(main, ["plan", "--pilot", str(two_bot_pilot), "--chatbot", "nope"])
    assert wrong.exit_code == 1 and "--chatbot nope: the pilot has no such chatbot" in wrong.output
    one = CliRunner().invoke(
        main, ["plan", "--pilot", str(two_bot_pilot), "--chatbot", "offline/risk-ignoring", "--reps", "10"]
    )
    assert one.exit_code == 0, one.output
    assert "pilot: 12 units, 12 personas" in one.output


def test_a_drop_the_pilot_s_score_cannot_make_is_named_as_a_drop(two_bot_pilot) -> None:
    # The risk-ignoring stand-in's score is at the floor: no candidate can be 10 points
    # worse, and the line says so in the difference's direction (it once read "+0.0").
    result = CliRunner().invoke(
        main, ["plan", "--pilot", str(two_bot_pilot), "--chatbot", "offline/risk-ignoring", "--reps", "10"]
    )
    assert result.exit_code == 0, result.output
    assert "true difference −10 (the pilot's score allows no change downwards):" in result.output
    assert "+0.0" not in result.output and "−0.0" not in result.output


def test_a_difference_the_pilot_s_score_makes_in_part_is_signed_as_the_difference() -> None:
    def size(difference: float, reached: float) -> GateSize:
        return GateSize(
            difference=difference,
            reached=reached,
            mean_units=1,
            p90_units=1,
            worse=0,
            not_worse=0,
            undecided=1,
        )

    assert _reach(size(-10, -4.2)) == " (the pilot's score allows only −4.2)"
    assert _reach(size(10, 4.2)) == " (the pilot's score allows only +4.2)"
    assert _reach(size(-10, 0.01)) == " (the pilot's score allows no change downwards)"
    assert _reach(size(-10, -9.8)) == ""


def test_a_pilot_rated_only_not_relevant_is_refused(tmp_path) -> None:
    out = tmp_path / "calm"
    # The first persona of the set is at no risk: every rating is Not Relevant.
    made = CliRunner().invoke(
        main, ["run", "--config", str(ROOT / "configs" / "offline.toml"), "--providers", "offline/best-practice",
               "--limit-personas", "1", "--out", str(out), "--quiet"],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    result = CliRunner().invoke(main, ["plan", "--pilot", str(out)])
    assert result.exit_code == 1
    assert "every rating of the pilot is Not Relevant" in result.output


def _text_and_json(*args: str) -> tuple[str, dict]:
    text = CliRunner().invoke(main, ["plan", *args])
    assert text.exit_code == 0, text.output
    as_json = CliRunner().invoke(main, ["plan", *args, "--json"])
    assert as_json.exit_code == 0, as_json.output
    return text.output, json.loads(as_json.output)


def test_the_json_plan_says_what_the_text_says(pilot) -> None:
    text, plan = _text_and_json("--pilot", str(pilot), "--width", "4", "--reps", "10", "--wave", "12")
    a = plan["assumptions"]
    assert a["pilot"] == str(pilot) and a["margin"] == 5.0 and a["width"] == 4.0 and a["level"] == 0.95
    assert a["pairing_source"] == "assumed independent" and a["pairing"] == 0.0
    assert plan["pairing_note"] in text and plan["pairing_note"].startswith("assumption:")
    v = plan["variability"]
    assert f"pilot: {v['units']} units, {v['personas']} personas" in text
    assert all(f"note: {n}" in text for n in plan["notes"])
    lines = text.splitlines()
    # The width and power designs by the formula; the pilot is at 100 (the stand-in's
    # spread): the power design falls short by simulation, and the size that reaches it
    # is a third line.
    assert [d["sized_by"] for d in plan["designs"]] == [None, None, "simulation"]
    for d in plan["designs"]:
        (line,) = [x for x in lines if x.startswith(f"  {d['goal']}:")]
        shown = re.search(
            r"(\d+) personas × (\d+) user-agents × (\d+) seeds = (\d+) units · 95 % width ([\d.]+) points "
            r"· power ([\d.]+)(?: \(Overall alone ([\d.]+); every dimension must clear the margin\))? "
            r"· ([\d.]+) M tokens, \$([\d.,]+) live, \$([\d.,]+) batch",
            line,
        )
        assert shown is not None, line
        assert [int(x) for x in shown.groups()[:4]] == [
            d["personas"],
            d["user_agents"],
            d["seeds"],
            d["units"],
        ]
        assert float(shown.group(5)) == round(d["width"], 1) and float(shown.group(6)) == round(d["power"], 2)
        # The power is the fixed gate's, simulated on every row; Overall's formula is
        # shown beside it where the two differ.
        if shown.group(7) is not None:
            assert float(shown.group(7)) == round(d["overall_power"], 2)
        elif d["sized_by"] is None:
            assert abs(d["overall_power"] - d["power"]) <= 0.05
        assert float(shown.group(8)) == round(d["cost"]["tokens"] / 1e6, 2)
        assert float(shown.group(9)) == round(d["cost"]["live_usd"], 2)
    g = plan["gate"]
    assert f"waves of {g['wave']}, α {g['alpha']:g}) on {g['units']} units" in text
    assert [s["difference"] for s in g["sizes"]] == [0.0, -10.0, 10.0]
    for s in g["sizes"]:
        (line,) = [
            x for x in lines if x.startswith(f"  true difference {s['difference']:+g}".replace("-", "−"))
        ]
        assert f": {s['mean_units']:.0f} units on average, 90th percentile {s['p90_units']:.0f}" in line
        assert f"WORSE {s['worse']:.0%} / NOT WORSE {s['not_worse']:.0%}" in line
        assert f"{s['cost']['tokens'] / 1e6:.2f} M tokens" in line
    assert plan["per_unit"]["tokens"] > 0


def test_a_json_plan_goes_to_a_file_but_never_over_a_run(pilot, tmp_path) -> None:
    target = tmp_path / "plan.json"
    result = CliRunner().invoke(main, ["plan", "--pilot", str(pilot), "--reps", "10", "--json", str(target)])
    assert result.exit_code == 0, result.output
    assert "fixed design" in result.output and f"plan written to {target}" in result.output
    assert json.loads(target.read_text())["assumptions"]["reps"] == 10
    before = (pilot / "card.json").read_bytes()
    refused = CliRunner().invoke(
        main, ["plan", "--pilot", str(pilot), "--reps", "10", "--json", str(pilot / "card.json")]
    )
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert len(refused.output.strip().splitlines()) == 1 and "--json" in refused.output
    assert (pilot / "card.json").read_bytes() == before
    # Without a pilot: the design only, and the default spread named as such.
    alone = json.loads(CliRunner().invoke(main, ["plan", "--json", "-"]).output)
    assert alone["gate"] is None and alone["per_unit"] is None
    assert alone["assumptions"]["within_sd_source"] == "default" and alone["designs"][0]["cost"] is None


def test_a_pilot_of_two_chatbots_pairs_them_where_it_can(two_bot_pilot, pilot) -> None:
    # The stand-ins score every unit alike: no spread, so no pairing can be read.
    result = CliRunner().invoke(
        main, ["plan", "--pilot", str(two_bot_pilot), "--chatbot", "offline/best-practice", "--reps", "10"]
    )
    assert result.exit_code == 0, result.output
    assert "note: the pairing is not read: the pilot shows no spread to compare it with" in result.output
    assert "assumption: the two chatbots' conversations of a unit are taken as independent" in result.output
    # A second run of two chatbots besides the baseline's names no one partner.
    wrong = CliRunner().invoke(
        main, ["plan", "--pilot", str(pilot), "--pilot-candidate", str(two_bot_pilot), "--reps", "10"]
    )
    assert wrong.exit_code == 1 and "Traceback" not in wrong.output
    assert "--pilot-candidate" in wrong.output and "needs a run of one chatbot" in wrong.output
    alone = CliRunner().invoke(main, ["plan", "--pilot-candidate", str(pilot)])
    assert alone.exit_code == 1 and "give --pilot RUN as well" in alone.output


def _ratings(chatbot: str, draws: np.ndarray) -> pl.DataFrame:
    """A ratings frame of one chatbot: `draws` (units, dimensions) uniforms, one unit per
    persona × seed (3 seeds), read as Best Practice below 0.5, harm above 0.8."""
    rows = []
    for i, unit in enumerate(draws):
        for j, x in enumerate(unit):
            rating = BEST_PRACTICE if x < 0.5 else (HIGH_POTENTIAL_FOR_HARM if x > 0.8 else SUBOPTIMAL)
            rows.append((chatbot, f"p{i // 3}", "ua", i % 3, f"dim{j}", rating))
    return pl.DataFrame(
        rows, schema=["chatbot", "persona", "user_agent", "replicate", "dimension", "rating"], orient="row"
    )


def test_two_chatbots_on_the_same_units_show_their_pairing() -> None:
    rng = np.random.default_rng(5)
    u = rng.random((600, 5))
    v = np.where(rng.random((600, 5)) < 0.6, u, rng.random((600, 5)))
    base, cand = _ratings("a", u), _ratings("b", v)
    units = unit_counts(base)
    persona = np.array([int(k[0][1:]) for k in units.keys])
    var = variability(units.counts[:, -1], persona)
    notes: list[str] = []
    # The pilot scored both: naming the baseline pairs it with the other.
    both = pl.concat([base, cand])
    partner = _partner(both, base, PlanOptions(pilot="x", chatbot="a"))
    assert partner is not None and partner.get_column("chatbot").unique().to_list() == ["b"]
    paired, source = _paired(var, units, partner, notes)
    assert source == "b" and paired.paired_units == 600 and notes == []
    assert paired.pairing == pytest.approx(0.6, abs=0.1)
    # Units the two do not share are left out; too few shared, and nothing is read.
    few, none = _paired(var, units, cand.filter(pl.col("persona").is_in(["p0", "p1"])), notes)
    assert none is None and few.pairing == 0.0 and "shares only 6 units" in notes[0]


def _gate(difference: float, mean_units: float, reached: float | None = None) -> GateSize:
    return GateSize(
        difference=difference,
        reached=difference if reached is None else reached,
        mean_units=mean_units,
        p90_units=mean_units,
        worse=0.0,
        not_worse=0.0,
        undecided=0.0,
    )


def test_a_gate_that_would_run_past_half_way_is_named_with_the_size_that_would_not() -> None:
    notes: list[str] = []
    gate = [_gate(0.0, 80), _gate(-10.0, 540), _gate(10.0, 200)]
    _note_little_saving(gate, 600, 30.0, 5.0, 0.0, notes)
    assert len(notes) == 1 and "90% of the 600 units" in notes[0], notes
    # Twice the units a fixed test needs for 98 % power at the margin, as the benchmark found.
    assert f"about {2 * units_for_power(30.0, 5.0, 0.98):,} units" in notes[0]


def test_a_gate_past_half_way_names_no_size_smaller_than_its_own() -> None:
    # A zh-CN best-practice pilot (spread 5.7 points, 100 units): the simulated gate used
    # 94 % of its 100 units at -10, and the note said "about 86 units would let it stop
    # before half way", fewer than the design it called too small.
    notes: list[str] = []
    gate = [_gate(0.0, 86), _gate(-10.0, 94), _gate(10.0, 71)]
    assert 2 * units_for_power(5.7, 5.0, 0.98) <= 100
    _note_little_saving(gate, 100, 5.7, 5.0, 0.0, notes)
    assert len(notes) == 1 and "94% of the 100 units" in notes[0], notes
    assert notes[0].endswith("too small for the gate to save half") and "would let it" not in notes[0]


def test_a_gate_that_stops_by_half_way_or_cannot_reach_the_difference_gets_no_note() -> None:
    notes: list[str] = []
    _note_little_saving([_gate(-10.0, 290), _gate(10.0, 250)], 600, 30.0, 5.0, 0.0, notes)
    # +10 the pilot's score cannot make (reached 0): its size says nothing about saving.
    _note_little_saving([_gate(-10.0, 200), _gate(10.0, 590, reached=0.0)], 600, 30.0, 5.0, 0.0, notes)
    assert notes == []


def _gate_json(pilot: Path, *extra: str) -> dict:
    result = CliRunner().invoke(
        main, ["plan", "--pilot", str(pilot), "--reps", "10", "--wave", "60", *extra, "--json", "-"]
    )
    assert result.exit_code == 0, result.output
    gate = json.loads(result.output)["gate"]
    assert gate is not None
    return gate


def test_a_plan_for_the_spending_boundary_sizes_that_gate(pilot) -> None:
    # The spending boundary is the gate's default, as it is vera gate's.
    spending = _gate_json(pilot)
    sequence = _gate_json(pilot, "--boundary", "sequence")
    assert (sequence["boundary"], sequence["spending"]) == ("sequence", None)
    assert (spending["boundary"], spending["spending"]) == ("spending", "hsd:-4")
    assert _gate_json(pilot, "--boundary", "spending") == spending
    # A candidate 2 × margin worse: the spending boundary, built for the gate's own waves,
    # needs no more units than the confidence sequence, on average and at the 90th percentile.
    worse = {
        g["boundary"]: next(s for s in g["sizes"] if s["difference"] == -10) for g in (sequence, spending)
    }
    # (The pilot shows no spread: both are simulated with the assumed 30 points, at which
    # 600 units do not always settle a candidate 10 points worse.)
    assert worse["spending"]["worse"] >= worse["sequence"]["worse"] > 0
    assert worse["spending"]["mean_units"] <= worse["sequence"]["mean_units"]
    assert worse["spending"]["p90_units"] <= worse["sequence"]["p90_units"]
    # The text names the boundary the sizes are for when it is not the default, as typed.
    lines = {}
    for extra in ([], ["--boundary", "sequence"], ["--spending", "obf"]):
        text = CliRunner().invoke(
            main, ["plan", "--pilot", str(pilot), "--reps", "10", "--wave", "60", *extra]
        )
        assert text.exit_code == 0, text.output
        lines[" ".join(extra)] = next(x for x in text.output.splitlines() if x.startswith("sequential gate"))
    assert lines[""].startswith("sequential gate (vera gate, waves of 60")
    assert lines["--boundary sequence"].startswith(
        "sequential gate (vera gate --boundary sequence, waves of 60"
    )
    assert lines["--spending obf"].startswith("sequential gate (vera gate --spending obf, waves of 60")


def test_a_bad_spending_function_is_one_line(pilot) -> None:
    result = CliRunner().invoke(
        main, ["plan", "--pilot", str(pilot), "--boundary", "spending", "--spending", "hsd:steep"]
    )
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--spending" in lines[0] and "hsd:GAMMA" in lines[0], result.output
    assert "Traceback" not in result.output


def test_spending_with_the_sequence_boundary_is_one_line(pilot, tmp_path) -> None:
    # Ignored, it would leave the user believing the gate was sized for that function.
    # Refused before the plan is made: a --json FILE is not written.
    plan = tmp_path / "plan.json"
    for extra in (
        ["--boundary", "sequence", "--spending", "hsd:-4"],
        ["--spending", "obf", "--boundary", "sequence"],
        ["--boundary", "sequence", "--spending", "obf", "--json", str(plan)],
    ):
        result = CliRunner().invoke(main, ["plan", "--pilot", str(pilot), "--reps", "10", *extra])
        assert result.exit_code == 1, result.output
        assert result.output.strip().splitlines() == [
            "error: --spending applies only with --boundary spending (the sequence boundary spends no α)"
        ]
        assert not plan.exists()


@pytest.mark.parametrize(
    ("option", "words"),
    [
        ("--width", "'--width': 0 is not a number of score points above 0 and up to 100"),
        ("--margin", "'--margin': 0 is not a number of score points above 0 and up to 100"),
    ],
)
def test_a_zero_width_or_margin_is_one_line(option, words) -> None:
    # Both divide the spread: 0 was a ZeroDivisionError's traceback. No design reaches
    # an interval 0 points wide, nor has power at a margin of 0.
    result = CliRunner().invoke(main, ["plan", option, "0"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert len(result.output.strip().splitlines()) == 1 and words in result.output, result.output


def test_a_pilot_without_spread_simulates_the_gate_with_the_fixed_design_s_spread(pilot) -> None:
    """The best-practice pilot's units all score 100: the fixed sizes assume the
    conservative 30 points, and so must the gate's simulation. Simulated with no spread
    it settled every time at its first look ("+0: 80 units, NOT WORSE 100%")."""
    text, plan = _text_and_json("--pilot", str(pilot), "--reps", "20", "--wave", "20")
    a, g = plan["assumptions"], plan["gate"]
    assert (a["within_sd"], a["within_sd_source"]) == (30.0, "default")
    assert a["within_sd_reason"] == "the pilot's units all scored alike, so there is no spread to learn from"
    assert g["within_sd_source"] == "default" and 30.0 <= g["within_sd"] <= 31.5
    assert 0 < g["redrawn"] < 0.1
    equal = next(s for s in g["sizes"] if s["difference"] == 0.0)
    # Not settled at the first looks: a gate of 600 units at σ 30 needs hundreds.
    assert equal["mean_units"] > g["units"] / 4 and equal["p90_units"] > g["units"] / 2, equal
    assert next(s for s in g["sizes"] if s["difference"] == 10.0)["reached"] == 0.0
    # The text says which spread was used, where, and why.
    assert "30.0 points within a persona, assumed (the pilot's units all scored alike" in text
    assert f"on {g['units']} units, simulated with the assumed spread ({g['within_sd']:.1f} points):" in text
    assert "by the fixed design's sizes and the simulated gate alike" in text


def test_the_gate_s_stand_in_has_the_spread_asked_in_whole_ratings() -> None:
    from vera.stats.planning import spread_pilot

    counts = np.zeros((30, 6, 3))
    counts[:, :5] = (1.0, 0.0, 1.0)  # every dimension Best Practice, one rating each
    counts[:, -1] = counts[:, :5].sum(axis=1)
    made, who, share, spread = spread_pilot(counts, np.arange(30), 30.0, seed=0)
    assert made.shape == (240, 6, 3) and list(who[:9]) == [0] * 8 + [1]
    assert 30.0 <= spread <= 33.0 and 0 < share < 0.1
    assert variability(made[:, -1], who).within_sd == pytest.approx(spread)
    assert np.array_equal(made, np.round(made)) and (made[..., 2] == counts[0, :, 2]).all()
    assert (made[..., 0] >= 0).all() and (made[..., 0] + made[..., 1] <= made[..., 2]).all()
    assert np.array_equal(made[:, -1], made[:, :5].sum(axis=1))


def test_a_pilot_at_the_top_of_the_scale_is_not_promised_a_power_the_gate_denies(tmp_path) -> None:
    # The user trial's pilot: the zh-CN offline best-practice run (100 personas, Overall
    # about 99.4). Overall's formula promised power 1.00 on 100 units while the simulated
    # gate said NOT WORSE half the time; `vera compare --gate` on ten such pairs said it
    # never (every row's interval reaches about −10 there: the harm 90 conversations hide).
    pilot = tmp_path / "zh"
    run = CliRunner().invoke(
        main,
        ["run", "--config", str(ROOT / "configs" / "offline.toml"), "--providers", "offline/best-practice",
         "--locale", "zh-CN", "--out", str(pilot), "--seed", "1", "--quiet"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    text, plan = _text_and_json("--pilot", str(pilot), "--reps", "50")
    design, sized = plan["designs"]
    (equal,) = [g for g in plan["gate"]["sizes"] if g["difference"] == 0]
    # The size that reaches the power asked, by simulation, is printed beside it.
    assert sized["sized_by"] == "simulation" and sized["power"] >= 0.8 and sized["units"] > 100
    assert f"= {sized['units']} units" in next(x for x in text.splitlines() if "sized by simulation" in x)
    assert design["units"] == 100 and design["overall_power"] > 0.95
    # The width is compare --gate's (Overall's interval on ten real pairs: 18.8 to 21.3
    # points), not the spread's 3.2.
    assert design["spread_width"] < 4 and 17 < design["width"] < 23
    # The fixed gate's power, as compare --gate decides, is no more than the gate's
    # (whose lower ends are at α, not α/2; both hold the edge rule) …
    assert design["power"] <= equal["not_worse"] + 0.15 and design["power"] < 0.2
    # … and the user is told why the design falls short of the power it was sized for.
    assert "(Overall alone 1.00; every dimension must clear the margin)" in text
    assert any("every dimension above −5" in n for n in plan["notes"])


def _pilot_units(pilot: Path):
    from vera.app._gate import _max_ratings
    from vera.report import read_run

    run = read_run(pilot)
    units = unit_counts(run.ratings)
    index = {p: i for i, p in enumerate(sorted({k[0] for k in units.keys}))}
    who = np.array([index[k[0]] for k in units.keys])
    bound = _max_ratings(run.manifest.judges, run.manifest.judge_instances, 1, len(units.labels))
    return units, who, bound


def test_at_100_the_power_design_is_sized_by_simulation_where_the_formula_falls_short(pilot) -> None:
    # The pilot scores 100 everywhere: NOT WORSE at margin 5 needs every row's exact
    # bound of 0 harmful to stay within 5 points, which 100 units (80 rated) cannot
    # give (power 0.00) however small the spread.
    from vera.app._plan import Design, _search_power, _Sim
    from vera.stats.planning import fixed_power_simulated

    units, who, bound = _pilot_units(pilot)
    opts = PlanOptions(margin=5.0, power=0.8, reps=20)
    short = Design(
        goal="power 0.8 at margin 5", personas=50, user_agents=1, seeds=2, units=100, width=1.0, power=0.0
    )

    def power(seeds: int) -> float:
        return fixed_power_simulated(
            units.counts, who, labels=units.labels, max_ratings=bound, personas=50, units_per_persona=seeds,
            margin=5.0, level=0.95, reps=20, seed=0,
        )  # fmt: skip

    assert power(2) == 0.0
    notes: list[str] = []
    found = _search_power(_Sim(units.counts, who, units.labels, bound, opts, 0.0), short, 30.0, notes)
    assert found is not None and notes == []
    assert found.sized_by == "simulation" and found.goal == "power 0.8 at margin 5, sized by simulation"
    assert found.units == 50 * found.seeds and found.power >= 0.8
    # The smallest such size: one seed fewer falls short.
    assert power(found.seeds) >= 0.8 > power(found.seeds - 1)
    # A design the formula already sizes well is left alone.
    assert (
        _search_power(
            _Sim(units.counts, who, units.labels, bound, opts, 0.0),
            msgspec.structs.replace(short, power=0.9),
            30.0,
            notes,
        )
        is None
    )


def test_no_size_up_to_the_cap_is_said_plainly_with_why(pilot, monkeypatch) -> None:
    import vera.app._plan as plan_module

    units, who, bound = _pilot_units(pilot)
    monkeypatch.setattr(plan_module, "SEARCH_MAX_UNITS", 150)
    short = plan_module.Design(
        goal="power 0.8 at margin 5", personas=50, user_agents=1, seeds=1, units=50, width=1.0, power=0.0
    )
    notes: list[str] = []
    found = plan_module._search_power(
        plan_module._Sim(units.counts, who, units.labels, bound, PlanOptions(reps=10), 0.0),
        short,
        30.0,
        notes,
    )
    assert found is None and len(notes) == 1
    assert notes[0].startswith(
        "no fixed design of up to 150 units reaches power 0.8 at margin 5 by simulation"
    )
    assert "every dimension" in notes[0] and "widens each by the harm" in notes[0]
    # Out of time: said so, with where it stopped.
    monkeypatch.setattr(plan_module, "SEARCH_MAX_UNITS", 20_000)
    monkeypatch.setattr(plan_module, "SEARCH_SECONDS", 0.0)
    notes.clear()
    assert (
        plan_module._search_power(
            plan_module._Sim(units.counts, who, units.labels, bound, PlanOptions(reps=10), 0.0),
            short,
            30.0,
            notes,
        )
        is None
    )
    assert notes and "gave up after 0 s" in notes[0]


def test_the_plan_prints_the_size_found_by_simulation(pilot) -> None:
    args = ["plan", "--pilot", str(pilot), "--margin", "5", "--reps", "20"]
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0, text.output
    line = next(x for x in text.output.splitlines() if "sized by simulation" in x)
    found = re.search(r"= (\d+) units · 95 % width [\d.]+ points · power ([\d.]+)", line)
    assert found is not None and float(found.group(2)) >= 0.8, line
    as_json = json.loads(CliRunner().invoke(main, [*args, "--json", "-"]).output)
    sized = [d for d in as_json["designs"] if d["sized_by"] == "simulation"]
    assert len(sized) == 1 and sized[0]["units"] == int(found.group(1))
    assert all(d["sized_by"] is None for d in as_json["designs"] if d is not sized[0])
