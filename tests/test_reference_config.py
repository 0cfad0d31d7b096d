"""The reference tool's JSON run config (`generation` / `judging` / `scoring`) read by
vera: translated field by field, each field vera does not use a warning naming it, a
wrong value one line naming the file and the field. The fixtures under
tests/fixtures/reference_configs have the shape of the reference's published configs
(configs/recommended-SI.json, configs/recommended_hfo.json) with values of our own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vera.errors import ConfigError
from vera.inputs._refconfig import is_reference_layout, provider_for, translate

from .conftest import FIXTURES
from .targets import copy_demo, vera

CONFIGS = FIXTURES / "reference_configs"
SI = CONFIGS / "si_two_users.json"
HFO = CONFIGS / "hfo_one_user.json"


@pytest.mark.parametrize(
    ("name", "ref"),
    [
        ("claude-opus-4-5-20251101", "anthropic/claude-opus-4-5-20251101"),
        ("gpt-5.2", "openai/gpt-5.2"),
        ("o3-mini", "openai/o3-mini"),
        ("o4-mini", "openai/o4-mini"),
        ("gemini-3.1-pro-preview", "gemini/gemini-3.1-pro-preview"),
        ("llama3:8b", "ollama/llama3:8b"),
        # The Azure client strips its prefix; a GPT name behind it stays Azure's.
        ("azure-gpt-5.4", "azure-openai/gpt-5.4"),
        ("azure-grok-4", "azure-openai/grok-4"),
        ("offline/best-practice", "offline/best-practice"),
        ("openai/gpt-4o", "openai/gpt-4o"),
        ("mistral-large", None),
    ],
)
def test_model_names_get_the_provider_the_reference_would_pick(name, ref):
    assert provider_for(name) == ref


def test_the_si_example_translates_field_by_field():
    doc = json.loads(SI.read_text())
    assert is_reference_layout(doc)
    out, warnings = translate(doc, str(SI))
    assert out == {
        "target": "reference:SI",
        "chatbots": ["openai/gpt-4.1-mini"],
        "chatbot": {"params": {"temperature": 0.3}},
        "user_agents": ["openai/gpt-5-mini", "anthropic/claude-haiku-4-5-20251001"],
        "seeds": [1, 2, 3],
        "runs_dir": "evaluations",
        "max_concurrency": 6,
        "judges": ["openai/gpt-5.4-mini"],
        "judge": {"instances": 2, "params": {"reasoning_effort": "medium"}, "max_concurrent": 3},
        "conversation": {"max_turns": 24, "min_turns": 0, "first_speaker": "user"},
    }
    # The scoring personas are the only field vera does not use; skip_risk_analysis
    # false is what vera always does, so it says nothing.
    assert warnings == [
        "scoring.personas: not read: the card breaks scores down by the run's own personas "
        "(risk level for SI)"
    ]


def test_the_hfo_example_translates_field_by_field():
    out, warnings = translate(json.loads(HFO.read_text()), str(HFO))
    assert out == {
        "target": "reference:HFO",
        "chatbots": ["gemini/gemini-2.5-flash"],
        "user_agents": ["anthropic/claude-sonnet-4-5"],
        "seeds": [1],
        "runs_dir": "evaluations",
        "judges": ["azure-openai/gpt-5.4"],
        "judge": {"instances": 1, "max_concurrent": 2, "per_judge": True},
        "conversation": {
            "max_turns": 16,
            "min_turns": 0,
            "max_total_words": 900,
            "first_speaker": "chatbot",
            "sessions": ["intake", "check-in"],
        },
    }
    assert warnings == ["scoring.skip_risk_analysis: no equivalent: the card always shows the breakdown"]


def test_explicit_files_under_data_are_read_from_the_reference_folder():
    doc = {
        "generation": {"personas": ["data/SI/personas.tsv", "mine.tsv"]},
        "judging": {
            "rubrics": [
                {
                    "rubric_file": "data/SI/rubric.tsv",
                    "rubric_prompt_beginning_file": "data/SI/rubric_prompt_beginning.txt",
                    "question_prompt_file": "data/SI/question_prompt.txt",
                }
            ]
        },
    }
    out, warnings = translate(doc, "x.json")
    assert out["personas"] == ["reference:SI/personas.tsv", "mine.tsv"]
    assert out["rubric"] == "reference:SI/rubric.tsv"
    assert [w.split(":")[0] for w in warnings] == [
        "judging.rubrics[0].rubric_prompt_beginning_file",
        "judging.rubrics[0].question_prompt_file",
    ]


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"generation": {"turns": "thirty"}}, "generation.turns"),
        ({"generation": {"turns": 1}}, "generation.turns"),
        ({"generation": {"chatbot": {"name": "gpt-4o", "repeats": 2}}}, "generation.chatbot.repeats"),
        ({"generation": {"chatbot": {"name": "gpt-4o"}}}, "generation.chatbot"),
        ({"generation": {"user": [{"name": "mistral-large", "repeats": 1}]}}, "generation.user[0].name"),
        (
            {"generation": {"user": [{"name": "gpt-4o", "repeats": 1}, {"name": "gpt-5", "repeats": 2}]}},
            "generation.user",
        ),
        ({"generation": {"max_total_words": 0}}, "generation.max_total_words"),
        ({"generation": {"persona_speaks_first": "yes"}}, "generation.persona_speaks_first"),
        ({"judging": {"per_judge": 1}}, "judging.per_judge"),
        ({"judging": {"models": []}}, "judging.models"),
        ({"scoring": []}, "scoring"),
    ],
)
def test_a_wrong_value_names_the_file_and_the_field(doc, field):
    with pytest.raises(ConfigError) as err:
        translate(doc, "run.json")
    assert str(err.value).startswith(f"run.json: {field}: ")
    assert "\n" not in str(err.value)


def test_an_unknown_field_is_a_warning_naming_it():
    doc = {"generation": {"turns": 10, "colour": "blue"}, "judging": {}, "extra": 1}
    _, warnings = translate(doc, "run.json")
    assert warnings == [
        "extra: not a field of the reference's config; ignored",
        "generation.colour: not a field of the reference's config; ignored",
    ]


def test_vera_own_json_is_not_taken_for_the_reference_layout():
    assert not is_reference_layout({"chatbots": ["offline/best-practice"], "target": "vera-si"})


# --------------------------------------------------------------------------------------
# Through the command line: a file, `-`, and $VERA_RUN_CONFIG
# --------------------------------------------------------------------------------------


@pytest.fixture
def reference_data(tmp_path):
    """A reference data folder whose SI and HFO targets are our DEMO target, so the
    examples' `"target": "SI"` resolves offline."""
    demo = copy_demo(tmp_path)
    for name in ("SI", "HFO"):
        shutil.copytree(demo, demo.parent / name)
    return demo.parent


