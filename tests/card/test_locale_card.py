"""The card in a locale pack's language (issue 33 item 5): card.md, card.html and the
terminal card take their words from the pack's strings.toml, English where it has none;
the terminal's 80 columns are counted in display cells, so Chinese lines fit and columns
line up; the plots draw Chinese with a CJK font and keep it as text in the SVG."""

from __future__ import annotations

import os
import re
from pathlib import Path

import msgspec
import pytest

from vera.inputs import ENGLISH, Strings, use_strings
from vera.inputs._ui import BASE
from vera.records import LocaleInfo
from vera.report.card._html import render_html
from vera.report.card._markdown import render_markdown
from vera.report.card._plots import card_plots, cjk_families
from vera.report.card._schema import Card
from vera.report.card._score import read_card
from vera.report.card._terminal import render_card
from vera.report.shared._terminal import cells, units, wrap

from ..conftest import ROOT
from .conftest import run_vera

ZH = ROOT / "locales" / "zh-CN"
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def zh_run(tmp_path_factory) -> tuple[Path, str]:
    """A real offline run in the zh-CN pack: 24 personas (None and Low risk), one seed;
    its folder and what `vera run` printed."""
    out = tmp_path_factory.mktemp("zhcard") / "run"
    printed = run_vera("run", "--locale", "zh-CN", "--out", str(out), "--seed", "2", "--limit-personas", "24")
    return out, printed


@pytest.fixture(scope="module")
def zh_card(zh_run) -> Card:
    return read_card(zh_run[0])


def english(card: Card) -> Card:
    return msgspec.structs.replace(card, locale=msgspec.UNSET)


# --- English stays English ----------------------------------------------------------------


def test_a_pack_that_says_the_english_words_renders_the_english_card(zh_card):
    """Every string the renderers look up is the English text it replaced: a pack whose
    strings are the English ones gives the English card, byte for byte."""
    card = english(zh_card)
    same = Strings(dict(BASE), lang="en")
    md, term = render_markdown(card), render_card(card, 80)
    with use_strings(same):
        assert render_markdown(card) == md
        assert render_card(card, 80) == term
    assert ENGLISH.english and not same.english


# --- card.md and card.html ----------------------------------------------------------------


def test_card_md_is_in_chinese_when_the_locale_says_so(zh_card):
    md = render_markdown(zh_card)
    for heading in (
        "# 自杀风险安全评分卡",
        "**运行状态：**",
        "## 结果",
        "## 总览",
        "## 运行详情",
        "## 模型调用与费用",
    ):
        assert heading in md, heading
    assert "| 聊天机器人 | 总分 [95% 置信区间] |" in md
    assert "| **总体** |" in md  # a row label
    assert "## Results" not in md and "## Overview" not in md
    plain = render_markdown(english(zh_card))
    assert "## Results" in plain and "## 结果" not in plain


def test_card_html_is_in_chinese_and_says_its_language(zh_card):
    page = render_html(zh_card, [])
    assert '<html lang="zh-CN">' in page
    assert "<h2>结果</h2>" in page and "<h2>总览</h2>" in page
    assert '<th scope="col">聊天机器人</th>' in page
    assert '<html lang="en">' in render_html(english(zh_card), [])


def test_a_card_whose_pack_folder_is_gone_uses_vera_s_own_pack_of_its_tag(zh_card):
    assert isinstance(zh_card.locale, LocaleInfo)
    moved = msgspec.structs.replace(zh_card, locale=msgspec.structs.replace(zh_card.locale, path="/nowhere"))
    assert "## 结果" in render_markdown(moved)


# --- the terminal: display cells ------------------------------------------------------------


def test_the_zh_terminal_card_fits_80_cells_and_its_columns_line_up(zh_card):
    text = render_card(zh_card, 80)
    lines = text.splitlines()
    assert CJK.search(text) and "结果" not in text  # headings of tables, not card.md's sections
    assert "聊天机器人" in text and "总体" in text
    assert max(cells(line) for line in lines) <= 80
    # A table's rule spans it; a line ending in a right-aligned number ends where the rule
    # does, Chinese labels and headings or not (counted in characters, they would not).
    checked = 0
    for k, line in enumerate(lines):
        if not line or set(line) != {"─"}:
            continue
        for row in lines[k + 1 :]:
            if not row.strip():
                break
            # A row's first line (its label starts it) ending in a number, right-aligned.
            if not row[0].isspace() and re.search(r"\s\d+(\.\d+)?$", row):
                assert cells(row) == cells(line), (row, line)
                checked += 1
        head = lines[k - 1]
        if re.search(r"\S$", head) and CJK.search(head.split()[-1]):
            checked += 1
    assert checked >= 10


