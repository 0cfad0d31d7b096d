"""docs/configuration.md names every field a config file may hold.

The config's Structs forbid unknown fields, so a field missing from the docs is one a
user cannot discover except by reading the code; `locale` was such a field.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from vera.inputs import _config

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
