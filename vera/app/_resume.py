"""Resuming a run from its manifest alone.

A run directory's ``manifest.json`` holds the complete run config, the name, version,
path and hash of every input (rubric, persona set, prompt sets) and the resolved models.
So ``vera run --resume DIR`` alone (or the original command rerun on the same ``--out``)
restores everything that defines the run and continues; nothing has to be typed again,
and the config file the run was made from need not exist any more.

Options given together with a resume are checked against the run: one that disagrees is
refused, naming the option and both values (``--seeds: this run used 1,2,3; you gave
1``). Options that cannot change results (concurrency, budget, cache, where the
providers live) may differ. An input file is found at the path the run recorded, or
where ``--personas`` / ``--config`` now point; it must hold the same content (the same
SHA-256), and a missing or changed file is named with what the run expects.

Everything here decides *whether and with what* a run continues; running it is the
runner's job.
"""

from __future__ import annotations

import copy
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from vera import __version__
from vera.errors import ConfigError, UserError
from vera.inputs import Profile, RunConfig, load_config, resolve_ref
from vera.records import MANIFEST_SCHEMA_VERSION, ArtifactVersion, ModelSpec, RunManifest
from vera.store import MANIFEST

# The inputs a manifest pins by hash: (manifest and config field, what it is).
INPUTS: tuple[tuple[str, str], ...] = (
    ("rubric", "rubric"),
    ("personas", "persona set"),
    ("user_prompts", "user-agent prompts"),
    ("judge_prompts", "judge prompts"),
)

# Config fields that define a run's results, with the option that sets each one (None:
# only the config file does). Paths are not here: inputs are compared by content.
RUN_FIELDS: tuple[tuple[str, str | None], ...] = (
    ("chatbots", "--providers"),
    ("user_agents", "--user-agent"),
    ("judges", "--judge"),
    ("seeds", "--seeds"),
    ("persona_limit", "--limit-personas"),
    ("conversation", None),
    ("judge", None),
    ("stats", None),
)

# The option each field is set by, as RunOptions names it.
_OPTION_OF = {
    "chatbots": "providers",
    "user_agents": "user_agents",
    "judges": "judges",
    "seeds": "seeds",
    "persona_limit": "limit_personas",
}


_CONVERSATION_OPTIONS = {
    "conversation.sessions": ("sessions", "--sessions"),
    "conversation.user_memory": ("user_memory", "--user-memory"),
    "conversation.chatbot_memory": ("chatbot_memory", "--chatbot-memory"),
}


def resume_command(command: str, run_dir: Path | str) -> str:
    """The command that continues this run, exactly as the user can paste it where they
    are: vera is named the way it was started (`vera` when that is what the shell finds,
    `.venv/bin/vera` after `make eval`, `python -m vera`), the run directory as given."""
    where = shlex.quote(str(run_dir))
    vera = program()
    return f"{vera} judge {where}" if command == "judge" else f"{vera} {command} --resume {where}"


def program() -> str:
    """How to start this vera again from the current directory."""
    argv0 = sys.argv[0] if sys.argv else ""
    name = Path(argv0).name
    # python -m vera: vera's own __main__.py (another program's, pytest's say, that
    # imported vera is not how to start vera)
    if name == "__main__.py" and Path(argv0).parent.name == "vera":
        return f"{shlex.quote(sys.executable)} -m vera"
    if name == "vera" and argv0 != "vera":
        found = shutil.which("vera")
        if found is None or Path(found).resolve() != Path(argv0).resolve():
            return shlex.quote(argv0)
    return "vera"


