"""A locale pack's strings.toml (issue 33 items 1 and 5): the words of the card, viewer and
review by key, English for a key the pack lacks, and `vera validate locale` naming a
missing key, a key vera does not know and a text that lost a field."""

from __future__ import annotations

from vera.inputs import Strings, validate_locale
from vera.inputs._ui import check_strings

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
