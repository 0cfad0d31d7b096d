"""`vera bench` end to end on a tiny scenario (its figures' arithmetic, not its speed),
and the fake server it starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.harness import KEY, KEY_ENV, SUITE, BenchOptions, Window, figures, render_table
from vera.cli._main import main
from vera.engine import SweepResult

from .fakes.shared import RateBucket, rubric_answer

REQUIRED = (
    "calls",
    "wall_s",
    "calls_per_s",
    "ideal_calls_per_s",
    "efficiency",
    "cpu_ms_per_call",
    "peak_rss_mb",
    "rss_kb_per_conversation",
    "http_429",
    "rpm_utilisation",
    "failed",
    "config",
    "rss_mb_start",
    "rss_mb_peak",
)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)  # vera bench sets it; this restores it afterwards


def bench(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(main, ["bench", *args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "calls/s" in result.output
    return json.loads(out.read_text())


def test_a_small_sweep_makes_every_call_through_the_fake_server(tmp_path: Path) -> None:
    fig = bench(tmp_path, "--conversations", "6", "--turns", "4", "--latency-ms", "10", "--concurrency", "3")
    assert set(REQUIRED) <= set(fig)
    assert fig["calls"] == 6 * 4 == fig["server_requests"]
    assert fig["conversations_finished"] == 6 and fig["failed"] == 0
    assert fig["http_429"] == 0 and fig["rpm_utilisation"] is None
    assert fig["ideal_calls_per_s"] == 3 / 0.010
    # calls_per_s is printed to 0.1 call/s, so the ratio of the printed figures carries up to
    # 0.05 / ideal of rounding error; on a slow machine that is more than 0.1 % of a small ratio.
    rounding = 0.05 / fig["ideal_calls_per_s"] + 5e-5
    assert fig["efficiency"] == pytest.approx(fig["calls_per_s"] / fig["ideal_calls_per_s"], abs=rounding)
    assert fig["server_max_in_flight"] <= 3
    assert fig["cpu_ms_per_call"] > 0 and fig["server_cpu_ms_per_request"] > 0
    # What `vera run` has on by default is on here too: the call bodies, which answer a
    # resume, so no response cache (vera.clients.replay).
    assert fig["config"] == {"cache": False, "events": True, "progress": True, "call_bodies": True}
    assert 0 < fig["rss_mb_start"] <= fig["rss_mb_peak"] == fig["peak_rss_mb"]
    assert not list(tmp_path.glob(".*.tmp"))  # the JSON is written whole, by rename


def test_each_part_of_the_default_configuration_can_be_turned_off(tmp_path: Path) -> None:
    args = ("--conversations", "2", "--turns", "2", "--latency-ms", "5", "--concurrency", "2")
    fig = bench(tmp_path, *args, "--no-cache", "--no-events", "--no-progress", "--no-call-bodies")
    assert fig["config"] == {"cache": False, "events": False, "progress": False, "call_bodies": False}
    assert fig["calls"] == 4
    assert bench(tmp_path, *args, "--no-events", "--no-call-bodies")["config"] == {
        "cache": True,  # without bodies, the run-local cache answers a resume, as in `vera run`
        "events": False,
        "progress": True,
        "call_bodies": False,
    }


def test_with_judging_every_conversation_is_judged_from_valid_answers(tmp_path: Path) -> None:
    fig = bench(
        tmp_path, "--conversations", "3", "--turns", "2", "--latency-ms", "5", "--concurrency", "3", "--judge"
    )
    assert fig["judgements_finished"] == 3
    assert fig["calls"] > 3 * 2 and fig["failed_calls"] == 0 and fig["retries"] == 0
    assert fig["config"]["ask_ahead"] is True  # on, as in `vera run`
    # Questions asked ahead that no walk reached reached the server, but are no calls made.
    assert fig["server_requests"] == fig["calls"] + fig["unused_questions"]


def test_asking_ahead_can_be_turned_off(tmp_path: Path) -> None:
    args = ("--conversations", "3", "--turns", "2", "--latency-ms", "5", "--concurrency", "3", "--judge")
    fig = bench(tmp_path, *args, "--no-ask-ahead")
    assert fig["config"]["ask_ahead"] is False
    assert fig["unused_questions"] == 0 and fig["server_requests"] == fig["calls"]


def test_a_rate_limit_caps_the_ideal_rate_and_is_reported_as_utilisation(tmp_path: Path) -> None:
    # 60 conversations of 2 calls at 20 calls/s take at least 4 s even after the server's
    # 2 s burst (40 calls), so the 1 s window always ends before the sweep does.
    fig = bench(
        tmp_path,
        *("--conversations", "60", "--turns", "2", "--latency-ms", "5", "--concurrency", "20"),
        *("--rpm", "1200", "--duration-s", "1"),
    )
    assert fig["ideal_calls_per_s"] == 20.0  # 1,200/min, not 20 / 5 ms
    # calls_per_s is shown to 0.1, so it may be 0.05 off the rate the utilisation uses.
    assert fig["rpm_utilisation"] == pytest.approx(
        fig["calls_per_s"] * 60 / 1200, abs=0.05 * 60 / 1200 + 1e-4
    )
    assert fig["http_429"] == 0 == fig["server_http_429"]
    # The window is the duration asked for, judged by counts rather than a stopwatch: it
    # ended the measurement before the sweep (not every conversation finished in it), and
    # within it the calls stayed under what the limit allows (the burst plus the refill).
    assert fig["conversations_finished"] < 60
    assert fig["calls"] <= 40 + 20 * fig["wall_s"]


def test_figures_follow_their_definitions() -> None:
    opts = BenchOptions(conversations=50, turns=10, latency_ms=200, concurrency=100, rpm=600)
    window = Window(
        wall_s=10.0,
        cpu_s=0.05,
        account={"calls": 102, "errors": 2, "http_429": 1, "retries": 3},
        server_before={"requests": 10, "cpu_s": 1.0, "http_429": 0, "max_in_flight": 0},
        server_after={"requests": 110, "cpu_s": 1.02, "http_429": 1, "max_in_flight": 40},
        rss_before_kb=100_000,
        peak_rss_kb=102_500,
    )
    fig = figures(opts, window, SweepResult(conversations=50, conversations_failed=1))
    assert fig["calls"] == 100  # failed calls are not throughput
    assert fig["calls_per_s"] == 10.0
    assert fig["ideal_calls_per_s"] == 10.0  # min(100, 50) / 0.2 s = 250, capped at 600/min
    assert fig["efficiency"] == 1.0 and fig["rpm_utilisation"] == 1.0
    assert fig["cpu_ms_per_call"] == 0.5
    assert fig["rss_kb_per_conversation"] == 50.0  # 2,500 KB over min(C, N) = 50
    assert fig["server_cpu_ms_per_request"] == pytest.approx(0.2)
    assert fig["failed"] == 1 and fig["failed_calls"] == 2 and fig["http_429"] == 1
    # Questions asked ahead and never reached were paid for, but are not calls made.
    wasted = figures(opts, window, SweepResult(conversations=50, unused_questions=20))
    assert wasted["calls"] == 80 and wasted["unused_questions"] == 20
    assert wasted["efficiency"] == 0.8


def test_the_memory_flatness_scenario_compares_two_sweep_sizes() -> None:
    (flat,) = [s for s in SUITE if s.name == "memory-flat"]
    assert flat.baseline is not None
    assert flat.args[flat.args.index("--conversations") + 1] == "30000"
    assert flat.baseline[flat.baseline.index("--conversations") + 1] == "1000"
    fig = figures(BenchOptions(), _window(), SweepResult()) | {"rss_growth": 0.04}
    assert flat.verdicts(fig) == [("rss_growth <= 0.1", True)]
    assert flat.verdicts(fig | {"rss_growth": 0.25}) == [("rss_growth <= 0.1", False)]
    assert "rss_growth <= 0.1 ✓" in render_table([(flat, fig)]) and "+4.0%" in render_table([(flat, fig)])


def _window() -> Window:
    return Window(
        wall_s=1.0,
        cpu_s=0.1,
        account={"calls": 10, "errors": 0, "http_429": 0, "retries": 0},
        server_before={"requests": 0, "cpu_s": 0.0, "http_429": 0, "max_in_flight": 0},
        server_after={"requests": 10, "cpu_s": 0.01, "http_429": 0, "max_in_flight": 5},
        rss_before_kb=100_000,
        peak_rss_kb=110_000,
    )


def test_the_rate_bucket_allows_its_burst_then_its_rate() -> None:
    bucket = RateBucket(rpm=600, burst_s=1.0)  # 10 per second, 10 at once
    assert all(bucket.take(0.0) is None for _ in range(10))
    assert bucket.take(0.0) == pytest.approx(0.1)  # one more needs a tenth of a second
    assert bucket.take(0.1) is None
    assert bucket.take(0.1) is not None


def test_the_fake_judge_answers_with_a_listed_option() -> None:
    question = "Question D1: ...\n\nOptions: Yes | No | The simulated user stepped out of the role-play\n"
    messages = [{"role": "system", "content": "transcript"}, {"role": "user", "content": question}]
    answer = rubric_answer(messages)
    assert answer["answer"] in ("Yes", "No", "The simulated user stepped out of the role-play")
    assert rubric_answer(messages) == answer  # deterministic
    assert rubric_answer([{"role": "user", "content": "no options here"}])["answer"] == "Yes"


def test_the_sessions_sweep_runs_each_cell_beside_one_session(tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    args = ["--latency-ms", "10", "--concurrency", "2", "--no-progress"]
    result = CliRunner().invoke(
        main, ["bench", *args, "--sessions", "3", "--sweep-turns", "4,6", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    figs = json.loads(out.read_text())
    cells = [(f["scenario"]["sessions"], f["scenario"]["turns"]) for f in figs]
    assert cells == [(1, 4), (3, 4), (1, 6), (3, 6)]
    for f in figs:
        sessions, turns = f["scenario"]["sessions"], f["scenario"]["turns"]
        # Two arcs (the concurrency), all in flight, of `sessions` sessions each.
        assert f["conversations_finished"] == 2 * sessions and f["failed"] == 0
        assert f["calls"] == 2 * sessions * turns == f["server_requests"]
        assert f["ideal_calls_per_s"] == 2 / 0.010
    assert "| 3 | 6 | 2 | 36 |" in result.output
    assert "vs 1 session" in result.output and "| 1.00× |" in result.output


def test_a_bad_sessions_list_is_one_line() -> None:
    result = CliRunner().invoke(main, ["bench", "--sessions", "two"])
    assert result.exit_code == 1
    assert "--sessions 'two': give whole numbers separated by commas" in result.output


@pytest.mark.parametrize("keep", [True, False])
def test_call_bodies_are_kept_as_a_default_run_keeps_them(tmp_path: Path, keep: bool) -> None:
    from benchmarks.harness import _run_on_uvloop, fake_server, measure
    from vera.store import count_bodies, has_bodies

    opts = BenchOptions(conversations=2, turns=3, latency_ms=5, concurrency=2, call_bodies=keep)
    with fake_server(opts.latency_ms, None) as server:
        fig = _run_on_uvloop(measure(opts, server, tmp_path))
    assert fig["config"]["call_bodies"] is keep and fig["calls"] == 6
    if keep:
        assert count_bodies(tmp_path / "run") == 6
    else:
        assert not has_bodies(tmp_path / "run")


def test_the_profile_split_counts_the_loop_thread_s_window_by_what_did_the_work(tmp_path: Path) -> None:
    from benchmarks.profile_split import AREAS, render, split

    loop = "<module> (p.py:1);_run_on_uvloop (benchmarks/harness.py:390);Runner.run (asyncio/runners.py:118)"
    raw = tmp_path / "vera.raw"
    raw.write_text(
        "\n".join(
            [
                f"{loop} 7",  # the loop's own C code
                f"{loop};worker (/x/vera/engine/_sweep.py:9);BodyLog.commit (/x/vera/store/_bodylog.py:538) 3",
                f"{loop};chat (/x/vera/clients/limits/_client.py:221) 2",
                f"{loop};request (/v/site-packages/aiohttp/client.py:550) 5",
                f"{loop};Inputs.load (/x/vera/engine/_inputs.py:96);tsv_rows (/x/vera/files/_datafile.py:27) 11",
                "Thread._bootstrap (threading.py:1002);_worker (concurrent/futures/thread.py:81) 13",
                "",
            ]
        ),
        encoding="utf-8",
    )
    counts = split(raw)
    assert counts == {
        "event loop and sockets (uvloop, C)": 7,
        "vera: call bodies": 3,
        "vera: client stack (limits, prices, recorder)": 2,
        "aiohttp": 5,
    }
    assert "| **samples** | 17 |" in render([raw])
    # Each area names modules that exist: a module moved elsewhere fails here, not silently.
    root = Path(__file__).resolve().parents[1]
    for _, prefixes in AREAS:
        for prefix in prefixes:
            assert (root / prefix).exists(), prefix
