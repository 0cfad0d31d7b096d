"""`vera validate config` is what `vera run` does (issue 27): one pre-flight
(`vera.app._checks.preflight`) called by both, so a config that validates runs and one
the run refuses does not validate, over every config the repository and the test suite
use. A config's mistakes — a seed out of range, a negative wait, a model twice, a
stand-in in a role it cannot play, a profile without its `base_url` or with a key where
the variable's name goes, a pinned file that differs — are refused by both, the run
before it makes a run directory, in one `error:` line."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from vera.app import RunOptions, check_config, prepare_run
from vera.errors import UserError
from vera.inputs import load_config, load_profile
from vera.inputs._secrets import env_refs
from vera.ranges import SEED_MAX

from .conftest import FIXTURES, REFERENCE, ROOT
from .door import BOT, KEY_ENV, PASTED_KEY, invoke, profiles_folder, refused, snapshot
from .door import runs as runs  # the fixture
from .run_config import write_run_config

REFERENCE_2 = ROOT.parent / "shared" / "reference" / "vera-mh-2.0" / "data"


STAND_INS = [
    (
        "judge-as-chatbot",
        ["run", "--providers", "offline/lexical-judge", "--out", "{out}"],
        ("judge stand-in", "cannot be the chatbot"),
    ),
    (
        "judge-as-user",
        ["run", "--user-agent", "offline/lexical-judge", "--out", "{out}"],
        ("cannot be the simulated user",),
    ),
    (
        "chatbot-as-judge",
        ["run", "--judge", "offline/best-practice", "--out", "{out}"],
        ("chatbot stand-in", "cannot be the judge"),
    ),
]


@pytest.mark.parametrize(("args", "fragments"), [c[1:] for c in STAND_INS], ids=[c[0] for c in STAND_INS])
def test_a_stand_in_is_refused_in_a_role_it_cannot_play(tmp_path, args, fragments) -> None:
    out = tmp_path / "out"
    refused(invoke([a.format(out=out) for a in args]), *fragments)
    assert not out.exists()


def bad_config(tmp: Path, case: str) -> Path:
    """A config (and the files it names) with the one mistake `case` names."""
    folder = profiles_folder(tmp, bot=BOT)
    base: dict[str, Any] = {
        "providers": folder,
        "runs_dir": tmp / "runs",
        "chatbots": ["offline/best-practice"],
    }
    cases: dict[str, dict[str, Any]] = {
        "stats-seed-negative": {"stats": {"seed": -1}},
        "seeds-past-32-bits": {"seeds": [1, SEED_MAX + 1]},
        "retry-delay-negative": {"retry_base_delay_s": -1.0},
        "grace-negative": {"grace_s": -5.0},
        "retry-delays-crossed": {"retry_base_delay_s": 10.0, "retry_max_delay_s": 1.0},
        "batch-poll-inf": {"judge": {"batch_poll_s": float("inf")}},
        "temperature-hot": {"judge": {"params_temperature": "hot"}},
        "temperature-nan": {"chatbot": {"params_temperature": float("nan")}},
        "chatbot-twice": {"chatbots": ["offline/best-practice", "offline/best-practice"]},
        "rubric-empty": {"rubric": ""},
        "user-memory-alone": {"conversation": {"user_memory": True}},
        "batch-stand-in-judge": {"judge": {"mode": "batch"}},
        "flex-stand-in-user": {"user_agent": {"service_tier": "flex"}},
        "stand-in-judge-as-chatbot": {"chatbots": ["offline/lexical-judge"]},
    }
    settings = cases.get(case, {})
    if case == "base-url-empty":
        (folder / "bot.toml").write_text(BOT.replace("http://127.0.0.1:9/v1", ""))
        settings = {"chatbots": ["bot"]}
    if case == "base-url-missing":
        (folder / "bot.toml").write_text(BOT.replace('base_url = "http://127.0.0.1:9/v1"\n', ""))
        settings = {"chatbots": ["bot"]}
    if case == "key-pasted":
        (folder / "bot.toml").write_text(BOT.replace(KEY_ENV, PASTED_KEY))
        settings = {"chatbots": ["bot"]}
    if case == "timeout-inf":
        (folder / "bot.toml").write_text(BOT + "timeout_s = inf\n")
        settings = {"chatbots": ["bot"]}
    if case == "pinned-hash-mismatch":
        data = tmp / "reference-data"
        data.mkdir()
        (data / "rubric.tsv").write_text("not the pinned file\n")
        settings = {"reference": {"data": data, "sha256_rubric": "0" * 64}}
    return write(tmp / "run.toml", {**base, **settings})


def write(path: Path, settings: dict[str, Any]) -> Path:
    """`write_run_config` with two spellings it has no form for: `params_NAME` inside a
    role's table is `[ROLE.params] NAME`, `sha256_FILE` is `[reference.sha256] "FILE.tsv"`."""
    tables: dict[str, Any] = {}
    top: dict[str, Any] = {k: v for k, v in settings.items() if not isinstance(v, dict)}
    for name, table in ((k, v) for k, v in settings.items() if isinstance(v, dict)):
        plain = {k: v for k, v in table.items() if not k.startswith(("params_", "sha256_"))}
        tables[name] = plain
        for k, v in table.items():
            if k.startswith("params_"):
                tables.setdefault(f"{name}.params", {})[k.removeprefix("params_")] = v
            if k.startswith("sha256_"):
                tables.setdefault(f"{name}.sha256", {})[f'"{k.removeprefix("sha256_")}.tsv"'] = v
    return write_run_config(path, **top, **{k: v for k, v in tables.items() if v})


