"""`RunManifest.config`: the run config a manifest stores, typed as `ConfigSnapshot`
(vera.records), a field-for-field copy of `vera.inputs.RunConfig` without `base_dir`.
The two schemas never drift apart; a manifest written before the snapshot existed (a
fixture from an offline run made then) decodes, encodes back to the same bytes and
resumes; older manifests read the defaults; a wrongly typed field is a bad manifest
(one clear line), not a traceback when the card is made."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest

from vera.errors import UserError
from vera.inputs import RunConfig, load_config
from vera.records import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    ArtifactVersion,
    ConfigSnapshot,
    RunManifest,
)
from vera.store import read_manifest

from .conftest import ROOT
from .test_cli import vera

FIXTURE = Path(__file__).parent / "fixtures" / "manifests" / "offline-run.json"


def fixture_bytes() -> bytes:
    """The manifest an offline run (`vera run --limit-personas 2`) wrote before
    `RunManifest.config` was typed, with its checkout's folder put back as {ROOT}."""
    return FIXTURE.read_bytes().replace(b"{ROOT}", str(ROOT).encode())


def written(manifest: RunManifest) -> bytes:
    """A manifest's bytes exactly as the run store writes them (vera.store.RunStore)."""
    return msgspec.json.format(msgspec.json.encode(manifest)) + b"\n"


# ---------------------------------------------------------------------------------------
# The two schemas are the same
# ---------------------------------------------------------------------------------------


def _same_type(config_type: Any, snapshot_type: Any, where: str) -> None:
    """The same annotation, reading each config section Struct as its snapshot Struct."""
    if isinstance(config_type, type) and issubclass(config_type, msgspec.Struct):
        assert isinstance(snapshot_type, type) and issubclass(snapshot_type, msgspec.Struct), where
        _same_schema(config_type, snapshot_type, where)
        return
    config_origin, snapshot_origin = typing.get_origin(config_type), typing.get_origin(snapshot_type)
    if config_origin is None:
        assert config_type == snapshot_type, f"{where}: {config_type!r} != {snapshot_type!r}"
        return
    # `X | Y` written either way is the same union.
    unions = (typing.Union, types.UnionType)
    assert config_origin == snapshot_origin or (config_origin in unions and snapshot_origin in unions), where
    config_args, snapshot_args = typing.get_args(config_type), typing.get_args(snapshot_type)
    assert len(config_args) == len(snapshot_args), where
    for a, b in zip(config_args, snapshot_args, strict=True):
        if isinstance(a, msgspec.Meta):  # the constraints of an Annotated type
            assert a == b, f"{where}: {a!r} != {b!r}"
        else:
            _same_type(a, b, where)


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default is msgspec.UNSET:  # left out of the encoding (e.g. call_bodies)
        return "<unset>"
    if field.default_factory is not msgspec.NODEFAULT:
        return msgspec.to_builtins(field.default_factory())
    if field.default is msgspec.UNSET:  # a field left out of the manifest when unset (locale)
        return "UNSET"
    return msgspec.to_builtins(field.default)


def _same_schema(config: type[msgspec.Struct], snapshot: type[msgspec.Struct], where: str) -> None:
    config_fields = [f for f in msgspec.structs.fields(config) if f.name != "base_dir"]
    snapshot_fields = msgspec.structs.fields(snapshot)
    assert [f.name for f in config_fields] == [f.name for f in snapshot_fields], where
    for a, b in zip(config_fields, snapshot_fields, strict=True):
        at = f"{where}.{a.name}"
        assert (a.encode_name, a.required) == (b.encode_name, b.required), at
        assert _default(a) == _default(b), at
        _same_type(a.type, b.type, at)
    # The config file is strict, the stored copy lenient: the rest of the options agree.
    assert config.__struct_config__.forbid_unknown_fields
    assert not snapshot.__struct_config__.forbid_unknown_fields, where
    for option in ("omit_defaults", "tag", "frozen", "array_like"):
        assert getattr(config.__struct_config__, option) == getattr(snapshot.__struct_config__, option), (
            f"{where}: {option}"
        )


def test_the_snapshot_is_the_run_config_field_for_field_without_base_dir() -> None:
    _same_schema(RunConfig, ConfigSnapshot, "RunConfig")


def test_the_schema_check_sees_a_difference() -> None:
    class Drifted(msgspec.Struct, kw_only=True):
        max_turns: int = 31

    with pytest.raises(AssertionError):
        stats = next(f.type for f in msgspec.structs.fields(RunConfig) if f.name == "stats")
        _same_schema(stats, Drifted, "stats")


# ---------------------------------------------------------------------------------------
# Same bytes as before
# ---------------------------------------------------------------------------------------


def _the_dict_written_before(cfg: RunConfig) -> dict[str, Any]:
    """What the manifest stored before the snapshot: the config's builtins less base_dir."""
    return {k: v for k, v in msgspec.to_builtins(cfg).items() if k != "base_dir"}


