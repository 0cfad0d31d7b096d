"""A call whose cost is unknown (sent, then timed out or cut off by a stop) says so on
its conversation's page, with what it may be billed: before, its row showed "$0" and
the page's total left it out without a word, so the page read cheaper than an invoice
can be."""

from __future__ import annotations

import json
import re
from html import unescape

import aiohttp
import pytest

from ..card.test_uncertain_cost import run_with_unbounded_costs, run_with_unknown_costs
from ..fakes.sweep import KEY
from .test_server import serving


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("SWEEP_TEST_KEY", KEY)


def _text(html: str) -> str:
    spaced = re.sub(r"<t[dh][^>]*>", " ", html)
    return " ".join(unescape(re.sub(r"<[^>]+>", "", spaced)).split())


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def calls_tables(run, kept) -> dict[str, tuple[str, list[dict]]]:
    """For each conversation page holding a call `kept` keeps: the page's calls table as
    text, served by `vera view`, and those calls of it."""
    calls = [c for c in _jsonl(run / "calls.jsonl") if kept(c)]
    assert calls, "no call of the kind asked for: the test proves nothing"
    page_of = {c["id"]: c["id"] for c in _jsonl(run / "conversations.jsonl")}
    page_of |= {j["id"]: j["conversation_id"] for j in _jsonl(run / "judgements.jsonl")}
    tables = {}
    async with serving(run) as base, aiohttp.ClientSession() as http:
        for cid in sorted({page_of[c["job_id"]] for c in calls}):
            async with http.get(f"{base}/runs/0/conversations/{cid}.html") as r:
                html = await r.text()
            table = _text(html.split('id="calls"', 1)[1].split('id="call-bodies"', 1)[0])
            tables[cid] = (table, [c for c in calls if page_of[c["job_id"]] == cid])
    return tables


async def test_a_call_of_unknown_cost_says_what_it_may_be_billed(tmp_path):
    run = await run_with_unknown_costs(tmp_path)
    for table, mine in (await calls_tables(run, lambda c: c["uncertain_usd"])).values():
        for c in mine:
            assert f"cost unknown: up to ${c['uncertain_usd']:,.4f} if billed" in table
        total = sum(c["uncertain_usd"] for c in mine)
        assert f"a provider may bill up to ${total:,.4f} more for them" in table


async def test_a_call_of_unknown_cost_with_no_bound_says_so(tmp_path):
    # No output cap: no figure to give, and "$0" with nothing said would read as free.
    run = await run_with_unbounded_costs(tmp_path)
    for table, mine in (await calls_tables(run, lambda c: c.get("unbounded_attempts"))).values():
        assert table.count("an attempt of unknown cost, with no bound") == len(mine)
        assert f"{len(mine)} call(s) had attempts of unknown cost with no bound at all" in table
        assert "if billed" not in table
