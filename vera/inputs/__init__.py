"""What a run is made of, loaded and validated with file:line errors: the run config,
provider profiles and their secrets, personas, prompt sets, transcripts to import, the
reference tool's data, and where vera's built-in data lives.
"""

from vera.inputs._config import (
    PASSWORD_ENV,
    REPO_ROOT,
    RunConfig,
    check_limits_url,
    load_config,
    reference_folder,
)
from vera.inputs._personas import (
    DISCLOSURE,
    REACTION,
    STYLE,
    TRIGGERS,
    PersonaSet,
    check_personas,
    check_templates,
    label,
    load_personas,
    render_user_reminder,
    render_user_system,
)
from vera.inputs._profiles import (
    OFFLINE,
    AzureOptions,
    GeminiOptions,
    HttpOptions,
    Profile,
    StructuredOutput,
    load_profile,
    load_profiles,
    resolve_ref,
)
from vera.inputs._prompts import (
    AnswerFormat,
    JudgePrompts,
    Template,
    UserPrompts,
    load_judge_prompts,
    load_user_prompts,
)
from vera.inputs._reference import reads_reference, reference_data, verify_pins
from vera.inputs._secrets import api_key, expand_env, missing_key, redact, skip_reason
from vera.inputs._transcripts import PERSONAS_NOT_FOUND, personas_not_found, read_transcripts

__all__ = [
    "DISCLOSURE",
    "OFFLINE",
    "PASSWORD_ENV",
    "PERSONAS_NOT_FOUND",
    "REACTION",
    "REPO_ROOT",
    "STYLE",
    "TRIGGERS",
    "AnswerFormat",
    "AzureOptions",
    "GeminiOptions",
    "HttpOptions",
    "JudgePrompts",
    "PersonaSet",
    "Profile",
    "RunConfig",
    "StructuredOutput",
    "Template",
    "UserPrompts",
    "api_key",
    "check_limits_url",
    "check_personas",
    "check_templates",
    "expand_env",
    "label",
    "load_config",
    "load_judge_prompts",
    "load_personas",
    "load_profile",
    "load_profiles",
    "load_user_prompts",
    "missing_key",
    "personas_not_found",
    "read_transcripts",
    "reads_reference",
    "redact",
    "reference_data",
    "reference_folder",
    "render_user_reminder",
    "render_user_system",
    "resolve_ref",
    "skip_reason",
    "verify_pins",
]
