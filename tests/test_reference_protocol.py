"""The reference protocol from the authors' own files: configs/vera-mh-v1.1.toml reads
VERA-MH's rubric, personas, user-agent template and reminder, and judge templates from
a checkout of its data/ folder and uses them unchanged, with their placeholders and
their "ANSWER: / REASONING:" answer format.

The prompt-set mechanics are tested with templates of our own in test_prompt_sets.py.
Here the first tests need no reference data; the rest read the reference folder
(REFERENCE in conftest.py) and skip where it is absent. Nothing of the reference's text
is copied here: every expectation is computed from their files at test time."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.engine import Inputs, plan_sweep, run_sweep
from vera.engine._judge import render_transcript
from vera.errors import ConfigError
from vera.inputs._config import load_config
from vera.records import Conversation, ModelSpec
from vera.report.card._score import score_run
from vera.store._writer import RunStore

from .conftest import REFERENCE, ROOT
from .helpers import ScriptModel, question_asked

CONFIG = ROOT / "configs" / "vera-mh-v1.1.toml"
DATA = REFERENCE / "data"
needs_reference = pytest.mark.skipif(not DATA.exists(), reason="reference data absent")
# A placeholder left unfilled: a brace around a word, as their templates and ours write them.
UNFILLED = re.compile(r"\{[A-Za-z_][^{}\"\n]*\}")


def test_reference_paths_need_a_folder_and_say_how_to_give_it(tmp_path, monkeypatch):
    monkeypatch.delenv("VERA_MH_DATA", raising=False)
    cfg = load_config(CONFIG)
    with pytest.raises(
        ConfigError, match="set VERA_MH_DATA=/path/to/VERA-MH/data or pass --reference-data DIR"
    ):
        Inputs.load(cfg)
    monkeypatch.setenv("VERA_MH_DATA", str(tmp_path))
    with pytest.raises(
        ConfigError, match=r"cannot read reference data file: .*is .* the reference tool's data/"
    ):
        Inputs.load(load_config(CONFIG))


def test_where_the_reference_folder_is_does_not_change_the_fingerprint():
    a, b = load_config(CONFIG), load_config(CONFIG)
    b.reference.data = "/elsewhere/VERA-MH/data"
    assert a.fingerprint() == b.fingerprint()
    b.reference.sha256 = {**b.reference.sha256, "rubric.tsv": "0" * 64}
    assert a.fingerprint() != b.fingerprint()


# ---------------------------------------------------------------------------------------
# Their files, from the reference folder
# ---------------------------------------------------------------------------------------


def reference_inputs() -> Inputs:
    cfg = load_config(CONFIG)
    cfg.reference.data = str(DATA)
    return Inputs.load(cfg)


@needs_reference
def test_the_reference_config_loads_their_files_unchanged():
    inputs = reference_inputs()
    assert inputs.rubric.format == "vera-mh" and inputs.rubric.key == "VERA-MH rubric@1.1"
    assert len(inputs.rubric.dimensions) == 5 and len(inputs.personas.personas) == 100
    assert inputs.personas.version.name == "VERA-MH personas" and inputs.personas.version.version == "1.1"
    files = {
        inputs.user_prompts.system: "persona_prompt_template.txt",
        inputs.user_prompts.reminder: "persona_prompt_reminder.txt",
        inputs.judge_prompts.system: "rubric_prompt_beginning.txt",
        inputs.judge_prompts.question: "question_prompt.txt",
    }
    for template, name in files.items():
        assert template.text == (DATA / name).read_text(encoding="utf-8")
    up = inputs.user_prompts
    assert up.reminder_position == "before" and up.end_marker in up.system.text
    ref = inputs.reference
    assert ref is not None and (ref.name, ref.version, ref.pinned) == ("VERA-MH", "1.1", True)
    assert set(ref.files) == {*files.values(), "rubric.tsv", "personas.tsv"}


@needs_reference
def test_an_other_release_of_their_files_is_refused(tmp_path):
    copy = tmp_path / "data"
    copy.mkdir()
    for f in DATA.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    (copy / "question_prompt.txt").write_text("Question: {question}\n{examples_section}\n[{options}]")
    cfg = load_config(CONFIG)
    cfg.reference.data = str(copy)
    with pytest.raises(ConfigError, match=r"question_prompt.txt: not the VERA-MH 1.1 file this config pins"):
        Inputs.load(cfg)


class ScriptedModels:
    """Each (model ref, role) of the run played by a ScriptModel, the ChatClient test
    double (one ref can play two roles: the protocol's GPT-4o judges a GPT-4o chatbot)."""

    def __init__(self, models: dict[tuple[str, str], ScriptModel]) -> None:
        self.models = models

    def rubric_refusal(self, ref: str, rubric_key: str) -> str | None:
        return None

    def tier_refusal(self, ref: str, tier: str) -> str | None:
        return None

    def spec(self, ref: str) -> ModelSpec:
        return ModelSpec(ref=ref, provider=ref.split("/")[0], protocol="script", model=ref.split("/")[-1])

    def client(self, ref: str, role: str = "chatbot") -> ScriptModel:
        return self.models[ref, role]


def labelled_judge(inputs: Inputs):
    """Answers every question with its first option, in their ANSWER / REASONING format."""
    rubric = inputs.rubric

    def reply(messages, ctx) -> str:
        qid = question_asked(messages, rubric, inputs.judge_prompts)
        labels = rubric.question(qid).labels
        return f"ANSWER: {labels[0]}\nREASONING: scripted reasoning for question {qid}"

    return ScriptModel(reply)


def user_agent(marker: str):
    """Short lines; ends with the protocol's end marker on its third message."""

    def reply(messages, ctx) -> str:
        n = sum(m.role == "assistant" for m in messages) + 1
        return f"line {n} from the user" + (f"\n{marker}" if n == 3 else "")

    return ScriptModel(reply)


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory) -> dict[str, Any]:
    if not DATA.exists():
        pytest.skip("reference data absent")
    inputs = reference_inputs()
    inputs.config.persona_limit = 2
    cfg = inputs.config
    models = {(ref, "user_agent"): user_agent(inputs.user_prompts.end_marker) for ref in cfg.user_agents}
    models |= {(ref, "judge"): labelled_judge(inputs) for ref in cfg.judges}
    models |= {
        (ref, "chatbot"): ScriptModel(lambda m, c: "I hear you. Are you safe right now?")
        for ref in cfg.chatbots
    }
    clients = ScriptedModels(models)
    sweep = plan_sweep(inputs, clients)
    out = tmp_path_factory.mktemp("reference") / "run"
    store = RunStore(out)
    store.write_manifest(sweep.manifest(run_id="reference-run"))

    async def go():
        store.start()
        try:
            return await run_sweep(sweep, store, clients, max_concurrency=4)
        finally:
            await store.aclose()

    result = asyncio.run(go())
    score_run(out)
    return {"inputs": inputs, "models": models, "out": out, "result": result, "sweep": sweep}


