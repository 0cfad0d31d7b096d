"""/compare?by_seed=1 in Chromium, as `vera view` serves it: the summary across seeds
comes first, every replicate's scores and every pair sit behind closed folds, and the
pairs' fold opens (no script) on every pair of the comparison."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from vera.cli._main import main

from . import test_browser
from .conftest import start_view
from .shots import shot
from .test_browser import no_page_scroll

browser = test_browser.browser
page_at = test_browser.page_at


# Session-scoped: made before the browser starts (Playwright's loop would refuse the
# run's own), with its comparison as `vera compare --by-seed --json -` gives it.
@pytest.fixture(scope="session")
def seeds_run(tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    """Both offline chatbots at three seeds: 6 replicates, 15 pairs, 3 of them same-seed."""
    out = tmp_path_factory.mktemp("seeds") / "run"
    run = CliRunner().invoke(
        main, ["run", "--out", str(out), "--seeds", "3", "--limit-personas", "16", "--quiet"]
    )
    assert run.exit_code == 0, run.output
    compared = CliRunner().invoke(main, ["compare", str(out), "--by-seed", "--json", "-"])
    assert compared.exit_code == 0, compared.output
    return out, json.loads(compared.stdout)


@pytest.fixture(scope="module")
def seeds_url(seeds_run) -> Iterator[str]:
    proc, url = start_view(str(seeds_run[0]))
    yield url
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 400])
def test_the_summary_comes_first_and_the_fold_opens_on_every_pair(
    page_at, seeds_url, seeds_run, tmp_path, width
):
    data = seeds_run[1]
    pairs = [f"{c['a']} − {c['b']}" for c in data["comparisons"]]
    assert len(pairs) == 15
    page = page_at(width)
    page.goto(seeds_url + "compare?by_seed=1")
    page.wait_for_selector("#across-seeds table", timeout=60_000)
    # The first thing after the runs: each two chatbots across seeds.
    headings = page.locator("main h2").all_inner_texts()
    assert headings[0] == "Across seeds"
    summary = page.locator("#across-seeds table").first
    row = summary.locator("tbody tr").first.locator("th, td").all_inner_texts()
    pair = data["across_seeds"][0]
    assert row[0] == "offline/best-practice − offline/risk-ignoring"
    assert row[1] == "3" and row[6] == f"{pair['a_higher']} / {pair['b_higher']} / {pair['equal']}"
    assert page.locator("#across-seeds figure img").count() == 1
    shot(page, tmp_path, f"compare_by_seed_{width}", full_page=True)

    # Every pair is behind a closed fold: not on the screen until it is opened.
    fold = page.locator("details#every-pair")
    overview = fold.locator("table").first
    assert not overview.is_visible()
    assert fold.locator("summary").inner_text().startswith("Every pair (15;")
    fold.locator("summary").click()
    assert overview.is_visible()
    shown = overview.locator("tbody th[scope=row]").all_inner_texts()
    assert shown == pairs
    # and every pair per dimension, on one table (not a table per pair), Overall last
    by_dimension = fold.locator("table").nth(1)
    assert fold.locator("table").count() == 2
    assert by_dimension.locator("tbody th[scope=row]").all_inner_texts() == pairs
    overall = by_dimension.locator("tbody tr").first.locator("td").last.inner_text()
    first = data["comparisons"][0]["overall"]
    assert overall.startswith(f"{first['diff']:.1f} [")
    assert overall.endswith(" *") == bool(first["excludes_zero"])
    assert no_page_scroll(page)
    fold.scroll_into_view_if_needed()
    shot(page, tmp_path, f"compare_by_seed_pairs_{width}")
