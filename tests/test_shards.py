"""Shards of one sweep and the accounts they share: each of N shards takes 1/N of every
account's limits by default (stated in the manifest and on the card), all of them with
`--shard-limits full`; `--shard auto` reads K and N from a Slurm array or a Kubernetes
Indexed Job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.engine._plan import Shard
from vera.errors import ConfigError

from .clients.conftest import KEY, KEY_ENV, make_profile, open_pool
from .fakes.protocols import FakeOpenAI, serve_in_thread
from .run_config import write_run_config


async def test_each_shard_takes_its_part_of_every_account(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    big = make_profile("big", "openai", "http://127.0.0.1:9/v1", rpm=500, tpm=200_000, max_in_flight=64)
    tiny = make_profile("tiny", "openai", "http://127.0.0.1:8/v1", rpm=2, max_in_flight=1)
    async with open_pool(big, tiny, shards=3) as pool:
        a, b = pool.client("big").account, pool.client("tiny").account  # type: ignore[attr-defined]
        limits = {x.account: x for x in pool.limits()}
    assert (a.rpm, a.tpm, a.max_in_flight) == (166, 66_666, 21)  # rounded down
    assert (b.rpm, b.tpm, b.max_in_flight) == (1, None, 1)  # never below one; no limit stays none
    assert {x.share for x in limits.values()} == {"1/3"} and {x.shared for x in limits.values()} == {""}
    async with open_pool(big, shards=3, shard_limits="full") as pool:
        a = pool.client("big").account  # type: ignore[attr-defined]
        [full] = pool.limits()
    assert (a.rpm, a.tpm, a.max_in_flight) == (500, 200_000, 64) and full.share == "full"


def test_shard_auto_reads_the_schedulers_variables() -> None:
    slurm = {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "8"}
    assert Shard.from_environment(slurm) == Shard(3, 8)
    zero = {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"}
    assert Shard.from_environment({**zero, "SLURM_ARRAY_TASK_COUNT": "4"}) == Shard(1, 4)
    assert Shard.from_environment({"JOB_COMPLETION_INDEX": "0", "VERA_SHARD_COUNT": "16"}) == Shard(1, 16)
    with pytest.raises(ConfigError, match="plain range"):
        Shard.from_environment({**slurm, "SLURM_ARRAY_TASK_COUNT": "4"})  # --array=1-8:2
    with pytest.raises(ConfigError, match="VERA_SHARD_COUNT"):
        Shard.from_environment({"JOB_COMPLETION_INDEX": "2"})
    with pytest.raises(ConfigError, match="neither"):
        Shard.from_environment({})


def test_help_names_the_shard_limit_options() -> None:
    text = CliRunner().invoke(main, ["run", "--help"]).output
    assert "--shard-limits" in text and "--limits-url" in text and "1/N" in text


def _bot_config(tmp_path: Path, base_url: str, **extra: Any) -> Path:
    """A run config whose chatbot `bot` is the fake at `base_url` (an account of 6,000
    rpm, 900,000 tpm and 4 in flight), four turns a conversation."""
    providers = tmp_path / "providers"
    providers.mkdir()
    (providers / "bot.toml").write_text(
        f'protocol = "openai"\nbase_url = "{base_url}"\nmodel = "fake-bot"\n'
        f'api_key_env = "{KEY_ENV}"\nrpm = 6000\ntpm = 900000\nmax_in_flight = 4\ntimeout_s = 10\n'
    )
    return write_run_config(
        tmp_path / "run.toml",
        providers=providers,
        runs_dir=tmp_path / "runs",
        chatbots=["bot"],
        conversation={"max_turns": 4, "min_turns": 4},
        stats={"resamples": 20},
        **extra,
    )


def test_a_shard_run_states_its_limits_in_the_manifest_and_on_the_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = FakeOpenAI(key=KEY, latency=0.02)
    monkeypatch.setenv(KEY_ENV, KEY)
    with serve_in_thread(server):
        config = _bot_config(tmp_path, server.base_url, max_concurrency=16, cache=False)
        out = tmp_path / "shard1"
        host = server.base_url.split("/")[2]
        result = CliRunner().invoke(
            main,
            ["run", "--config", str(config), "--out", str(out), "--shard", "1/2", "--limit-personas", "12"],
        )
    assert result.exit_code == 0, result.output
    assert 0 < server.max_in_flight <= 2  # half of the account's 4
    manifest = json.loads((out / "manifest.json").read_text())
    [limits] = manifest["limits"]
    assert limits == {
        "account": f"{host}[{KEY_ENV}]",
        "rpm": 3000,
        "tpm": 450000,
        "max_in_flight": 2,
        "share": "1/2",
        "shared": "",
    }
    assert KEY not in (out / "manifest.json").read_text()
    card = (out / "card.md").read_text()
    assert (
        "**Account limits:**" in card
        and "each shard took 1/2 of every account's rpm, tpm and in-flight cap" in card
    )
    assert json.loads((out / "card.json").read_text())["accounting"]["limits"] == [limits]


def test_shard_auto_outside_a_scheduler_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"):
        monkeypatch.delenv(var, raising=False)
    result = CliRunner().invoke(main, ["run", "--out", str(tmp_path / "run"), "--shard", "auto", "--quiet"])
    assert result.exit_code == 1 and result.output.startswith("error: --shard auto: neither")
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_shard_auto_in_a_slurm_array_runs_its_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "3"}
    for var, value in {**env, "SLURM_ARRAY_TASK_COUNT": "3"}.items():
        monkeypatch.setenv(var, value)
    out = tmp_path / "run"
    args = ["run", "--out", str(out), "--shard", "auto", "--limit-personas", "3", "--quiet"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "manifest.json").read_text())["shard"] == "2/3"


def test_shard_auto_out_of_range_names_the_variables_not_a_split_nobody_typed() -> None:
    # The user typed `--shard auto`: "--shard '4/3': K must be between 1 and N" named a
    # value they never gave, and not the variable that was wrong.
    with pytest.raises(ConfigError) as k8s:
        Shard.from_environment({"JOB_COMPLETION_INDEX": "3", "VERA_SHARD_COUNT": "3"})
    assert str(k8s.value) == (
        "--shard auto: JOB_COMPLETION_INDEX=3 is not below VERA_SHARD_COUNT=3 (0-based index); "
        "set VERA_SHARD_COUNT to the Job's completions"
    )
    slurm = {"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "8"}
    with pytest.raises(ConfigError) as array:
        Shard.from_environment(slurm)
    assert str(array.value) == "--shard auto: SLURM_ARRAY_TASK_ID=9 is outside the array's 1..8"
    with pytest.raises(ConfigError, match=r"^--shard auto: VERA_SHARD_COUNT=0 "):
        Shard.from_environment({"JOB_COMPLETION_INDEX": "0", "VERA_SHARD_COUNT": "0"})


def test_a_merge_of_shards_with_different_limits_says_what_each_ran_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The merged card took the first shard's limits for all: "each shard took 1/2 of
    # every account's rpm, ..." when the other shard ran with the account's full limits.
    server = FakeOpenAI(key=KEY)
    monkeypatch.setenv(KEY_ENV, KEY)
    with serve_in_thread(server):
        config = _bot_config(tmp_path, server.base_url)
        common = ["run", "--config", str(config), "--limit-personas", "4", "--quiet"]
        for k, extra in ((1, []), (2, ["--shard-limits", "full"])):
            out = str(tmp_path / f"s{k}")
            result = CliRunner().invoke(main, [*common, "--shard", f"{k}/2", "--out", out, *extra])
            assert result.exit_code == 0, result.output
        host = server.base_url.split("/")[2]
    merged = tmp_path / "merged"
    result = CliRunner().invoke(main, ["merge", str(merged), str(tmp_path / "s1"), str(tmp_path / "s2")])
    assert result.exit_code == 0, result.output
    [line] = [x for x in (merged / "card.md").read_text().splitlines() if "**Account limits:**" in x]
    assert line == (
        f"- **Account limits:** {host}[{KEY_ENV}]: 3,000.0 rpm, 450,000.0 tpm, 2 in flight (1/2 of the "
        f"account's rpm, tpm and in-flight cap); {host}[{KEY_ENV}]: 6,000.0 rpm, 900,000.0 tpm, 4 in flight "
        "(the account's full limits) — the shards ran with different limits"
    )
    assert len(json.loads((merged / "card.json").read_text())["accounting"]["limits"]) == 2