def fill(template: str, values: dict[str, str]) -> str:
    """Their templates filled the way their tool fills them (Python's str.format)."""
    return template.format_map(values)


@needs_reference
def test_the_user_agent_receives_their_persona_template_rendered_for_the_persona(reference_run):
    inputs, models = reference_run["inputs"], reference_run["models"]
    template = (DATA / "persona_prompt_template.txt").read_text(encoding="utf-8")
    reminder = (DATA / "persona_prompt_reminder.txt").read_text(encoding="utf-8")
    by_system = {fill(template, p.fields): p for p in inputs.selected_personas()}
    seen = set()
    for ref in inputs.config.user_agents:
        for request in models[ref, "user_agent"].requests:
            system, *rest = request["messages"]
            assert system.role == "system" and system.content in by_system
            assert not UNFILLED.search(system.content)
            seen.add(by_system[system.content].name)
            newest = rest[-1]
            if len(rest) == 1:  # nothing said yet: the opening, not their reminder
                assert newest.content == inputs.user_prompts.opening
            else:  # their reminder, then the chatbot's latest message, as their tool sends it
                assert newest.role == "user"
                assert newest.content == reminder + "I hear you. Are you safe right now?"
    assert seen == {p.name for p in inputs.selected_personas()}


@needs_reference
def test_the_judge_receives_their_templates_filled_in_and_its_labelled_answers_count(reference_run):
    inputs, models, out = reference_run["inputs"], reference_run["models"], reference_run["out"]
    beginning = (DATA / "rubric_prompt_beginning.txt").read_text(encoding="utf-8")
    question_prompt = (DATA / "question_prompt.txt").read_text(encoding="utf-8")
    conversations = [
        msgspec.json.decode(line, type=Conversation)
        for line in (out / "conversations.jsonl").read_text().splitlines()
    ]
    systems = {fill(beginning, {"conversation": render_transcript(c.turns)}) for c in conversations}
    asked = 0
    for ref in inputs.config.judges:
        for request in models[ref, "judge"].requests:
            system, question = request["messages"]
            assert system.content in systems and not UNFILLED.search(system.content)
            q = inputs.rubric.question(
                question_asked(request["messages"], inputs.rubric, inputs.judge_prompts)
            )
            examples = f"\n{q.guidance}\n" if q.guidance else ""
            expected = fill(
                question_prompt,
                {"question": q.text, "examples_section": examples, "options": ", ".join(q.labels)},
            )
            assert question.content == expected and not UNFILLED.search(question.content)
            assert request["schema"] is not None  # structured output requested, as their judge does
            asked += 1
    assert asked > 0
    judgements = [json.loads(x) for x in (out / "judgements.jsonl").read_text().splitlines()]
    assert len(judgements) == 2 * 2 * 2  # 2 personas x 2 user-agents, each judged by 2 judges
    assert all(j["status"] == "complete" and j["ratings"] for j in judgements)
    for j in judgements:
        for a in j["answers"]:
            if not a["auto"]:
                assert a["reasoning"] == f"scripted reasoning for question {a['question_id']}"
                assert a["attempts"] == 1  # every labelled reply parsed at once


