"""`vera run` with every role on strict fake provider servers.

Each fake answers like a model in any role: a judge request (one that asks for
structured output) gets one of the options its question lists, in the protocol's own
structured-output shape; anything else gets a short numbered line. The fakes are the
strict ones of `tests/fakes/`, so every request of the run is checked against the
provider's documented rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from pytest import MonkeyPatch

from vera.cli._main import main

from ..conftest import ROOT
from ..fakes.answering import AnsweringAnthropic, AnsweringGemini, AnsweringOpenAI
from ..fakes.protocols import FakeChatbot, FakeServer, serve_in_thread

KEY = "sk-matrix-key-0123456789"
KEY_ENV = "VERA_MATRIX_KEY"


# How each protocol's server is made and how a profile reaches it.
MODELS = {
    "openai": "gpt-4o",
    "azure": "gpt-4o",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
}


def make_server(protocol: str) -> FakeServer:
    if protocol == "openai":
        return AnsweringOpenAI(key=KEY)
    if protocol == "azure":
        return AnsweringOpenAI(key=KEY, azure=True)
    if protocol == "anthropic":
        return AnsweringAnthropic(key=KEY)
    if protocol == "gemini":
        return AnsweringGemini(key=KEY)
    if protocol == "http":
        return FakeChatbot(key=KEY, contract=FakeChatbot.PRODUCT)
    raise ValueError(protocol)


def profile_toml(protocol: str, server: FakeServer, model: str = "", extra: str = "", query: str = "") -> str:
    """A provider profile for `server`, as a user would write it; `query`: the custom
    chatbot's URL query (`?key=value`)."""
    model = model or MODELS.get(protocol, "")
    common = f'api_key_env = "{KEY_ENV}"\ntimeout_s = 10\nmax_retries = 0\n'
    prices = "price_input_per_mtok = 1.0\nprice_output_per_mtok = 4.0\n"
    if protocol == "openai":
        head = f'protocol = "openai"\nbase_url = "{server.base_url}"\nmodel = "{model}"\n'
    elif protocol == "azure":
        head = (
            f'protocol = "azure_openai"\nbase_url = "{server.base_url}"\nmodel = "{model}"\n'
            f'[azure]\ndeployment = "{model}"\napi_version = "2024-10-21"\n'
        )
        return f"{common}{prices}{head}{extra}"
    elif protocol in ("anthropic", "gemini"):
        head = f'protocol = "{protocol}"\nbase_url = "{server.base_url}"\nmodel = "{model}"\n'
    else:  # the custom chatbot, with the body the example profile documents
        return (
            f'protocol = "http"\ntimeout_s = 10\nmax_retries = 0\n'
            f'[http]\nurl = "{server.root}/api/chat{query}"\n'
            f'headers = {{ Authorization = "Bearer ${{{KEY_ENV}}}" }}\n'
            'body = { session = "{{session_id}}", history = "{{messages}}", message = "{{last_message}}" }\n'
            'response_path = "reply.text"\n'
        )
    return f"{common}{prices}{head}{extra}"


@dataclass
class Run:
    exit_code: int
    output: str
    out: Path
    servers: dict[str, FakeServer] = field(default_factory=dict)
    stderr: str = ""

    def jsonl(self, name: str) -> list[dict[str, Any]]:
        path = self.out / name
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    @property
    def violations(self) -> list[str]:
        return [f"{name}: {v}" for name, s in self.servers.items() for v in s.violations]


def run_roles(
    tmp: Path,
    roles: dict[str, str],
    *,
    personas: int = 1,
    max_turns: int = 4,
    first_speaker: str = "user",
    models: dict[str, str] | None = None,
    profile_extra: str = "",
    config_extra: str = "",
    http_query: str = "",
) -> Run:
    """`vera run` with each role (chatbot, user_agent, judge) on the fake server of the
    protocol `roles` names; roles on one protocol share one server."""
    models = models or {}
    servers = {protocol: make_server(protocol) for protocol in set(roles.values())}
    out = tmp / "run"
    with MonkeyPatch.context() as env, serve_in_thread(*servers.values()):
        env.setenv(KEY_ENV, KEY)
        config = _write_setup(
            tmp,
            roles,
            servers,
            models,
            personas,
            max_turns,
            first_speaker,
            profile_extra,
            config_extra,
            http_query,
        )
        result = CliRunner().invoke(
            main,
            ["run", "--config", str(config), "--out", str(out), "--limit-personas", str(personas), "--quiet"],
        )
    return Run(result.exit_code, result.output, out, servers, result.stderr)


def _write_setup(
    tmp: Path,
    roles: dict[str, str],
    servers: dict[str, FakeServer],
    models: dict[str, str],
    personas: int,
    max_turns: int,
    first_speaker: str,
    profile_extra: str,
    config_extra: str,
    http_query: str = "",
) -> Path:
    providers = tmp / "providers"
    providers.mkdir()
    refs = {}
    for role, protocol in roles.items():
        name = f"{role.replace('_', '-')}-{protocol}"
        profile = profile_toml(protocol, servers[protocol], models.get(role, ""), profile_extra, http_query)
        (providers / f"{name}.toml").write_text(profile)
        refs[role] = name
    config = tmp / "run.toml"
    config.write_text(
        f'chatbots = ["{refs["chatbot"]}"]\nuser_agents = ["{refs["user_agent"]}"]\njudges = ["{refs["judge"]}"]\n'
        f'personas = "{ROOT / "personas" / "vera-personas.tsv"}"\n'
        f'rubric = "{ROOT / "rubrics" / "vera-si.tsv"}"\n'
        f'user_prompts = "{ROOT / "personas" / "prompts"}"\n'
        f'judge_prompts = "{ROOT / "rubrics" / "prompts"}"\n'
        f'providers = "{providers}"\nruns_dir = "{tmp / "runs"}"\n'
        f"seeds = [1]\nmax_concurrency = 4\ncache = false\n"
        f'[conversation]\nmax_turns = {max_turns}\nmin_turns = 2\nfirst_speaker = "{first_speaker}"\n'
        f"[stats]\nresamples = 50\n{config_extra}"
    )
    return config
