"""`vera run` started from a thread other than the main one (a notebook's worker, a test
next to Playwright's loop) runs to the end: signal handlers are the main thread's, so the
run goes on without them instead of failing on the first one it tries to install."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from click.testing import CliRunner

from vera.cli._main import main


def test_a_run_off_the_main_thread_completes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--out", str(out), "--seed", "1", "--limit-personas", "1", "--quiet"]

    def invoke():
        assert threading.current_thread() is not threading.main_thread()
        return CliRunner().invoke(main, args)

    with ThreadPoolExecutor(max_workers=1) as pool:
        result = pool.submit(invoke).result()
    assert result.exit_code == 0, result.output
    assert (out / "card.json").exists()
