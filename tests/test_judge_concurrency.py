"""The reference's judge `--max-concurrent N [--per-judge]`: `vera judge
--judge-max-concurrent N` keeps at most N rubric walks in flight (measured at a loopback
OpenAI server), over all judges or, with `--per-judge`, per judge model; neither changes
an answer, the fingerprint or the manifest of a run that does not use them."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from aiohttp import web
from click.testing import CliRunner

from vera.cli._main import main
from vera.engine._plan import JudgeSlot
from vera.engine._sweep import walk_gates
from vera.inputs import load_config

from .fakes.sweep import KEY, Faults, SweepServer, write_sweep_config


class CountingServer(SweepServer):
    """The sweep server, counting the rubric walks it is answering at once: a walk may
    ask its independent parts side by side (vera.rubric._concurrent), so its requests
    are told apart by what they share, the messages before the question."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.walks: Counter[bytes] = Counter()
        self.most_walks = 0
        self._count = threading.Lock()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = orjson.loads(await request.read())  # aiohttp keeps the body for the handler
        walk = orjson.dumps(body["messages"][:-1]) if body["model"] == "judge" else None
        if walk is not None:
            with self._count:
                self.walks[walk] += 1
                self.most_walks = max(self.most_walks, len(+self.walks))
        try:
            return await super().handle(request)
        finally:
            if walk is not None:
                with self._count:
                    self.walks[walk] -= 1


def judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *flags: str) -> tuple[int, list[dict]]:
    """Simulate 8 conversations, then judge them with `flags`: the most rubric walks the
    server answered at once, and the judgements."""
    monkeypatch.setenv("SWEEP_TEST_KEY", KEY)
    with CountingServer(faults=Faults(latency=0.02)) as server:
        cfg = write_sweep_config(tmp_path, server.base_url, extra='[judge]\nask_ahead = "off"')
        out = tmp_path / "run"
        runner = CliRunner()
        made = runner.invoke(main, ["simulate", "--config", str(cfg), "--out", str(out), "--quiet"])
        assert made.exit_code == 0, made.output
        result = runner.invoke(main, ["judge", str(out), *flags, "--quiet"])
        assert result.exit_code == 0, result.output
        most = server.most_walks
    lines = (out / "judgements.jsonl").read_text().splitlines()
    return most, [json.loads(line) for line in lines if line.strip()]


def answers(judgements: list[dict]) -> dict[str, list]:
    return {j["id"]: [(a["question_id"], a["answer"]) for a in j["answers"]] for j in judgements}


def test_judge_max_concurrent_caps_the_walks_in_flight(tmp_path, monkeypatch):
    free, free_judgements = judged(tmp_path / "free", monkeypatch)
    capped, capped_judgements = judged(tmp_path / "capped", monkeypatch, "--judge-max-concurrent", "2")
    assert len(capped_judgements) == len(free_judgements) == 8
    assert free > 2  # without the cap the conversations are judged side by side ...
    assert 1 <= capped <= 2  # ... with it, two walks at most
    assert answers(capped_judgements) == answers(free_judgements)


def test_per_judge_gives_each_judge_model_its_own_cap(tmp_path):
    cfg = load_config(write_sweep_config(tmp_path, "http://127.0.0.1:9"))
    slots = [JudgeSlot("a", 1), JudgeSlot("a", 2), JudgeSlot("b", 1)]
    sweep: Any = SimpleNamespace(inputs=SimpleNamespace(config=cfg), slots=slots)  # what walk_gates reads
    assert walk_gates(sweep) == {}  # no cap
    cfg.judge.max_concurrent = 3
    shared = walk_gates(sweep)
    assert shared["a"] is shared["b"]
    cfg.judge.per_judge = True
    own = walk_gates(sweep)
    assert own["a"] is not own["b"]
    for gate in own.values():
        assert isinstance(gate, asyncio.Semaphore) and gate._value == 3


def test_the_cap_is_no_part_of_the_fingerprint_and_per_judge_needs_it(tmp_path):
    path = write_sweep_config(tmp_path, "http://127.0.0.1:9")
    before = load_config(path).fingerprint()
    capped = tmp_path / "capped.toml"
    capped.write_text(path.read_text() + "\n[judge]\nmax_concurrent = 4\nper_judge = true\n")
    assert load_config(capped).fingerprint() == before
    alone = tmp_path / "alone.toml"
    alone.write_text(path.read_text() + "\n[judge]\nper_judge = true\n")
    result = CliRunner().invoke(main, ["validate", "config", str(alone)])
    assert result.exit_code == 1 and "judge.per_judge applies judge.max_concurrent" in result.output
    flag = CliRunner().invoke(main, ["run", "--config", str(path), "--per-judge"])
    assert flag.exit_code == 1 and "--per-judge applies --judge-max-concurrent" in flag.output