BAD_CONFIGS = [
    ("stats-seed-negative", "stats.seed must be a whole number from 0 to 4,294,967,295, not -1"),
    ("seeds-past-32-bits", f"seeds: {SEED_MAX + 1} must be a whole number from 0 to"),
    ("retry-delay-negative", "retry_base_delay_s must be a number of seconds, 0 or more, not -1.0"),
    ("grace-negative", "grace_s must be a number of seconds, 0 or more, not -5.0"),
    ("retry-delays-crossed", "retry_max_delay_s (1) must be at least retry_base_delay_s (10)"),
    ("batch-poll-inf", "judge.batch_poll_s must be a number of seconds above 0, not inf"),
    ("temperature-hot", "judge.params.temperature must be a number from 0 to 2, not 'hot'"),
    ("temperature-nan", "chatbot.params.temperature must be a number from 0 to 2, not nan"),
    ("chatbot-twice", "chatbots: 'offline/best-practice' listed twice"),
    ("rubric-empty", "rubric is empty"),
    ("user-memory-alone", "conversation.user_memory is set but a persona has one session"),
    ("batch-stand-in-judge", "judge 'offline/lexical-judge': it speaks 'offline', which has no batch API"),
    ("flex-stand-in-user", "'offline/scripted-user': it speaks 'offline'; the flex tier is OpenAI's"),
    ("stand-in-judge-as-chatbot", "offline/lexical-judge is a judge stand-in and cannot be the chatbot"),
    ("base-url-empty", "base_url is empty: protocol 'openai' needs the URL its requests and its key go to"),
    ("base-url-missing", "base_url is missing: protocol 'openai' needs the URL"),
    ("key-pasted", "api_key_env looks like a key, not a variable name"),
    ("timeout-inf", "timeout_s must be a finite number, not inf"),
    ("pinned-hash-mismatch", "rubric.tsv: not the reference file this config pins"),
]


@pytest.mark.parametrize(("case", "message"), BAD_CONFIGS, ids=[c for c, _ in BAD_CONFIGS])
def test_a_bad_config_is_refused_alike_by_validate_and_run(tmp_path, monkeypatch, case, message) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key")
    cfg = bad_config(tmp_path, case)
    checked = invoke(["validate", "config", str(cfg)])
    assert checked.exit_code == 1 and "Traceback" not in checked.output
    assert message in checked.stdout, checked.stdout
    ran = invoke(["run", "--config", str(cfg), "--quiet"])
    refused(ran, message)
    assert not (tmp_path / "runs").exists()  # refused before a run directory was made
    assert PASTED_KEY not in checked.output + ran.output  # a pasted key is never echoed


