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
    LocalePack,
    PersonaSet,
    RunConfig,
    Target,
    UserPrompts,
    check_annotations,
    check_templates,
    default_grouping,
    find_locale,
    find_target,
    load_judge_prompts,
    load_locale,
    load_personas,
    load_target,
    load_user_prompts,
    persona_header,
    present_annotations,
    reads_reference,
    reference_data,
    verify_pins,
)
from vera.records import (
    ArtifactVersion,
    Grouping,
    LocaleInfo,
    Persona,
    ReferenceData,
    TargetInfo,
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
    target: Target | None = None  # the target the config named, if any
    locale: LocalePack | None = None  # the locale pack the config named, if any
    # Annotation columns the personas have, and those the target names that they lack
    # (a warning: the run goes on without them, and the card says so).
    annotations: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @classmethod
    def load(cls, config: RunConfig) -> Inputs:
        if reads_reference(config) or config.reference.sha256:
            verify_pins(config)  # a wrong or other-release folder is named before anything is read
        target = (
            load_target(
                find_target(config.target, base=Path(config.base_dir), reference=config.reference_dir)
            )
            if config.target
            else None
        )
        locale = (
            load_locale(find_locale(config.locale, base=Path(config.base_dir) if config.base_dir else None))
            if isinstance(config.locale, str) and config.locale
            else None
        )
        rubric = load_rubric(config.path(config.rubric))
        problems = validate_rubric(rubric)
        if problems:
            more = f" (and {len(problems) - 1} more; run `vera validate rubric`)" if len(problems) > 1 else ""
            raise ConfigError(problems[0].render(rubric.path) + more)
        files = config.persona_files()
        where = target.path if target is not None else "annotation_columns"
        warnings = tuple(f"warning: {w}" for w in (target.warnings if target is not None else ()))
        warnings += tuple(
            f"warning: {i.error()}" for i in check_annotations(files, config.annotation_columns, where)
        )
        present, absent = present_annotations(files, config.annotation_columns)
        group_by = config.group_by or default_grouping(persona_header(files[0]), present)
        personas = load_personas(files, group_by=group_by)
        user_prompts = load_user_prompts(config.path(config.user_prompts), config.reference_dir)
        issues = check_templates(user_prompts, personas.columns)
        if issues:
            raise ConfigError(issues[0].error())
        if present:
            personas = annotated(personas, list(present))
        judge_prompts = load_judge_prompts(config.path(config.judge_prompts), config.reference_dir)
        templates = (
            *user_prompts.templates(),
            judge_prompts.system,
            judge_prompts.question,
            judge_prompts.retry,
        )
        read = [rubric.path, *personas.version.files, *(t.path for t in templates)]
        if target is not None:
            read.append(target.path)
        reference = reference_data(config, read)
        if reference is not None and config.reference.name:
            rubric, personas = name_reference_files(reference, rubric, personas)
        if target is not None:
            rubric, personas = name_target_files(target, rubric, personas)
        return cls(
            config,
            rubric,
            personas,
            user_prompts,
            judge_prompts,
            reference,
            target,
            locale=locale,
            annotations=present,
            absent=absent,
            warnings=warnings,
        )

    def settings(self, session: str = "") -> SimulationSettings:
        """How conversations run; of one session type's conversations when given (its
        `[conversation.session.TYPE]` over `[conversation]`)."""
        c = self.config.conversation
        if session:
            c = c.for_session(session)
        elif len(c.sessions) == 1:
            c = c.for_session(c.sessions[0])
        return SimulationSettings(
            max_turns=c.max_turns,
            min_turns=c.min_turns,
            first_speaker=c.first_speaker,
            opening_message=c.opening_message,
            chatbot_system_prompt=c.chatbot_system_prompt,
            max_total_words=c.max_total_words if isinstance(c.max_total_words, int) else None,
        )

    def selected_personas(self) -> tuple[Persona, ...]:
        n = self.config.persona_limit
        return self.personas.personas[:n] if n else self.personas.personas

    def target_info(self) -> TargetInfo | None:
        t = self.target
        if t is None:
            return None
        return TargetInfo(
            name=t.name,
            version=t.version,
            path=t.path,
            sha256=t.sha256,
            format=t.format,
            annotation_columns=self.annotations,
        )

    def locale_info(self) -> LocaleInfo | msgspec.UnsetType:
        p = self.locale
        if p is None:
            return msgspec.UNSET
        return LocaleInfo(
            tag=p.tag,
            version=p.version,
            path=p.path,
            language=p.language,
            resources_version=p.resources.version,
            resources_sha256=p.resources.sha256,
        )

    def grouping(self) -> Grouping:
        return Grouping(
            by=self.personas.grouping,
            levels=self.personas.levels,
            absent=self.absent,
            files=tuple(Path(f).name for f in self.personas.version.files) if self.absent else (),
        )

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


def name_target_files(target: Target, rubric: Rubric, personas: PersonaSet) -> tuple[Rubric, PersonaSet]:
    """A target's rubric and persona files that carry no name of their own (a VERA-MH
    manifest's) are the target's: "HFO rubric", "HFO personas"."""
    if rubric.version == "unversioned" and rubric.name == Path(rubric.path).stem:
        rubric = msgspec.structs.replace(rubric, name=f"{target.name} rubric", version=target.version)
    v = personas.version
    if v.version == "unversioned" and v.name == Path(v.path).stem:
        named = msgspec.structs.replace(v, name=f"{target.name} personas", version=target.version)
        personas = msgspec.structs.replace(personas, version=named)
    return rubric, personas


def annotated(personas: PersonaSet, columns: list[str]) -> PersonaSet:
    """The set with each persona carrying its values of the annotation `columns`, which
    its conversations take into the results."""
    marked = tuple(
        msgspec.structs.replace(p, annotations={c: p.fields.get(c, "") for c in columns})
        for p in personas.personas
    )
    return msgspec.structs.replace(personas, personas=marked)