@pytest.mark.parametrize("path", [None, "configs/offline.toml", "configs/recommended.toml"])
def test_a_snapshot_encodes_to_the_bytes_the_dict_did(path: str | None) -> None:
    cfg = load_config(None if path is None else ROOT / path)
    cfg.conversation = msgspec.convert(
        {
            "sessions": ["intake", "follow-up"],
            "session": {"follow-up": {"max_turns": 8}},
            "user_memory": True,
        },
        type(cfg.conversation),
    )
    cfg.judge.params = {"temperature": 0, "top_p": 0.5}
    cfg.reference.sha256 = {"rubric.tsv": "ab" * 32}
    snapshot = cfg.snapshot()
    assert msgspec.json.encode(snapshot) == msgspec.json.encode(_the_dict_written_before(cfg))
    back = RunConfig.from_snapshot(snapshot, cfg.base_dir)
    assert back == cfg and back.fingerprint() == cfg.fingerprint()


def test_a_manifest_written_before_decodes_and_encodes_back_to_the_same_bytes() -> None:
    old = fixture_bytes()
    manifest = msgspec.json.decode(old, type=RunManifest)
    assert isinstance(manifest.config, ConfigSnapshot)
    assert (manifest.config.persona_limit, manifest.config.stats.resamples) == (2, DEFAULT_RESAMPLES)
    assert written(manifest) == old
    # The config it restores has the fingerprint the run recorded.
    cfg = RunConfig.from_snapshot(manifest.config, manifest.base_dir)
    assert cfg.fingerprint() == manifest.config_sha256


@pytest.mark.slow
def test_a_run_whose_manifest_was_written_before_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    made = vera("run", "--limit-personas", "2", "--out", str(out), "--quiet")
    assert made.returncode == 0, made.stderr
    old = json.loads(fixture_bytes())
    fresh = json.loads((out / "manifest.json").read_bytes())
    # The config (and its hash) as the old code wrote them; the input files' versions
    # of today's checkout, so the test outlives changes to the shipped rubric or personas.
    for key in ("rubric", "personas", "user_prompts", "judge_prompts"):
        old[key] = fresh[key]
    (out / "manifest.json").write_text(json.dumps(old, indent=2))
    resumed = vera("run", "--resume", str(out), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    after = json.loads((out / "manifest.json").read_bytes())
    # A resumed run keeps the config as it was written, its input paths too (relative:
    # they still name the files the manifest records).
    assert after["config"] == old["config"] and list(after["config"]) == list(old["config"])
    assert after["config_sha256"] == old["config_sha256"] == fresh["config_sha256"]
    assert "4 reused" in resumed.stdout or resumed.stdout == "", resumed.stdout


# ---------------------------------------------------------------------------------------
# Older manifests, and bad ones
# ---------------------------------------------------------------------------------------


def manifest(config: dict[str, Any]) -> RunManifest:
    artifact = ArtifactVersion(name="a", version="1", sha256="0" * 64, path="a")
    return RunManifest(
        vera_version="0.1.0",
        run_id="r",
        rubric=artifact,
        personas=artifact,
        user_prompts=artifact,
        judge_prompts=artifact,
        config_sha256="",
        config=msgspec.convert(config, ConfigSnapshot),
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
    config = manifest({}).config
    assert (config.allow_failures, config.stats.resamples, config.stats.confidence, config.stats.seed) == (
        0.0,
        DEFAULT_RESAMPLES,
        DEFAULT_CONFIDENCE,
        0,
    )
    assert config.conversation.sessions == [] and config.conversation.max_turns == 30


def test_an_older_manifest_reads_the_defaults_and_ignores_fields_since_removed(tmp_path: Path) -> None:
    old = json.loads(fixture_bytes())
    config = old["config"]
    # Fields added later than the first manifests were written (the fingerprint's
    # comments name them), and one a later version no longer has.
    for key in (
        "target",
        "group_by",
        "annotation_columns",
        "limits_url",
        "shard_limits",
        "stats",
        "reference",
    ):
        del config[key]
    for key in ("sessions", "session", "user_memory", "chatbot_memory"):
        del config["conversation"][key]
    for key in (
        "ask_ahead",
        "terminal_semantics",
        "mode",
        "batch_poll_s",
        "batch_collect_s",
        "batch_requeue",
    ):
        del config["judge"][key]
    config["a_field_since_removed"] = {"x": 1}
    config["judge"]["another"] = 3
    (tmp_path / "manifest.json").write_text(json.dumps(old))
    read = read_manifest(tmp_path)
    assert read.config.stats.resamples == DEFAULT_RESAMPLES and read.config.judge.mode == "live"
    cfg = RunConfig.from_snapshot(read.config, read.base_dir)
    assert cfg.fingerprint() == old["config_sha256"]  # older runs keep their fingerprint


def test_a_wrongly_typed_config_field_is_a_bad_manifest(tmp_path: Path) -> None:
    good = msgspec.json.encode(manifest({"stats": {"resamples": 300}}))
    assert read_manifest(_write(tmp_path, good)).config.stats.resamples == 300
    bad = good.replace(b'"resamples":300', b'"resamples":"many"')
    with pytest.raises(UserError, match=r"manifest.json: not a readable run manifest .*resamples"):
        read_manifest(_write(tmp_path, bad))


def _write(folder: Path, data: bytes) -> Path:
    (folder / "manifest.json").write_bytes(data)
    return folder
