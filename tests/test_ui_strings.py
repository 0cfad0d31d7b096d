"""A locale pack's strings.toml (issue 33 items 1 and 5): the words of the card, viewer and
review by key, English for a key the pack lacks, and `vera validate locale` naming a
missing key, a key vera does not know and a text that lost a field."""

from __future__ import annotations

import re

from vera.inputs import Strings, validate_locale
from vera.inputs._ui import check_strings, read_strings

from .conftest import ROOT

ZH = ROOT / "locales" / "zh-CN"


def test_the_zh_pack_translates_every_key_with_the_same_fields():
    assert check_strings(ZH / "strings.toml") == []


def test_validate_locale_names_a_missing_key_an_unknown_one_and_a_lost_field(tmp_path):
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "locale.toml").write_text(
        'format = "vera-locale/1"\ntag = "xx"\nversion = "1"\nlanguage = "xx"\n'
    )
    text = (ZH / "strings.toml").read_text()
    text = text.replace('results = "结果"\n', "").replace('save = "保存评分"', 'sav = "保存评分"')
    text = text.replace("评分人 {rater}", "评分人")
    (pack / "strings.toml").write_text(text)
    found = {i.message for i in validate_locale(pack)}
    assert "card.results: missing (the English text is shown)" in found
    assert "review.save: missing (the English text is shown)" in found
    assert any(m.startswith("review.sav: not a key vera knows") for m in found)
    assert any(
        m.startswith("review.progress: fields must be the English text's ({population}") for m in found
    )


def test_a_missing_key_falls_back_to_english():
    s = Strings({"card.results": "结果"})
    assert s("card.results") == "结果"
    assert s("card.overview") == "Overview"
    assert s.phrase("Chatbot") == "Chatbot"  # not translated by this pack
    assert s.phrase("offline/best-practice") == "offline/best-practice"


# The pack's rule for a number among Chinese characters: a space on each side ("界值 5 下").
_CRAMPED = re.compile(r"[\u4e00-\u9fff][0-9−]|[0-9][\u4e00-\u9fff]")


def test_the_zh_pack_sets_a_number_off_from_chinese_characters_by_spaces():
    own = read_strings(ZH / "strings.toml")
    assert [k for k, v in own.items() if _CRAMPED.search(v)] == []
    zh = Strings(own, lang="zh-CN")
    # The compare gate's lines put "0 以下" or "−5 分以上" inside a sentence: the
    # sentence must space it off as it does a number it holds itself.
    bounds = [
        (zh("cli.fixed_gate_below_zero"), zh("cli.fixed_gate_above_zero")),
        (zh("cli.fixed_gate_below", margin="5"), zh("cli.fixed_gate_above", margin="5")),
    ]
    for below, above in bounds:
        lines = [
            zh("cli.fixed_gate_failed", verdict="更差", code=4, below=below, rows="bot: 总分"),
            zh("cli.fixed_gate_not_worse", verdict="不更差", above=above),
            zh("cli.fixed_gate_why_intervals", below=below, above=above),
            zh(
                "cli.fixed_gate_intro",
                candidate="b",
                baseline="a",
                paired="角色",
                seeds="",
                alpha="0.05",
                below=below,
                above=above,
                low="2.5%",
                scores="",
            ),
        ]
        assert [line for line in lines if _CRAMPED.search(line)] == []
