"""Any target runs offline end to end (the dry-run judge where the lexical judge cannot
read the rubric), its annotation columns travel with the conversations, and the card
breaks scores down by the target's own grouping, never silently "Unknown"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest

from vera.records import Conversation

from .conftest import FIXTURES
from .targets import DEMO, HFO, copy_demo, edit_manifest, one_error_line, vera
from .targets import demo_run as demo_run  # the fixture

# --------------------------------------------------------------------------------------
# Running a target offline, end to end
# --------------------------------------------------------------------------------------


def test_any_target_runs_offline_with_the_dry_run_judge_and_says_so(demo_run):
    out, result = demo_run
    assert (
        "offline/lexical-judge cannot judge DEMO rubric@unversioned; judging with offline/dry-run-judge"
        in (result.stdout + result.stderr)
    )
    card = json.loads((out / "card.json").read_text())
    assert card["offline"] is True
    assert card["target"]["name"] == "DEMO" and card["target"]["format"] == "vera-mh"
    assert card["grouping"] == {"by": "Safety Concern", "levels": ["Present", "Absent"]}
    assert card["models"]["judges"] == ["offline/dry-run-judge"]
    assert card["counts"]["conversations_complete"] == 2 * 3 * 2  # seeds × personas × chatbots
    for bot in card["chatbots"]:
        assert set(bot["by_risk"]) <= {"Present", "Absent"} and bot["by_risk"]
    md = (out / "card.md").read_text()
    assert md.startswith("# Safety card, target DEMO")
    assert "### By persona Safety Concern" in md
    assert "**Persona groups:** by persona column 'Safety Concern': Present, Absent" in md


def test_annotations_travel_with_the_conversations(demo_run):
    out, _ = demo_run
    convs = [
        msgspec.json.decode(line, type=Conversation)
        for line in (out / "conversations.jsonl").read_bytes().splitlines()
    ]
    by_persona = {c.persona: c.annotations for c in convs}
    assert by_persona["Ben"] == {"Safety Concern": "Absent: no concern for safety"}
    assert {c.risk for c in convs if c.persona == "Cai"} == {"Present"}


def test_rerunning_a_target_run_on_the_same_folder_does_nothing_twice(demo_run):
    out, _ = demo_run
    again = vera("run", "--target", str(DEMO), "--seeds", "2", "--out", str(out), "--quiet")
    assert again.returncode == 0, again.stderr
    assert "conversations: 0 new, 12 reused" in again.stdout + again.stderr


def test_no_grouping_is_said_on_the_card_not_shown_as_unknown(tmp_path):
    demo = copy_demo(tmp_path)
    edit_manifest(demo, persona_annotation_columns=None)
    out = tmp_path / "run"
    result = vera("run", "--target", str(demo), "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    card = json.loads((out / "card.json").read_text())
    assert card["grouping"] == {"by": "", "levels": []}
    assert all(bot.get("by_risk") is None for bot in card["chatbots"])
    assert "none: the target names no grouping column" in (out / "card.md").read_text()
    assert "Unknown" not in (out / "card.md").read_text()


def test_a_grouping_column_that_is_absent_is_named(tmp_path):
    demo = copy_demo(tmp_path)
    (tmp_path / "run.toml").write_text(f'target = "{demo}"\ngroup_by = "Harm imminence"\n')
    line = one_error_line(vera("run", "--config", str(tmp_path / "run.toml"), "--out", str(tmp_path / "run")))
    assert line == f"error: {demo / 'personas_a.tsv'}:1: missing column(s): Harm imminence"


# --------------------------------------------------------------------------------------
# The reference's HFO target (skipped where the reference data is absent)
# --------------------------------------------------------------------------------------


def hfo_checkout(tmp_path: Path) -> Path:
    """The reference's HFO folder with stand-ins of our own for the files the reference
    data here lacks (its judge prompts, the shared user prompt and reminder)."""
    data = tmp_path / "data"
    shutil.copytree(HFO, data / "HFO")
    for name in ("persona_prompt_template.txt", "persona_prompt_reminder.txt"):
        shutil.copy(FIXTURES / "targets" / name, data / name)
    shutil.copy(DEMO / "judge_prompt.txt", data / "HFO" / "rubric_prompt_beginning_HFO.txt")
    shutil.copy(DEMO / "question_prompt.txt", data / "HFO" / "question_prompt_HFO.txt")
    return data


@pytest.mark.skipif(not HFO.exists(), reason="reference data absent")
def test_the_reference_hfo_files_run_as_published(tmp_path):
    """The authors' HFO manifest names an annotation column (`Active Life Threat`) that
    their personas file lacks: a warning naming both files, the run goes on, and the
    breakdown by that column says it is absent. Only the files that are not public
    (the judge prompts, the shared user prompt and reminder) are supplied here."""
    data = hfo_checkout(tmp_path)
    for name in ("manifest.json", "personas_HFO.tsv", "rubric_HFO.tsv", "persona_context_template_HFO.txt"):
        assert (data / "HFO" / name).read_bytes() == (HFO / name).read_bytes()
    out = tmp_path / "run"
    result = vera(
        "run",
        "--target",
        "reference:HFO",
        "--reference-data",
        str(data),
        "--limit-personas",
        "4",
        "--out",
        str(out),
        "--quiet",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    warning = (
        f"warning: {data / 'HFO' / 'manifest.json'}:9: annotation column 'Active Life Threat' named by "
        "manifest.json is not a column of the personas (personas_HFO.tsv); the run goes on without it "
        "and the card says it is absent"
    )
    assert warning in (result.stdout + result.stderr).splitlines()
    card = json.loads((out / "card.json").read_text())
    assert card["grouping"] == {
        "by": "",
        "levels": [],
        "absent": ["Active Life Threat"],
        "files": ["personas_HFO.tsv"],
    }
    assert card["counts"]["conversations_complete"] > 0
    md = (out / "card.md").read_text()
    assert (
        "none: the target's annotation column 'Active Life Threat' is absent from the personas "
        "(personas_HFO.tsv)" in md
    )
    convs = [json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()]
    assert all(not c.get("annotations") for c in convs)  # no empty column travels as if it were data
    (tmp_path / "run.toml").write_text('target = "reference:HFO"\n')
    checked = vera("validate", "config", str(tmp_path / "run.toml"), "--reference-data", str(data))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (
        f"{data / 'HFO' / 'manifest.json'}:9: warning: annotation column 'Active Life Threat'"
        in checked.stdout
    )


@pytest.mark.skipif(not HFO.exists(), reason="reference data absent")
def test_hfo_runs_offline_grouped_by_harm_imminence(tmp_path):
    data = hfo_checkout(tmp_path)
    edit_manifest(data / "HFO", persona_annotation_columns=None)
    (tmp_path / "run.toml").write_text('target = "reference:HFO"\ngroup_by = "Harm imminence"\n')
    out = tmp_path / "run"
    result = vera(
        "run",
        "--config",
        str(tmp_path / "run.toml"),
        "--reference-data",
        str(data),
        "--limit-personas",
        "12",
        "--out",
        str(out),
        "--quiet",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    card = json.loads((out / "card.json").read_text())
    assert card["grouping"]["by"] == "Harm imminence"
    assert set(card["grouping"]["levels"]) == {"N/A", "Non-imminent", "Imminent"}
    assert card["versions"]["rubric"]["name"] == "HFO rubric"
    # The danger tier routes: some judgement went down each of the tier's branches.
    answers = [
        a for line in (out / "judgements.jsonl").read_text().splitlines() for a in json.loads(line)["answers"]
    ]
    tiers = {a["answer"] for a in answers if a["question_id"] == "11"}
    assert tiers <= {"No Danger", "Immediate Danger Absent", "Immediate Danger Present"} and tiers


@pytest.mark.skipif(not HFO.exists(), reason="reference data absent")
def test_personas_show_works_for_a_manifest_target(tmp_path):
    data = hfo_checkout(tmp_path)
    first = (HFO / "personas_HFO.tsv").read_text().splitlines()[1].split("\t")[0]
    shown = vera("personas", "show", first, "--target", "reference:HFO", "--reference-data", str(data))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("# system prompt (HFO user-agent prompts unversioned)")
    assert "# reminder (attached to every user turn)" in shown.stdout
    assert "{" not in shown.stdout.split("# reminder")[0]  # every placeholder of the context filled
    both = vera(
        "personas", "show", first, "--target", "reference:HFO", "--file", str(HFO / "personas_HFO.tsv")
    )
    assert both.returncode == 1 and "give --target or --file/--prompts" in both.stderr


def test_personas_show_for_our_own_demo_target():
    shown = vera("personas", "show", "Asha", "--target", str(DEMO), "--min-turns", "0")
    assert shown.returncode == 0, shown.stderr
    assert "- Name: Asha" in shown.stdout
