"""A reasoning setting a model cannot take is one line naming the role, the model, the
profile or config section it came from and the field: at `vera validate config` and at
the start of a run, before any call."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from vera.app._checks import check_config
from vera.cli._main import main
from vera.engine import role_spec
from vera.inputs import RunConfig, load_profiles, resolve_ref
from vera.records import ModelSpec

from .conftest import ROOT
from .test_validation import PATHS

KEY_ENV = "VERA_REASONING_TEST_KEY"


def setup(tmp_path: Path, profile_params: str, judge_params: str) -> Path:
    providers = tmp_path / "providers"
    providers.mkdir()
    (providers / "oai.toml").write_text(
        f'protocol = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "gpt-4o"\n'
        f'api_key_env = "{KEY_ENV}"\n[params]\n{profile_params}\n'
    )
    (providers / "claude.toml").write_text(
        f'protocol = "anthropic"\nbase_url = "http://127.0.0.1:9"\nmodel = "claude-sonnet-4-5"\n'
        f'api_key_env = "{KEY_ENV}"\n'
        '[params]\nmax_tokens = 4096\nthinking = {type = "enabled", budget_tokens = 512}\n'
    )
    cfg = tmp_path / "run.toml"
    cfg.write_text(
        f'providers = "{providers}"\nruns_dir = "{tmp_path / "runs"}"\n'
        'chatbots = ["offline/best-practice"]\nuser_agents = ["claude"]\njudges = ["oai/gpt-5.4", "oai"]\n'
        f"persona_limit = 1\n{PATHS}[judge.params]\n{judge_params}\n"
    )
    return cfg


def test_validate_config_names_the_setting_and_where_it_came_from(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    cfg = setup(tmp_path, "", 'reasoning_effort = "low"\ntemperature = 0')
    lines = [f.render() for f in check_config(cfg).errors]
    assert lines == [
        f"{tmp_path / 'providers' / 'claude.toml'}: error: user-agent claude ([params] of provider profile "
        "'claude'): thinking.budget_tokens: a whole number of at least 1024, not 512",
        # gpt-5.4 takes low effort (its temperature 0 is left out with a warning at run
        # time); gpt-4o, the same config's other judge, does not reason at all
        f"{cfg}: error: judge oai ([judge.params] of the run config): reasoning_effort: gpt-4o is not "
        "a reasoning model (o-series, gpt-5) and refuses it",
    ]


def test_a_run_stops_before_any_call_with_one_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    cfg = setup(tmp_path, 'reasoning_effort = "minimal"', "")
    cfg.write_text(
        cfg.read_text().replace('user_agents = ["claude"]', 'user_agents = ["offline/scripted-user"]')
    )
    result = CliRunner().invoke(main, ["run", "--config", str(cfg)])
    assert result.exit_code == 1, result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert line == (
        f"error: {tmp_path / 'providers' / 'oai.toml'}: judge oai/gpt-5.4 ([params] of provider profile 'oai'): "
        "reasoning_effort: 'minimal' is not accepted by gpt-5.4 (one of: 'none', 'low', 'medium', 'high', "
        f"'xhigh') (and 1 more; `vera validate config {cfg}` lists them)"  # gpt-4o is sent it too
    )
    assert "Traceback" not in result.output
    assert not list((tmp_path / "runs").glob("*/calls*"))  # nothing was called


@pytest.mark.parametrize("name", ["vera-mh-2.0-si", "vera-mh-2.0-hfo"])
def test_the_reference_configs_judge_with_gpt_5_4_at_low_effort(name: str) -> None:
    # Read without applying the target (whose files live in the user's checkout): only
    # the roles' parameters matter here.
    cfg = msgspec.toml.decode((ROOT / "configs" / f"{name}.toml").read_bytes(), type=RunConfig)
    profiles = load_profiles(ROOT / "providers")
    [judge] = cfg.judges
    profile, model = resolve_ref(judge, profiles)
    spec = ModelSpec(
        ref=judge, provider=profile.name, protocol=profile.protocol, model=model, params=profile.params
    )
    sent, warnings = role_spec(spec, "judge", cfg)
    assert sent.model == "gpt-5.4"
    # temperature 0 is the judge's default, left out silently: GPT-5.4 at low effort refuses it
    assert sent.params == {"reasoning_effort": "low", "max_completion_tokens": 4000} and warnings == []
    other, _ = role_spec(msgspec.structs.replace(spec, model="gpt-4.1", params={}), "judge", cfg)
    assert other.params == {"temperature": 0}  # where the model allows it, it is sent


def test_the_references_shorthand_a_model_cannot_take_is_one_line_at_validate(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    cfg = setup(tmp_path, "", 'thinking_effort = "high"')
    lines = [f.render() for f in check_config(cfg).errors if "thinking_effort" in f.render()]
    # Claude's shorthand given to the OpenAI judges: refused, naming it as the reference's.
    assert lines == [
        f"{cfg}: error: judge oai/gpt-5.4 ([judge.params] of the run config): thinking_effort: is the "
        "reference's shorthand for thinking (Anthropic); gpt-5.4 speaks openai, which takes reasoning_effort (OpenAI)",
        f"{cfg}: error: judge oai ([judge.params] of the run config): thinking_effort: is the "
        "reference's shorthand for thinking (Anthropic); gpt-4o speaks openai, which takes reasoning_effort (OpenAI)",
    ]


def test_validate_config_print_shows_the_resolved_run_without_a_call(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-secret-value-123456")
    providers = tmp_path / "providers"
    providers.mkdir()
    (providers / "oai.toml").write_text(
        f'protocol = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "gpt-5.4"\n'
        f'api_key_env = "{KEY_ENV}"\n[params]\nreasoning_effort = "low"\n'
    )
    cfg = tmp_path / "run.toml"
    cfg.write_text(
        f'providers = "{providers}"\nruns_dir = "{tmp_path / "runs"}"\n'
        'chatbots = ["offline/best-practice"]\nuser_agents = ["offline/scripted-user"]\njudges = ["oai"]\n'
        f"persona_limit = 1\n{PATHS}"
    )
    result = CliRunner().invoke(main, ["validate", "config", str(cfg), "--print"])
    assert result.exit_code == 0, result.output
    resolved = msgspec.json.decode(result.stdout)
    assert resolved["config"]["judges"] == ["oai"] and resolved["config"]["persona_limit"] == 1
    (judge,) = resolved["models"]["judges"]
    # As the run would send it: the judge's default temperature 0 is left out for gpt-5.4.
    assert judge == {
        "ref": "oai",
        "provider": "oai",
        "protocol": "openai",
        "model": "gpt-5.4",
        "params": {"reasoning_effort": "low"},
    }
    assert "sk-secret-value" not in result.output


def test_a_custom_http_chatbot_is_sent_no_parameters_and_the_run_says_so() -> None:
    # [chatbot.params] temperature = 0.3 with a product behind `protocol = "http"` was
    # dropped without a word (its request is its profile's template, which has no slot
    # for it), while docs/protocols.md said a custom chatbot gets its parameters as given.
    cfg = msgspec.convert({"chatbot": {"params": {"temperature": 0.3}}}, RunConfig)
    spec = ModelSpec(ref="mybot", provider="mybot", protocol="http", model="mybot", params={"seed": 7})
    sent, warnings = role_spec(spec, "chatbot", cfg)
    assert sent.params == {}
    assert warnings == [
        "warning: chatbot mybot (mybot): not sending seed=7, temperature=0.3 (a custom http chatbot is sent "
        "its profile's [http] template only: set its sampling in the product)"
    ]
    # Nothing asked for, nothing said.
    assert role_spec(msgspec.structs.replace(spec, params={}), "chatbot", RunConfig())[1] == []