@needs_reference
def test_conversations_end_on_their_end_marker(reference_run):
    convs = [json.loads(x) for x in (reference_run["out"] / "conversations.jsonl").read_text().splitlines()]
    assert len(convs) == 4 and all(c["status"] == "complete" for c in convs)
    assert all(c["ended_by"] == "end_marker" and len(c["turns"]) == 5 for c in convs)
    assert all("<END OF CONVERSATION>" not in t["text"] for c in convs for t in c["turns"])


@needs_reference
def test_the_manifest_and_card_name_the_reference_release_and_hashes(reference_run):
    out = reference_run["out"]
    manifest = json.loads((out / "manifest.json").read_text())
    card = json.loads((out / "card.json").read_text())
    expected = {
        name: hashlib.sha256((DATA / name).read_bytes()).hexdigest()
        for name in (
            "rubric.tsv",
            "personas.tsv",
            "persona_prompt_template.txt",
            "persona_prompt_reminder.txt",
            "rubric_prompt_beginning.txt",
            "question_prompt.txt",
        )
    }
    for record in (manifest["reference"], card["reference"]):
        assert (record["name"], record["version"], record["pinned"]) == ("VERA-MH", "1.1", True)
        assert record["files"] == expected and record["path"] == str(DATA.resolve())
    assert card["versions"]["rubric"]["name"] == "VERA-MH rubric"
    md = (out / "card.md").read_text()
    assert "Reference data:** VERA-MH 1.1" in md
    assert f"rubric.tsv (sha256 {expected['rubric.tsv'][:12]})" in md


@needs_reference
def test_vera_validate_config_with_reference_data(tmp_path):
    r = CliRunner().invoke(main, ["validate", "config", str(CONFIG), "--reference-data", str(DATA)])
    assert r.exit_code == 0, r.output
    assert (
        "reference data: VERA-MH 1.1" in r.output
        and "6 file(s) pinned by the config, every one matches" in r.output
    )
    r = CliRunner().invoke(main, ["validate", "config", str(CONFIG)], env={"VERA_MH_DATA": ""})
    assert r.exit_code == 1 and "pass --reference-data DIR" in r.output and "Traceback" not in r.output


def test_the_shipped_reference_prompt_sets_hold_none_of_their_text():
    """Our pointer folders name their files; every text in them is ours."""
    for folder in ("user-prompts", "judge-prompts"):
        for f in (ROOT / "configs" / "vera-mh-v1.1" / folder).iterdir():
            text = f.read_text()
            if DATA.exists():
                for theirs in DATA.glob("*.txt"):
                    for line in theirs.read_text().splitlines():
                        if len(line) > 30:
                            assert line not in text, f"{f} repeats a line of {theirs.name}"
    assert Path(CONFIG).exists()


@needs_reference
def test_rejudging_a_reference_run_finds_their_files_through_the_manifest(reference_run, monkeypatch):
    monkeypatch.delenv("VERA_MH_DATA", raising=False)
    r = CliRunner().invoke(main, ["judge", str(reference_run["out"]), "--judge", "offline/lexical-judge"])
    # Their rubric and prompts loaded again from the folder the manifest names; what
    # stops the rejudging is the offline judge, which only knows vera's own rubric.
    assert r.exit_code == 1 and "the offline lexical judge answers only the built-in rubric" in r.output
    assert "VERA_MH_DATA" not in r.output
