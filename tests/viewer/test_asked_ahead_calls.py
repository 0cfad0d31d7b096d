"""A judge question asked ahead that the walk did not reach is named on the conversation's
page, in the calls table and on its body: before, the page listed it as one more judge
call among the conversation's own, so an auditor counted more judge calls (and cost)
than questions in the walk, with nothing to say why."""

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


async def test_a_question_asked_ahead_and_not_reached_is_named_on_the_page(tmp_path: Path) -> None:
    run, _ = run_sweep(tmp_path, "tail")  # the last judgement asks ahead (tests/test_ask_ahead.py)
    judgements = [orjson.loads(line) for line in (run / "judgements.jsonl").read_bytes().splitlines()]
    ahead = [j for j in judgements if j.get("unused_questions", 0) > 0]
    plain = [j for j in judgements if not j.get("unused_questions", 0)]
    assert ahead and plain, "the sweep asked nothing ahead: the test proves nothing"
    calls = [orjson.loads(line) for line in (run / "calls.jsonl").read_bytes().splitlines()]

    async with serving(run) as base, aiohttp.ClientSession() as http:
        for j in ahead:
            async with http.get(f"{base}/runs/0/conversations/{j['conversation_id']}.html") as r:
                assert r.status == 200
                html = await r.text()
            table = _text(html.split('id="calls"', 1)[1].split('id="call-bodies"', 1)[0])
            named = re.findall(r"asked ahead: question (\w+), which the walk did not reach", table)
            walked = {a["question_id"] for a in j["answers"]}
            # One row per unused call, each naming a question the walk did not answer.
            assert len(named) == j["unused_questions"], table
            assert not set(named) & walked
            judge_calls = sum(c["job_id"] == j["id"] for c in calls)
            asked = sum(not a["auto"] for a in j["answers"])
            assert judge_calls == asked + len(named)  # every judge call is accounted for
            # Its body says it too, where the walk's questions do not list it.
            bodies = _text(html.split('id="call-bodies"', 1)[1])
            for q in named:
                assert f"asked ahead: question {q}, not reached (paid for, answer not used)" in bodies
        for j in plain[:2]:
            async with http.get(f"{base}/runs/0/conversations/{j['conversation_id']}.html") as r:
                assert "asked ahead" not in await r.text()