def test_a_resume_of_a_run_whose_stats_seed_is_out_of_range_is_refused_before_any_work(runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs["run"], run)
    manifest = msgspec.json.decode((run / "manifest.json").read_bytes())
    manifest["config"]["stats"]["seed"] = -1  # written by a vera that let it through
    (run / "manifest.json").write_bytes(msgspec.json.encode(manifest))
    before = snapshot(run)
    refused(invoke(["run", "--resume", str(run)]), "stats.seed must be a whole number from 0")
    assert snapshot(run) == before


# ---------------------------------------------------------------------------------------
# `vera validate config` is what `vera run` does
# ---------------------------------------------------------------------------------------


REFERENCES = {
    "vera-mh-v1.1": REFERENCE / "data",
    "vera-mh-2.0-si": REFERENCE_2,
    "vera-mh-2.0-hfo": REFERENCE_2,
}

# Run configs built on the fixtures the suite reads (tests/fixtures holds no run config
# of its own, only what configs name: a target, prompt sets, rubrics).
FIXTURE_SETTINGS: dict[str, dict[str, Path]] = {
    "fixture-target-DEMO": {"target": FIXTURES / "targets" / "DEMO" / "manifest.json"},
    "fixture-user-prompts": {"user_prompts": FIXTURES / "user_prompts"},
    "fixture-before-user-prompts": {"user_prompts": FIXTURES / "before_user_prompts"},
    "fixture-labelled-judge-prompts": {"judge_prompts": FIXTURES / "labelled_judge_prompts"},
    "fixture-flow-rubric": {"rubric": FIXTURES / "rubrics" / "flow.tsv"},
    "fixture-broken-rubric": {"rubric": FIXTURES / "rubrics" / "broken.tsv"},
}


def _fixture_config(tmp: Path, settings: dict[str, Path]) -> Path:
    cfg = tmp / "run.toml"
    if "target" in settings:  # a target names the rubric, personas and prompts itself
        cfg.write_text(f'target = "{settings["target"]}"\nruns_dir = "{tmp / "runs"}"\n')
        return cfg
    given: dict[str, Any] = settings
    return write_run_config(
        cfg, providers=ROOT / "providers", runs_dir=tmp / "runs", chatbots=["offline/best-practice"], **given
    )


def _helper_configs() -> dict[str, Callable[[Path], Path]]:
    """The configs the suite's helpers write, with the settings the suite gives them."""
    from tests.fakes.sweep import write_sweep_config
    from tests.test_reasoning_config import setup as reasoning_setup
    from tests.test_sessions import offline_config
    from tests.test_shared_limits import write_setup
    from tests.test_validation import BROKEN_PROFILES, config

    url = "http://127.0.0.1:9/v1"
    return {
        "sweep-config": lambda t: write_sweep_config(t, url),
        "sweep-config-batch": lambda t: write_sweep_config(t, url, extra='[judge]\nmode = "batch"\n'),
        "sweep-config-budget-uncapped": lambda t: write_sweep_config(t, url, extra="max_cost_usd = 5.0\n"),
        "sweep-config-budget": lambda t: write_sweep_config(t, url, extra="max_cost_usd = 5.0\n", max_tokens=64),
        "sessions-offline": lambda t: offline_config(t),
        "sessions-offline-arc": lambda t: offline_config(t, sessions=["intake", "follow-up"], user_memory=True),
        "shared-limits": lambda t: write_setup(t, url),
        "reasoning-bad-effort": lambda t: reasoning_setup(t, 'reasoning_effort = "minimal"', ""),
        "reasoning-ok": lambda t: reasoning_setup(t, "", 'reasoning_effort = "low"'),
        "validation-broken-profiles": lambda t: config(
            t, profiles_folder(t, **{n.removesuffix(".toml"): x for n, x in BROKEN_PROFILES.items()}), ["offline/best-practice"]
        ),
    }  # fmt: skip