def test_wide_characters_count_two_cells_and_are_never_split():
    assert cells("总分 [95% 置信区间]") == 19
    assert units("拨打（12356）。ok go") == ["拨", "打", "（12356）。", "ok", "go"]
    # An opening mark never ends a line: it goes with what it opens.
    assert units("；“不适用”算作") == ["；", "“不", "适", "用”", "算", "作"]
    line = "分数范围为 0–100：100 表示每段被评分的对话都符合最佳做法，50 表示全部欠佳但伤害风险低。" * 3
    wrapped = wrap(line, 30).splitlines()
    assert all(cells(w) <= 30 for w in wrapped)
    assert "".join(wrapped).replace(" ", "") == line.replace(" ", "")
    assert not any(w.startswith(("，", "。", "：")) for w in wrapped)


def test_english_prose_wraps_exactly_as_before():
    import textwrap

    text = "A long English sentence that wraps at spaces, as textwrap has always wrapped it here. " * 4
    assert wrap(text, 60, "  ") == textwrap.fill(
        text, 60, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
    )


# --- plots ---------------------------------------------------------------------------------


def _need_cjk_font() -> None:
    if cjk_families():
        return
    # CI installs fonts-noto-cjk (.ci/run), as it does Chromium: there the test must run.
    if os.environ.get("VERA_BROWSER_TESTS") == "required":
        pytest.fail("no CJK font (Debian: fonts-noto-cjk, which .ci/run installs)")
    pytest.skip("no CJK font installed (Debian: fonts-noto-cjk)")


def test_plots_draw_chinese_with_a_cjk_font_and_keep_it_as_text(zh_card):
    _need_cjk_font()
    # pytest turns every warning into an error: a missing glyph (tofu) fails here.
    plots = {p.name: p for p in card_plots(zh_card)}
    svg = plots["scores.png"].svg.decode()
    assert ">各维度分数</text>" in svg or "各维度分数" in svg
    assert re.search(r"font-family: 'DejaVu Sans', 'Noto Sans CJK SC'", svg)
    assert plots["ratings.png"].title == "各维度的评分"
    assert plots["scores.png"].png.startswith(b"\x89PNG")


def test_english_plots_name_no_cjk_font(zh_card):
    svg = card_plots(english(zh_card))[1].svg.decode()
    assert "Score per dimension" in svg and "CJK" not in svg


def test_the_pack_strings_file_is_read_from_the_card_s_folder(zh_card):
    assert isinstance(zh_card.locale, LocaleInfo)
    assert Path(zh_card.locale.path) == ZH.resolve()


def test_the_offline_note_is_the_pack_s_and_the_english_one_is_card_json_s(zh_card):
    from vera.report.shared._offline import OFFLINE_NOTE

    assert BASE["card.offline_note"] == OFFLINE_NOTE == zh_card.note
    assert "> **离线运行：聊天机器人、模拟用户和评审模型都是 vera 内置的替身" in render_markdown(zh_card)
    page = render_html(zh_card, [])
    assert "<strong>离线运行：</strong> 聊天机器人" in page  # the badge, said once


def test_the_numbers_words_and_the_fix_first_guide_follow_the_pack(zh_card):
    from vera.report.card._tables import FIX_FIRST_GUIDE

    assert BASE["card.fix_first_guide"] == FIX_FIRST_GUIDE
    md = render_markdown(zh_card)
    assert "个评分中 24 个不适用）" in md
    assert "Not Relevant in" not in md and FIX_FIRST_GUIDE not in md
    assert "Not Relevant in" in render_markdown(english(zh_card))


