from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# The reference tool's data sits beside the project in development and CI; tests that
# need it skip cleanly where it is absent (e.g. a user's fresh clone).
REFERENCE = ROOT.parent / "shared" / "reference" / "vera-mh-v1.1"


def jsonl(path: Path) -> list[dict]:
    """The records of a JSON-lines file; a missing file is an error, not no records."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# The personas of `offline_pilot`: one unit (persona × user-agent × seed) each.
OFFLINE_PILOT_PERSONAS = 50


@pytest.fixture(scope="session")
def offline_pilot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One offline run of the best-practice stand-in on 50 personas with one seed, built
    once for the session: the baseline `vera gate` tests gate candidates against and the
    pilot `vera plan` tests plan from (tests/test_sequential_gate.py,
    tests/test_plan_command.py). Tests read it and never write into it."""
    from click.testing import CliRunner

    from vera.cli._main import main

    out = tmp_path_factory.mktemp("offline-pilot") / "pilot"
    result = CliRunner().invoke(
        main,
        ["run", "--config", str(ROOT / "configs" / "offline.toml"), "--providers", "offline/best-practice",
         "--limit-personas", str(OFFLINE_PILOT_PERSONAS), "--out", str(out), "--seed", "1", "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def sweep_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key the sweep fake's provider profiles read (tests/fakes/sweep.py), for tests
    that run against it (`pytestmark = pytest.mark.usefixtures("sweep_key")`)."""
    from tests.fakes.sweep import KEY

    monkeypatch.setenv("SWEEP_TEST_KEY", KEY)


@pytest.fixture(autouse=True)
def no_wire_violations() -> Iterator[None]:
    """Fail any test during which a fake provider server received a request that the real
    API would refuse (tests/fakes/rules.py), unless the test expected it."""
    from tests.fakes.protocols import STARTED

    STARTED.clear()
    yield
    broken = [(s.protocol, v) for s in STARTED if not s.expect_violations for v in s.violations]
    STARTED.clear()
    if broken:
        listed = "\n".join(f"  {protocol}: {v}" for protocol, v in broken[:20])
        pytest.fail(
            f"{len(broken)} request(s) broke the providers' documented rules:\n{listed}", pytrace=False
        )


def interrupt_twice(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C, then Ctrl-C again once vera says it starts no new work: everything the
    process said on stderr until it ended."""
    assert proc.stderr is not None
    proc.send_signal(signal.SIGINT)
    said: list[str] = []
    while not any("no new work will start" in line for line in said):
        line = proc.stderr.readline()
        assert line, "".join(said)
        said.append(line)
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    return "".join(said) + rest
