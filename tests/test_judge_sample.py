"""`vera judge RUN_DIR --sample N`: a seeded sample of a simulated run's conversations
is judged, the rest stay unjudged, and the card counts judged of complete honestly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vera.stats.sampling import judging_sample

from .door import invoke, refused


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sample") / "sim"
    result = invoke(["simulate", "--limit-personas", "3", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    return out


def copy(simulated: Path, tmp_path: Path, name: str = "run") -> Path:
    return Path(shutil.copytree(simulated, tmp_path / name))


def judged_ids(run: Path) -> set[str]:
    path = run / "judgements.jsonl"
    if not path.exists():
        return set()
    return {json.loads(line)["conversation_id"] for line in path.read_text().splitlines() if line.strip()}


def complete_ids(run: Path) -> set[str]:
    lines = (run / "conversations.jsonl").read_text().splitlines()
    return {c["id"] for c in map(json.loads, filter(str.strip, lines)) if c["status"] == "complete"}


def test_a_sample_is_judged_and_the_card_says_of_how_many(simulated, tmp_path):
    run = copy(simulated, tmp_path)
    result = invoke(["judge", str(run), "--sample", "2", "--sample-seed", "7", "--quiet"])
    assert result.exit_code == 0, result.output
    complete = complete_ids(run)
    assert len(complete) == 6
    judged = judged_ids(run)
    assert len(judged) == 2 and judged <= complete
    assert judged == set(judging_sample(sorted(complete), 2, 7))
    card = json.loads((run / "card.json").read_text())
    # The unjudged rest is neither failed nor pending: the run is complete as asked.
    assert card["status"]["state"] == "complete"
    assert "2 of 2 judgements complete, 0 failed" in card["status"]["summary"]
    assert "a sample of 2 of 6 complete conversations judged (seed 7)" in card["status"]["summary"]
    assert card["counts"]["judgements_complete"] == 2 and card["counts"]["judgements_failed"] == 0
    assert "a sample of 2 of 6 complete conversations judged" in (run / "card.md").read_text()
    # Its own field and line, in card.json and in every rendering.
    assert card["status"]["judged_sample"] == {"judged": 2, "of": 6, "seed": 7}
    said = "judged 2 of 6 conversations (a seeded sample, seed 7)"
    assert f"**Judged:** {said}" in (run / "card.md").read_text()
    assert f"<strong>Judged:</strong> {said}" in (run / "card.html").read_text()
    shown = invoke(["judge", str(run), "--sample", "2", "--sample-seed", "7"])  # a no-op that prints the card
    assert shown.exit_code == 0 and f"Judged: {said}" in shown.output, shown.output
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["judge_sample"] == {"size": 2, "seed": 7}


def test_a_run_judged_whole_has_no_sample_field_or_line(simulated, tmp_path):
    run = copy(simulated, tmp_path)
    assert invoke(["judge", str(run), "--quiet"]).exit_code == 0
    card = json.loads((run / "card.json").read_text())
    assert card["status"]["judged_sample"] is None
    assert "Judged:" not in (run / "card.md").read_text()


def test_the_same_seed_gives_the_same_sample_and_another_seed_its_own(simulated, tmp_path):
    runs = [copy(simulated, tmp_path, name) for name in ("a", "b")]
    for run in runs:
        assert invoke(["judge", str(run), "--sample", "3", "--sample-seed", "11", "--quiet"]).exit_code == 0
    assert judged_ids(runs[0]) == judged_ids(runs[1])
    ids = sorted(complete_ids(runs[0]))
    samples = {frozenset(judging_sample(ids, 3, seed)) for seed in range(20)}
    assert len(samples) > 1  # the seed matters
    # Nested: a larger sample holds the smaller one; the order of the ids does not matter.
    assert set(judging_sample(ids, 2, 5)) <= set(judging_sample(list(reversed(ids)), 4, 5))


def test_rerunning_the_sample_is_a_no_op_and_a_larger_one_adds_only_the_extra(simulated, tmp_path):
    run = copy(simulated, tmp_path)
    assert invoke(["judge", str(run), "--sample", "2", "--quiet"]).exit_code == 0
    first = judged_ids(run)
    judgements = (run / "judgements.jsonl").read_bytes()
    manifest = (run / "manifest.json").read_bytes()
    again = invoke(["judge", str(run), "--sample", "2", "--quiet"])
    assert again.exit_code == 0, again.output
    assert "judgements: 0 new, 2 reused" in again.output
    assert (run / "judgements.jsonl").read_bytes() == judgements
    assert (run / "manifest.json").read_bytes() == manifest
    # `vera judge RUN_DIR` alone (the resume hint) stays in the run's sample.
    alone = invoke(["judge", str(run), "--quiet"])
    assert alone.exit_code == 0 and "judgements: 0 new" in alone.output
    assert judged_ids(run) == first
    larger = invoke(["judge", str(run), "--sample", "4", "--quiet"])
    assert larger.exit_code == 0, larger.output
    assert "judgements: 2 new, 2 reused" in larger.output
    assert first < judged_ids(run) and len(judged_ids(run)) == 4
    card = json.loads((run / "card.json").read_text())
    assert "a sample of 4 of 6 complete conversations judged" in card["status"]["summary"]


def test_a_sample_larger_than_the_run_judges_all_with_a_note(simulated, tmp_path):
    run = copy(simulated, tmp_path)
    result = invoke(["judge", str(run), "--sample", "50", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "--sample 50: the run has 6 complete conversation(s); judging all" in result.stderr
    assert judged_ids(run) == complete_ids(run)


@pytest.mark.parametrize("n", ["0", "-3"])
def test_a_sample_of_none_is_refused(simulated, tmp_path, n):
    run = copy(simulated, tmp_path)
    refused(invoke(["judge", str(run), "--sample", n]), "--sample")
    assert judged_ids(run) == set()


def test_a_sample_seed_out_of_range_is_refused(simulated, tmp_path):
    run = copy(simulated, tmp_path)
    refused(invoke(["judge", str(run), "--sample", "2", "--sample-seed", "-1"]), "--sample-seed")
    assert judged_ids(run) == set()


def test_a_sample_is_refused_for_imported_transcripts(tmp_path):
    transcript = tmp_path / "t.txt"
    transcript.write_text("user: hello\n\nchatbot: hi\n")
    refused(invoke(["judge", "--transcripts", str(transcript), "--sample", "2"]), "--sample")
