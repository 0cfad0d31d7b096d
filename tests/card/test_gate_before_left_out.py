"""A gate from before vera recorded the rows left out of its verdict: its card, page and
printout say that it predates left-out accounting, in English and zh-CN, and never show
it as a gate that left nothing out (tests/fixtures/gate_before_left_out: the real
folder, whose verdict left Confirms Risk out without a word)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from vera.cli._main import main
from vera.inputs import locale_strings, use_strings
from vera.report import GateLook, left_out_line, read_gate, read_sequence, sequence_page
from vera.report.card._sequence import sequential_card, sequential_text
from vera.stats import NOT_WORSE

from ..conftest import ROOT

OLD = ROOT / "tests" / "fixtures" / "gate_before_left_out"
SAYS = (
    "This gate predates left-out accounting: its looks do not record which rows, if any, were left "
    "out of the verdict for want of a baseline score."
)
SAYS_ZH = "此门控早于“未计入”记录：它的各次查看没有记下哪些维度（如有）因没有可比较的基线分数而未计入结论。"
NAMED = "Left out of the verdict"


@pytest.fixture
def old(tmp_path) -> Path:
    out = tmp_path / "gate"
    shutil.copytree(OLD, out, ignore=shutil.ignore_patterns("README.md"))
    return out


def test_vera_card_on_an_old_gate_says_it_predates_left_out_accounting(old):
    before = (old / "card.json").read_bytes()
    result = CliRunner().invoke(main, ["card", str(old)])
    assert result.exit_code == 0, result.output
    assert SAYS in " ".join(result.stdout.split())
    for page in ("card.md", "card.html"):
        text = " ".join((old / page).read_text().split())
        assert SAYS in text and NAMED not in text, page
    assert (old / "card.json").read_bytes() == before  # re-rendered, never rewritten


def test_the_old_gate_s_page_and_card_block_in_english_and_zh_cn(old):
    record, looks = read_gate(old), read_sequence(old)
    assert record is not None and looks
    page = sequence_page(record, looks)
    assert SAYS in page.splitlines() and NAMED not in page
    seq = sequential_card(old)
    assert seq is not None and seq.left_out_unrecorded is True and seq.left_out is msgspec.UNSET
    assert '"left_out_unrecorded":true' in msgspec.json.encode(seq).decode()
    with use_strings(locale_strings("zh-CN")):
        assert SAYS_ZH in sequence_page(record, looks).splitlines()
        assert sequential_text(seq).endswith(SAYS_ZH)


def test_a_look_says_what_it_records_and_a_current_one_with_none_left_out_says_nothing():
    bare = GateLook(wave=1, drawn=8, units=8, available=12, rows=[], verdict=NOT_WORSE)
    assert left_out_line(bare, str) == " " + SAYS
    # Every look since the edge rule records edge_rule; one with nothing left out is silent.
    assert left_out_line(msgspec.structs.replace(bare, edge_rule=True), str) == ""
    named = msgspec.structs.replace(bare, left_out={"Confirms Risk": "not rated in the baseline"})
    assert left_out_line(named, str).strip().startswith(NAMED)


def test_a_current_gate_s_card_keeps_its_bytes(tmp_path, old):
    # A look that records edge_rule (every look since, with or without rows left out)
    # adds no field to the card: cards of current gates keep their bytes.
    (line,) = (old / "sequence.jsonl").read_text().splitlines()
    look = json.loads(line) | {"edge_rule": True}
    (old / "sequence.jsonl").write_text(json.dumps(look) + "\n")
    seq = sequential_card(old)
    assert seq is not None and seq.left_out_unrecorded is msgspec.UNSET
    assert "left_out_unrecorded" not in msgspec.json.encode(seq).decode()
