"""Everything a sweep reads, loaded and validated before a single call is made: the
rubric (its flow checked as a graph), personas, both prompt sets, and the reference tool's
files when the run uses them (their pins checked first)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec

from vera.engine._simulate import (
    SimulationSettings,
)
from vera.errors import ConfigError
from vera.inputs import (
    JudgePrompts,
    PersonaSet,
    RunConfig,
    UserPrompts,
    check_templates,
    load_judge_prompts,
    load_personas,
    load_user_prompts,
    reads_reference,
    reference_data,
    verify_pins,
)
from vera.records import (
    ArtifactVersion,
    Persona,
    ReferenceData,
)
from vera.rubric import Rubric, load_rubric, validate_rubric


@dataclass
class Inputs:
    """Everything loaded and validated before a single call is made."""

    config: RunConfig
    rubric: Rubric
    personas: PersonaSet
    user_prompts: UserPrompts
    judge_prompts: JudgePrompts
    reference: ReferenceData | None = None  # the reference tool's files used, if any

    @classmethod
    def load(cls, config: RunConfig) -> Inputs:
        if reads_reference(config):
            verify_pins(config)  # a wrong or other-release folder is named before anything is read
        rubric = load_rubric(config.path(config.rubric))
        problems = validate_rubric(rubric)
        if problems:
            more = f" (and {len(problems) - 1} more; run `vera validate rubric`)" if len(problems) > 1 else ""
            raise ConfigError(problems[0].render(rubric.path) + more)
        personas = load_personas(config.path(config.personas))
        user_prompts = load_user_prompts(config.path(config.user_prompts), config.reference_dir)
        issues = check_templates(user_prompts, personas.columns)
        if issues:
            raise ConfigError(issues[0].message)
        judge_prompts = load_judge_prompts(config.path(config.judge_prompts), config.reference_dir)
        templates = (user_prompts.system, user_prompts.reminder, judge_prompts.system, judge_prompts.question)
        read = [rubric.path, personas.version.path, *(t.path for t in templates), judge_prompts.retry.path]
        reference = reference_data(config, read)
        if reference is not None and config.reference.name:
            rubric, personas = name_reference_files(reference, rubric, personas)
        return cls(config, rubric, personas, user_prompts, judge_prompts, reference)

    def settings(self) -> SimulationSettings:
        c = self.config.conversation
        return SimulationSettings(
            max_turns=c.max_turns,
            min_turns=c.min_turns,
            first_speaker=c.first_speaker,
            opening_message=c.opening_message,
            chatbot_system_prompt=c.chatbot_system_prompt,
        )

    def selected_personas(self) -> tuple[Persona, ...]:
        n = self.config.persona_limit
        return self.personas.personas[:n] if n else self.personas.personas

    def rubric_version(self) -> ArtifactVersion:
        r = self.rubric
        return ArtifactVersion(name=r.name, version=r.version, path=r.path, sha256=r.sha256)


def name_reference_files(
    reference: ReferenceData, rubric: Rubric, personas: PersonaSet
) -> tuple[Rubric, PersonaSet]:
    """The reference tool's rubric and persona files carry no name or version of their
    own; inside the reference folder they are that release's ("VERA-MH rubric 1.1")."""
    folder = Path(reference.path)
    if rubric.version == "unversioned" and Path(rubric.path).resolve().is_relative_to(folder):
        rubric = msgspec.structs.replace(rubric, name=f"{reference.name} rubric", version=reference.version)
    v = personas.version
    if v.version == "unversioned" and Path(v.path).resolve().is_relative_to(folder):
        named = msgspec.structs.replace(v, name=f"{reference.name} personas", version=reference.version)
        personas = msgspec.structs.replace(personas, version=named)
    return rubric, personas
