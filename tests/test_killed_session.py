"""A session killed outright (SIGKILL) leaves the calls it had in flight sent, perhaps
billed, and in no record. Its resume finds the session's mark (`session.json`), bounds
those calls (vera.app._killed), says so once, and the card carries the bound with its
worst case; a run never killed, or stopped by a signal, shows nothing of it.

Every test runs a real `python -m vera run` against the loopback sweep server, which
counts every request it RECEIVED."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from vera.app._killed import bound
from vera.records import OpenSession
from vera.rubric import Rubric, calls_at_once, load_rubric
from vera.store import SESSION_FILE

from .card.conftest import run_vera
from .card.test_zh_no_english import leftovers
from .conftest import ROOT
from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config

SLOW = Faults(latency=0.05)  # the kill lands mid-sweep, with calls in flight


def _env() -> dict[str, str]:
    return {**os.environ, "SWEEP_TEST_KEY": KEY}


def _vera(*args: str) -> list[str]:
    return [sys.executable, "-m", "vera", *args]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _card(run_dir: Path) -> dict:
    return json.loads((run_dir / "card.json").read_text())


def _kill_when(cfg: Path, out: Path, ready: Callable[[], bool]) -> None:
    """A run SIGKILLed once `ready()` says so."""
    _kill_command(ready, "run", "--config", str(cfg), "--out", str(out), "--quiet")


def _kill_command(ready: Callable[[], bool], *args: str) -> None:
    """`vera ARGS` SIGKILLed once `ready()` says so."""
    proc = subprocess.Popen(
        _vera(*args),
        env=_env(),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    end = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < end and not ready():
        time.sleep(0.01)
    assert proc.poll() is None, f"vera {args[0]} finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)


def _calls(out: Path) -> int:
    path = out / "calls.jsonl"
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def _done(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    """`vera ARGS` run to its end, which must be exit `code`."""
    done = subprocess.run(_vera(*args), env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == code, done.stdout + done.stderr
    return done


def _resume(out: Path) -> subprocess.CompletedProcess[str]:
    return _done("run", "--resume", str(out), "--quiet")


@pytest.mark.slow
@pytest.mark.parametrize("judging", [False, True], ids=["mid-conversations", "mid-judgements"])
def test_a_killed_session_s_calls_in_flight_are_bounded_on_the_card(tmp_path: Path, judging: bool) -> None:
    # Mid-judgements: the judge's answers after its second are held, so judgements are
    # under way at the kill, each with its rubric's independent parts asked at once.
    faults = Faults(latency=0.05, hold_judge_after=2, hold_s=60) if judging else SLOW
    with SweepServer(faults=faults) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=6, max_tokens=300)
        out = tmp_path / "run"
        if judging:
            _kill_when(cfg, out, lambda: server.by_role["judge"] >= 10)
        else:
            _kill_when(cfg, out, lambda: _calls(out) >= 40)
        assert (out / SESSION_FILE).is_file()  # the killed session's mark stays behind
        sent = sum(server.requests.values())
        recorded = _calls(out)
        server.faults = SLOW  # the hold lifted: the resume's judge is answered
        done = _resume(out)
    unseen = sent - recorded  # requests the provider received that no record holds
    assert unseen > 0, (sent, recorded)
    # Said once on the terminal, when the resume finds the killed session.
    assert done.stderr.count("was killed (kill -9, out of memory, power lost)") == 1, done.stderr
    assert not (out / SESSION_FILE).exists()  # the resume ended: its own mark is gone
    [killed] = _card(out)["accounting"]["killed_sessions"]
    assert unseen <= killed["calls"] <= killed["max_in_flight"] == 64, (unseen, killed)
    assert killed["calls"] == min(killed["jobs_calls"], 64)
    assert killed["conversations"] <= 8  # max_concurrency: one conversation per worker
    # Capped output: a worst case, at least what the unseen calls cost at their cheapest.
    assert killed["worst_usd"] > 0
    # A judgement's calls at once are its rubric's parts and asking ahead (on at the
    # sweep's end): vera-si's 15, not its 36 questions.
    assert killed["per_judgement"] == calls_at_once(_rubric(out), ask_ahead=True) == 15
    if judging:
        assert killed["judgements"] > 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["killed_sessions"] == [killed]
    md = (out / "card.md").read_text()
    assert "were killed outright (kill -9, out of memory, power lost)" in md
    assert f"with up to {killed['calls']} call(s) in flight" in md
    assert "killed outright" in (out / "card.html").read_text()


@pytest.mark.slow
def test_a_killed_vera_judge_is_bounded_by_its_judgements(tmp_path: Path) -> None:
    with SweepServer(faults=SLOW) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=4, max_tokens=300)
        out = tmp_path / "run"
        _done("simulate", "--config", str(cfg), "--out", str(out), "--quiet")
        server.faults = Faults(latency=0.05, hold_judge_after=2, hold_s=60)
        before = sum(server.requests.values())
        recorded_before = _calls(out)
        _kill_command(lambda: server.by_role["judge"] >= 6, "judge", str(out), "--quiet")
        unseen = (sum(server.requests.values()) - before) - (_calls(out) - recorded_before)
        server.faults = SLOW
        done = _done("judge", str(out), "--quiet")
    assert done.stderr.count("was killed (kill -9, out of memory, power lost)") == 1, done.stderr
    [killed] = _card(out)["accounting"]["killed_sessions"]
    assert killed["conversations"] == 0 and killed["judgements"] > 0
    assert 0 < unseen <= killed["calls"] <= 64, (unseen, killed)


@pytest.mark.slow
def test_a_run_never_killed_says_nothing_of_it(tmp_path: Path) -> None:
    with SweepServer() as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=2, seeds="[1]", max_tokens=300)
        out = tmp_path / "run"
        done = _done("run", "--config", str(cfg), "--out", str(out), "--quiet")
        card = (out / "card.json").read_bytes()
        again = _resume(out)  # nothing left to do: nothing found killed
    assert "killed" not in done.stderr + again.stderr
    assert not (out / SESSION_FILE).exists()
    assert "killed_sessions" not in json.loads(card)["accounting"]
    assert "killed_sessions" not in json.loads((out / "manifest.json").read_text())
    assert "killed outright" not in (out / "card.md").read_text()
    assert (out / "card.json").read_bytes() == card


def _rubric(out: Path) -> Rubric:
    return load_rubric(json.loads((out / "manifest.json").read_text())["config"]["rubric"])


def _most_at_once(calls: list[dict]) -> int:
    """The most of `calls` under way at one moment, each from its start (its end, `at`,
    less its latency, which counts any wait for the account's slot: never fewer than
    were really in flight) to its end."""
    edges = sorted(e for c in calls for e in ((c["at"] - c["latency_ms"] / 1000, 1), (c["at"], -1)))
    most = now = 0
    for _, step in edges:  # an end before a start at the same instant: (t, -1) < (t, 1)
        now += step
        most = max(most, now)
    return most


@pytest.mark.slow
def test_a_judgement_s_calls_in_flight_stay_within_its_rubric_s_bound(tmp_path: Path) -> None:
    """The bound a killed session's judgements get (vera.rubric.calls_at_once) holds
    what a real run's judgements had in flight at once, measured from calls.jsonl's
    start and end times, with asking ahead on; and it is far below the rubric's 36
    questions that bounded it before."""
    # Risk detected and confirmed: every walk goes on past the first questions' exits.
    walks = {"D1": "Yes", "D2": "Yes", "G0": "Suicidal thoughts, not immediate risk"}
    with SweepServer(faults=Faults(latency=0.05, judge_answers=walks)) as server:
        cfg = write_sweep_config(
            tmp_path, server.base_url, personas=6, max_tokens=300, extra='[judge]\nask_ahead = "tail"\n'
        )
        out = tmp_path / "run"
        _done("run", "--config", str(cfg), "--out", str(out), "--quiet")
    by_judgement: dict[str, list[dict]] = {}
    for call in _lines(out / "calls.jsonl"):
        if call["role"] == "judge":
            by_judgement.setdefault(call["job_id"], []).append(call)
    most = max(_most_at_once(calls) for calls in by_judgement.values())
    asked_ahead = sum(j.get("unused_questions", 0) for j in _lines(out / "judgements.jsonl"))
    rubric = _rubric(out)
    bound = calls_at_once(rubric, ask_ahead=True)
    assert asked_ahead > 0  # asking ahead was at work: unused questions were asked
    assert 1 < most <= bound < len(rubric.questions), (most, bound)
    assert calls_at_once(rubric, ask_ahead=False) == 5  # vera-si's parts at once


def _mark(**kw: object) -> OpenSession:
    fields: dict = {"started_at": "t", "command": "run", "max_concurrency": 8, "max_in_flight": 64}
    return OpenSession(**(fields | kw))


def test_the_bound_is_the_smaller_of_the_jobs_and_the_accounts_caps() -> None:
    # Eight workers, each an arc of one conversation: 3 judgements under way (two slots
    # each conversation) hold 2 workers, so 6 conversations are; each judgement may have
    # the rubric's questions in flight (a mark from before `judgement_calls`).
    k = bound(_mark(judge_slots=2, questions=5), conversations_left=20, judgements_left=3)
    assert (k.conversations, k.judgements, k.per_judgement, k.jobs_calls, k.calls) == (6, 3, 5, 21, 21)
    # No judge (vera simulate): one conversation per worker.
    assert bound(_mark(), conversations_left=20, judgements_left=0).conversations == 8
    assert bound(_mark(max_in_flight=5), conversations_left=20, judgements_left=0).calls == 5
    # No cap on an account: the jobs alone bound it.
    assert bound(_mark(max_in_flight=None), conversations_left=3, judgements_left=0).calls == 3
    # A worker holds the judgements of its arc's conversations, no more.
    held = bound(_mark(judge_slots=2, questions=1, arc_sessions=3), conversations_left=0, judgements_left=100)
    assert held.judgements == 8 * 3 * 2
    # `vera judge` starts no conversation.
    assert bound(_mark(command="judge"), conversations_left=5, judgements_left=0).calls == 0
    # A judgement's calls at once, from its rubric's flow; a mark from before it was
    # recorded falls back on the rubric's questions.
    walked = bound(
        _mark(judge_slots=1, questions=36, judgement_calls=5), conversations_left=0, judgements_left=2
    )
    assert (walked.per_judgement, walked.calls) == (5, 10)


@pytest.mark.parametrize("locale", ["en", "zh-CN"])
def test_a_kill_with_no_bound_on_its_cost_says_so_in_the_run_s_words(tmp_path: Path, locale: str) -> None:
    """A priced model whose output nothing caps gives the calls in flight no worst case:
    the card says there is no bound, never $0 (in the pack's words on a zh-CN run)."""
    out = tmp_path / "0"  # (the title names the run folder: no English word there)
    pack = ["--locale", "zh-CN"] if locale == "zh-CN" else []
    run_vera("run", *pack, "--out", str(out), "--seed", "1", "--limit-personas", "2", "--quiet")
    manifest = json.loads((out / "manifest.json").read_text())
    killed = {"started_at": "2026-12-07T10:00:00+00:00", "found_at": "2026-12-07T10:05:00+00:00", "calls": 3}
    killed |= {
        "conversations": 3,
        "judgements": 0,
        "per_judgement": 36,
        "jobs_calls": 3,
        "max_in_flight": None,
    }
    manifest["killed_sessions"] = [killed | {"worst_usd": None}]
    (out / "manifest.json").write_text(json.dumps(manifest))
    run_vera("score", str(out))
    md = (out / "card.md").read_text(encoding="utf-8")
    if locale == "zh-CN":
        assert "被直接终止" in md and "其费用没有上限" in md
        # Only the command and the setting a reader types stay as they are written.
        assert set(leftovers(md)) <= {"kill", "max", "tokens", "params"}, leftovers(md)
    else:
        assert "with up to 3 call(s) in flight" in md and "their cost has no bound" in md
    assert (
        json.loads((out / "card.json").read_text())["accounting"]["killed_sessions"][0]["worst_usd"] is None
    )


def test_a_killed_offline_run_has_nothing_to_bound(tmp_path: Path) -> None:
    """Offline stand-ins send no request: a killed offline session bounds no call, and
    neither the resume's terminal nor the card speaks of it."""
    out = tmp_path / "0"
    run_vera("run", "--out", str(out), "--seed", "1", "--limit-personas", "2", "--quiet")
    mark = OpenSession(
        started_at="2026-12-07T10:00:00.000+00:00", command="run", max_concurrency=8, max_in_flight=0
    )
    (out / SESSION_FILE).write_bytes(msgspec.json.encode(mark))
    done = _resume(out)
    assert "killed" not in done.stderr and not (out / SESSION_FILE).exists()
    [killed] = json.loads((out / "manifest.json").read_text())["killed_sessions"]
    assert killed["calls"] == 0
    assert "killed outright" not in (out / "card.md").read_text()


# -- a killed run read before it is resumed --------------------------------------------

UNFINISHED = "this run's last session (vera run, started "
KILLED_LINE = "did not end (it was killed: kill -9, out of memory, power lost)"
CARD_KILLED = "did not end: it was killed (kill -9, out of memory, power lost)"


@pytest.mark.slow
def test_a_killed_run_read_before_its_resume_says_its_last_session_did_not_end(tmp_path: Path) -> None:
    """`vera score`, `card`, `export` and `view` of a run killed outright, not yet
    resumed, say in one line that calls it had in flight are in none of its records, and
    the card says it at its top; once resumed, neither the commands nor the card do."""
    with SweepServer(faults=SLOW) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=4, max_tokens=300)
        out = tmp_path / "run"
        _kill_when(cfg, out, lambda: _calls(out) >= 30)
        mark = json.loads((out / SESSION_FILE).read_text())
        said = [
            _done("score", str(out)),
            _done("card", str(out)),
            _done("export", str(out), "-o", str(tmp_path / "r.csv")),
            _done("export", str(out), "--calls", "-o", str(tmp_path / "c.jsonl")),
            _done("view", str(out), "--bundle", str(tmp_path / "bundle")),
        ]
        for done in said:
            lines = [line for line in done.stderr.splitlines() if UNFINISHED in line]
            assert len(lines) == 1, done.stderr
            assert KILLED_LINE in lines[0] and f"run --resume {out}` finds them" in lines[0], lines[0]
            assert mark["started_at"] in lines[0]
        card = _card(out)
        assert card["unfinished_session"] == {
            "started_at": mark["started_at"],
            "command": "run",
            "state": "killed",
        }
        assert CARD_KILLED in (out / "card.md").read_text()
        assert CARD_KILLED in (out / "card.html").read_text()
        assert CARD_KILLED in " ".join(said[1].stdout.split())  # the card `vera card` prints (wrapped)
        assert (out / SESSION_FILE).is_file()  # a reader leaves the mark for the resume
        _resume(out)
        after = [_done("card", str(out)), _done("export", str(out), "-o", str(tmp_path / "r2.csv"))]
    assert all("did not end" not in done.stderr for done in after)
    assert "unfinished_session" not in _card(out)
    assert "did not end" not in (out / "card.md").read_text() + (out / "card.html").read_text()