@pytest.mark.parametrize("example", [SI, HFO], ids=["SI", "HFO"])
def test_validate_config_print_shows_the_translated_run(example, reference_data):
    result = vera("validate", "config", str(example), "--print", "--reference-data", str(reference_data))
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)["config"]
    expected, warnings = translate(json.loads(example.read_text()), str(example))
    assert config["chatbots"] == expected["chatbots"]
    assert config["user_agents"] == expected["user_agents"]
    assert config["judges"] == expected["judges"]
    assert config["seeds"] == expected["seeds"]
    assert config["judge"]["instances"] == expected["judge"]["instances"]
    assert config["conversation"]["max_turns"] == expected["conversation"]["max_turns"]
    name = example.stem.split("_")[0].upper()
    assert config["target"] == f"reference:{name}"
    assert config["rubric"] == str(reference_data / name / "rubric.tsv")  # the target's own
    for w in warnings:  # on stderr, as every check of `--print`
        assert f"{example}: warning: {w}" in result.stderr


OFFLINE_RUN: dict[str, Any] = {
    "generation": {
        "chatbot": {"name": "offline/best-practice", "repeats": 1},
        "user": [{"name": "offline/scripted-user", "repeats": 1}],
        "turns": 4,
        "output": "runs",
        "max_concurrent": None,
        "max_total_words": None,
        "persona_speaks_first": True,
        "sessions": None,
    },
    "judging": {
        "models": [{"name": "offline/lexical-judge", "repeats": 1}],
        "max_concurrent": None,
        "per_judge": False,
    },
    "invocation": {"sample": 2, "debug": False},
}


def test_standard_input_takes_the_reference_layout():
    doc = {**OFFLINE_RUN, "judging": {**OFFLINE_RUN["judging"], "verbose": True}}
    result = subprocess.run(
        [sys.executable, "-m", "vera", "validate", "config", "-"],
        input=json.dumps(doc),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "<stdin>: warning: judging.verbose: not a field of the reference's config; ignored" in result.stdout
    )
    assert "1 chatbot(s), 1 user-agent(s), 1 judge(s)" in result.stdout


def test_vera_run_config_runs_the_reference_layout(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "VERA_RUN_CONFIG": json.dumps(OFFLINE_RUN)}
    result = subprocess.run(
        [sys.executable, "-m", "vera", "run", "--out", str(out), "--quiet"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    card = json.loads((out / "card.json").read_text())
    assert card["models"]["chatbots"] == ["offline/best-practice"]
    assert card["models"]["judges"] == ["offline/lexical-judge"]
    assert card["counts"]["conversations_complete"] == 2  # invocation.sample: 2 personas
    assert card["counts"]["mean_turns"] == 4.0


def test_a_wrong_value_is_one_line_and_exit_1(tmp_path):
    bad = tmp_path / "run.json"
    bad.write_text(json.dumps({**OFFLINE_RUN, "judging": {**OFFLINE_RUN["judging"], "per_judge": "no"}}))
    result = vera("run", "--config", str(bad), "--out", str(tmp_path / "run"))
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"error: {bad}: judging.per_judge: must be true or false, not 'no' (the reference tool's config layout)"
    ]
    assert not Path(tmp_path / "run").exists()
