"""Targets as a first-class input: vera's own SI target, a VERA-MH 2.0 manifest read
unchanged (paths relative to it, several persona files combined, the persona context in
the shared template), and every problem one line naming its file before any call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vera.engine import Inputs
from vera.errors import ConfigError, DataError
from vera.inputs import RunConfig, apply_target, find_target, load_config, load_target, load_user_prompts
from vera.inputs._personas import render_user_reminder, render_user_system

from .conftest import FIXTURES, ROOT
from .targets import DEMO, copy_demo, edit_manifest, one_error_line, vera

# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


def test_the_built_in_target_is_vera_si_and_names_our_files():
    target = load_target(find_target("vera-si"))
    assert target.format == "vera" and target.name == "vera-si"
    assert Path(target.rubric) == (ROOT / "rubrics" / "vera-si.tsv").resolve()
    assert [Path(p) for p in target.personas] == [(ROOT / "personas" / "vera-personas.tsv").resolve()]
    assert target.group_by == "risk"
    # By name in any case, and by folder.
    assert find_target("VERA-SI") == find_target(str(ROOT / "targets" / "vera-si"))


def test_a_vera_mh_manifest_loads_unchanged_with_paths_relative_to_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may depend on the working directory
    target = load_target(find_target(str(DEMO)))
    assert target.format == "vera-mh" and target.name == "DEMO"
    assert target.rubric == str((DEMO / "rubric.tsv").resolve())
    assert [Path(p).name for p in target.personas] == ["personas_a.tsv", "personas_b.tsv"]
    assert target.annotation_columns == ("Safety Concern",)
    assert target.user_prompts == target.judge_prompts == str((DEMO / "manifest.json").resolve())


def test_a_target_supplies_the_config_and_its_personas_are_combined():
    cfg = RunConfig(base_dir=str(ROOT))
    apply_target(cfg, str(DEMO))
    inputs = Inputs.load(cfg)
    assert [p.name for p in inputs.personas.personas] == ["Asha", "Ben", "Cai"]
    assert inputs.personas.version.files == tuple(
        str((DEMO / f).resolve()) for f in ("personas_a.tsv", "personas_b.tsv")
    )
    # The grouping is the target's first annotation column, in order of appearance.
    assert (inputs.personas.grouping, inputs.personas.levels) == ("Safety Concern", ("Present", "Absent"))
    assert [p.risk for p in inputs.personas.personas] == ["Present", "Absent", "Present"]
    assert inputs.personas.personas[2].annotations == {
        "Safety Concern": "Present: a former partner keeps turning up"
    }
    assert inputs.rubric.key == "DEMO rubric@unversioned"


def test_the_persona_context_is_placed_in_the_shared_template():
    prompts = load_user_prompts(DEMO / "manifest.json")
    cfg = RunConfig(base_dir=str(ROOT))
    apply_target(cfg, str(DEMO))
    asha = Inputs.load(cfg).personas.personas[0]
    system = render_user_system(asha, prompts, min_turns=0, max_turns=30)
    shared = (FIXTURES / "targets" / "persona_prompt_template.txt").read_text()
    before, after = shared.split("{persona_context}")
    assert system.startswith(before) and system.endswith(after)
    assert "- What is going on: feels unsafe at home lately" in system
    assert "{" not in system
    # The reference's conventions: its end marker, its shared reminder before the message.
    assert prompts.end_marker == "<END OF CONVERSATION>"
    assert prompts.reminder_position == "before"
    reminder = render_user_reminder(asha, prompts, min_turns=0, max_turns=30)
    assert reminder == (FIXTURES / "targets" / "persona_prompt_reminder.txt").read_text()


# --------------------------------------------------------------------------------------
# Every problem is one line naming the file (and line), before any call
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"question_prompt_file": None}, "manifest.json: missing required key(s): question_prompt_file"),
        ({"rubric_file": "nope.tsv"}, "manifest.json:2: rubric_file: no such file: "),
        ({"personas": []}, "manifest.json:5: personas must be a non-empty list of file names"),
        ({"personas": "personas_a.tsv"}, "manifest.json:5: personas must be a non-empty list of file names"),
        ({"persona_annotation_columns": [""]}, "must list non-empty column names"),
    ],
)
def test_a_broken_manifest_is_one_line_naming_the_file(tmp_path, change, expected):
    demo = copy_demo(tmp_path)
    edit_manifest(demo, **change)
    line = one_error_line(vera("run", "--target", str(demo), "--out", str(tmp_path / "run")))
    assert line.startswith(f"error: {demo}/") or line.startswith("error: ")
    assert expected in line
    assert str(demo) in line
    assert not (tmp_path / "run").exists()  # nothing made, nothing called


def test_an_annotation_column_the_personas_lack_is_a_warning_and_the_run_goes_on(tmp_path):
    demo = copy_demo(tmp_path)
    edit_manifest(demo, persona_annotation_columns=["Favourite Colour", "Safety Concern"])
    out = tmp_path / "run"
    result = vera("run", "--target", str(demo), "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    assert (
        f"warning: {demo / 'manifest.json'}:10: annotation column 'Favourite Colour' named by manifest.json "
        "is not a column of the personas (personas_a.tsv, personas_b.tsv)"
    ) in result.stdout + result.stderr
    card = json.loads((out / "card.json").read_text())
    # The next annotation column groups; the absent one is said on the card.
    assert card["grouping"]["by"] == "Safety Concern"
    assert card["grouping"]["absent"] == ["Favourite Colour"]
    assert card["target"]["annotation_columns"] == ["Safety Concern"]
    assert (
        "the target's annotation column 'Favourite Colour' is absent from the personas "
        "(personas_a.tsv, personas_b.tsv)" in (out / "card.md").read_text()
    )


def test_a_context_placeholder_that_is_no_persona_column_names_its_line(tmp_path):
    demo = copy_demo(tmp_path)
    (demo / "context.txt").write_text("About you:\n- Name: {Name}\n- Pet: {Pet Name}\n")
    line = one_error_line(vera("run", "--target", str(demo), "--out", str(tmp_path / "run")))
    assert line == f"error: {demo / 'context.txt'}:3: placeholder {{Pet Name}} is not a persona column"


def test_a_shared_template_without_the_context_slot_is_refused(tmp_path):
    demo = copy_demo(tmp_path)
    (demo.parent / "persona_prompt_template.txt").write_text("Play a person. {Name}\n")
    line = one_error_line(vera("run", "--target", str(demo), "--out", str(tmp_path / "run")))
    assert str(demo.parent / "persona_prompt_template.txt") in line
    assert "{persona_context}" in line


def test_a_missing_shared_reminder_is_named(tmp_path):
    demo = copy_demo(tmp_path)
    (demo.parent / "persona_prompt_reminder.txt").unlink()
    line = one_error_line(vera("run", "--target", str(demo), "--out", str(tmp_path / "run")))
    assert "the shared per-turn reminder" in line and "persona_prompt_reminder.txt" in line


def test_the_same_persona_in_two_files_is_named_with_both(tmp_path):
    demo = copy_demo(tmp_path)
    with (demo / "personas_b.tsv").open("a") as f:
        f.write("Asha\t40\tAbsent: none\tquiet week\tshort\n")
    line = one_error_line(vera("run", "--target", str(demo), "--out", str(tmp_path / "run")))
    assert line == (
        f"error: {demo / 'personas_b.tsv'}:3: duplicate name 'Asha' (first on {demo / 'personas_a.tsv'}:2)"
    )


def test_invalid_json_names_its_line(tmp_path):
    demo = copy_demo(tmp_path)
    (demo / "manifest.json").write_text('{\n  "rubric_file": "rubric.tsv",\n  oops\n}\n')
    line = one_error_line(vera("run", "--target", str(demo), "--out", str(tmp_path / "run")))
    assert line.startswith(f"error: {demo / 'manifest.json'}:3: invalid JSON")


def test_an_unknown_target_lists_the_built_in_ones(tmp_path):
    line = one_error_line(vera("run", "--target", "no-such-target", "--out", str(tmp_path / "run")))
    assert "built in: vera-si" in line
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_error_line(vera("run", "--target", str(empty), "--out", str(tmp_path / "run")))
    assert "holds neither target.toml nor manifest.json" in line


def test_a_config_names_either_a_target_or_its_files(tmp_path):
    bad = tmp_path / "run.toml"
    bad.write_text(f'target = "{DEMO}"\nrubric = "rubrics/vera-si.tsv"\n')
    with pytest.raises(ConfigError, match="`target` and `rubric` both given"):
        load_config(bad)
    good = tmp_path / "good.toml"
    good.write_text(f'target = "{DEMO}"\ngroup_by = "Age"\n')
    cfg = load_config(good)
    assert cfg.rubric == str((DEMO / "rubric.tsv").resolve())
    assert cfg.group_by == "Age"  # the config's own grouping wins over the target's


def test_a_relative_target_in_a_config_is_relative_to_the_config(tmp_path):
    demo = copy_demo(tmp_path)
    (tmp_path / "run.toml").write_text('target = "data/DEMO"\n')
    cfg = load_config(tmp_path / "run.toml")
    assert cfg.judge_prompts == str((demo / "manifest.json").resolve())


def test_dataerror_for_a_target_file_that_cannot_be_read(tmp_path):
    with pytest.raises(DataError, match="cannot read target"):
        load_target(tmp_path / "nope" / "manifest.json")


def test_an_unknown_manifest_key_is_a_warning_naming_its_line(tmp_path):
    demo = copy_demo(tmp_path)
    edit_manifest(demo, persona_annotation_column=["Safety Concern"])  # a typo of the real key
    out = tmp_path / "run"
    result = vera("run", "--target", str(demo), "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    line = next(x for x in (result.stdout + result.stderr).splitlines() if "unknown key" in x)
    assert line.startswith(f"warning: {demo / 'manifest.json'}:13: unknown key 'persona_annotation_column'")
    assert "vera reads: rubric_file" in line
    (tmp_path / "run.toml").write_text(f'target = "{demo}"\n')
    checked = vera("validate", "config", str(tmp_path / "run.toml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{demo / 'manifest.json'}:13: warning: unknown key 'persona_annotation_column'" in checked.stdout