@pytest.mark.slow
def test_a_run_still_running_is_read_as_running_and_not_disturbed(tmp_path: Path) -> None:
    """A reader of a run another process still writes says the session has not ended
    (it looks at the run's lock without taking it from the writer), and the run goes on
    to its end untouched."""
    with SweepServer(faults=Faults(latency=0.05, hold_judge_after=2, hold_s=60)) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=2, seeds="[1]", max_tokens=300)
        out = tmp_path / "run"
        proc = subprocess.Popen(
            _vera("run", "--config", str(cfg), "--out", str(out), "--quiet"),
            env=_env(),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        end = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < end and server.by_role["judge"] < 3:
            time.sleep(0.01)
        assert proc.poll() is None, "the run finished before it could be read"
        read = [
            _done("export", str(out), "-o", str(tmp_path / "r.csv")),
            _done("view", str(out), "--bundle", str(tmp_path / "bundle")),
        ]
        server.faults = SLOW  # the hold lifted: the run finishes
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    for done in read:
        assert "has not ended: another vera process is still writing the run" in done.stderr, done.stderr
        assert "killed" not in done.stderr
    assert "unfinished_session" not in _card(out)
    assert not (out / SESSION_FILE).exists()


@pytest.mark.parametrize("locale", ["en", "zh-CN"])
def test_the_card_of_a_killed_run_not_yet_resumed_says_so_in_the_run_s_words(
    tmp_path: Path, locale: str
) -> None:
    """The card `vera score` writes while a killed session's mark is in the run says so
    at its top, in the pack's words; the run's own card, scored at its end, does not."""
    out = tmp_path / "0"
    pack = ["--locale", "zh-CN"] if locale == "zh-CN" else []
    run_vera("run", *pack, "--out", str(out), "--seed", "1", "--limit-personas", "2", "--quiet")
    md, html = (out / "card.md").read_bytes(), (out / "card.html").read_bytes()
    run_vera("score", str(out))  # never killed: not a byte of the card changes
    assert (out / "card.md").read_bytes() == md and (out / "card.html").read_bytes() == html
    mark = OpenSession(
        started_at="2026-12-07T10:00:00.000+00:00", command="run", max_concurrency=8, max_in_flight=64
    )
    (out / SESSION_FILE).write_bytes(msgspec.json.encode(mark))
    run_vera("score", str(out))
    text = (out / "card.md").read_text(encoding="utf-8")
    if locale == "zh-CN":
        assert "没有结束：它被直接终止" in text and "vera run --resume RUN_DIR" in text
        # The command a reader types, and the T of the session's start (2026-12-07T10:00).
        assert set(leftovers(text)) <= {"kill", "vera", "run", "resume", "RUN", "DIR", "T"}, leftovers(text)
    else:
        assert CARD_KILLED in text
    assert "2026-12-07T10:00:00.000+00:00" in (out / "card.html").read_text(encoding="utf-8")


# -- the run's budget ---------------------------------------------------------------------

_SPENT = re.compile(r"stopped: budget reached — \$([0-9.]+) of \$([0-9.]+) spent(?: \(\$([0-9.]+) of it)?")


def _recorded_spend(out: Path) -> float:
    return sum(c["cost_usd"] + c.get("uncertain_usd", 0.0) for c in _lines(out / "calls.jsonl"))


def _resume_with_budget(out: Path, usd: float) -> tuple[float, float]:
    """A resume under `--max-cost usd` that stops at once: (spent, of it uncertain)."""
    done = _done("run", "--resume", str(out), "--max-cost", f"{usd:.6f}", "--quiet", code=3)
    found = _SPENT.search(done.stdout + done.stderr)
    assert found is not None, done.stdout + done.stderr
    return float(found[1]), float(found[3] or 0)


@pytest.mark.slow
def test_the_run_s_budget_counts_a_killed_session_s_calls_in_flight_at_their_worst_case(
    tmp_path: Path,
) -> None:
    """`--max-cost` counts the calls a killed session had in flight (sent, perhaps
    billed, in no record) at their worst case, as it counts a cut-off call's: from the
    resume that finds the kill on, and in every session after it."""
    with SweepServer(faults=SLOW) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, personas=6, max_tokens=300)
        out = tmp_path / "run"
        _kill_when(cfg, out, lambda: _calls(out) >= 40)
        recorded = _recorded_spend(out)
        # A budget a cent above what the records hold: the kill's worst case passes it.
        spent, uncertain = _resume_with_budget(out, recorded + 0.0001)
        [killed] = json.loads((out / "manifest.json").read_text())["killed_sessions"]
        assert killed["calls"] > 0 and killed["worst_usd"] > 0.0001
        assert spent == pytest.approx(recorded + killed["worst_usd"], abs=1e-4), (spent, recorded, killed)
        assert uncertain == pytest.approx(killed["worst_usd"], abs=1e-4)
        # The next session counts it too, at the worst case the resume priced.
        again, _ = _resume_with_budget(out, recorded + killed["worst_usd"] + 0.0001)
        assert again == pytest.approx(recorded + killed["worst_usd"], abs=1e-4)
        # With room for it, the run finishes.
        _done("run", "--resume", str(out), "--max-cost", "10", "--quiet")
    assert _card(out)["status"]["state"] == "complete"


def test_vera_view_of_a_folder_names_each_run_under_it_that_did_not_end(tmp_path: Path) -> None:
    """`vera view FOLDER` says it of every run under the folder whose session did not
    end, once each, and of no other."""
    for name in ("killed", "finished"):
        run_vera("run", "--out", str(tmp_path / name), "--seed", "1", "--limit-personas", "2", "--quiet")
    mark = OpenSession(
        started_at="2026-12-07T10:00:00.000+00:00", command="run", max_concurrency=8, max_in_flight=64
    )
    (tmp_path / "killed" / SESSION_FILE).write_bytes(msgspec.json.encode(mark))
    proc = subprocess.Popen(
        _vera("view", str(tmp_path), "--port", "0"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # serving: everything before it has been said
            if "serving at" in line:
                break
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    lines = [line for line in err.splitlines() if UNFINISHED in line]
    assert len(lines) == 1 and f"{tmp_path / 'killed'}: " in lines[0] and KILLED_LINE in lines[0], err
