"""The concurrent rubric walk asks exactly the sequential walk's questions, returns its
walk, and fails as it fails: checked over every route of our rubrics (and the reference
rubrics where present: v1.1, VERA-MH 2.0's SI and HFO), with answers that finish in
shuffled orders. Routes are path classes unless VERA_EVERY_PATH=1 (every literal path:
minutes)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from vera.rubric._concurrent import AskAhead, calls_at_once, flow_of, walk_rubric_concurrent
from vera.rubric._load import load_rubric
from vera.rubric._model import Question, Rubric
from vera.rubric._walk import Answer, walk_rubric

from . import rubric_rules as rules
from .conftest import FIXTURES, REFERENCE, ROOT

REFERENCE_2 = ROOT.parent / "shared" / "reference" / "vera-mh-2.0" / "data"
RUBRICS = {
    "flow": FIXTURES / "rubrics" / "flow.tsv",
    "vera-si": ROOT / "rubrics" / "vera-si.tsv",
    "reference": REFERENCE / "data" / "rubric.tsv",
    "si-1.2": REFERENCE_2 / "SI" / "rubric.tsv",
    "hfo": REFERENCE_2 / "HFO" / "rubric_HFO.tsv",
}


def rubric(name: str) -> Rubric:
    path = RUBRICS[name]
    if not path.exists():
        pytest.skip("reference data absent")
    return load_rubric(path)


def answer_paths(r: Rubric) -> Iterator[dict[str, str]]:
    """The ways through the rubric, for each the label given to each asked question:
    the path classes of tests/rubric_rules.py (every distinct route through each
    independent part, every answer of every question), or every literal path with
    VERA_EVERY_PATH=1. The parts are exactly what the concurrent walk splits on, so the
    classes meet every part in every way it can go."""
    yield from rules.answer_paths(rules.read_sheet(Path(r.path)))


class Judge:
    """Answers from a table after a few turns of the loop (a different number for each
    question, so parts finish in shuffled orders); logs what it was asked, and how many
    questions were being asked at once at most."""

    def __init__(
        self, given: dict[str, str], seed: int | None = 0, fail: dict[str, Exception] | None = None
    ) -> None:
        self.given = given
        self.delays = random.Random(seed) if seed is not None else None
        self.fail = fail or {}
        self.asked: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def __call__(self, q: Question) -> Answer:
        self.asked.append(q.id)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            for _ in range(self.delays.randrange(6) if self.delays else 1):
                await asyncio.sleep(0)
            if q.id in self.fail:
                raise self.fail[q.id]
            return Answer(self.given[q.id], f"why {q.id}", raw=f"raw {q.id}")
        finally:
            self.in_flight -= 1


@pytest.mark.parametrize("name", RUBRICS)
async def test_every_answer_path_gives_the_sequential_walk_and_its_questions(name):
    r = rubric(name)
    assert flow_of(r) is not None
    paths = 0
    for given in answer_paths(r):
        paths += 1
        sequential, concurrent = Judge(given), Judge(given, seed=paths)
        expected = await walk_rubric(r, sequential)
        assert await walk_rubric_concurrent(r, concurrent) == expected
        # The same questions, each asked once, and nothing the sequential walk skipped.
        assert sorted(concurrent.asked) == sorted(sequential.asked)
        assert len(set(concurrent.asked)) == len(concurrent.asked)
    assert paths >= {"flow": 8, "vera-si": 15, "reference": 25, "si-1.2": 25, "hfo": 40}[name]


async def test_independent_parts_are_asked_at_the_same_time():
    r = rubric("vera-si")
    given = {q.id: "No" for q in r.questions} | {"D1": "Yes", "G0": "Immediate risk"}
    gate = asyncio.Event()
    in_flight: set[str] = set()

    async def answer(q: Question) -> Answer:
        in_flight.add(q.id)
        if q.id != "D1":
            await gate.wait()
        in_flight.discard(q.id)
        return Answer(given[q.id], f"why {q.id}", raw=f"raw {q.id}")

    walk = asyncio.create_task(walk_rubric_concurrent(r, answer))
    for _ in range(20):
        await asyncio.sleep(0)
    # Once risk is detected, the rest of "Detects Potential Risk" with "Confirms Risk",
    # then "Guides to Human Care", "Supportive Conversation" and "Follows AI
    # Boundaries" are four parts, asked side by side.
    assert in_flight == {"D2", "G0", "S1", "B1"}
    gate.set()
    assert await walk == await walk_rubric(r, Judge(given))


def failing_cases(r: Rubric, n: int) -> Iterator[tuple[dict[str, str], dict[str, Exception]]]:
    """Answer paths with one or two of their questions failing."""
    rng = random.Random(7)
    paths = list(answer_paths(r))
    for given in rng.sample(paths, min(n, len(paths))):
        asked = [q for q in given if not r.question(q).automatic]
        for failing in (rng.sample(asked, 1), rng.sample(asked, min(2, len(asked)))):
            yield (
                given,
                {
                    q: (TimeoutError if i else ConnectionError)(f"call for {q} failed")
                    for i, q in enumerate(failing)
                },
            )


@pytest.mark.parametrize("name", ["flow", "vera-si"])
async def test_a_failing_call_fails_the_walk_as_the_sequential_walk_fails(name):
    r = rubric(name)
    for seed, (given, fail) in enumerate(failing_cases(r, 300)):
        sequential, concurrent = Judge(given, fail=fail), Judge(given, seed=seed, fail=fail)
        seq_answered: list[tuple[Question, Answer]] = []
        con_answered: list[tuple[Question, Answer]] = []
        with pytest.raises(Exception) as seq_exc:
            await walk_rubric(r, sequential, answered=seq_answered)
        with pytest.raises(Exception) as con_exc:
            await walk_rubric_concurrent(r, concurrent, answered=con_answered)
        # The failure first in walk order, not the first in time, with the answers
        # before it in walk order.
        assert type(con_exc.value) is type(seq_exc.value)
        assert str(con_exc.value) == str(seq_exc.value)
        assert con_answered == seq_answered
        # Calls after the failure are only those already under way in later parts.
        assert set(sequential.asked) <= set(concurrent.asked)
        assert concurrent.in_flight == 0  # nothing left running


async def test_after_a_failure_later_parts_ask_nothing_more_and_their_calls_under_way_end():
    """A later part's call already sent when an earlier part fails is billed: the walk
    waits for it (so its caller records it) rather than cancelling it, and nothing
    after it is asked."""
    r = rubric("vera-si")
    given = {q.id: "No" for q in r.questions} | {"D1": "Yes", "G0": "Immediate risk"}
    release = asyncio.Event()
    both_sent = asyncio.Event()
    asked: list[str] = []
    ended: list[str] = []

    async def answer(q: Question) -> Answer:
        asked.append(q.id)
        if q.id == "G0":
            await both_sent.wait()
            raise ConnectionError("G0 failed")
        if q.id in ("S1", "B1"):
            if {"S1", "B1"} <= set(asked):
                both_sent.set()
            await release.wait()
            ended.append(q.id)
        if q.id.startswith(("D", "C")):
            await asyncio.sleep(0)
        return Answer(given[q.id])

    answered: list[tuple[Question, Answer]] = []
    walk = asyncio.create_task(walk_rubric_concurrent(r, answer, answered=answered))
    await both_sent.wait()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not walk.done(), "the walk gave up on calls still under way"
    release.set()
    with pytest.raises(ConnectionError, match="G0 failed"):
        await walk
    assert sorted(ended) == ["B1", "S1"]
    # The part before G0 ran to its end; the parts after it went no further than
    # their first question, and those answers are not the walk's.
    assert [q.id for q, _ in answered] == ["D1", "D2", "D4", "C1", "C2", "C3", "C4"]
    assert {q for q in asked if q.startswith(("S", "B"))} == {"S1", "B1"}


async def test_an_outside_cancellation_cancels_every_part():
    r = rubric("vera-si")
    started = asyncio.Event()
    in_flight: set[str] = set()

    async def answer(q: Question) -> Answer:
        in_flight.add(q.id)
        try:
            if q.id == "D1":
                return Answer("Yes")
            if len(in_flight) == 4:
                started.set()
            await asyncio.Event().wait()
            raise AssertionError("unreachable")
        finally:
            in_flight.discard(q.id)

    walk = asyncio.create_task(walk_rubric_concurrent(r, answer))
    await started.wait()
    walk.cancel()
    with pytest.raises(asyncio.CancelledError):
        await walk
    assert in_flight == set()


def always() -> bool:
    return True


@pytest.mark.parametrize("name", RUBRICS)
async def test_asking_ahead_gives_the_sequential_walk_on_every_answer_path(name):
    r = rubric(name)
    paths = early_paths = 0
    for given in answer_paths(r):
        paths += 1
        sequential, early = Judge(given), Judge(given, seed=paths)
        ahead = AskAhead(always, after=1)
        assert await walk_rubric_concurrent(r, early, ahead=ahead) == await walk_rubric(r, sequential)
        # Every question the sequential walk asks, each once; the others asked ahead
        # are counted as unused, and nothing is left running.
        assert set(sequential.asked) <= set(early.asked)
        assert len(set(early.asked)) == len(early.asked)
        assert ahead.unused == len(early.asked) - len(sequential.asked) <= ahead.asked
        assert early.in_flight == 0
        early_paths += ahead.asked > 0
    assert early_paths > paths // 2


async def test_a_part_asks_ahead_only_after_its_first_questions_and_only_when_allowed():
    r = rubric("vera-si")
    # Risk found, then No down every chain: S1..S7 is one part of seven questions.
    given = {q.id: "No" for q in r.questions} | {"D1": "Yes", "D2": "Yes", "G0": "Immediate risk"}
    sequential = Judge(given)
    expected = await walk_rubric(r, sequential)
    never = AskAhead(lambda: False, after=1)
    plain = Judge(given)
    assert await walk_rubric_concurrent(r, plain, ahead=never) == expected
    assert never.asked == 0 and sorted(plain.asked) == sorted(sequential.asked)

    gate = asyncio.Event()
    in_flight: set[str] = set()

    async def answer(q: Question) -> Answer:
        in_flight.add(q.id)
        if q.id.startswith("S") and q.id != "S1" and q.id != "S2":
            await gate.wait()
        in_flight.discard(q.id)
        return Answer(given[q.id], f"why {q.id}", raw=f"raw {q.id}")

    ahead = AskAhead(always, after=3)
    walk = asyncio.create_task(walk_rubric_concurrent(r, answer, ahead=ahead))
    for _ in range(30):
        await asyncio.sleep(0)
    # S1 and S2 one after the other; at the third question, S3, S4 is asked with it.
    assert {q for q in in_flight if q.startswith("S")} == {"S3", "S4"}
    gate.set()
    assert await walk == expected
    # With every chain answered No, the way on was always the one taken.
    assert ahead.asked > 0 and ahead.unused == 0


async def test_a_question_asked_ahead_that_fails_fails_the_walk_only_if_reached():
    r = rubric("vera-si")
    given = {q.id: "No" for q in r.questions} | {"D1": "Yes", "D2": "Yes", "G0": "Immediate risk"}
    # S4 answered Yes ends the chain: S5, asked ahead, is not reached.
    unreached = Judge(given | {"S4": "Yes"}, fail={"S5": ConnectionError("S5 failed")})
    ahead = AskAhead(always, after=3)
    expected = await walk_rubric(r, Judge(given | {"S4": "Yes"}))
    assert await walk_rubric_concurrent(r, unreached, ahead=ahead) == expected
    assert "S5" in unreached.asked and ahead.unused >= 1

    # Reached, its failure is the walk's, as in the sequential walk.
    reached = Judge(given, fail={"S5": ConnectionError("S5 failed")})
    seq_answered: list[tuple[Question, Answer]] = []
    early_answered: list[tuple[Question, Answer]] = []
    with pytest.raises(ConnectionError, match="S5 failed"):
        await walk_rubric(r, Judge(given, fail={"S5": ConnectionError("S5 failed")}), answered=seq_answered)
    with pytest.raises(ConnectionError, match="S5 failed"):
        await walk_rubric_concurrent(r, reached, answered=early_answered, ahead=AskAhead(always, after=3))
    assert early_answered == seq_answered
    assert reached.in_flight == 0


async def test_an_outside_cancellation_cancels_what_was_asked_ahead():
    r = rubric("vera-si")
    given = {q.id: "No" for q in r.questions} | {"D1": "Yes", "D2": "Yes", "G0": "Immediate risk"}
    in_flight: set[str] = set()
    ahead_started = asyncio.Event()

    async def answer(q: Question) -> Answer:
        in_flight.add(q.id)
        try:
            if q.id == "S4":
                ahead_started.set()
            if q.id in ("S3", "S4"):
                await asyncio.Event().wait()
            return Answer(given[q.id])
        finally:
            in_flight.discard(q.id)

    walk = asyncio.create_task(walk_rubric_concurrent(r, answer, ahead=AskAhead(always, after=3)))
    await ahead_started.wait()
    walk.cancel()
    with pytest.raises(asyncio.CancelledError):
        await walk
    assert in_flight == set()


async def test_a_rubric_with_a_cycle_is_walked_sequentially():
    r = rubric("flow")
    q = r.question("C2")
    looped = msgspec_replace_goto(r, q, "C1")
    assert flow_of(looped) is None
    with pytest.raises(RuntimeError, match="cycle"):
        given = {q.id: "No" for q in looped.questions} | {"A1": "Yes", "A2": "Yes"}
        await walk_rubric_concurrent(looped, Judge(given), answered=[])


def msgspec_replace_goto(r: Rubric, q: Question, target: str) -> Rubric:
    """`r` with question `q` turned into Yes/No options whose No leads back to `target`."""
    import msgspec

    from vera.rubric._model import Goto, Option

    options = (Option("Yes", Goto("end"), q.line), Option("No", Goto("question", target), q.line))
    questions = tuple(msgspec.structs.replace(x, options=options) if x.id == q.id else x for x in r.questions)
    return msgspec.structs.replace(r, questions=questions)


@pytest.mark.parametrize("name", RUBRICS)
async def test_a_walk_never_has_more_calls_in_flight_than_calls_at_once_says(name):
    """The bound a killed session's judgements get (vera.app._killed) holds every walk:
    every answer path, answers finishing in shuffled orders, with and without asking
    ahead (from the first question on, always: the most it can ask)."""
    r = rubric(name)
    most = {False: 0, True: 0}
    for n, given in enumerate(answer_paths(r)):
        for seed in range(3):
            for ask_ahead in (False, True):
                judge = Judge(given, seed=n * 3 + seed)
                ahead = AskAhead(always, after=1) if ask_ahead else None
                await walk_rubric_concurrent(r, judge, ahead=ahead)
                most[ask_ahead] = max(most[ask_ahead], judge.most_in_flight)
    bounds = {a: calls_at_once(r, ask_ahead=a) for a in (False, True)}
    assert most[False] <= bounds[False] and most[True] <= bounds[True], (most, bounds)
    assert bounds[False] <= bounds[True] < len(r.questions)
    if name == "vera-si":  # its five parts at once are reached; the bound is not loose by much
        assert (most[False], bounds[False], bounds[True]) == (5, 5, 15)