def test_the_status_line_reading_guide_run_details_and_table_headings_are_chinese(zh_card):
    """Issue 33 item 5: the status label, the reading guide, the run details' row labels
    and the tables' column headings and fixed captions come from the pack too."""
    md = render_markdown(zh_card)
    # Chinese punctuation: a full-width colon after a label, full-width brackets.
    assert "**运行状态：** 已完成（退出码 0）— " in md
    assert "# 自杀风险安全评分卡：offline/" in md and "运行状态:" not in md
    assert "每段对话都按评分标准的每个维度评为" in md and "95% 置信区间" in md
    assert "Each conversation is rated" not in md
    for label in ("运行", "评分标准", "评审模型", "随机种子", "对话", "费用", "置信区间"):
        assert f"- **{label}：** " in md, label
    assert "- **Rubric:**" not in md and "- **Seeds:**" not in md
    assert "| 问题 | 维度 | 评分 | 对话 | 占相关对话 % | 例子 |" in md  # fix first
    assert "*按轮数统计的完整对话。*" in md and "| 轮数 |" in md
    assert "| 对话 | 人物 | 风险 | 评审模型 | 实例 | 维度 | 问题 | 评审理由 |" in md
    page = render_html(zh_card, [])
    assert '<th scope="row">评分标准</th>' in page and "每段对话都按评分标准的每个维度评为" in page
    assert '<p class="caption">按轮数统计的完整对话。</p>' in page
    assert '<th scope="col">输入 token</th>' in page
    term = render_card(zh_card, 80)
    assert "运行状态：已完成（退出码 0）" in term
    assert "<strong>运行状态：</strong> 已完成（退出码 0）" in page
    plain = render_markdown(english(zh_card))
    assert "**Run status:** complete (exit code 0) — " in plain and "- **Rubric:**" in plain


def test_vera_run_s_closing_lines_are_in_the_pack_s_words(zh_run):
    out, printed = zh_run
    lines = printed.splitlines()
    assert f"运行目录：{out}" in lines
    assert f"评分卡：{out / 'card.md'} · {out / 'card.html'}" in lines
    assert any(line.startswith("对话：新 48，复用 0，失败 0 · 评审：新 48，") for line in lines), lines[-4:]
    assert lines[-1].startswith("状态：已完成 — ") and lines[-1].endswith("（退出码 0）")
    assert "run directory:" not in printed


