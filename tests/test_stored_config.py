"""`RunManifest.stored_config()`: the typed view of the run config a manifest stores,
read the same way from manifests of every version, and a wrongly typed field is a bad
manifest (one clear line), not a traceback when the card is made."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from vera.errors import UserError
from vera.records import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, ArtifactVersion, RunManifest
from vera.store import read_manifest


def manifest(config: dict) -> RunManifest:
    artifact = ArtifactVersion(name="a", version="1", sha256="0" * 64, path="a")
    return RunManifest(
        vera_version="0.1.0",
        run_id="r",
        rubric=artifact,
        personas=artifact,
        user_prompts=artifact,
        judge_prompts=artifact,
        config_sha256="",
        config=config,
        chatbots=[],
        user_agents=[],
        judges=[],
        judge_instances=1,
        seeds=[1],
        offline=True,
        created_at="",
        updated_at="",
    )


def test_a_manifest_without_the_sections_reads_the_defaults() -> None:
    # Manifests from before [stats] or sessions existed, and imports, store less.
    view = manifest({}).stored_config()
    assert (view.allow_failures, view.stats.resamples, view.stats.confidence, view.stats.seed) == (
        0.0,
        DEFAULT_RESAMPLES,
        DEFAULT_CONFIDENCE,
        0,
    )
    assert view.conversation.sessions == [] and view.conversation.max_turns is None


def test_the_view_reads_what_it_names_and_ignores_the_rest() -> None:
    config = {
        "allow_failures": 0.25,
        "stats": {"resamples": 500, "confidence": 0.9, "seed": 7},
        "conversation": {"max_turns": 12, "min_turns": 4, "sessions": ["a", "b"], "user_memory": True},
        "chatbots": ["offline/best-practice"],
        "a_field_of_a_later_version": {"x": 1},
    }
    view = manifest(config).stored_config()
    assert view.allow_failures == 0.25
    assert (view.stats.resamples, view.stats.confidence, view.stats.seed) == (500, 0.9, 7)
    c = view.conversation
    assert (c.max_turns, c.min_turns, c.sessions, c.user_memory) == (12, 4, ["a", "b"], True)


def test_a_wrongly_typed_config_field_is_a_bad_manifest(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_bytes(msgspec.json.encode(manifest({"stats": {"resamples": "many"}})))
    with pytest.raises(UserError, match=r"manifest.json: not a readable run manifest .*resamples"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_bytes(msgspec.json.encode(manifest({"stats": {"resamples": 300}})))
    assert read_manifest(tmp_path).stored_config().stats.resamples == 300