def existing_run(out: Path | None, *, resume: bool) -> RunManifest | None:
    """The manifest of the run in `out`, or None when `out` is a new (or empty) folder.

    Refuses `--resume` of a folder that holds no run, and a non-empty folder that is not
    a vera run (writing into it would overwrite or append to someone's files)."""
    if out is None:
        return None
    if resume or (out / MANIFEST).is_file():
        return run_to_resume(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: --out must be a folder, and this is a file")
    if out.is_dir() and any(out.iterdir()):
        raise UserError(
            f"{out}: folder is not empty and holds no vera run (no {MANIFEST}); "
            "choose a new or empty folder for --out"
        )
    return None


def run_to_resume(out: Path) -> RunManifest:
    """The manifest of the run in `out`; a folder that holds no run is refused."""
    path = out / MANIFEST
    if not path.is_file():
        raise UserError(f"{out}: nothing to resume (no {MANIFEST}: not a vera run directory)")
    manifest = read_manifest(path)
    check_own_version(manifest, path)
    return manifest


def check_schema(manifest: RunManifest, path: Path) -> None:
    """Refuse to rewrite a manifest of a schema later than this vera's: the fields this
    vera does not know would be lost."""
    if manifest.schema_version > MANIFEST_SCHEMA_VERSION:
        raise UserError(
            f"{path}: manifest schema {manifest.schema_version} is newer than this vera writes "
            f"({MANIFEST_SCHEMA_VERSION}); continue the run with the vera that made it "
            f"({manifest.vera_version}), or start a new run"
        )


def check_own_version(manifest: RunManifest, path: Path) -> None:
    """Only the vera that made a run continues it: another version may plan other jobs,
    ask the judge other questions or write records this one does not know, and continuing
    would rewrite the manifest as if this vera had made the whole run. Reading the run
    (`vera card`, `view`, `compare`) stays open to every version."""
    check_schema(manifest, path)
    if manifest.vera_version != __version__:
        raise UserError(
            f"{path}: this run was made by vera {manifest.vera_version} and this is vera "
            f"{__version__}; continue it with vera {manifest.vera_version}, or start a new run "
            "(its card, view and export read it as it is)"
        )


def read_manifest(path: Path) -> RunManifest:
    try:
        return msgspec.json.decode(path.read_bytes(), type=RunManifest)
    except OSError as exc:
        raise UserError(f"{path}: cannot read the run manifest: {exc.strerror or exc}") from None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise UserError(f"{path}: not a readable run manifest ({exc})") from None


def restored_config(manifest: RunManifest) -> RunConfig:
    """The run config exactly as the run used it, with its inputs at the paths the run
    recorded (absolute), needing no config file."""
    cfg = RunConfig.from_snapshot(manifest.config)
    cfg.base_dir = manifest.base_dir or _guess_base_dir(manifest, cfg)
    # Each input where the run recorded it; a path the config already names it by stays
    # as written, so a resume leaves the manifest's config as it was (relative paths too).
    for key, _ in INPUTS:
        if key != "personas" and cfg.path(getattr(cfg, key)) != Path(getattr(manifest, key).path):
            setattr(cfg, key, getattr(manifest, key).path)
    files = list(manifest.personas.files)
    if [str(f) for f in cfg.persona_files()] != files:
        cfg.personas = files if len(files) > 1 else files[0]  # a set may combine several files
    return cfg


def _guess_base_dir(manifest: RunManifest, cfg: RunConfig) -> str:
    """Manifests written before `base_dir` was recorded: the folder against which the
    config's relative rubric path gives the rubric the run recorded."""
    recorded = Path(manifest.rubric.path)
    for folder in recorded.parents:
        if (folder / cfg.rubric).resolve() == recorded.resolve():
            return str(folder)
    return str(recorded.parent)


def resume_config(
    manifest: RunManifest,
    run_dir: Path,
    *,
    config_path: str | None,
    given: Mapping[str, Any],
    apply: Callable[[RunConfig], RunConfig],
) -> RunConfig:
    """The config a resumed run continues with: the manifest's, or the one `--config`
    names when it agrees, with the options in `given` (RunOptions fields that were set)
    applied by `apply(cfg)`. Raises a `UserError` naming every option that disagrees."""
    was = restored_config(manifest)
    cfg = (
        load_config(config_path, reference_data=was.reference.data or None)
        if config_path
        else copy.deepcopy(was)
    )
    cfg = apply(cfg)
    problems: list[str] = []
    for field, flag in RUN_FIELDS:
        option = _OPTION_OF.get(field)
        source = (given.get("seeds_flag") or flag) if field == "seeds" else flag
        by_option = option is not None and given.get(option) not in (None, [], "")
        who = source if by_option else f"--config {config_path}"
        for name, old, new in _differences(field, getattr(was, field), getattr(cfg, field)):
            # Settings inside [conversation] that an option sets.
            flag_of = _CONVERSATION_OPTIONS.get(name)
            if flag_of is not None and given.get(flag_of[0]) is not None:
                problems.append(f"{flag_of[1]}: this run used {old}; you gave {new}")
                continue
            verb = "you gave" if by_option else "the config gives"
            problems.append(f"{who}: {'' if by_option else name + ': '}this run used {old}; {verb} {new}")
    shard = given.get("shard")
    if shard is not None and str(shard) != (manifest.shard or ""):
        problems.append(f"--shard: this run used {manifest.shard or 'no shard'}; you gave {shard}")
    if problems:
        raise UserError(f"cannot resume {run_dir}: " + "; ".join(problems))
    return cfg


def _differences(field: str, old: Any, new: Any) -> list[tuple[str, str, str]]:
    """(name, old, new) for every setting of `field` that differs, as a user writes it."""
    a, b = msgspec.to_builtins(old), msgspec.to_builtins(new)
    if isinstance(a, dict):
        return [
            (f"{field}.{k}", _show(k, a.get(k)), _show(k, b.get(k)))
            for k in sorted(a)
            if a.get(k) != b.get(k)
        ]
    return [(field, _show(field, a), _show(field, b))] if a != b else []


def _show(field: str, value: Any) -> str:
    if field == "persona_limit":
        return "all personas" if not value else f"the first {value} personas"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "none"
    return repr(value) if isinstance(value, str) else str(value)


def check_inputs_present(manifest: RunManifest, cfg: RunConfig, run_dir: Path, keys: tuple[str, ...]) -> None:
    """Every input the resumed run must read (`keys`) is where the config says; if one
    is gone, say which, what the run expects of it, and how to point vera at a copy."""
    for key, what in INPUTS:
        if key not in keys:
            continue
        paths = cfg.persona_files() if key == "personas" else [cfg.path(getattr(cfg, key))]
        for path in paths:
            if path.exists():
                continue
            v: ArtifactVersion = getattr(manifest, key)
            how = "--personas FILE or --config" if key == "personas" else "--config"
            raise UserError(
                f"cannot resume {run_dir}: the {what} this run used is gone: {path} "
                f"({v.name} {v.version}, sha256 {v.sha256[:12]}); put it back, or point {how} "
                "at a copy with the same content"
            )


def check_profiles_present(
    manifest: RunManifest, cfg: RunConfig, profiles: Mapping[str, Profile], run_dir: Path
) -> None:
    """Every model the resumed run uses still has its provider profile."""
    roles = (("chatbot", manifest.chatbots), ("user-agent", manifest.user_agents), ("judge", manifest.judges))
    for role, specs in roles:
        for spec in specs:
            try:
                resolve_ref(spec.ref, profiles)
            except ConfigError:
                folder = cfg.path(cfg.providers)
                state = "which is gone" if not folder.is_dir() else "which has no such profile"
                raise UserError(
                    f"cannot resume {run_dir}: {role} {spec.ref} needs provider profile "
                    f"{spec.provider!r} from {folder}, {state}; put it back, or resume with --config "
                    "naming a config whose `providers` folder holds it"
                ) from None


def check_same_run(existing: RunManifest, planned: RunManifest, run_dir: Path) -> None:
    """Refuse to continue a run with inputs or models other than its own, naming each
    difference with the old and new version and hash."""
    diffs: list[str] = []
    for key, what in INPUTS:
        a, b = getattr(existing, key), getattr(planned, key)
        if a.sha256 != b.sha256:
            diffs.append(
                f"the {what} changed: this run used {_version(a)} from {a.path}; "
                f"{b.path} now holds {_version(b)}"
            )
    for key, role in (("chatbots", "chatbot"), ("user_agents", "user-agent"), ("judges", "judge")):
        diffs += _spec_differences(role, getattr(existing, key), getattr(planned, key))
    if diffs:
        raise UserError(f"cannot resume {run_dir}: " + "; ".join(diffs))


def kept_identities(existing: RunManifest, planned: RunManifest) -> RunManifest:
    """`planned` with every input of unchanged content named as the run recorded it.

    A resume may read an input from a copy with the same content (`--personas FILE`, a
    `--config` whose paths point elsewhere); the copy's own name and version (its file
    name, "unversioned" without a sidecar) would otherwise replace the run's in the
    manifest, so the card would name another persona set and `vera compare` would refuse
    the run beside its uninterrupted twin. The path is where the input is now, so a
    later `--resume` alone finds it."""
    kept: dict[str, ArtifactVersion] = {}
    for key, _ in INPUTS:
        was, now = getattr(existing, key), getattr(planned, key)
        if was.sha256 == now.sha256 and (was.name, was.version) != (now.name, now.version):
            kept[key] = msgspec.structs.replace(now, name=was.name, version=was.version)
    return msgspec.structs.replace(planned, **kept) if kept else planned


def _version(v: ArtifactVersion) -> str:
    return f"{v.name} {v.version} (sha256 {v.sha256[:12]})"


def _spec_differences(role: str, old: list[ModelSpec], new: list[ModelSpec]) -> list[str]:
    """A model whose profile now resolves differently (another model id, protocol or
    parameters) is not the model the run used."""
    out: list[str] = []
    by_ref = {s.ref: s for s in new}
    for a in old:
        b = by_ref.get(a.ref)
        if b is not None and b != a:
            out.append(f"{role} {a.ref}: this run used {_spec(a)}; its profile now gives {_spec(b)}")
    return out


def _spec(s: ModelSpec) -> str:
    params = f", params {s.params}" if s.params else ""
    return f"model {s.model!r} over {s.protocol}{params}"