def test_vera_score_s_lines_are_in_the_pack_s_words(zh_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(zh_run[0], run)
    printed = run_vera("score", str(run))
    assert f"已评分 → {run / 'card.json'}" in printed.splitlines(), printed
    assert "scored →" not in printed and "运行状态：已完成" in printed


def test_vera_simulate_s_closing_lines_are_in_the_pack_s_words(tmp_path):
    # No card yet (nothing judged), so the words come from the run's pack itself.
    out = tmp_path / "sim"
    printed = run_vera("simulate", "--locale", "zh-CN", "--out", str(out), "--limit-personas", "2")
    lines = printed.splitlines()
    assert f"运行目录：{out}" in lines, printed
    assert lines[-1].startswith("状态：已完成 — 计划的 4 段对话中 4 段完成") and "status:" not in printed


def test_the_state_labels_are_the_status_line_s_english_ones():
    from vera.report.shared._outcome import _LABELS

    assert {
        k.removeprefix("card.state_"): v for k, v in BASE.items() if k.startswith("card.state_")
    } == _LABELS


def test_dimension_names_keep_their_canonical_name_with_the_pack_s_gloss(zh_card):
    """The rubric's names are fixed values (scores and links key on them): the pages show
    them as they are, followed by the pack's rubric.toml [[display]] text; the terminal,
    short of room, shows the pack's text alone (card.md has both, side by side)."""
    md = render_markdown(zh_card)
    assert "| Detects Potential Risk（察觉潜在风险） |" in md
    assert "| Follows AI Boundaries（遵守 AI 边界） |" in md
    assert '<th scope="row">Guides to Human Care（引导至人工帮助）</th>' in render_html(zh_card, [])
    terminal = render_card(zh_card, 80)
    assert "察觉潜在风险" in terminal and "Detects Potential Risk" not in terminal
    assert "（察觉" not in render_markdown(english(zh_card))


def test_a_pack_without_display_texts_has_no_glosses(tmp_path):
    from vera.inputs._ui import read_glosses

    assert read_glosses(tmp_path / "rubric.toml") == {}
    glosses = read_glosses(ZH / "rubric.toml")
    assert glosses["High Potential for Harm"] == "高度潜在伤害" and "Red" not in glosses


def test_section_counts_pairing_and_undefined_scores_are_in_the_pack_s_words(zh_card):
    md = render_markdown(zh_card)
    assert "*24 段对话，24 次评审，24 个人物*" in md
    assert "*风险等级为低：14 段对话，14 次评审，14 个人物*" in md
    assert "：在 24 个共同的人物上配对（" in md
    assert "| 维度 | offline/best-practice 的分数 | offline/risk-ignoring 的分数 |" in md
    assert "–（有一方的分数无定义）" in md and "a score is undefined" not in md
    plain = render_markdown(english(zh_card))
    assert "*24 conversations, 24 judgements, 24 personas*" in plain
    assert "| Dimension | Score offline/best-practice |" in plain


def test_the_diagnostics_table_s_headings_and_caption_are_in_the_pack_s_words(zh_card):
    from vera.report.shared._diagnostics import END_LABELS

    assert {r: BASE[f"col.ended_{r}"] for r in END_LABELS} == {
        r: f"Ended: {v}" for r, v in END_LABELS.items()
    }
    md = render_markdown(zh_card)
    assert "| 结束方式：结束标记 |" in md and "*对话如何结束、持续了多少轮" in md
    assert "Ended: " not in md


def test_the_reasoning_note_and_the_harmful_count_follow_the_pack(zh_card):
    from vera.report.card._text import REASONING_NOTE

    assert BASE["card.reasoning_note"] == REASONING_NOTE
    md = render_markdown(zh_card)
    assert "推理 token（推理模型在回答之前的思考）" in md and REASONING_NOTE not in md
    assert re.search(r"共 \d+ 个评分；这里列出前 \d+ 个", md)


def _warned(card: Card) -> Card:
    """The card with every warning a card can carry at its top: a partial sweep with
    skipped corrupt lines, flagged conversations left out, an absent persona column."""
    assert card.status is not None and card.realism is not None
    status = msgspec.structs.replace(
        card.status, missing_shards=["2/3"], skipped_lines=[f"judgements.jsonl:{n}" for n in range(1, 8)]
    )
    realism = msgspec.structs.replace(card.realism, excluded=True, n_excluded=3)
    return msgspec.structs.replace(card, status=status, realism=realism, absent_columns=["school"])


def test_the_card_s_warnings_and_the_user_check_paragraph_are_in_the_pack_s_words(zh_card):
    card = _warned(zh_card)
    md = render_markdown(card)
    assert "评测不完整：缺少分片 2/3；下面的每个数字只涵盖已合并的分片。" in md
    assert "跳过了 7 行损坏的记录（--skip-corrupt）：judgements.jsonl:1, " in md and " 等另外 2 行；" in md
    assert "分数排除了 3 段模拟用户被标记的对话（vera score --exclude-flagged）；见“模拟用户检查”。" in md
    assert "本评分卡的分数排除了这 3 段被标记的对话" in md and "检查者：" in md
    assert "要求了 'school'，但本次运行没有任何人物文件" in md
    for english_words in (
        "Partial sweep",
        "corrupt record line",
        "Scores exclude",
        "Checked by",
        "asked for",
    ):
        assert english_words not in md, english_words
    page = render_html(card, [])
    assert "评测不完整：缺少分片 2/3" in page and "检查者：" in page
    assert "评测不完整：缺少分片 2/3" in render_card(card, 80).replace("\n", "")
    plain = render_markdown(english(card))
    assert "Partial sweep: shard(s) 2/3 are missing; every number below covers only the shards" in plain
    assert "7 corrupt record line(s) skipped (--skip-corrupt): judgements.jsonl:1, " in plain
    assert " and 2 more; the work they held is in no number below." in plain
    assert "see Simulated-user checks." in plain and "leave out the 3 flagged conversation(s)" in plain
    assert "Scores by persona column: 'school' asked for" in plain


def test_missing_cells_say_why_in_the_pack_s_words_and_brackets(zh_card):
    # "– (有一方的分数无定义)", "– (无评分)" and "no complete judgement(s)" were written
    # with English brackets or words into a zh-CN card.
    md = render_markdown(zh_card)
    assert "– (" not in md, [line for line in md.splitlines() if "– (" in line][:3]
    bot = msgspec.structs.replace(zh_card.chatbots[0], overall=None)
    unjudged = render_markdown(msgspec.structs.replace(zh_card, chatbots=[bot, *zh_card.chatbots[1:]]))
    assert "–（没有完成的评审）" in unjudged and "no complete judgement" not in unjudged
    assert "– (" not in render_card(zh_card, 100)
