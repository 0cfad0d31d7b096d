"""Replies replayed (on a resume, or from a shared response cache) are rows of a
conversation's calls table but not calls: the page counts them apart, as the card does,
and says where they came from. Before, it counted them as calls ("16 call(s)" where the
card said 12 and 4 replayed) and labelled a resume's replays "from the response cache"
in a run that keeps no cache."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import aiohttp
import orjson

from ..test_ask_ahead import run_sweep
from .test_server import serving


def _text(html: str) -> str:
    spaced = re.sub(r"<t[dh][^>]*>", " ", html)
    return " ".join(unescape(re.sub(r"<[^>]+>", "", spaced)).split())


def _jsonl(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


async def test_replayed_replies_are_counted_apart_from_calls_as_on_the_card(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_sweep(tmp_path / "first", "off", "--cache-dir", str(cache))
    rerun, _ = run_sweep(tmp_path / "rerun", "off", "--cache-dir", str(cache))  # every reply replayed
    calls = _jsonl(rerun / "calls.jsonl")
    assert calls and all(c["cached"] for c in calls)  # the control: nothing was asked again
    card = orjson.loads((rerun / "card.json").read_bytes())["accounting"]["total"]
    assert card["calls"] == 0 and card["replayed"] == len(calls)

    conversation = _jsonl(rerun / "conversations.jsonl")[0]["id"]
    judgement = next(
        j["id"] for j in _jsonl(rerun / "judgements.jsonl") if j["conversation_id"] == conversation
    )
    mine = [c for c in calls if c["job_id"] in {conversation, judgement}]
    async with (
        serving(rerun) as base,
        aiohttp.ClientSession() as http,
        http.get(f"{base}/runs/0/conversations/{conversation}.html") as r,
    ):
        html = await r.text()
    table = _text(html.split('id="calls"', 1)[1].split('id="call-bodies"', 1)[0])
    assert "0 call(s), 0 tokens, $0" in table
    assert f"{len(mine)} of the rows below are replies replayed (paid for before" in table
    assert table.count("replayed: paid for before, no call made") == len(mine)
    assert "from the response cache" not in html
