"""A conversation page's model calls: exactly the records of calls.jsonl for the
conversation and its judgements, found again as the file grows."""

from __future__ import annotations

import re
import shutil
from html import unescape

import msgspec

from vera.records import CallRecord, Usage
from vera.store import open_run
from vera.viewer.calls import CallIndex, Job, calls_html


def cells_text(html: str) -> str:
    """The section's text with a space between table cells, entities decoded."""
    spaced = re.sub(r"<t[dh][^>]*>", " ", html)
    return " ".join(unescape(re.sub(r"<[^>]+>", "", spaced)).split())


def all_calls(run_dir) -> list[CallRecord]:
    dec = msgspec.json.Decoder(CallRecord)
    return [dec.decode(line) for line in (run_dir / "calls.jsonl").read_bytes().splitlines() if line.strip()]


def test_a_conversations_calls_are_its_own_and_its_judgements(offline_run):
    records = open_run(offline_run)
    cid = next(iter(records.conversations))
    judgements = [h.id for h in records.judgements_of(cid)]
    expected = [c for c in all_calls(offline_run) if c.job_id in {cid, *judgements}]
    assert {c.role for c in expected} == {"user_agent", "chatbot", "judge"}  # the control
    got = CallIndex(offline_run).calls([cid, *judgements])
    assert got == sorted(expected, key=lambda c: c.at)


def test_the_index_grows_with_the_file_and_waits_for_a_torn_line(offline_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    index = CallIndex(run)
    assert index.calls(["new-job"]) == []
    new = CallRecord(
        job_id="new-job",
        role="chatbot",
        provider="p",
        model="m",
        account="a",
        latency_ms=1234.0,
        status="ok",
        usage=Usage(input_tokens=1500, output_tokens=20),
        cost_usd=0.0123,
        at=2e9,
    )
    line = msgspec.json.encode(new) + b"\n"
    with (run / "calls.jsonl").open("ab") as f:
        f.write(line[:30])  # a run mid-write
        f.flush()
        assert index.calls(["new-job"]) == []
        f.write(line[30:])
    assert index.calls(["new-job"]) == [new]


def test_the_section_shows_each_calls_tokens_cost_and_latency(offline_run, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    calls = [
        CallRecord(
            job_id="c1",
            role="user_agent",
            provider="offline",
            model="scripted-user",
            account="a",
            latency_ms=12.4,
            status="ok",
            usage=Usage(input_tokens=1200, output_tokens=30),
            at=1.0,
        ),
        CallRecord(
            job_id="j1",
            role="judge",
            provider="openai",
            model="<b>judge</b>",
            account="a",
            latency_ms=2500.0,
            status="error",
            attempts=3,
            usage=Usage(input_tokens=2000, output_tokens=100, cached_input_tokens=1024),
            cost_usd=0.0042,
            error="HTTP 503",
            at=2.0,
        ),
    ]
    (run / "calls.jsonl").write_bytes(b"".join(msgspec.json.encode(c) + b"\n" for c in calls))
    html = calls_html(
        [Job("c1", ""), Job("j1", "judge openai/<b>judge</b> #1")], CallIndex(run).calls(["c1", "j1"])
    )
    assert "<b>" not in html and "&lt;b&gt;judge&lt;/b&gt;" in html
    section = cells_text(html)
    assert "2 call(s), 3,330 tokens, $0.0042, 2.5 s waiting for models in all" in section
    assert "1 user-agent offline/scripted-user 1,200 30 $0 12 ms" in section
    assert "2 judge openai/<b>judge</b> #1 openai/<b>judge</b> 2,000 100 $0.0042 2.5 s" in section
    assert "1,024 cached; 3 attempts; failed: HTTP 503" in section
    assert "Total 3,200 130 $0.0042 2.5 s" in section
