from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# The reference tool's data sits beside the project in development and CI; tests that
# need it skip cleanly where it is absent (e.g. a user's fresh clone).
REFERENCE = ROOT.parent / "shared" / "reference" / "vera-mh-v1.1"
