"""A gate verdict that does not flip with the bootstrap seed (issue 23): two runs of one
chatbot whose judge ratings are two draws from the same per-persona distribution (what
two seeds of one chatbot give) sit on the gate's threshold. With a fixed number of
resamples the verdict then depends on the bootstrap seed; the gate raises the resamples
until its decision is outside Monte Carlo error, and gives one verdict for every seed."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import msgspec
import numpy as np
import pytest
from click.testing import CliRunner

from vera import records as rec
from vera.cli._main import main
from vera.records import Conversation, Judgement
from vera.report import gate
from vera.report.compare._gate import _chatbot_pairs, _paired_frame
from vera.report.shared._runs import read_run
from vera.stats import DEFAULT_RESAMPLES, MAX_SETTLE_RESAMPLES, compare

from .conftest import run_vera

RATED = (rec.BEST_PRACTICE, rec.SUBOPTIMAL, rec.HIGH_POTENTIAL_FOR_HARM)
# Two draws that put the gate on its threshold (found by a search over draws; the first
# test checks they still do).
BASELINE_DRAW, CANDIDATE_DRAW = 3, 4


def redraw(source: Path, target: Path, draw: int) -> Path:
    """A copy of `source` whose every rating is drawn anew, from a distribution fixed
    per (persona, dimension) — the same chatbot — with the generator seeded by `draw`."""
    shutil.copytree(source, target)
    persona = {
        c.id: c.persona
        for c in (
            msgspec.json.decode(line, type=Conversation)
            for line in (target / "conversations.jsonl").read_bytes().splitlines()
        )
    }
    lines = []
    for line in (target / "judgements.jsonl").read_bytes().splitlines():
        j = msgspec.json.decode(line, type=Judgement)
        ratings = []
        for r in j.ratings:
            key = zlib.crc32(f"{persona[j.conversation_id]}|{r.dimension}".encode())
            hardness = np.random.default_rng(key).normal(0.0, 1.0)
            logits = np.array([0.5 - hardness, 0.0, hardness - 0.5])
            p = np.exp(logits) / np.exp(logits).sum()
            pick = np.random.default_rng([draw, key]).choice(3, p=p)
            ratings.append(msgspec.structs.replace(r, rating=RATED[pick]))
        lines.append(msgspec.json.encode(msgspec.structs.replace(j, ratings=ratings)))
    (target / "judgements.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return target


@pytest.fixture(scope="module")
def borderline(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("borderline")
    source = root / "source"
    run_vera(
        "run", "--providers", "offline/risk-ignoring", "--out", str(source), "--seed", "1",
        "--limit-personas", "40", "--quiet",
    )  # fmt: skip
    return redraw(source, root / "baseline", BASELINE_DRAW), redraw(
        source, root / "candidate", CANDIDATE_DRAW
    )


def test_with_fixed_resamples_this_case_flips_with_the_bootstrap_seed(borderline):
    base, cand = (read_run(p) for p in borderline)
    ((b_bot, c_bot),) = _chatbot_pairs(base, cand)
    frame = _paired_frame(base, b_bot, cand, c_bot, [1])
    worse = set()
    for seed in range(20):
        _, pairs = compare(frame, unit="side", n_resamples=DEFAULT_RESAMPLES, seed=seed)
        worse.add(bool((pairs.get_column("diff_lo") > 0).any()))  # baseline − candidate
    assert worse == {True, False}


@pytest.mark.slow
def test_the_gate_gives_one_verdict_over_20_bootstrap_seeds(borderline):
    results = [gate(*borderline, seed=seed) for seed in range(20)]
    assert len({r.passed for r in results}) == 1
    assert len({tuple(r.worse) for r in results}) == 1
    # It got there by raising the resamples, within the documented bound.
    used = [r.bootstrap.resamples_used for r in results]
    assert max(used) > DEFAULT_RESAMPLES and max(used) <= MAX_SETTLE_RESAMPLES
    for r in results:
        for row in r.pairs[0].rows:
            if row.diff is not None:
                assert all(e is not None and e >= 0 for e in row.diff_ci_mc_error)


def test_the_report_gives_the_monte_carlo_error_and_the_resamples_used(borderline):
    result = CliRunner().invoke(main, ["compare", *map(str, borderline), "--gate", "--seed", "3"])
    assert result.exit_code in (0, 4, 5), result.output  # NOT WORSE, WORSE, UNDECIDED
    text = " ".join(result.output.split())
    assert "Monte Carlo error of the interval ends: at most" in text
    assert f"raised from {DEFAULT_RESAMPLES:,} to settle the verdict" in text
    data = json.loads(
        CliRunner()
        .invoke(main, ["compare", *map(str, borderline), "--gate", "--seed", "3", "--json", "-"])
        .stdout
    )
    assert data["bootstrap"]["resamples"] == DEFAULT_RESAMPLES
    assert data["bootstrap"]["resamples_used"] > DEFAULT_RESAMPLES
    assert data["bootstrap"]["max_resamples"] == MAX_SETTLE_RESAMPLES
