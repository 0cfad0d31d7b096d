"""Ctrl-C while vera is still importing its libraries is one line and exit 130.

The imports take a second or two (polars, numpy, aiohttp); a user who presses Ctrl-C
then got a traceback from deep inside one of them. The interrupt is made deterministic
here by an import hook that raises KeyboardInterrupt when the CLI's main module is
imported, in a fresh interpreter, as a real Ctrl-C at that moment would.
"""

from __future__ import annotations

import subprocess
import sys

from .conftest import ROOT

HOOK = """
import sys

class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "vera.cli._main":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, CtrlC())
sys.argv = ["vera", "--help"]
from vera.cli import main
main()
"""


def test_ctrl_c_while_importing_is_one_line_and_exit_130() -> None:
    proc = subprocess.run([sys.executable, "-c", HOOK], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines() == ["vera: interrupted while starting; nothing was done"]
    assert proc.stdout == ""
