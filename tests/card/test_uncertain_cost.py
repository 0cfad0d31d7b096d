"""The card says what a provider may bill beyond its cost: the worst case of the calls
whose cost is unknown (sent, then timed out; cut off by a stop; answered with no usage).

calls.jsonl has kept `uncertain_usd` for each such call, and a budget counts it, but the
card summed only `cost_usd`: an auditor matching the card to an invoice could not see
that the invoice may be higher, nor by how much."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vera.app import RunOptions, execute_run, scored

from ..fakes.sweep import KEY, Faults, SweepServer, write_sweep_config


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("SWEEP_TEST_KEY", KEY)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def run_with_unknown_costs(tmp_path: Path) -> Path:
    """A scored loopback run some of whose calls have an unknown cost: attempts sent and
    then timed out, which with a budget vera charges at their worst case (docs/running.md,
    "Settling"); a retry answers each."""
    faults = Faults(rate_timeout=0.2, timeout_delay=1.0, seed=3)
    with SweepServer(faults=faults) as server:
        cfg = write_sweep_config(
            tmp_path, server.base_url, personas=2, seeds="[1]", timeout_s=0.3, max_tokens=400
        )
        out = tmp_path / "run"
        outcome = await execute_run(
            RunOptions(config_path=str(cfg), out=str(out), progress=False, max_cost=50.0)
        )
    scored(outcome)  # the card, as `vera run` writes it once the sweep is over
    assert outcome.exit_code == 0, outcome.status
    assert sum(c["uncertain_usd"] for c in _lines(out / "calls.jsonl")) > 0, (
        "no attempt timed out after it was sent: the test proves nothing"
    )
    return out


async def test_calls_of_unknown_cost_are_on_the_card_at_their_worst_case(tmp_path):
    out = await run_with_unknown_costs(tmp_path)
    calls = _lines(out / "calls.jsonl")
    unknown = sum(c["uncertain_usd"] for c in calls)

    acc = json.loads((out / "card.json").read_text())["accounting"]
    assert acc["total"]["uncertain_usd"] == pytest.approx(unknown, abs=1e-4)
    for key, buckets in (("role", acc["by_role"]), ("provider", acc["by_provider"])):
        for name, bucket in buckets.items():
            mine = sum(c["uncertain_usd"] for c in calls if c[key] == name)
            assert bucket["uncertain_usd"] == pytest.approx(mine, abs=1e-4), (key, name)
    # Never inside the cost: the cost is what the calls are known to have cost.
    assert acc["total"]["cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in calls), abs=1e-4)

    usd = format(acc["total"]["uncertain_usd"], ",")  # as every card number is shown
    md = (out / "card.md").read_text()
    cost_line = next(line for line in md.splitlines() if line.startswith("- **Cost:**"))
    assert f"a provider may bill up to ${usd} more, not in this cost" in cost_line
    assert "| Unknown cost, at most (USD) |" in md
    assert f"${usd} more, not in this cost" in (out / "card.html").read_text()


async def test_a_run_whose_every_cost_is_known_says_nothing_of_it(tmp_path):
    with SweepServer() as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=1, seeds="[1]")
        out = tmp_path / "run"
        outcome = await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))
    scored(outcome)
    assert outcome.exit_code == 0
    acc = json.loads((out / "card.json").read_text())["accounting"]
    assert acc["total"]["uncertain_usd"] is None
    assert acc["total"]["unbounded_calls"] is None
    md = (out / "card.md").read_text()
    assert "Unknown cost" not in md and "not in this cost" not in md and "no bound" not in md


async def run_with_unbounded_costs(tmp_path: Path) -> Path:
    """A scored loopback run with no budget and no output cap, some of whose attempts
    were sent and then timed out (a retry answers each): their cost has no worst case."""
    faults = Faults(rate_timeout=0.2, timeout_delay=1.0, seed=3)
    with SweepServer(faults=faults) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=2, seeds="[1]", timeout_s=0.3)
        out = tmp_path / "run"
        outcome = await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False))
    scored(outcome)
    assert outcome.exit_code == 0, outcome.status
    return out


async def test_calls_of_unknown_cost_with_no_output_cap_are_counted_not_left_out(tmp_path):
    """Without max_tokens a priced call that timed out after it was sent has no worst
    case. It was counted nowhere: `uncertain_usd` 0 and the card silent, or (with other
    such calls capped) a bound that looked like the whole of it. Each is now a count on
    its record and on the card, which says the bound leaves it out."""
    out = await run_with_unbounded_costs(tmp_path)
    calls = _lines(out / "calls.jsonl")
    unbounded = [c for c in calls if c.get("unbounded_attempts")]
    assert unbounded, "no attempt timed out after it was sent: the test proves nothing"
    assert sum(c["uncertain_usd"] for c in calls) == 0  # no worst case to give

    acc = json.loads((out / "card.json").read_text())["accounting"]
    assert acc["total"]["unbounded_calls"] == len(unbounded)
    for key, buckets in (("role", acc["by_role"]), ("provider", acc["by_provider"])):
        for name, bucket in buckets.items():
            assert bucket["unbounded_calls"] == sum(1 for c in unbounded if c[key] == name), (key, name)
    md = (out / "card.md").read_text()
    cost_line = next(line for line in md.splitlines() if line.startswith("- **Cost:**"))
    assert f"{len(unbounded)} call(s) had attempts of unknown cost with no bound" in cost_line
    assert "may bill up to" not in cost_line  # no figure that would read as the whole of it
    assert "| Unknown cost, no bound (calls) |" in md
    assert (
        f"{len(unbounded)} call(s) had attempts of unknown cost with no bound"
        in (out / "card.html").read_text()
    )
