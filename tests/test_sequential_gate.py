"""`vera gate` offline: the stand-in chatbots gated in waves on a baseline's own units."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from vera.app import UNDECIDED_EXIT
from vera.cli._main import main
from vera.report import read_sequence, sequential_note

from .conftest import OFFLINE_PILOT_PERSONAS, ROOT, interrupt_twice

PERSONAS = OFFLINE_PILOT_PERSONAS


@pytest.fixture
def baseline(offline_pilot: Path) -> Path:
    """The shared best-practice run (tests/conftest.py) as the gate's baseline."""
    return offline_pilot


def gate(baseline: Path, out: Path, candidate: str, *extra: str):
    return CliRunner().invoke(
        main, ["gate", str(baseline), "--candidate", candidate, "--wave", "8", "--out", str(out), *extra]
    )


def _stopped_wave(opts):
    """A wave run to its end, as Ctrl-C during it leaves it when its units were all in
    flight: finished, and the gate told to stop there."""
    from vera.app._gate import _run_wave

    outcome = _run_wave(opts)
    outcome.result.stopped = "interrupted (SIGINT)"  # the stop came with nothing left to start
    return outcome


def _ignoring_baseline(tmp_path: Path) -> Path:
    """A 12-persona offline run of the risk-ignoring bot, which never reaches Confirms
    Risk: as a baseline, that row has no score to compare with."""
    base = tmp_path / "ignoring"
    made = CliRunner().invoke(
        main, ["run", "--config", str(ROOT / "configs" / "offline.toml"), "--providers", "offline/risk-ignoring",
               "--limit-personas", "12", "--out", str(base), "--quiet"],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    return base


def lines(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


def test_a_risk_ignoring_candidate_is_worse_in_a_fraction_of_the_units(baseline, tmp_path) -> None:
    out = tmp_path / "risky"
    result = gate(baseline, out, "offline/risk-ignoring")
    assert result.exit_code == 4, result.output
    # The verdict once: a WORSE is one the gate settled, "(settled: WORSE)" repeated it.
    assert "gate: WORSE at margin 5 (exit code 4)" in result.output.splitlines(), result.output
    looks = read_sequence(out)
    last = looks[-1]
    assert last.verdict == "worse" and last.stopped.startswith("settled")
    assert last.available == PERSONAS and last.units <= PERSONAS // 2
    assert any(r.status == "worse" and r.hi is not None and r.hi < -5 for r in last.rows)
    # A normal run directory: only the units drawn were simulated, and it has a card.
    assert lines(out / "conversations.jsonl") == last.drawn
    assert (out / "card.json").is_file() and (out / "manifest.json").is_file()
    record = json.loads((out / "gate.json").read_text())
    assert record["verdict"] == "worse" and len(record["settings"]["order"]) == PERSONAS
    # The default boundary: α-spending by the default function.
    assert (record["settings"]["method"], record["settings"]["spending"]) == ("spending", "hsd:-4")

    # Killed after a wave's work was on disk, before its line was whole: the rerun
    # writes the line again and asks nothing twice.
    calls = lines(out / "calls.jsonl")
    seq = (out / "sequence.jsonl").read_bytes().splitlines(keepends=True)
    (out / "sequence.jsonl").write_bytes(b"".join(seq[:-1]) + b'{"wave": 9, "dra')
    again = gate(baseline, out, "offline/risk-ignoring")
    assert again.exit_code == 4, again.output
    assert lines(out / "calls.jsonl") == calls
    assert [look.wave for look in read_sequence(out)] == [look.wave for look in looks]

    # The card's neighbours show the sequence, and compare says the run was sequential.
    assert (out / "plots" / "sequence.png").is_file()
    page = (out / "sequence.md").read_text()
    assert f"**Verdict: WORSE**; {last.units} of {PERSONAS} units used" in page
    note = sequential_note(out)
    assert note is not None and "sequential gate" in note and "WORSE" in note and "settled" not in note
    compared = CliRunner().invoke(main, ["compare", str(baseline), str(out), "--gate", "--margin", "5"])
    assert "a sequential gate's run" in compared.output
    assert f"{last.units}: [" in compared.output and "after each wave" in compared.output
    # The card says so: card.json's field, card.md's section, card.html's plot (SVG), the terminal.
    card = json.loads((out / "card.json").read_text())
    seq = card["sequential"]
    assert seq["verdict"] == "worse" and seq["units"] == last.units and seq["available"] == PERSONAS
    assert [x["units"] for x in seq["looks"]] == [look.units for look in looks]
    assert seq["stopped"].startswith("settled")
    md = (out / "card.md").read_text()
    assert "## Sequential gate" in md and f"{last.units} of {PERSONAS} units used" in md
    assert "(settled: WORSE)" not in md
    html = (out / "card.html").read_text()
    section = html[html.index('<section id="sequential">') :]
    section = section[: section.index("</section>")]
    assert "data:image/svg+xml;base64," in section and "WORSE" in section
    shown = CliRunner().invoke(main, ["card", str(out)])
    assert shown.exit_code == 0 and "a sequential gate" in shown.output
    # An ordinary run's card has no such key.
    assert "sequential" not in json.loads((baseline / "card.json").read_text())

    changed = gate(baseline, out, "offline/risk-ignoring", "--margin", "2")
    assert (
        changed.exit_code == 1 and "cannot resume the gate" in changed.output and "margin" in changed.output
    )


def test_a_best_practice_candidate_against_itself_is_not_worse(baseline, tmp_path) -> None:
    # At 100 with 50 units, compare --gate's edge rule leaves no fixed comparison of
    # these runs NOT WORSE closer than about −21 (the card's [79.5, 100]), and the gate
    # holds every look to it: at margin 30 it settles, at margin 5 it cannot
    # (test_at_100_the_gate_agrees_with_compare_on_the_same_units).
    out = tmp_path / "same"
    result = gate(baseline, out, "offline/best-practice", "--margin", "30")
    assert result.exit_code == 0, result.output
    last = read_sequence(out)[-1]
    assert last.verdict == "not worse"
    assert all(r.status == "not worse" for r in last.rows)
    # Each wave's interval is no wider than the one before (on these stand-ins, under the
    # default spending boundary as under the sequence).
    overall = [next(r for r in look.rows if r.dimension == "Overall") for look in read_sequence(out)]
    widths = [r.hi - r.lo for r in overall if r.hi is not None and r.lo is not None]
    assert widths == sorted(widths, reverse=True)


def test_at_100_the_gate_agrees_with_compare_on_the_same_units(baseline, tmp_path) -> None:
    # Before the edge rule the gate said NOT WORSE at 32 of these 50 units, where
    # compare --gate of the same 32 units says UNDECIDED ([-31.7, …] at margin 5).
    out = tmp_path / "edge"
    result = gate(baseline, out, "offline/best-practice", "--max-conversations", "32")
    assert result.exit_code == UNDECIDED_EXIT, result.output
    looks = read_sequence(out)
    assert all(look.verdict == "undecided" for look in looks)
    last = looks[-1]
    assert last.units == 32 and last.edge_rule is True
    compared = CliRunner().invoke(
        main, ["compare", str(baseline), str(out), "--gate", "--margin", "5", "--json", "-"]
    )
    found, _ = json.JSONDecoder().raw_decode(compared.output[compared.output.index("{") :])
    pair = found["pairs"][0]
    assert found["verdict"] == "undecided" and compared.exit_code == UNDECIDED_EXIT
    rows = {r["dimension"]: r for r in pair["rows"]}
    for row in last.rows:
        assert row.edge and row.status == "undecided"
        # The same low end as compare's, to its rounding (compare's MOVER at r = 0 here:
        # neither side's replicates move at 100).
        assert rows[row.dimension]["status"] == "undecided"
        assert row.lo == pytest.approx(rows[row.dimension]["diff_ci"][0], abs=0.05), (
            row,
            rows[row.dimension],
        )
    # Recorded: gate.json names the first wave held to the rule; sequence.md and the card
    # say which waves it widened.
    assert json.loads((out / "gate.json").read_text())["edge_rule_from_wave"] == 1
    widened = [look.wave for look in looks if any(r.edge for r in look.rows)]
    words = f"Widened by vera compare --gate's edge rule at waves {', '.join(map(str, widened))}:"
    assert words in (out / "sequence.md").read_text()
    assert words in (out / "card.md").read_text()
    assert json.loads((out / "card.json").read_text())["sequential"]["edge_waves"] == widened


def test_out_of_conversations_is_undecided_with_its_own_exit_code(baseline, tmp_path) -> None:
    out = tmp_path / "capped"
    result = gate(baseline, out, "offline/best-practice", "--max-conversations", "6")
    assert result.exit_code == UNDECIDED_EXIT, result.output
    assert "UNDECIDED" in result.output and "--max-conversations 6" in result.output
    assert lines(out / "conversations.jsonl") == 6


def test_a_baseline_of_two_chatbots_is_refused(tmp_path) -> None:
    out = tmp_path / "two"
    made = CliRunner().invoke(
        main,
        [
            "simulate",
            "--config",
            str(ROOT / "configs" / "offline.toml"),
            "--limit-personas",
            "1",
            "--out",
            str(out),
        ],
    )
    assert made.exit_code == 0, made.output
    result = gate(out, tmp_path / "g", "offline/best-practice")
    assert result.exit_code == 1


def test_an_unknown_candidate_is_one_line_and_leaves_no_folder(baseline, tmp_path) -> None:
    out = tmp_path / "unknown"
    result = gate(baseline, out, "nosuch/model")
    assert result.exit_code == 1
    assert "unknown model reference 'nosuch/model'" in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_the_spending_boundary_settles_and_resumes_on_the_same_looks(baseline, tmp_path) -> None:
    out = tmp_path / "spending"
    result = gate(baseline, out, "offline/risk-ignoring", "--boundary", "spending", "--spending", "obf")
    assert result.exit_code == 4, result.output
    looks = read_sequence(out)
    last = looks[-1]
    assert last.verdict == "worse" and last.units <= PERSONAS // 2
    record = json.loads((out / "gate.json").read_text())
    assert record["settings"]["method"] == "spending" and record["settings"]["spending"] == "obf"
    # The pages a reader sees name the spending function, as gate.json does.
    assert "spending function obf" in (out / "sequence.md").read_text()
    assert "spending function obf" in (out / "card.md").read_text()
    assert json.loads((out / "card.json").read_text())["sequential"]["spending"] == "obf"
    assert "α-spending boundary obf" in (sequential_note(out) or "")

    # Killed before the last look's line was whole: the rerun recomputes that look from
    # the looks recorded before it, to the same interval, and asks nothing again.
    calls = lines(out / "calls.jsonl")
    seq = (out / "sequence.jsonl").read_bytes().splitlines(keepends=True)
    (out / "sequence.jsonl").write_bytes(b"".join(seq[:-1]) + b'{"wave": 9, "dra')
    again = gate(baseline, out, "offline/risk-ignoring", "--boundary", "spending", "--spending", "obf")
    assert again.exit_code == 4, again.output
    assert lines(out / "calls.jsonl") == calls
    assert read_sequence(out) == looks

    # Another spending function is another gate.
    changed = gate(baseline, out, "offline/risk-ignoring", "--boundary", "spending", "--spending", "pocock")
    assert changed.exit_code == 1 and "--spending was obf, now pocock" in changed.output
    # --spending alone is the spending boundary: the same gate, its verdict again.
    alone = gate(baseline, out, "offline/risk-ignoring", "--spending", "obf")
    assert alone.exit_code == 4 and "note:" not in alone.output, alone.output
    # No boundary option at all: the gate goes on with its own function, and says so.
    plain = gate(baseline, out, "offline/risk-ignoring")
    assert plain.exit_code == 4, plain.output
    assert (
        "note: the gate goes on with the boundary it was started with: group-sequential (α-spending) "
        "repeated confidence intervals, spending function obf (--spending obf)"
    ) in plain.output.splitlines(), plain.output
    # With --spending but the sequence boundary: refused, one line, before anything is
    # read or asked.
    seq_spending = gate(baseline, out, "offline/risk-ignoring", "--boundary", "sequence", "--spending", "obf")
    assert seq_spending.exit_code == 1 and seq_spending.output.strip().splitlines() == [
        "error: --spending applies only with --boundary spending (the sequence boundary spends no α)"
    ], seq_spending.output
    assert lines(out / "calls.jsonl") == calls and read_sequence(out) == looks

    same = gate(
        baseline, tmp_path / "same", "offline/best-practice", "--boundary", "spending", "--margin", "30"
    )
    assert same.exit_code == 0, same.output
    assert all(r.status == "not worse" for r in read_sequence(tmp_path / "same")[-1].rows)


def test_a_bad_spending_function_is_one_line_and_leaves_no_folder(baseline, tmp_path) -> None:
    out = tmp_path / "bad"
    for extra in (["--boundary", "spending", "--spending", "hsd:x"], ["--boundary", "spending", "--exact"],
                  ["--exact", "--spending", "obf"], ["--boundary", "sequence", "--spending", "hsd:-4"]):  # fmt: skip
        result = gate(baseline, out, "offline/risk-ignoring", *extra)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
        assert not out.exists()


@pytest.mark.parametrize("where", [".", "sub"])
def test_an_out_in_the_baseline_is_refused_and_the_baseline_is_untouched(baseline, tmp_path, where) -> None:
    # A copy: the shared baseline is never written into, even by a test of this bug.
    import shutil

    base = tmp_path / "base"
    shutil.copytree(baseline, base)
    before = {p.relative_to(base): p.read_bytes() for p in base.rglob("*") if p.is_file()}
    out = base if where == "." else base / where
    result = gate(base, out, "offline/best-practice")
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines() == [
        f"error: --out {out}: in the baseline run {base}; the gate writes the candidate's "
        "run in a folder of its own, never among the baseline's records"
    ], result.output
    after = {p.relative_to(base): p.read_bytes() for p in base.rglob("*") if p.is_file()}
    assert after == before


def test_ctrl_c_in_a_wave_that_finished_stops_the_gate(baseline, tmp_path) -> None:
    # A wave's units are usually all in flight at once: Ctrl-C then lets them finish and
    # the wave's run is complete. The gate must still stop there (exit 130), with its own
    # command to continue, and that command must finish the gate as an uninterrupted one.
    from vera.app import GateOptions, run_gate

    seen = []

    def stopped_wave(opts):
        seen.append(opts)
        return _stopped_wave(opts)

    out = tmp_path / "sigint"
    opts = GateOptions(
        baseline=str(baseline), candidate="offline/best-practice", wave=8, out=str(out), margin=30
    )
    outcome = run_gate(opts, run=stopped_wave)
    assert outcome.exit_code == 130 and len(seen) == 1 and len(outcome.looks) == 1
    assert seen[0].resume_with == outcome.command and " gate " in outcome.command
    assert lines(out / "sequence.jsonl") == 1 and not (out / "sequence.md").exists()
    calls = lines(out / "calls.jsonl")

    again = gate(baseline, out, "offline/best-practice", "--margin", "30")
    whole = gate(baseline, tmp_path / "whole", "offline/best-practice", "--margin", "30")
    assert again.exit_code == whole.exit_code == 0, again.output
    assert read_sequence(out) == read_sequence(tmp_path / "whole")
    # The first wave's conversations were not simulated again.
    assert lines(out / "conversations.jsonl") == lines(tmp_path / "whole" / "conversations.jsonl")
    assert calls < lines(out / "calls.jsonl") == lines(tmp_path / "whole" / "calls.jsonl")


def test_a_gate_started_before_the_edge_rule_takes_it_from_its_next_look(baseline, tmp_path) -> None:
    # A gate whose first look was taken before the rule: gate.json without the field,
    # sequence.jsonl's line without edge_rule. Resumed, it holds the rule from wave 2
    # (widening is a property of the reading) and records that wave.
    from vera.app import GateOptions, run_gate

    out = tmp_path / "old"
    opts = GateOptions(
        baseline=str(baseline), candidate="offline/best-practice", wave=8, out=str(out), margin=30
    )
    assert run_gate(opts, run=_stopped_wave).exit_code == 130
    record = json.loads((out / "gate.json").read_text())
    assert record.pop("edge_rule_from_wave") == 1
    (out / "gate.json").write_text(json.dumps(record))
    (line,) = (out / "sequence.jsonl").read_text().splitlines()
    old = json.loads(line)
    assert old.pop("edge_rule") is True
    for row in old["rows"]:
        row.pop("edge", None)
    (out / "sequence.jsonl").write_text(json.dumps(old) + "\n")

    again = gate(baseline, out, "offline/best-practice", "--margin", "30")
    assert again.exit_code == 0, again.output
    looks = read_sequence(out)
    assert len(looks) > 2 and not looks[0].edge_rule and all(look.edge_rule is True for look in looks[1:])
    assert json.loads((out / "gate.json").read_text())["edge_rule_from_wave"] == 2
    assert any(r.edge for look in looks[1:] for r in look.rows)


@pytest.mark.parametrize("recorded", ["as written", "before --spending existed"])
def test_a_gate_started_on_the_sequence_resumes_on_it_by_the_command_typed_then(
    baseline, tmp_path, recorded
) -> None:
    # A gate started when the confidence sequence was the default (its settings say
    # "asymptotic"; the oldest have no spending key at all), stopped after a wave, and
    # rerun by the command typed then, which names no boundary: it goes on with the
    # sequence, says so in one line, asks nothing twice and ends where an uninterrupted
    # sequence gate ends. It is neither refused as a changed setting nor switched to
    # the spending boundary half way.
    from vera.app import GateOptions, run_gate

    out = tmp_path / "old"
    opts = GateOptions(
        baseline=str(baseline), candidate="offline/risk-ignoring", wave=8, out=str(out), boundary="sequence"
    )
    first = run_gate(opts, run=_stopped_wave)
    assert first.exit_code == 130 and len(first.looks) == 1
    # The command printed to continue names the boundary, which is not the default.
    assert "--boundary sequence" in first.command and "--spending" not in first.command
    settings = json.loads((out / "gate.json").read_text())
    assert settings["settings"]["method"] == "asymptotic"
    if recorded == "before --spending existed":
        del settings["settings"]["spending"]
        (out / "gate.json").write_text(json.dumps(settings))
    calls = lines(out / "calls.jsonl")
    conversations = lines(out / "conversations.jsonl")

    again = gate(baseline, out, "offline/risk-ignoring")
    assert again.exit_code == 4, again.output
    assert again.output.splitlines()[0] == (
        "note: the gate goes on with the boundary it was started with: asymptotic confidence sequence "
        "(--boundary sequence)"
    ), again.output
    assert json.loads((out / "gate.json").read_text())["settings"]["method"] == "asymptotic"
    whole = gate(baseline, tmp_path / "whole", "offline/risk-ignoring", "--boundary", "sequence")
    assert whole.exit_code == 4 and "note:" not in whole.output, whole.output
    assert read_sequence(out) == read_sequence(tmp_path / "whole")
    # The first wave was not simulated or judged again.
    assert calls < lines(out / "calls.jsonl") == lines(tmp_path / "whole" / "calls.jsonl")
    assert conversations < lines(out / "conversations.jsonl") == read_sequence(out)[-1].drawn
    # Its verdict again by the same command, nothing asked; the other boundary is refused.
    assert gate(baseline, out, "offline/risk-ignoring").exit_code == 4
    assert lines(out / "calls.jsonl") == lines(tmp_path / "whole" / "calls.jsonl")
    spending = gate(baseline, out, "offline/risk-ignoring", "--boundary", "spending")
    assert spending.exit_code == 1 and "cannot resume the gate" in spending.output
    assert (
        "the boundary (--boundary, --exact) was the asymptotic sequence (--boundary sequence), "
        "now α-spending (--boundary spending); give the settings" in spending.output
    ), spending.output


def test_ctrl_c_while_the_card_is_written_names_the_gate_to_continue(baseline, tmp_path, monkeypatch) -> None:
    import vera.app._result as result_module

    def interrupted(run_dir):
        raise KeyboardInterrupt

    monkeypatch.setattr(result_module, "score_run", interrupted)
    out = tmp_path / "card"
    result = gate(baseline, out, "offline/risk-ignoring")
    assert result.exit_code == 130, result.output
    message = result.output.strip().splitlines()[-1]
    assert " gate " in message and f"--out {out}" in message and "run --resume" not in message, message


def test_the_exact_sequence_settles_a_far_worse_candidate_early(baseline, tmp_path) -> None:
    # The risk-ignoring bot's Best Practice share is about 0 where the baseline's is 1:
    # beyond the betting grid's fine window. It used to have no interval at all until
    # every unit was in; it is WORSE after a fraction of them, as with the default.
    out = tmp_path / "exact"
    result = gate(baseline, out, "offline/risk-ignoring", "--exact")
    assert result.exit_code == 4, result.output
    looks = read_sequence(out)
    assert looks[-1].verdict == "worse" and looks[-1].units <= PERSONAS // 2
    assert all(r.lo is not None for look in looks for r in look.rows if r.dimension == "Overall")


def test_every_row_is_printed_one_without_an_interval_too(baseline, tmp_path) -> None:
    # The risk-ignoring bot is never rated on Confirms Risk: that row has no interval.
    # It was left out of the console's rows (sequence.md showed it as "–").
    result = gate(baseline, tmp_path / "rows", "offline/risk-ignoring")
    assert result.exit_code == 4, result.output
    # It says why, in `vera compare --gate`'s words: the printout, sequence.md, the card.
    why = "UNDECIDED (not rated in the candidate)"
    assert f"  Confirms Risk: – {why}" in result.output.splitlines(), result.output
    page = (tmp_path / "rows" / "sequence.md").read_text()
    assert f"| Confirms Risk | – | {why} |" in page
    assert f"At the last look, Confirms Risk: {why}." in (tmp_path / "rows" / "card.md").read_text()
    card = json.loads((tmp_path / "rows" / "card.json").read_text())
    assert card["sequential"]["not_rated"] == ["Confirms Risk"]
    compared = CliRunner().invoke(
        main, ["compare", str(baseline), str(tmp_path / "rows"), "--gate", "--json", "-"]
    )
    found, _ = json.JSONDecoder().raw_decode(compared.output[compared.output.index("{") :])
    rows = found["pairs"][0]["rows"]
    assert {r["dimension"]: r["reason"] for r in rows if r["reason"]} == {
        "Confirms Risk": "not rated in the candidate"
    }
    # sequence.jsonl records the reason on that row only; the other rows keep their bytes.
    last = (tmp_path / "rows" / "sequence.jsonl").read_text().splitlines()[-1]
    assert last.count('"reason"') == 1


def test_a_row_the_baseline_never_rated_is_named_with_why_and_left_out_of_the_verdict(tmp_path) -> None:
    # The risk-ignoring bot never reaches Confirms Risk: as the baseline, that row has no
    # score to compare with. The gate left it out of its rows without a word, where
    # `vera compare --gate` names it; now the printout, sequence.md and the card do too.
    base = _ignoring_baseline(tmp_path)
    for candidate, why in (
        ("offline/best-practice", "not rated in the baseline"),
        ("offline/risk-ignoring", "not rated in either run"),
    ):
        out = tmp_path / candidate.replace("/", "-")
        # 12 personas near the ends of the scale: compare --gate's edge rule, which the
        # gate holds every look to, leaves rows within about ±70; the margin clears them.
        result = gate(base, out, candidate, "--margin", "80")
        assert result.exit_code == 0, result.output  # the verdict is the compared rows' alone
        said = f"Left out of the verdict (no baseline score to compare with): Confirms Risk ({why})."
        assert f"  Confirms Risk: – – ({why})" in result.output.splitlines(), result.output
        assert said in result.output.splitlines(), result.output
        page = (out / "sequence.md").read_text()
        assert f"| Confirms Risk | – | – ({why}) |" in page and said in page.splitlines()
        assert said in (out / "card.md").read_text()
        card = json.loads((out / "card.json").read_text())
        assert card["sequential"]["left_out"] == {"Confirms Risk": why}
        assert "not_rated" not in card["sequential"]
        # The same reason, in the same words, as vera compare --gate gives that row.
        compared = CliRunner().invoke(
            main, ["compare", str(base), str(out), "--gate", "--margin", "80", "--json", "-"]
        )
        found, _ = json.JSONDecoder().raw_decode(compared.output[compared.output.index("{") :])
        rows = found["pairs"][0]["rows"]
        assert {r["dimension"]: r["reason"] for r in rows if r["reason"]} == {"Confirms Risk": why}
        last = read_sequence(out)[-1]
        assert last.left_out == {"Confirms Risk": why}
        assert "Confirms Risk" not in [r.dimension for r in last.rows]


def test_a_finished_gate_from_before_left_out_says_so_when_resumed(tmp_path) -> None:
    # A gate whose looks were taken before vera recorded the rows left out of the
    # verdict (no left_out, no edge_rule: tests/fixtures/gate_before_left_out is one as
    # that vera wrote it). Its verdict may have left a row out without a word; resumed,
    # its printout, sequence.md and card say it predates left-out accounting instead of
    # showing a gate that left nothing out.
    base = _ignoring_baseline(tmp_path)
    out = tmp_path / "gate"
    assert gate(base, out, "offline/best-practice", "--margin", "80").exit_code == 0
    record = json.loads((out / "gate.json").read_text())
    record.pop("edge_rule_from_wave")
    (out / "gate.json").write_text(json.dumps(record))
    looks = [json.loads(line) for line in (out / "sequence.jsonl").read_text().splitlines()]
    for look in looks:
        assert look.pop("left_out") == {"Confirms Risk": "not rated in the baseline"}
        look.pop("edge_rule")
        for row in look["rows"]:
            row.pop("edge", None)
    (out / "sequence.jsonl").write_text("".join(json.dumps(look) + "\n" for look in looks))

    again = gate(base, out, "offline/best-practice", "--margin", "80")
    assert again.exit_code == 0, again.output
    says = (
        "This gate predates left-out accounting: its looks do not record which rows, if any, were "
        "left out of the verdict for want of a baseline score."
    )
    assert says in again.output.splitlines() and "Left out of the verdict" not in again.output
    assert says in (out / "sequence.md").read_text().splitlines()
    assert says in (out / "card.md").read_text()
    assert json.loads((out / "card.json").read_text())["sequential"]["left_out_unrecorded"] is True


def test_a_baseline_never_judged_says_so(tmp_path) -> None:
    made = CliRunner().invoke(
        main,
        ["simulate", "--config", str(ROOT / "configs" / "offline.toml"), "--providers", "offline/best-practice",
         "--limit-personas", "2", "--out", str(tmp_path / "sim"), "--quiet"],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    result = gate(tmp_path / "sim", tmp_path / "g", "offline/best-practice")
    assert result.exit_code == 1 and not (tmp_path / "g").exists()
    assert result.output.strip().splitlines() == [
        f"error: {tmp_path / 'sim'}: no judged conversations to gate against; judge them first: "
        f"vera judge {tmp_path / 'sim'}"
    ], result.output


def test_a_baseline_that_rated_nothing_is_refused_before_any_wave(baseline, tmp_path) -> None:
    # Every row would be left out, so no wave could settle anything: before, the gate drew
    # every unit of the baseline (conversations paid for) and ended UNDECIDED.
    base = tmp_path / "none"
    shutil.copytree(baseline, base)
    path = base / "judgements.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for record in records:
        for rating in record.get("ratings") or []:
            rating["rating"] = "Not Relevant"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = gate(base, tmp_path / "g", "offline/best-practice")
    assert result.exit_code == 1 and not (tmp_path / "g").exists(), result.output
    assert result.output.strip().splitlines() == [
        f"error: {base}: no row was rated in the baseline (every rating Not Relevant), so the gate "
        "has nothing to compare; its card shows why"
    ], result.output


def test_compare_json_and_html_say_a_run_is_a_gate_s(baseline, tmp_path) -> None:
    # The terminal's note was all: `vera compare --json`, `--html` and the viewer's
    # comparison page (the same page) showed the gate's 20-odd units as a whole run.
    out = tmp_path / "g"
    assert gate(baseline, out, "offline/risk-ignoring").exit_code == 4
    result = CliRunner().invoke(main, ["compare", str(baseline), str(out), "--json", "-"])
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)["runs"]
    assert "sequential" not in runs[0]  # an ordinary run's entry is as before
    seq = runs[1]["sequential"]
    assert seq["verdict"] == "worse" and seq["units"] == read_sequence(out)[-1].units
    assert seq["available"] == PERSONAS
    page = tmp_path / "compare.html"
    made = CliRunner().invoke(main, ["compare", str(baseline), str(out), "--html", str(page)])
    assert made.exit_code == 0, made.output
    assert "a sequential gate&#x27;s run (vera gate, margin 5" in page.read_text()


def test_a_gate_s_words_count_its_waves_and_name_what_the_user_typed(baseline, tmp_path) -> None:
    """What a user reads of a gate (the terminal, sequence.md, card.md, compare's note, a
    resume refused): "after 1 wave" / "after 3 waves", never "wave(s)"; why it stopped
    without brackets inside brackets; a changed setting named by its option."""
    one = tmp_path / "one"
    result = gate(baseline, one, "offline/best-practice", "--max-conversations", "6")
    assert result.exit_code == UNDECIDED_EXIT, result.output
    # The recorded reason keeps its value; the words shown have no nested brackets.
    assert read_sequence(one)[-1].stopped == "out of conversations (--max-conversations 6)"
    why = "out of conversations at --max-conversations 6"
    assert f"UNDECIDED at margin 5 ({why}) (exit code 5)" in result.output
    page = (one / "sequence.md").read_text()
    card = (one / "card.md").read_text()
    html = (one / "card.html").read_text()
    assert f"**Verdict: UNDECIDED** — {why};" in page
    assert f"UNDECIDED ({why}) after 1 wave, 6 of {PERSONAS} units used" in card
    assert "The Overall interval after wave 1, the only one; the gate stopped at 6 of" in html
    note = sequential_note(one)
    assert note is not None and f"6 of {PERSONAS} units after 1 wave, UNDECIDED ({why});" in note
    for text in (result.output, page, card, html, note):
        assert "wave(s)" not in text and "))" not in text and "each of 1 waves" not in text
    # Changed settings are named as the options the user typed, with their values as typed.
    changed = gate(baseline, one, "offline/best-practice", "--max-conversations", "30", "--exact")
    assert changed.exit_code == 1, changed.output
    assert "--max-conversations was 6, now 30" in changed.output
    assert "the betting sequence (--exact)" in changed.output and "max_conversations" not in changed.output
    dropped = gate(baseline, one, "offline/best-practice")
    assert "--max-conversations was 6, now not given" in dropped.output and "None" not in dropped.output
    # A finished gate is not reopened by a budget (README, exit code 5): its verdict again.
    again = gate(baseline, one, "offline/best-practice", "--max-conversations", "6", "--max-cost", "5")
    assert again.exit_code == UNDECIDED_EXIT and f"({why})" in again.output, again.output
    assert lines(one / "sequence.jsonl") == 1 and lines(one / "conversations.jsonl") == 6

    many = tmp_path / "many"
    result = gate(baseline, many, "offline/best-practice", "--max-conversations", "20", "--wave", "7")
    waves = len(read_sequence(many))
    assert waves == 3, result.output
    card = (many / "card.md").read_text()
    assert f"after 3 waves, 20 of {PERSONAS} units used" in card
    assert "after each of 3 waves;" in (many / "card.html").read_text()
    assert "units after 3 waves, UNDECIDED" in (sequential_note(many) or "")


def test_vera_run_resume_on_a_gate_s_run_is_refused_naming_the_gate(baseline, tmp_path) -> None:
    """`vera run --resume` on a gate's run planned every unit of the baseline: it ran the
    units the gate never drew, and the card still said its scores were of the gate's
    units only. It is refused in one line naming the gate's command, and nothing is run."""
    out = tmp_path / "gated"
    first = gate(baseline, out, "offline/best-practice", "--max-conversations", "8")
    assert first.exit_code == UNDECIDED_EXIT, first.output
    before = (out / "conversations.jsonl").read_bytes()
    refused = CliRunner().invoke(main, ["run", "--resume", str(out)])
    assert refused.exit_code == 1, refused.output
    assert refused.output.count("\n") == 1 and "Traceback" not in refused.output, refused.output
    assert "sequential gate's run" in refused.output
    assert f"gate {baseline} --candidate offline/best-practice" in refused.output
    assert "--wave 8 --seed 0 --max-conversations 8 --out" in refused.output
    assert (out / "conversations.jsonl").read_bytes() == before
    # The gate's command still goes on with it (finished: it asks nothing).
    again = gate(baseline, out, "offline/best-practice", "--max-conversations", "8")
    assert again.exit_code == UNDECIDED_EXIT, again.output
    assert (out / "conversations.jsonl").read_bytes() == before


def test_an_out_holding_another_run_is_refused_and_left_as_it_was(baseline, tmp_path) -> None:
    """An --out holding an ordinary run of the candidate (here a copy of the baseline,
    the same chatbot) was taken for the gate's run: gate.json and sequence.jsonl landed
    among its records and its card was rewritten to say its scores were of the units
    drawn. It is refused in one line; a gate stopped in its first wave (its run's
    manifest written, gate.json not yet) still resumes."""
    other = tmp_path / "other"
    shutil.copytree(baseline, other)
    card = (other / "card.md").read_bytes()
    refused = gate(baseline, other, "offline/best-practice")
    assert refused.exit_code == 1, refused.output
    assert refused.output.count("\n") == 1 and "not a gate's" in refused.output, refused.output
    assert not (other / "gate.json").exists() and not (other / "sequence.jsonl").exists()
    assert (other / "card.md").read_bytes() == card

    out = tmp_path / "first-wave"
    first = gate(baseline, out, "offline/best-practice", "--max-conversations", "8")
    assert first.exit_code == UNDECIDED_EXIT, first.output
    for name in ("gate.json", "sequence.jsonl", "sequence.md"):
        (out / name).unlink()
    again = gate(baseline, out, "offline/best-practice", "--max-conversations", "8")
    assert again.exit_code == UNDECIDED_EXIT, again.output
    assert (out / "gate.json").is_file() and lines(out / "conversations.jsonl") == 8


@contextlib.contextmanager
def _service_gate(
    tmp_path: Path, *, wave: int = 3, seeds: list[int] | None = None
) -> Iterator[tuple[Any, Path, Path, list[str]]]:
    """A baseline of the best-practice stand-in on three personas of different risk (each
    with `seeds`, default one), and the team's own service (a loopback product API,
    `protocol = "http"`, no retries) as the candidate: (service, baseline, gate folder,
    the gate's arguments, waves of `wave` units)."""
    from pytest import MonkeyPatch

    from .clients.runs import KEY, KEY_ENV
    from .fakes.protocols import FakeChatbot, serve_in_thread
    from .run_config import write_run_config
    from .test_sessions import _http_profile, mixed_personas

    providers = tmp_path / "providers"
    providers.mkdir()
    config = write_run_config(
        tmp_path / "run.toml",
        providers=providers,
        runs_dir=tmp_path / "runs",
        chatbots=["offline/best-practice"],
        personas=mixed_personas(tmp_path),  # None, High, Immediate: rated rows to compare
        conversation={"max_turns": 10, "min_turns": 10},
        seeds=seeds or [1],
    )
    bot = FakeChatbot(key=KEY)
    base, out = tmp_path / "baseline", tmp_path / "gate"
    args = ["gate", str(base), "--candidate", "bot", "--wave", str(wave), "--out", str(out), "--margin", "30"]
    with MonkeyPatch.context() as env, serve_in_thread(bot):
        env.setenv(KEY_ENV, KEY)
        (providers / "bot.toml").write_text(_http_profile(bot))
        made = CliRunner().invoke(main, ["run", "--config", str(config), "--out", str(base), "--quiet"])
        assert made.exit_code == 0, made.output
        yield bot, base, out, [*args, "--quiet"]


def test_a_last_wave_with_infrastructure_failures_does_not_end_the_gate(tmp_path) -> None:
    # The team's service failed some conversations of the gate's last wave (a 500, with no
    # retries left). The gate used to close there for good, "UNDECIDED (out of units:
    # every unit of the baseline was drawn)", exit 5, as if the candidate had been
    # evaluated, and the same command again asked nothing: the failed units were lost.
    # Now it says the evaluation did not complete (exit 2, the run's own code for failed
    # work) and the same command retries them once the service is back.
    from .fakes.protocols import Fail

    with _service_gate(tmp_path) as (bot, base, out, args):
        bot.script(Fail(500), Fail(500))
        first = CliRunner().invoke(main, args)
        assert first.exit_code == 2, first.output
        assert "out of units" not in first.output and "UNDECIDED" not in first.output
        assert "gate: not finished" in first.output and f"to retry them: vera gate {base}" in first.output
        assert f"(vera view {out} names each)" in first.output  # no card is written before the end
        assert not (out / "sequence.md").exists()
        failed = {c["id"] for c in map(json.loads, (out / "conversations.jsonl").read_text().splitlines())
                  if c["status"] == "failed"}  # fmt: skip
        assert 1 <= len(failed) <= 2  # the two 500s, in one or two conversations
        asked = bot.requests

        again = CliRunner().invoke(main, args)
    assert again.exit_code in (0, 4, UNDECIDED_EXIT), again.output
    last = read_sequence(out)[-1]
    assert last.units == 3 and last.stopped  # every unit judged, and the gate closed
    # Only the failed conversations were asked again (five chatbot turns each at most).
    assert 0 < bot.requests - asked <= 5 * len(failed)


def test_a_wave_stopped_by_a_bad_key_does_not_end_the_gate(tmp_path) -> None:
    # A wrong token for the team's service (401): the wave's run stops at once (exit 3).
    # The gate used to close on it, "UNDECIDED (out of units ...)" or "the run stopped",
    # exit 5, and never asked again; it now says why it stopped and goes on once fixed.
    from .fakes.protocols import Fail

    with _service_gate(tmp_path) as (bot, _base, out, args):
        bot.script(Fail(401, "bad token"))
        first = CliRunner().invoke(main, args)
        assert first.exit_code == 3, first.output
        assert "gate: not finished — the wave stopped: [bot] HTTP 401" in first.output
        assert "UNDECIDED" not in first.output and not (out / "sequence.md").exists()
        again = CliRunner().invoke(main, args)
    assert again.exit_code in (0, 4, UNDECIDED_EXIT), again.output
    assert read_sequence(out)[-1].units == 3


def test_a_baseline_whose_every_conversation_failed_says_to_resume_it(tmp_path) -> None:
    # The baseline run's chatbot service was down: every conversation failed. The gate said
    # "judge them first: vera judge RUN", which has nothing to judge; the run needs its
    # conversations retried.
    from .test_exit_codes import closed_port

    providers = tmp_path / "providers"
    providers.mkdir()
    (providers / "gone.toml").write_text(
        f'protocol = "http"\nmax_retries = 0\n[http]\nurl = "http://127.0.0.1:{closed_port()}/chat"\n'
    )
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'providers = "{providers}"\nchatbots = ["gone"]\n')
    made = CliRunner().invoke(
        main,
        ["run", "--config", str(cfg), "--limit-personas", "2", "--out", str(tmp_path / "down"), "--quiet"],
    )
    assert made.exit_code == 2, made.output
    result = gate(tmp_path / "down", tmp_path / "g", "offline/best-practice")
    assert result.exit_code == 1 and not (tmp_path / "g").exists()
    assert result.output.strip().splitlines() == [
        f"error: {tmp_path / 'down'}: no judged conversations to gate against; no conversation of it "
        f"completed (2 failed): vera run --resume {tmp_path / 'down'} retries them"
    ], result.output


def _down(bot: Any, requests: int = 200) -> None:
    """The service answers every request with a 503 (down), for the next `requests`."""
    from .fakes.protocols import Fail

    bot.script(*[Fail(503, "service unavailable")] * requests)


def _back(bot: Any) -> None:
    """The service is back: what was scripted to fail is dropped."""
    bot._script.clear()


def _statuses(out: Path) -> dict[str, list[str]]:
    """Each conversation's statuses in the run's records, in order (a retry appends)."""
    seen: dict[str, list[str]] = {}
    for line in (out / "conversations.jsonl").read_text().splitlines():
        record = json.loads(line)
        seen.setdefault(record["id"], []).append(record["status"])
    return seen


def test_a_wave_whose_units_failed_stops_the_gate_and_draws_nothing_more(tmp_path) -> None:
    # The trial: the team's service was down and the gate went on drawing wave after wave,
    # every one failing, burning through the baseline's units. Now the first wave with a
    # failed unit stops the gate (exit 2, "gate: not finished"), with its look recorded as
    # it is and nothing more drawn; the same command, once the service is back, retries the
    # failed unit before drawing any new one and settles as an uninterrupted gate does.
    with _service_gate(tmp_path, wave=1) as (bot, base, out, args):
        _down(bot)
        first = CliRunner().invoke(main, args)
        assert first.exit_code == 2, first.output
        assert "gate: not finished — 1 of the 1 units drawn failed for infrastructure reasons" in first.output
        assert f"to retry them: vera gate {base}" in first.output and "UNDECIDED" not in first.output
        assert bot.requests == 1  # one unit drawn, its first turn failed; no second wave
        assert list(_statuses(out).values()) == [["failed"]]
        (look,) = read_sequence(out)
        assert (look.drawn, look.units, look.failed, look.stopped) == (1, 0, 1, "")
        assert not (out / "sequence.md").exists()
        # Still down: the rerun retries that unit only, and names no --allow-failures (to
        # leave out every unit drawn is no way past a service that is down).
        down = CliRunner().invoke(main, args)
        assert down.exit_code == 2 and "--allow-failures" not in down.output, down.output
        assert bot.requests == 2 and [(x.drawn, x.units) for x in read_sequence(out)] == [(1, 0), (1, 0)]

        _back(bot)
        again = CliRunner().invoke(main, args)
        assert again.exit_code in (0, 4, UNDECIDED_EXIT), again.output
        looks = read_sequence(out)
        # The retry drew nothing new: the failed unit was tried again on its own first.
        assert [(x.drawn, x.units) for x in looks] == [(1, 0), (1, 0), (1, 1), (2, 2), (3, 3)]
        assert looks[-1].stopped and all(isinstance(x.failed, type(msgspec.UNSET)) for x in looks[2:])
        statuses = _statuses(out)
        assert len(statuses) == 3 and all(s[-1] == "complete" for s in statuses.values())
        assert sum(s == ["failed", "failed", "complete"] for s in statuses.values()) == 1  # only it retried

        # An uninterrupted gate of the same units settles where the resumed one did.
        whole = tmp_path / "whole"
        at = args.index("--out")
        clean = CliRunner().invoke(main, [*args[:at], "--out", str(whole), *args[at + 2 :]])
    assert clean.exit_code == again.exit_code, clean.output
    ref = read_sequence(whole)
    assert [(x.drawn, x.units) for x in ref] == [(1, 1), (2, 2), (3, 3)]
    assert (ref[-1].verdict, ref[-1].stopped, ref[-1].rows) == (
        looks[-1].verdict,
        looks[-1].stopped,
        looks[-1].rows,
    )


def test_a_unit_that_fails_again_names_allow_failures_and_it_lets_the_gate_settle(tmp_path) -> None:
    # A unit that always fails held the gate for ever: each rerun retried it, it failed, and
    # the gate said to retry it. When it fails again on a retry the line now names
    # --allow-failures, with the share that leaves it out; given that (a policy, so a
    # resumed gate takes it without the "changed settings" refusal), the gate goes on and
    # settles on the units judged, and the card, sequence.md and the printout count the
    # unit left out, never scoring it as the chatbot's.
    from .fakes.protocols import Fail

    with _service_gate(tmp_path, wave=24, seeds=list(range(1, 9))) as (bot, base, out, args):
        quiet = [a for a in args if a != "--quiet"]
        bot.script(Fail(500), Fail(500))
        first = CliRunner().invoke(main, quiet)
        assert first.exit_code == 2, first.output
        failed = read_sequence(out)[-1].failed
        assert failed in (1, 2), first.output
        assert "--allow-failures" not in first.output  # a first failure: retrying is the way
        # The units judged already look WORSE, but a verdict on the units that happened to
        # get through is not one on the units drawn: beyond the allowance, it waits.
        assert read_sequence(out)[-1].verdict == "worse" and "gate: WORSE" not in first.output
        assert f"wave 1: {24 - failed} of 24 units ({failed} failed)" in first.output

        _down(bot)  # those units fail again when retried
        again = CliRunner().invoke(main, quiet)
        assert again.exit_code == 2, again.output
        assert "again when retried" in again.output
        least = f"{-(-failed * 100 // 24) / 100:g}"
        assert (
            "to go on without them (left out of the verdict, never scored as the chatbot's): vera gate"
            in again.output
        )
        assert f"--allow-failures {least} --out {out}" in again.output
        assert [(x.drawn, x.failed) for x in read_sequence(out)] == [(24, failed), (24, failed)]

        # --allow-failures 0.2 is allowed on the resumed gate: no "changed settings" refusal.
        allowed = CliRunner().invoke(main, [*quiet, "--allow-failures", "0.2"])
        # Closed, the gate's command again decides nothing: it keeps the allowance it closed with.
        closed = CliRunner().invoke(main, quiet)
    assert closed.exit_code == 4 and "--allow-failures 0.2" in closed.output, closed.output
    assert allowed.exit_code == 4, allowed.output  # the service's replies ignore the risk: WORSE
    assert "cannot resume" not in allowed.output
    last = read_sequence(out)[-1]
    assert last.stopped and (last.drawn, last.units, last.failed) == (24, 24 - failed, failed)
    share = f"{failed / 24:.1%}"
    words = (
        f"{failed} of the 24 units drawn failed for infrastructure reasons and are left out of the verdict "
        f"(within {share} failed, --allow-failures 0.2): counted, never scored as the chatbot's."
    )
    assert words in allowed.output
    assert words in (out / "sequence.md").read_text()
    # The two looks that waited for the retry read as held, not as verdicts the gate took;
    # the look it closed on does not.
    held = "WORSE (held: failed units retried first)"
    for page in ("sequence.md", "card.md"):
        table = [x for x in (out / page).read_text().splitlines() if re.match(r"\| \d+ \| \d+ of 24", x)]
        assert [held in x for x in table] == [True, True, False], (page, table)
    card = json.loads((out / "card.json").read_text())
    assert card["sequential"]["failed"] == failed and card["sequential"]["allow_failures"] == 0.2
    assert words in (out / "card.md").read_text()
    assert json.loads((out / "gate.json").read_text())["allow_failures"] == 0.2
    # `vera compare` of the gate's run against its baseline says it too, in one line, as
    # the gate did: a reader of the comparison learns those units are not in it.
    for extra in ([], ["--gate", "--margin", "30"]):
        compared = CliRunner().invoke(main, ["compare", str(base), str(out), *extra, "--resamples", "200"])
        assert f"note: {out}: {words}\n" in compared.output, compared.output
    page = tmp_path / "compare.html"
    CliRunner().invoke(main, ["compare", str(base), str(out), "--html", str(page), "--resamples", "200"])
    assert " ".join(words.split()) in " ".join(unescape(page.read_text()).split())


def test_a_bad_allow_failures_is_one_line_and_writes_nothing(baseline, tmp_path) -> None:
    for bad in ("1.5", "-0.1", "nan", "half"):
        out = tmp_path / f"bad-{bad}"
        result = gate(baseline, out, "offline/best-practice", "--allow-failures", bad)
        assert result.exit_code == 1, result.output
        assert result.output.count("\n") == 1 and "--allow-failures" in result.output, result.output
        assert "Traceback" not in result.output and not out.exists()


@pytest.mark.slow
def test_ctrl_c_twice_in_a_wave_names_the_gate_s_command_once(tmp_path) -> None:
    # A second Ctrl-C while the first was being handled printed "exiting now; resume
    # with: ..." and then the gate's own "interrupted; to continue: ...": the same command
    # twice. It is said once, last.
    import os
    import subprocess
    import sys

    with _service_gate(tmp_path) as (bot, _base, out, args):
        bot.latency = 0.5  # a slow service: the wave is still running at each signal
        proc = subprocess.Popen(
            [sys.executable, "-m", "vera", *args],
            env=os.environ.copy(),  # the service's key, set by _service_gate
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        while bot.requests == 0:  # the wave has started calling the service
            assert proc.poll() is None, proc.communicate()
            os.sched_yield()
        stderr = interrupt_twice(proc)
    assert proc.returncode == 130, stderr
    assert "exiting now" in stderr and "Traceback" not in stderr
    command = f"{sys.executable} -m vera gate "
    assert stderr.count(command) == 1, stderr
    last = stderr.rstrip().splitlines()[-1]
    assert last.startswith(f"interrupted; to continue: {command}") and last.endswith(f"--out {out}"), stderr
