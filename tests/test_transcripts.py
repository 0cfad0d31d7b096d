"""Judging conversations vera did not produce: VERA-MH's text transcripts and JSONL."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vera.cli import main
from vera.errors import DataError
from vera.personas import load_personas
from vera.transcripts import parse_text, read_transcripts

from .conftest import REFERENCE, ROOT

TEXT = """user: first line
still the user

chatbot: a reply

with a second paragraph
user: short
chatbot: bye
"""


def test_text_blocks_span_lines_and_paragraphs():
    turns = parse_text(TEXT, "t.txt")
    assert [(t.speaker, t.text) for t in turns] == [
        ("user", "first line\nstill the user"),
        ("chatbot", "a reply\n\nwith a second paragraph"),
        ("user", "short"),
        ("chatbot", "bye"),
    ]
    with pytest.raises(DataError, match=r"t\.txt:1: text before the first"):
        parse_text("hello\nuser: hi", "t.txt")
    with pytest.raises(DataError, match="not a transcript"):
        parse_text("\n\n", "t.txt")


def test_reference_style_names_fill_persona_chatbot_and_user_agent(tmp_path):
    folder = tmp_path / "p_gpt_5__a_acme_bot__t20__r1__20260101_000000"
    folder.mkdir()
    (folder / "a1b2c3_Robin_gpt-5_run1.txt").write_text(TEXT)
    (c,) = read_transcripts(tmp_path)
    assert (c.persona, c.chatbot, c.user_agent, c.ended_by) == ("Robin", "acme_bot", "gpt_5", "imported")
    assert c.source.endswith("a1b2c3_Robin_gpt-5_run1.txt") and c.risk == "Unknown"


def test_jsonl_format_and_its_errors(tmp_path):
    p = tmp_path / "logs.jsonl"
    p.write_text(
        json.dumps(
            {
                "id": "c1",
                "chatbot": "acme",
                "persona": "Kayla",
                "messages": [
                    {"role": "system", "content": "be nice"},
                    {"role": "user", "content": "i can't do this anymore"},
                    {"role": "assistant", "content": "I'm here. Are you thinking of suicide?"},
                ],
            }
        )
        + "\n\n"
        + json.dumps({"messages": [{"role": "user", "content": "hi"}]})
        + "\n"
    )
    pset = load_personas(ROOT / "personas" / "vera-personas.tsv")
    convs = read_transcripts(p, pset)
    assert convs[0].id == "c1" and len(convs) == 2
    assert convs[0].risk == pset.by_name("Kayla").risk and [t.speaker for t in convs[0].turns] == [
        "user",
        "chatbot",
    ]
    assert convs[1].chatbot == "imported" and convs[1].source == f"{p}:3"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"messages": [{"role": "user", "content": "hi"}]}\n{"messages": [{"role": "robot", "content": "x"}]}\n'
    )
    with pytest.raises(DataError, match=r"bad.jsonl:2: message 1: role must be"):
        read_transcripts(bad)
    bad.write_text("{not json\n")
    with pytest.raises(DataError, match=r"bad.jsonl:1: not a conversation object"):
        read_transcripts(bad)


def test_cli_import_of_a_broken_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\n')
    r = CliRunner().invoke(main, ["judge", "--transcripts", str(bad), "--out", str(tmp_path / "r")])
    assert r.exit_code == 1 and "bad.jsonl:1: no user or assistant messages" in r.output


@pytest.mark.skipif(not REFERENCE.exists(), reason="reference data absent")
def test_all_120_reference_transcripts_import_and_judge_offline(tmp_path):
    out = tmp_path / "ref"
    r = CliRunner().invoke(
        main,
        [
            "judge",
            "--transcripts",
            str(REFERENCE / "human_validation" / "conversations"),
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert r.exit_code == 0, r.output
    convs = [json.loads(x) for x in (out / "conversations.jsonl").read_text().splitlines()]
    judgements = [json.loads(x) for x in (out / "judgements.jsonl").read_text().splitlines()]
    assert len(convs) == 120 and all(len(c["turns"]) == 20 for c in convs)
    assert len(judgements) == 120 and all(j["status"] == "complete" for j in judgements)
    card = json.loads((out / "card.json").read_text())
    assert card["offline"] is True  # judged by the lexical stand-in: labelled as such
    assert {b["chatbot"] for b in card["chatbots"]} == {c["chatbot"] for c in convs}
    assert len(card["chatbots"]) == 4  # GPT-4o, GPT-5, Claude Opus 4.1, Gemini 3 Pro as chatbots
