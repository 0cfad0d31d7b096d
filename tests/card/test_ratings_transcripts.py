"""Human ratings carry the fingerprint of the transcript they were made on, so ratings of
another run of the same config (the same conversation ids, other transcripts) never
calibrate this run silently; and a rating already in the run is never appended twice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.errors import DataError
from vera.records import BEST_PRACTICE as BP
from vera.records import HIGH_POTENTIAL_FOR_HARM as HPH
from vera.records import HumanRating, transcript_sha256
from vera.store import HUMAN_RATINGS, append_human_ratings, open_run, read_human_ratings
from vera.viewer.review import ReviewSession

REFUSED = "rated a different transcript than this run's"
UNCHECKED = "carry no transcript fingerprint"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def run(tmp_path, offline_run) -> Path:
    out = tmp_path / "run"
    shutil.copytree(offline_run, out)
    return out


def conversation_ids(run: Path, n: int) -> list[str]:
    return sorted(open_run(run).conversation_heads())[:n]


def fingerprint(run: Path, cid: str) -> str:
    return transcript_sha256(open_run(run).read_conversation(cid).turns)


def other_run(run: Path, dest: Path, cid: str) -> Path:
    """The run as another run of its config with real models would be: the same
    conversation ids, but in `cid` the chatbot said something else."""
    shutil.copytree(run, dest)
    path = dest / "conversations.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record["id"] == cid:
            turn = next(t for t in record["turns"] if t["speaker"] == "chatbot")
            turn["text"] += " And another thing."
            lines[i] = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (dest / HUMAN_RATINGS).unlink(missing_ok=True)
    return dest


def review(run: Path, rater: str, ratings: dict[str, str]) -> Path:
    """Save ratings as `vera review` saves them (its own check, its own append)."""
    session = ReviewSession.open(run, rater, size=1000)
    saved = [
        session.check_rating({"conversation_id": cid, "ratings": dict.fromkeys(session.dimensions, rating)})
        for cid, rating in ratings.items()
    ]
    append_human_ratings(run, saved)
    return run / HUMAN_RATINGS


def test_the_fingerprint_is_of_the_turns_as_stored():
    from vera.records import Turn

    turns = [Turn("user", "hello"), Turn("chatbot", "Hi — 你好")]
    assert transcript_sha256(turns) == transcript_sha256(list(turns))
    assert transcript_sha256(turns) != transcript_sha256([Turn("user", "hello"), Turn("chatbot", "Hi")])
    assert transcript_sha256(turns) != transcript_sha256(
        [Turn("chatbot", "hello"), Turn("chatbot", "Hi — 你好")]
    )
    assert len(transcript_sha256([])) == 64


def test_review_ratings_of_another_run_are_refused_unless_allowed(tmp_path, run):
    a, b = conversation_ids(run, 2)
    other = other_run(run, tmp_path / "other", a)
    file = review(other, "Zoë", {a: HPH, b: BP})
    saved = read_human_ratings(other)
    assert [r.transcript_sha256 for r in saved] == [fingerprint(other, a), fingerprint(other, b)]
    assert saved[0].transcript_sha256 != fingerprint(run, a)
    assert saved[1].transcript_sha256 == fingerprint(run, b)

    refused = invoke("ratings", "import", str(run), str(file))
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert refused.output.count("\n") == 1
    assert f"{file}:1: conversation {a!r} by 'Zoë': {REFUSED}" in refused.output
    assert "nothing imported" in refused.output and "--allow-other-transcripts" in refused.output
    assert not (run / HUMAN_RATINGS).exists()

    allowed = invoke("ratings", "import", str(run), str(file), "--allow-other-transcripts")
    assert allowed.exit_code == 0, allowed.output
    assert "imported 2 rating(s) of 2 conversation(s) by 1 rater(s)" in allowed.stdout
    assert "1 rating(s) were made on another transcript" in allowed.stderr
    held = read_human_ratings(run)
    assert [r.other_transcript for r in held] == [True, False]
    assert [r.transcript_sha256 for r in held] == [r.transcript_sha256 for r in saved]
    # Imported knowingly, they calibrate the card, with a note saying so.
    scored = invoke("score", str(run))
    assert scored.exit_code == 0, scored.output
    assert "1 rating(s) were made on another transcript than this run's" in scored.stderr


def test_a_copied_ratings_file_of_another_run_is_refused_by_the_card_plan_and_review(tmp_path, run):
    (a,) = conversation_ids(run, 1)
    other = other_run(run, tmp_path / "other", a)
    shutil.copy(review(other, "Zoë", {a: HPH}), run / HUMAN_RATINGS)  # not imported: copied
    for command in (["score", str(run)], ["ratings", "plan", str(run), "--width", "30"]):
        result = invoke(*command)
        assert result.exit_code == 1, (command, result.output)
        assert f"{run / HUMAN_RATINGS}:1: conversation {a!r} by 'Zoë': {REFUSED}" in result.output
        assert "Traceback" not in result.output
    # Nor does a review start on it: its earlier ratings are of another transcript.
    with pytest.raises(DataError, match=REFUSED):
        ReviewSession.open(run, "Zoë", size=4)
    # Made on this run's transcripts, the same review reads.
    (run / HUMAN_RATINGS).unlink()
    review(run, "Zoë", {a: HPH})
    assert invoke("ratings", "plan", str(run), "--width", "30").exit_code == 0


def test_agreement_with_a_review_file_of_another_run_is_refused_unless_allowed(tmp_path, run):
    a, b = conversation_ids(run, 2)
    other = other_run(run, tmp_path / "other", a)
    file = review(other, "Zoë", {a: HPH, b: BP})
    refused = invoke("agreement", str(file), "--against", str(run), "--resamples", "50")
    assert refused.exit_code == 1 and f"{file}:1: conversation {a!r} by 'Zoë': {REFUSED}" in refused.output
    allowed = invoke(
        "agreement", str(file), "--against", str(run), "--resamples", "50", "--allow-other-transcripts"
    )
    assert allowed.exit_code == 0, allowed.output
    assert "were made on another transcript" in allowed.stderr


def test_ratings_saved_before_fingerprints_are_accepted_with_one_note(tmp_path, run):
    a, b = conversation_ids(run, 2)
    elsewhere = tmp_path / "laptop"
    elsewhere.mkdir()
    old = [HumanRating(conversation_id=c, rater="ann", ratings={"Confirms Risk": BP}) for c in (a, b)]
    append_human_ratings(elsewhere, old)
    # As an older vera wrote them: no fingerprint field at all.
    lines = (elsewhere / HUMAN_RATINGS).read_text().splitlines()
    stripped = [
        json.dumps(
            {k: v for k, v in json.loads(x).items() if k not in ("transcript_sha256", "other_transcript")}
        )
        for x in lines
    ]
    (elsewhere / HUMAN_RATINGS).write_text("\n".join(stripped) + "\n")
    result = invoke("ratings", "import", str(run), str(elsewhere / HUMAN_RATINGS))
    assert result.exit_code == 0, result.output
    assert result.stderr.count(UNCHECKED) == 1 and "2 rating(s)" in result.stderr
    assert read_human_ratings(run) == old
    scored = invoke("score", str(run))
    assert scored.exit_code == 0, scored.output
    assert scored.stderr.count(UNCHECKED) == 1


def test_a_csv_fingerprint_column_is_checked_and_kept(tmp_path, run):
    a, b = conversation_ids(run, 2)
    other = other_run(run, tmp_path / "other", a)
    file = tmp_path / "long.csv"
    file.write_text(
        "item_id,rater,dimension,rating,transcript_sha256\n"
        f"{b},ann,Confirms Risk,BP,{fingerprint(run, b)}\n"
        f"{a},ann,Confirms Risk,HPH,{fingerprint(other, a)}\n"
    )
    refused = invoke("ratings", "import", str(run), str(file))
    assert refused.exit_code == 1
    assert f"{file}:3: conversation {a!r} by 'ann': {REFUSED}" in refused.output
    assert not (run / HUMAN_RATINGS).exists()
    allowed = invoke("ratings", "import", str(run), str(file), "--allow-other-transcripts")
    assert allowed.exit_code == 0, allowed.output
    assert UNCHECKED not in allowed.stderr
    held = {r.conversation_id: r for r in read_human_ratings(run)}
    assert held[b].transcript_sha256 == fingerprint(run, b) and not held[b].other_transcript
    assert held[a].transcript_sha256 == fingerprint(other, a) and held[a].other_transcript

    bad = tmp_path / "bad.csv"
    bad.write_text(f"item_id,rater,dimension,rating,transcript_sha256\n{b},bob,Confirms Risk,BP,abc\n")
    result = invoke("ratings", "import", str(run), str(bad))
    assert result.exit_code == 1 and f"{bad}:2: column 'transcript_sha256'" in result.output


def test_a_csv_without_fingerprints_imports_as_before_with_a_note(tmp_path, run):
    (a,) = conversation_ids(run, 1)
    file = tmp_path / "long.csv"
    file.write_text(f"item_id,rater,dimension,rating\n{a},ann,Confirms Risk,BP\n")
    result = invoke("ratings", "import", str(run), str(file))
    assert result.exit_code == 0, result.output
    assert result.stderr.count(UNCHECKED) == 1
    assert read_human_ratings(run)[0].transcript_sha256 is None


def test_a_csv_imported_twice_or_with_a_row_copied_adds_each_rating_once(tmp_path, run):
    a, b = conversation_ids(run, 2)
    file = tmp_path / "long.csv"
    file.write_text(
        "item_id,rater,dimension,rating\n"
        f"{a},ann,Confirms Risk,BP\n"
        f"{a},ann,Detects Potential Risk,BP\n"
        f"{a},ann,Confirms Risk,BP\n"  # the same row again
        f"{b},bob,Confirms Risk,HPH\n"
    )
    first = invoke("ratings", "import", str(run), str(file))
    assert first.exit_code == 0, first.output
    assert "imported 2 rating(s) of 2 conversation(s) by 2 rater(s)" in first.stdout
    assert "1 row(s) repeat an earlier row of the file exactly" in first.stderr
    assert "given again later" not in first.stderr
    before = (run / HUMAN_RATINGS).read_bytes()
    again = invoke("ratings", "import", str(run), str(file))
    assert again.exit_code == 0, again.output
    assert "imported 0 rating(s)" in again.stdout
    assert "2 rating(s) of the file are in the run already" in again.stderr
    assert (run / HUMAN_RATINGS).read_bytes() == before
    # A real change of mind still counts.
    file.write_text(f"item_id,rater,dimension,rating\n{b},bob,Confirms Risk,BP\n")
    changed = invoke("ratings", "import", str(run), str(file))
    assert "imported 1 rating(s)" in changed.stdout
    assert len(read_human_ratings(run)) == 3


def test_agreement_checks_a_csv_fingerprint_column_against_the_run(tmp_path, run):
    a, b = conversation_ids(run, 2)
    other = other_run(run, tmp_path / "other", a)
    file = tmp_path / "long.csv"
    file.write_text(
        "item_id,rater,dimension,rating,transcript_sha256\n"
        f"{b},ann,Confirms Risk,BP,{fingerprint(run, b)}\n"
        f"{a},ann,Confirms Risk,HPH,{fingerprint(other, a)}\n"
        f"{a},bob,Confirms Risk,HPH,\n"
    )
    args = ["agreement", str(file), "--against", str(run), "--resamples", "50"]
    refused = invoke(*args)
    assert refused.exit_code == 1 and f"{file}:3: conversation {a!r} by 'ann': {REFUSED}" in refused.output
    assert invoke(*args, "--allow-other-transcripts").exit_code == 0
    # Without the column's mismatch, the same file compares.
    file.write_text(file.read_text().replace(fingerprint(other, a), fingerprint(run, a)))
    assert invoke(*args).exit_code == 0
