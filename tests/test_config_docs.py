"""The docs name every field a user's file may hold.

A run config (docs/configuration.md), a provider profile (providers/README.md) and a
target file (docs/targets.md) are read into Structs that forbid unknown fields, so a
field missing from its page is one a user cannot discover except by reading the code;
a config's `locale`, a profile's `[azure]` and `[gemini]` keys and a target's `locale`
were such fields.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import msgspec
import pytest

from vera.inputs import _config, _profiles, _targets

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
# Tables of the config, documented as `[name]` headings rather than as fields.
TABLES = {"conversation", "session", "judge", "user_agent", "chatbot", "stats", "reference", "params"}
# Set by vera from the config file's place, never written in one.
NOT_IN_FILES = {"base_dir"}

STRUCTS = [
    cls
    for cls in vars(_config).values()
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct) and cls.__module__ == _config.__name__
]
FIELDS = sorted(
    {
        (cls.__name__, f.encode_name)
        for cls in STRUCTS
        for f in msgspec.structs.fields(cls)
        if f.encode_name not in NOT_IN_FILES
    }
)


def test_the_structs_are_found() -> None:
    assert {"RunConfig", "JudgeConfig", "ConversationConfig"} <= {cls.__name__ for cls in STRUCTS}


@pytest.mark.parametrize(("struct", "field"), FIELDS, ids=[f"{s}.{f}" for s, f in FIELDS])
def test_every_config_field_is_documented(struct: str, field: str) -> None:
    if field in TABLES:
        # `[judge]`, `[judge.params]`, `[conversation.session.TYPE]`
        assert any(f"{a}{field}{b}" in DOC for a in "[." for b in "]."), (
            f"docs/configuration.md has no [{field}] table"
        )
    else:
        assert f"`{field}`" in DOC, f"docs/configuration.md does not name {struct}'s field `{field}`"


def documented_in(module: ModuleType, page: str) -> list[tuple[str, str]]:
    text = (ROOT / page).read_text(encoding="utf-8")
    structs = [
        cls
        for cls in vars(module).values()
        if isinstance(cls, type)
        and issubclass(cls, msgspec.Struct)
        and cls.__module__ == module.__name__
        and cls.__struct_config__.forbid_unknown_fields
    ]
    assert structs, f"no file Structs found in {module}"
    # In a page's TOML examples a field is `name = ...` (a table `[name]`); in prose `name`.
    return [
        (cls.__name__, f.encode_name)
        for cls in structs
        for f in msgspec.structs.fields(cls)
        if not any(
            form in text for form in (f"`{f.encode_name}`", f"\n{f.encode_name} = ", f"[{f.encode_name}]")
        )
    ]


@pytest.mark.parametrize(
    ("module", "page"),
    [(_profiles, "providers/README.md"), (_targets, "docs/targets.md")],
    ids=["profiles", "targets"],
)
def test_every_profile_and_target_field_is_documented(module: ModuleType, page: str) -> None:
    assert not documented_in(module, page), f"{page} does not name {documented_in(module, page)}"
