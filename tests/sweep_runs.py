"""A run against the sweep fake (tests/fakes/sweep.py) for the tests of what a run
keeps: three personas, one seed, every role at the loopback server, scored.

    pytestmark = pytest.mark.usefixtures("sweep_key")   # the fake's key, from conftest
    run = await sweep_run(tmp_path, server, FLEX)
"""

from __future__ import annotations

from pathlib import Path

from vera.app import RunOptions, execute_run, scored

from .conftest import jsonl as jsonl  # the sweep tests read their records with it
from .fakes.sweep import SweepServer, write_sweep_config

# Config fragments a test adds to the sweep config.
BATCH = '[judge]\nmode = "batch"\nbatch_poll_s = 0.02\nbatch_collect_s = 0.05\n'
FLEX = '[user_agent]\nservice_tier = "flex"\n'


async def sweep_run(tmp: Path, server: SweepServer, extra: str = "") -> Path:
    """A scored run of three personas, one seed, at `server`, with `extra` config; its
    directory is tmp/run."""
    cfg = write_sweep_config(tmp, server.base_url, personas=3, seeds="[1]", extra=extra)
    out = tmp / "run"
    scored(await execute_run(RunOptions(config_path=str(cfg), out=str(out), progress=False)))
    return out