# Every config the repository and the test suite use: configs/, run configs built on
# tests/fixtures, the configs the suite's helpers write, and the bad ones above.
EVERY_CONFIG = [
    *(f"configs/{p.stem}" for p in sorted((ROOT / "configs").glob("*.toml"))),
    *FIXTURE_SETTINGS,
    "sweep-config",
    "sweep-config-batch",
    "sweep-config-budget-uncapped",
    "sweep-config-budget",
    "sessions-offline",
    "sessions-offline-arc",
    "shared-limits",
    "reasoning-bad-effort",
    "reasoning-ok",
    "validation-broken-profiles",
    *(case for case, _ in BAD_CONFIGS),
]


def config_named(name: str, tmp: Path) -> tuple[Path, str]:
    """(config, reference data folder or "") of the config `name` in EVERY_CONFIG."""
    if name.startswith("configs/"):
        data = REFERENCES.get(name.removeprefix("configs/"))
        if data is not None and not data.is_dir():
            pytest.skip("reference data absent")
        return ROOT / f"{name}.toml", str(data or "")
    if name in FIXTURE_SETTINGS:
        return _fixture_config(tmp, FIXTURE_SETTINGS[name]), ""
    helpers = _helper_configs()
    if name in helpers:
        return helpers[name](tmp), ""
    return bad_config(tmp, name), ""


def variables(cfg: Path, reference: str) -> set[str]:
    """Every environment variable the profiles of the config's providers folder name."""
    try:
        conf = load_config(cfg, reference_data=reference or None)
    except UserError:
        return set()
    names: set[str] = set()
    for path in conf.path(conf.providers).glob("*.toml"):
        try:
            names.update(env_refs(load_profile(path)))
        except UserError:
            continue
    return names


def run_accepts(cfg: Path, reference: str) -> bool:
    """Whether `vera run --config CFG`'s pre-flight accepts the config."""
    try:
        prepare_run(RunOptions(config_path=str(cfg), reference_data=reference or None))
    except UserError:
        return False
    return True


ACCEPTED = {"configs/offline", "configs/recommended", "sweep-config", "sessions-offline-arc"}


@pytest.mark.parametrize("name", EVERY_CONFIG)
def test_validate_config_and_run_agree(tmp_path, monkeypatch, name) -> None:
    cfg, reference = config_named(name, tmp_path)
    for var in variables(cfg, reference):  # every key set: only the config decides
        monkeypatch.setenv(var, "test-key")
    validates = not check_config(cfg, reference_data=reference or None).errors
    assert validates == run_accepts(cfg, reference), f"validate says {validates}"
    if name in ACCEPTED or name in {c for c, _ in BAD_CONFIGS}:
        assert validates == (name in ACCEPTED)


def test_an_offline_config_that_validates_runs_to_the_end(tmp_path) -> None:
    for cfg in (ROOT / "configs" / "offline.toml", FIXTURES / "targets" / "DEMO" / "manifest.json"):
        conf = tmp_path / f"{cfg.stem}.toml"
        what = (
            f'target = "{cfg}"'
            if cfg.suffix == ".json"
            else f'chatbots = ["offline/best-practice"]\nproviders = "{ROOT / "providers"}"'
        )
        conf.write_text(f'{what}\npersona_limit = 1\nruns_dir = "{tmp_path / "runs"}"\n')
        assert not check_config(conf).errors
        result = invoke(["run", "--config", str(conf), "--quiet"])
        assert result.exit_code == 0, result.output


def test_an_empty_config_outside_the_project_is_the_built_in_evaluation(tmp_path) -> None:
    cfg = tmp_path / "elsewhere" / "empty.toml"
    cfg.parent.mkdir()
    cfg.write_text("")
    checked = invoke(["validate", "config", str(cfg)])
    assert checked.exit_code == 0 and "rubric vera-si" in checked.stdout, checked.output
    assert load_config(cfg).path(load_config(cfg).rubric) == ROOT / "rubrics" / "vera-si.tsv"
    ran = invoke(
        ["run", "--config", str(cfg), "--limit-personas", "1", "--out", str(tmp_path / "run"), "--quiet"]
    )
    assert ran.exit_code == 0, ran.output
