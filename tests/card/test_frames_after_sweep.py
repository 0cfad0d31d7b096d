"""Scoring runs after the sweep, from the run's files: the engine does not build the
frames as it goes. The frames written are the ones a sink fed inside the sweep (in the
order judgements were persisted) would have built, sorted by job so that the same run
always writes the same bytes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
from click.testing import CliRunner

from vera.cli._main import main
from vera.records import Conversation, Judgement
from vera.report.card._score import JUDGEMENT_KEY, score_run
from vera.report.shared._scoring import ANSWERS_FILE, RATINGS_FILE, RatingsSink
from vera.store._writer import CONVERSATIONS, JUDGEMENTS, read_records


def test_the_frames_written_after_the_sweep_are_the_frames_streamed_during_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    r = CliRunner().invoke(
        main,
        [
            "run",
            "--config",
            "offline",
            "--limit-personas",
            "6",
            "--seeds",
            "1,2",
            "--out",
            str(run),
            "--quiet",
        ],
    )
    assert r.exit_code == 0, r.output
    conversations = {c.id: c for c in read_records(run / CONVERSATIONS, Conversation)}
    sink = RatingsSink(batch_size=7)  # batches of another size must not change the frames
    for j in read_records(run / JUDGEMENTS, Judgement):  # the order the sweep persisted them
        sink.add(conversations[j.conversation_id], j)
    # Written sorted by job, the rubric's order kept within each judgement.
    streamed_ratings, streamed_answers = (
        f.sort(JUDGEMENT_KEY, maintain_order=True) for f in (sink.frame(), sink.answers_frame())
    )
    assert streamed_ratings.height > 0 and streamed_answers.height > 0
    assert pl.read_parquet(run / RATINGS_FILE).equals(streamed_ratings)
    assert pl.read_parquet(run / ANSWERS_FILE).equals(streamed_answers)


def test_the_engine_does_not_load_scoring() -> None:
    # The layers contract forbids the import; this checks nothing loads it at run time.
    probe = "import sys, vera.engine; print('vera.report' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_frame_files_do_not_depend_on_the_order_judgements_finished(tmp_path: Path) -> None:
    run = tmp_path / "a"
    args = ["run", "--config", "offline", "--limit-personas", "4", "--out", str(run), "--quiet"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    # The same judgements, finished in the opposite order.
    shuffled = tmp_path / "b"
    shutil.copytree(run, shuffled)
    lines = (run / JUDGEMENTS).read_bytes().splitlines(keepends=True)
    assert len(lines) > 2
    (shuffled / JUDGEMENTS).write_bytes(b"".join(reversed(lines)))
    score_run(shuffled)
    for name in (RATINGS_FILE, ANSWERS_FILE):
        assert (run / name).read_bytes() == (shuffled / name).read_bytes(), name
