"""The package checks its invariants with explicit raises, not `assert` (which `python -O`
strips): what was an assert is now a named error."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from vera.app import JudgeOptions, judge_run
from vera.app._resume import run_to_resume
from vera.errors import UserError


def test_judging_without_a_run_dir_or_transcripts_is_a_user_error() -> None:
    with pytest.raises(UserError, match="RUN_DIR"):
        asyncio.run(judge_run(JudgeOptions()))


def test_judging_a_folder_that_holds_no_run_names_it(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="nothing to resume"):
        run_to_resume(tmp_path)
