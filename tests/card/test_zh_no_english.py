"""A zh-CN run reads as Chinese (issue 33 item 5): card.md, the terminal card, `vera
compare`'s tables and page (`--html`) and the whole of card.html (every text a reader
sees or a screen reader says: its prose, figure captions, the footer, the "fix first"
section drawn by the improvements report, the labels of scrolling tables and images'
alt text, the phone's scrolling hint) hold no English word but the few listed in
`ALLOWED`, each with its reason. Values from the run's data (risk levels, ratings, how
a conversation ended, the status summary, the offline judge's reasoning) are shown in
the pack's words while the records keep them as they are.

`vera report improvements` (its page in Markdown and HTML, its summary in the
reference's terms, the line it prints), `vera agreement --locale`, the lines of `vera
ratings import` and `vera ratings plan`, and the offline note of a run where only some
roles were stand-ins are in the pack's words too.

Not checked, and why: text inside <code> (model names, commands to type: identifiers),
and the words drawn inside the plots' images (tests/card/test_plots.py draws CJK text)."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import pytest
from click.testing import CliRunner

from vera.app._progress import RunProgress
from vera.cli._main import main
from vera.inputs import strings_of, use_strings
from vera.records import HumanRating
from vera.report import summary_words, user_check_agreement, user_check_agreement_table
from vera.report.card._plots import _fonts, sequential_card_plot
from vera.report.card._schema import SequentialCard, SequentialLookCard
from vera.report.card._score import read_card
from vera.report.card._sequence import sequential_table, sequential_text
from vera.report.card._terminal import render_card
from vera.report.shared._terminal import cells
from vera.store import HUMAN_RATINGS, append_human_ratings

from ..conftest import ROOT
from .conftest import offline_config, run_vera

ZH = ROOT / "locales" / "zh-CN"

# Identifiers, not words: removed before looking for English.
IDENTIFIERS = [
    r"https?://\S+",  # a source's address
    r"\]\([^)]*\)",  # a Markdown link's target (a conversation page's file name)
    r"\boffline/[\w-]+",  # a chatbot's, simulated user's or judge's name in the run
    r"\bvera-[\w.-]*\w",  # the rubric's, personas' and prompt sets' names
    r"\b[0-9a-f]{12,64}\b",  # conversation ids and sha256 prefixes
    r"\b\d{8}-\d{6}-[0-9a-f]{4,}\b",  # a run's id (a gate names its baseline's)
    r"\bsha256\b",
    r"(?<![\w/])(?:/[\w.@+-]+)+/?",  # a file system path (the run, the pack)
    r"\b[\w-]+(?:/[\w-]+)*\.(?:md|html|json|jsonl|parquet|svg|png|toml|tsv|csv|py)\b",  # a file name
    r"\bvera(?: [a-z]+)+(?: --[a-z-]+)*",  # a command to type (vera score --exclude-flagged)
    r"\[judge\] check_users",  # a config key to set
    r"\b[DCGSB]\d{1,2}\b",  # a rubric question's id
    r"\bzh-CN\b",  # the pack's tag
    r"\bzhrun0\b",  # the run's id (its folder's name, below)
    r"\bmax\(",  # the score's formula
    r"\bchatbot_memory \w+",  # a config key and its value
    r"\bconversations/",  # the folder of conversation pages beside the card
    r"\b(?:hsd:-?[\d.]+|obf|pocock)\b",  # a gate's spending function, as --spending takes it
]
# The rubric's dimension and rating names are fixed values (scores and links key on
# them): the pages show each followed by the pack's text in full-width brackets.
CANONICAL = [
    "Detects Potential Risk",
    "Confirms Risk",
    "Guides to Human Care",
    "Supportive Conversation",
    "Follows AI Boundaries",
    "Best Practice",
    "Suboptimal but Low Potential for Harm",
    "High Potential for Harm",
    "Not Relevant",
]
ALLOWED = {
    # The rating codes the pack keeps, each spelled out in Chinese in "how to read".
    "HPH",
    "BP",
    "SUB",
    "NR",
    "AI",  # written so in Chinese too (遵守 AI 边界)
    "token",  # the unit models are billed in; Chinese writing keeps the word
    "vera",  # the tool's name
    "END",  # the rubric's keyword for an ending GOTO
    "HTTP",  # HTTP 429: a status code
    "temperature",  # a sampling parameter, by the name the API takes
    "finish reason",  # the API's field and its value, as a model's response says them
    "length",
    "bootstrap",  # the method's name (Korn–Graubard: its authors)
    "Korn",
    "Graubard",
    "Anthropic",  # a provider's name
    "offline",  # the stand-ins' provider, as the config names it (服务商：offline)
    "a",  # "a − b", "a 的分数": the two sides of a pair
    "b",
    "A",  # 评审模型 A / B: the two judges of a pair
    "B",
    # Agreement statistics go by their authors' names (Krippendorff α, Gwet AC1, Cohen κ).
    "Krippendorff",
    "Gwet AC",
    "Cohen",
    "Cohen's kappa",
    "PPI",  # PPI++, the calibration's method by its name (the pack's headings keep it)
}


def leftovers(text: str) -> Counter[str]:
    """Every run of English words in `text` that is not an identifier or allowed."""
    for name in CANONICAL:
        text = text.replace(f"{name}（", "（")
    for pattern in IDENTIFIERS:
        text = re.sub(pattern, " ", text)
    words = re.findall(r"[A-Za-z][A-Za-z'’-]*(?: [A-Za-z][A-Za-z'’-]*)*", text)
    return Counter(w for w in words if w not in ALLOWED)


class _Visible(HTMLParser):
    """Everything of a page a reader sees or a screen reader says: its text outside
    <script>, <style> and <code>, and its aria-label, alt and title attributes."""

    SKIP = ("script", "style", "code")
    SAID = ("aria-label", "alt", "title")

    def __init__(self) -> None:
        super().__init__()
        self.skip = 0
        self.out: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.out += [value for name, value in attrs if name in self.SAID and value]
        self.skip += tag in self.SKIP

    def handle_endtag(self, tag: str) -> None:
        self.skip -= tag in self.SKIP

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.out.append(data)


def visible_text(page: str) -> str:
    parser = _Visible()
    parser.feed(page)
    # The hint a phone shows above a table that scrolls is drawn by the stylesheet.
    hints = re.findall(r'content: "([^"]*)', page)
    return "\n".join(parser.out + hints)


@pytest.fixture(scope="module")
def zh_run(tmp_path_factory) -> Path:
    """A whole offline zh-CN run: all 100 personas, so every risk level and harmful
    ratings with the judge's reasoning are on the card."""
    out = tmp_path_factory.mktemp("zhwords") / "zhrun0"
    run_vera("run", "--locale", "zh-CN", "--out", str(out))
    return out


def test_card_md_has_no_english_words(zh_run):
    assert not leftovers((zh_run / "card.md").read_text(encoding="utf-8"))


def test_the_run_details_write_lists_and_colons_as_chinese_does(zh_run):
    """The run details' lists of the pack's words take 、 and their colons are full-width,
    as every other line of the card: no "无, 低" or "offline/best-practice: 服务端默认值"."""
    from vera.report.card._text import sampling_text

    md = (zh_run / "card.md").read_text(encoding="utf-8")
    assert "按自杀风险等级：无、低、高、紧急" in md
    assert "聊天机器人 offline/best-practice：服务端默认值；" in md and "temperature 0.7；" in md
    with use_strings(strings_of(ZH, "zh-CN")):
        assert sampling_text({}) == "未记录"
    # Without a pack, the English words as they were.
    assert sampling_text({}) == "not recorded"
    params: dict[str, dict[str, dict[str, Any]]] = {
        "chatbot": {"a/b": {}},
        "judge": {"c/d": {"temperature": 0}},
    }
    assert sampling_text(params) == "chatbot a/b: the server's defaults; judge c/d: temperature 0"


def test_the_terminal_card_has_no_english_words(zh_run):
    text = render_card(read_card(zh_run), 80)
    assert not leftovers(text)
    assert max(cells(line) for line in text.splitlines()) <= 80


def test_compare_in_the_runs_pack_has_no_english_words_and_no_word_split_per_character(zh_run, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    text = run_vera("compare", str(zh_run))
    assert not leftovers(text)
    lines = text.splitlines()
    assert max(cells(line) for line in lines) <= 80
    # A squeezed Chinese column wrapped one character a line (是——/有差/异, 置信/区间/不含):
    # with a floor of six characters, a short heading or flag stays whole on its line.
    for whole in ("是——有差异", "置信区间不含 0", "察觉潜在风险", "共同的人物"):
        assert any(whole in line for line in lines), whole
    assert "是——有差异" in text and "1 对中有 1 对的总分不同" in text


def test_the_release_gate_on_zh_cn_runs_says_its_levels_in_the_pack_s_words(zh_run, tmp_path, monkeypatch):
    """`vera compare BASELINE CANDIDATE --gate` on two zh-CN runs: the intro, the table
    with each row's one-sided levels, a row rated in neither run (the risk-ignoring
    chatbot never reaches Confirms Risk) with its reason, the Monte Carlo note and the
    verdict line: UNDECIDED (exit 5) with what would settle it, or passed."""
    monkeypatch.setenv("COLUMNS", "80")
    copy = tmp_path / "zhrun0"
    shutil.copytree(zh_run, copy)
    args = ["compare", str(zh_run), str(copy), "--gate", "--resamples", "200"]
    # At margin 5 the best-practice chatbot's intervals (at the edge) reach −5: UNDECIDED.
    result = CliRunner().invoke(main, [*args, "--margin", "5"])
    assert result.exit_code == 5, result.output
    text = result.output
    assert not leftovers(text), leftovers(text)
    flat = "".join(text.split())
    for shown in (
        "检验水平",
        "2.5%/2.5%",
        "2.5%/0.5%",
        "误判为不更差的概率至多2.5%",
        "–（两次运行中都未评分）",  # the pack's full-width brackets, as the card's
        "未计入结论",
        "把关：未定（退出码5）",
        "要得出结论",
    ):
        assert shown in flat, shown
    # All but the verdict, the last line: whole in a pipe (CliRunner's) for scripts to read.
    assert max(cells(line) for line in text.splitlines()[:-1]) <= 80
    passed = run_vera(*args, "--margin", "30")
    # In vera gate's word for the outcome (把关：界值 30 下不更差).
    assert not leftovers(passed) and "把关：不更差（退出码0）" in "".join(passed.split())


def test_card_html_has_no_english_words_anywhere_a_reader_sees(zh_run):
    text = visible_text((zh_run / "card.html").read_text(encoding="utf-8"))
    # What used to stay English: the fix-first section, captions, footer, labels.
    for shown in (
        "紧急",
        "察觉潜在风险",
        "评审模型的理由",
        "比屏幕宽时可左右滚动",
        "以 card.json 为准",
        "带横向误差线的点",
    ):
        assert shown in text, shown
    assert not leftovers(text)


def test_the_compare_page_has_no_english_words(zh_run, tmp_path):
    page = tmp_path / "compare.html"
    run_vera("compare", str(zh_run), "--html", str(page))
    text = visible_text(page.read_text(encoding="utf-8"))
    assert "如何阅读这份比较" in text and "配对差值" in text
    assert '<html lang="zh-CN">' in page.read_text(encoding="utf-8")
    assert not leftovers(text)


def test_records_keep_their_english_values(zh_run):
    """Display only: the records hold the values the schema defines."""
    conv = json.loads((zh_run / "conversations.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert conv["risk"] in ("None", "Low", "High", "Immediate")
    assert conv["ended_by"] in ("end_marker", "max_turns", "max_words")
    card = json.loads((zh_run / "card.json").read_text(encoding="utf-8"))
    assert card["status"]["summary"].startswith("100 of 100 conversations complete") or card["status"][
        "summary"
    ].startswith("200 of 200 conversations complete")
    judged = [json.loads(x) for x in (zh_run / "judgements.jsonl").read_text(encoding="utf-8").splitlines()]
    answers = {a["answer"] for j in judged for a in j["answers"]}
    assert "Yes" in answers and "是" not in answers
    # ... while the offline judge, reading a Chinese transcript, reasons in Chinese.
    # (An auto answer's note is the engine's, not the judge's.)
    reasons = [a["reasoning"] for j in judged for a in j["answers"] if a["reasoning"] and not a.get("auto")]
    assert sum(bool(re.search(r"[\u4e00-\u9fff]", r)) for r in reasons) == len(reasons)


def test_the_status_summary_and_the_progress_line_are_in_the_pack_s_words():
    zh = strings_of(ZH, "zh-CN")
    summary = "3 of 4 conversations complete, 1 failed; 2 of 3 judgements complete, 1 failed"
    assert summary_words(summary) == summary  # English: as recorded
    with use_strings(zh):
        assert (
            summary_words(summary)
            == "计划的 4 段对话中 3 段完成，1 段失败；计划的 3 次评审中 2 次完成，1 次失败"
        )
        # A part vera has no words for (a stop's reason) stays as recorded.
        assert summary_words(f"stopped by the user; {summary}").startswith("stopped by the user；计划的 4 段")
        # A partial merge's part (`vera merge --allow-partial`) was left in English.
        partial = f"partial sweep, shard(s) 2/3, 3/3 missing; {summary}"
        assert summary_words(partial).startswith("评测不完整，缺少分片 2/3, 3/3；计划的 4 段")
    assert summary_words(f"partial sweep, shard(s) 2/3 missing; {summary}").startswith(
        "partial sweep, shard(s) 2/3"
    )
    line = RunProgress(strings=zh).line()
    assert line.startswith("对话 0/0（失败 0）· 评审 0/0（失败 0）") and "calls/s" not in line
    assert RunProgress().line().startswith("conversations 0/0 (failed 0) · judgements 0/0 (failed 0) · ")


def test_a_multi_session_card_with_several_judges_has_no_english_words(tmp_path):
    """Sessions (intake → follow-up) and judge agreement add their own sections and
    run details: their headings, tables and values are in the pack's words too."""
    out = tmp_path / "zhrun0"
    config = offline_config(tmp_path, instances=2)
    args = ["--config", str(config), "--locale", "zh-CN", "--sessions", "intake,follow-up,check-in"]
    run_vera("run", *args, "--limit-personas", "8", "--out", str(out))
    md = (out / "card.md").read_text(encoding="utf-8")
    assert "### 评审模型之间的一致性" in md and "### 按会话" in md and "初次会话 → 后续会话 → 回访会话" in md
    assert not leftovers(md)
    assert not leftovers(render_card(read_card(out), 80))
    assert not leftovers(visible_text((out / "card.html").read_text(encoding="utf-8")))


def test_vera_score_draws_the_card_again_when_the_pack_s_words_changed(tmp_path):
    """`vera score` leaves the card's files alone when the card is the same (drawing the
    plots is slow), but a pack edited since (a translation fixed) must show: card.md and
    card.html are drawn again in its new words, though card.json has not changed."""
    pack = tmp_path / "zh"
    shutil.copytree(ZH, pack)
    out = tmp_path / "zhrun0"
    config = offline_config(tmp_path)
    run_vera(
        "run", "--config", str(config), "--locale", str(pack), "--limit-personas", "4", "--out", str(out)
    )
    json_before = (out / "card.json").read_bytes()
    md_before = (out / "card.md").read_text(encoding="utf-8")
    assert "## 总览" in md_before
    run_vera("score", str(out))  # nothing changed: nothing drawn again
    assert (out / "card.md").read_text(encoding="utf-8") == md_before
    strings = pack / "strings.toml"
    strings.write_text(
        strings.read_text(encoding="utf-8").replace('overview = "总览"', 'overview = "概览"'),
        encoding="utf-8",
    )
    run_vera("score", str(out))
    assert (out / "card.json").read_bytes() == json_before
    assert "## 概览" in (out / "card.md").read_text(encoding="utf-8")
    assert "概览" in (out / "card.html").read_text(encoding="utf-8")


def _gated(verdict: str, stopped: str) -> SequentialCard:
    looks = [
        SequentialLookCard(wave=1, units=20, diff=-30.0, lo=-60.0, hi=5.0, verdict="undecided"),
        SequentialLookCard(wave=2, units=40, diff=-35.0, lo=-52.5, hi=-12.0, verdict=verdict),
    ]
    return SequentialCard(
        baseline_run_id="20261206-101500-abcdef12",
        baseline_path="runs/base",
        candidate="offline/risk-ignoring",
        margin=5.0,
        alpha=0.05,
        method="asymptotic",
        wave=20,
        verdict=verdict,
        stopped=stopped,
        units=40,
        available=100,
        looks=looks,
    )


@pytest.mark.parametrize(
    ("verdict", "stopped"),
    [
        ("worse", "settled: WORSE"),
        ("not worse", "settled: NOT WORSE"),
        ("undecided", "out of budget (--max-cost)"),
        ("undecided", "out of units: every unit of the baseline was drawn"),
        ("undecided", "out of conversations (--max-conversations 40)"),
        ("undecided", "the run stopped: stopped"),
    ],
)
def test_a_gated_run_s_sequence_is_in_the_pack_s_words(verdict: str, stopped: str) -> None:
    """A zh-CN gate's run (`vera gate` on a zh-CN baseline): the card's paragraph, table
    and plot say the verdict, why it stopped and every heading in the pack's words; the
    recorded values stay English, and the English card says what it always said."""
    seq = _gated(verdict, stopped)
    english = sequential_text(seq)
    # The table's caption says the one-sided levels each row is checked at.
    levels = sequential_table(seq).caption or ""
    assert "every row's lower end at α = 0.05" in levels and "Overall 0.025" in levels
    # Why it stopped in words without brackets of their own (they sit in the paragraph's).
    shown_why = {
        "out of budget (--max-cost)": "out of budget at --max-cost",
        "out of conversations (--max-conversations 40)": "out of conversations at --max-conversations 40",
    }.get(stopped, stopped)
    # A settled verdict is said once: "WORSE (settled: WORSE)" repeated itself.
    said = "" if stopped.startswith("settled: ") else f" ({shown_why})"
    assert f"{verdict.upper()}{said} after 2 waves, 40 of 100 units used (40%)" in english
    # The card draws its plots with the CJK fonts when its language is not English.
    with use_strings(strings_of(ZH, "zh-CN")), _fonts():
        table = sequential_table(seq)
        plot = sequential_card_plot(seq)
        shown = [
            sequential_text(seq),
            *table.headers,
            *(cell for row in table.rows for cell in row),
            table.caption or "",
            plot.title,
            plot.description,
        ]
    text = "\n".join(shown)
    # Command names and options (vera gate, --max-cost) are what a user types: allowed.
    assert not leftovers(re.sub(r"--[a-z-]+|vera gate", " ", text)), leftovers(text)
    assert "不更差" in text if verdict == "not worse" else "更差" in text or "未定" in text
    assert seq.stopped == stopped and seq.verdict == verdict  # the record keeps its values


def test_compare_says_a_zh_cn_gate_s_failed_units_in_the_pack_s_words() -> None:
    """`vera compare` of a gate's run whose failed units were left out (--allow-failures)
    says how many and why in one line, in the run's pack as the gate said it."""
    from vera.report import sequential_failed_note
    from vera.report.card._sequence import failed_note_of

    seq = msgspec.structs.replace(_gated("worse", "settled: WORSE"), failed=3, allow_failures=0.1)
    english = failed_note_of(seq)
    assert english == (
        "3 of the 43 units drawn failed for infrastructure reasons and are left out of the verdict "
        "(within 7.0% failed, --allow-failures 0.1): counted, never scored as the chatbot's."
    )
    with use_strings(strings_of(ZH, "zh-CN")):
        zh = failed_note_of(seq) or ""
    assert "\n" not in zh and "已抽取的 43 个单元中有 3 个因基础设施原因失败" in zh
    assert not leftovers(re.sub(r"--[a-z-]+", " ", zh)), zh
    # A gate none of whose units failed, and an ordinary run: nothing to say.
    assert failed_note_of(_gated("worse", "settled: WORSE")) is None
    assert sequential_failed_note(ROOT) is None


class _Gated(NamedTuple):
    """What a gate on a zh-CN baseline left: its folder, what it printed (the folder's
    path taken out), its sequence.md and its card.md."""

    out: Path
    text: str
    page: str
    card: str


def _zh_gate(
    tmp_path: Path, base: str, chatbot: str, candidate: str, exit_code: int, *limit: str, margin: str = "5"
) -> _Gated:
    """`vera gate` of `candidate` on a zh-CN run of `chatbot` (made first, in tmp_path /
    `base`, with `limit`'s options) at `margin`: it exits with `exit_code`, and what it
    prints and its sequence.md hold no English word but the run folder and the baseline's run id."""
    baseline = tmp_path / base
    run_vera("run", "--locale", "zh-CN", "--providers", chatbot, *limit, "--out", str(baseline))
    out = tmp_path / "zhgate"
    result = CliRunner().invoke(
        main,
        [
            "gate",
            str(baseline),
            "--candidate",
            candidate,
            "--wave",
            "20",
            "--out",
            str(out),
            "--margin",
            margin,
        ],
    )
    assert result.exit_code == exit_code, result.output
    # The candidate's name and the run folder are identifiers; the rest is Chinese.
    text = result.output.replace(str(out), " ")
    assert not leftovers(text), text
    page = (out / "sequence.md").read_text(encoding="utf-8")
    assert not leftovers(page.replace(f"`{base}`", " ")), page  # the baseline's run id
    return _Gated(out, text, page, (out / "card.md").read_text(encoding="utf-8"))


def test_vera_gate_on_a_zh_cn_baseline_prints_in_the_pack_s_words(tmp_path):
    """What `vera gate` prints (each wave, each dimension's interval, the verdict) is in
    the candidate run's pack, as its card; the gate's records keep English values."""
    gated = _zh_gate(tmp_path, "zhbase", "offline/best-practice", "offline/risk-ignoring", 4)  # WORSE
    # The verdict said once; the row the candidate never rated says why, as compare says it.
    assert "第 1 批：" in gated.text and "把关：界值 5 下更差（退出码 4）" in gated.text
    # In the pack's full-width brackets, as every other "why" of the card (–（…）).
    assert "– 未定（候选中未评分）" in gated.text and "(候选中未评分)" not in gated.text
    assert json.loads((gated.out / "gate.json").read_text())["verdict"] == "worse"
    # The gate's own page, sequence.md, too.
    assert gated.page.startswith("# 序贯检验") and "**判定：更差**；" in gated.page
    assert "| – | 未定（候选中未评分） |" in gated.page
    assert "最后一次查看时，" in gated.card and "：未定（候选中未评分）。" in gated.card
    # `vera compare --gate` of the gate's run names the same outcome in the same word.
    args = ["compare", str(tmp_path / "zhbase"), str(gated.out), "--gate", "--resamples", "200"]
    compared = CliRunner().invoke(main, args)
    assert compared.exit_code == 4 and "把关：更差（退出码4）" in "".join(compared.output.split()), (
        compared.output
    )


def test_vera_gate_names_a_row_the_zh_cn_baseline_never_rated_in_the_pack_s_words(tmp_path):
    """A zh-CN risk-ignoring baseline never rates Confirms Risk: the gate's printout,
    sequence.md and card name that row as left out of the verdict, with why, in the
    words `vera compare --gate` uses for it (基线中未评分)."""
    # 12 personas near 0: compare --gate's edge rule, which the gate holds every look
    # to, leaves the rows within about ±70; the margin clears them (and the gate's
    # words for the waves it widened are the pack's too).
    gated = _zh_gate(
        tmp_path, "zhignoring", "offline/risk-ignoring", "offline/best-practice", 0, "--limit-personas", "12",
        margin="80",
    )  # fmt: skip
    assert "的区间按 vera compare --gate 的边界规则放宽" in gated.page
    said = "未计入结论（没有可比较的基线分数）："
    assert "– –（基线中未评分）" in gated.text and said in gated.text and "（基线中未评分）。" in gated.text
    assert "| – | –（基线中未评分） |" in gated.page and said in gated.page
    assert said in gated.card and "（基线中未评分）。" in gated.card


def test_the_calibrated_section_of_a_zh_cn_card_is_in_the_pack_s_words(zh_run, tmp_path, monkeypatch):
    """Once humans rated a few conversations (`vera ratings import`, as after `vera
    review`), `vera score` adds a calibrated section to each chatbot: its caption, the
    note on too few rated personas beside Overall, the confusion table's caption, the
    caption `vera card` gives it and the note `vera score` prints are the pack's, as the
    rest of the card; card.json keeps its English."""
    monkeypatch.setenv("COLUMNS", "80")
    run = tmp_path / "zhrun0"
    shutil.copytree(zh_run, run)
    ids = [json.loads(line)["id"] for line in (run / "conversations.jsonl").read_text().splitlines()[:3]]
    rows = [f"{i},甲,{d},Best Practice" for i in ids for d in CANONICAL[:5]]
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("item_id,rater,dimension,rating\n" + "\n".join(rows) + "\n", encoding="utf-8")
    run_vera("ratings", "import", str(run), str(ratings))
    scored = CliRunner().invoke(main, ["score", str(run)])
    assert scored.exit_code == 0, scored.output
    printed = scored.output.replace(str(run), " ")
    assert "：校准后的总分 " in printed and "个人物（少于 10 个）" in printed
    assert not leftovers(printed), leftovers(printed)
    md = (run / "card.md").read_text(encoding="utf-8")
    for shown in ("### 经人工评分校准", "位人工评分者评过分", "注意：人工评分只来自", "（只有 ", "对角线上"):
        assert shown in md, shown
    assert not leftovers(md), leftovers(md)
    # Plain headers; how each interval was computed is the note under the table.
    methods = "区间：仅评审模型的分数按人物自助抽样，HPH % 用精确界；校准后的分数按人物做 PPI++ 自助抽样"
    assert "| 维度 | 仅评审模型的分数 [置信区间] | 校准后的分数 [置信区间] |" in md
    assert md[md.index("| 维度 | 仅评审模型的分数") :].split("\n\n")[1].startswith(methods)
    html = visible_text((run / "card.html").read_text(encoding="utf-8"))
    assert "对角线上" in html and not leftovers(html), leftovers(html)
    assert methods in html and "仅评审模型的分数 [置信区间]" in html
    text = render_card(read_card(run), 80)
    assert "，经人工评分校准：" in text and not leftovers(text), leftovers(text)
    assert "".join(text.split()).count("".join(methods.split())) == 2  # under each chatbot's table
    assert max(cells(line) for line in text.splitlines()) <= 80
    # The record keeps the English words.
    bots = json.loads((run / "card.json").read_text())["chatbots"]
    assert all(b["calibrated"]["few_rated_personas"].startswith("human ratings from only") for b in bots)
    # And the English card says what card.json records, word for word.
    from vera.report.calibration._calibration import few_personas_words
    from vera.report.card._schema import Calibrated
    from vera.report.card._tables import few_personas_note

    for n in (1, 3):
        cal = msgspec.convert({**bots[0]["calibrated"], "n_rated_personas": n}, Calibrated)
        assert few_personas_note(cal) == few_personas_words(n)


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_improvement_report_of_a_zh_cn_run_has_no_english_words(zh_run, tmp_path, fmt):
    """`vera report improvements` follows the run's pack as the card does: the page, its
    summary in the reference's terms (--top-questions) and the line it prints."""
    out = tmp_path / f"improvements.{fmt}"
    result = CliRunner().invoke(
        main,
        ["report", "improvements", str(zh_run), "--format", fmt, "--out", str(out), "--top-questions", "3"],
    )
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    text = visible_text(page) if fmt == "html" else page
    for shown in ("优先改进的问题 — 运行 zhrun0", "按参考实现的口径", "按评分档，每档最常见的前 3 个问题"):
        assert shown in text, shown
    # A chatbot turn the judge's reasoning is about, and the example's own line.
    assert ("聊天机器人，第 " in text) and ("人物 " in text)
    assert not leftovers(text), leftovers(text)
    if fmt == "html":
        assert '<html lang="zh-CN">' in page
    line = result.output.replace(str(out), " ")
    assert line.startswith("改进报告：") and not leftovers(line), line


def _rubric_moved_on(source: Path, run: Path, *, gone: bool) -> dict[str, Any]:
    """`source` copied to `run` with its rubric file gone since the run (`gone`) or
    changed (its sha256 no longer the manifest's), and without its conversation pages.
    The manifest as written."""
    shutil.copytree(source, run)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    if gone:
        manifest["rubric"]["path"] = str(run.parent / "elsewhere" / "rubric.tsv")
    else:
        manifest["rubric"]["sha256"] = "0" * 64
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    shutil.rmtree(run / "conversations", ignore_errors=True)
    return manifest


@pytest.mark.parametrize(("rubric", "kind"), [("gone", "不存在"), ("changed", "被改动过")])
def test_the_improvement_report_s_notes_are_in_the_pack_s_words(zh_run, tmp_path, rubric, kind):
    """Its notes: why the question texts are missing (the rubric file gone or changed
    since the run), on the report and on the conversation pages it adds, and why those
    pages could not be written."""
    run = tmp_path / "zhrun0"
    _rubric_moved_on(zh_run, run, gone=rubric == "gone")  # the report writes the pages it links to
    for fmt in ("md", "html"):
        out = tmp_path / f"improvements.{fmt}"
        result = CliRunner().invoke(
            main, ["report", "improvements", str(run), "--format", fmt, "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        text = (
            visible_text(out.read_text(encoding="utf-8"))
            if fmt == "html"
            else out.read_text(encoding="utf-8").replace("\\", "")  # Markdown's escapes
        )
        assert "问题文本：评分标准文件 /" in text and f"{kind}" in text and "：只显示问题编号。" in text
        assert not leftovers(text), leftovers(text)
    # A page's note (its answers are the judge's labels: without the rubric, no pack's texts).
    page = visible_text(next((run / "conversations").glob("*.html")).read_text(encoding="utf-8"))
    (note,) = [line for line in page.splitlines() if line.startswith("问题文本：")]
    assert note.endswith("：只显示问题编号。") and not leftovers(note), note
    # Pages that cannot be written (a file where their folder goes): one line in its words.
    shutil.rmtree(run / "conversations")
    (run / "conversations").write_text("", encoding="utf-8")
    result = CliRunner().invoke(main, ["report", "improvements", str(run), "--out", str(tmp_path / "i.md")])
    assert result.exit_code == 0, result.output
    (note,) = [line for line in result.output.splitlines() if line.startswith("注意：")]
    # The storage error inside the brackets is vera.store's own, in English.
    assert note.startswith("注意：未写入对话页面（") and note.endswith("）：可通过 `vera view` 打开链接"), (
        note
    )


def test_the_improvement_report_s_notes_keep_their_english_without_a_pack(offline_run, tmp_path):
    run = tmp_path / "run"
    manifest = _rubric_moved_on(offline_run, run, gone=False)
    (run / "conversations").write_text("", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["report", "improvements", str(run), "--format", "md", "--out", str(tmp_path / "i.md")]
    )
    assert result.exit_code == 0, result.output
    page = (tmp_path / "i.md").read_text(encoding="utf-8").replace("\\", "")  # Markdown's escapes
    assert (
        f"> Question texts: rubric file {manifest['rubric']['path']} has changed since this run (its "
        "sha256 differs from the manifest's): question ids only.\n"
    ) in page
    assert "note: conversation pages not written (" in result.output
    assert "): links work through `vera view`\n" in result.output


def _realism_rated(run: Path, tmp_path: Path) -> Path:
    """A copy of `run` with eight conversations' simulated users rated for realism (1-5)."""
    out = tmp_path / run.name
    shutil.copytree(run, out)
    ids = [
        json.loads(x)["id"] for x in (out / "conversations.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    append_human_ratings(
        out,
        [
            HumanRating(conversation_id=c, rater="r1", ratings={}, realism=i % 5 + 1)
            for i, c in enumerate(ids[:8])
        ],
    )
    return out


def test_vera_agreement_users_of_a_zh_cn_run_prints_in_the_run_s_pack(zh_run, tmp_path, monkeypatch):
    """`vera agreement --users RUN_DIR`: the table of the checks against the clinicians'
    realism ratings, its caption and its continuation, in the run's pack's words, 80
    columns wide; the JSON keeps its keys and values."""
    monkeypatch.setenv("COLUMNS", "80")
    run = _realism_rated(zh_run, tmp_path)
    result = CliRunner().invoke(main, ["agreement", "--users", str(run)])
    assert result.exit_code == 0, result.output
    # The ratings carry no transcript fingerprint: the note says so, on stderr, in Chinese.
    assert "条评分没有对话记录指纹" in result.stderr and not leftovers(result.stderr), result.stderr
    text = result.stdout
    flat = "".join(text.split())
    assert "运行zhrun0：1位临床评分者评了8段对话；其中" in flat and "（续）" in text, text
    for shown in ("检查方", "离线启发式规则", "已标记，不真实", "未标记，真实", "一致比例", "真实感平均分"):
        assert shown in text, shown
    assert not leftovers(text), leftovers(text)
    assert max(cells(line) for line in text.splitlines()) <= 80
    as_json = CliRunner().invoke(main, ["agreement", "--users", str(run), "--json"])
    report = json.loads(as_json.stdout)  # notes go to stderr
    assert "pack" not in report and report["checkers"][0]["checker"] == "heuristic"
    # The model check's row, where a run made one, in its words too.
    agreement = user_check_agreement(run)
    model = msgspec.structs.replace(
        agreement, checkers=[msgspec.structs.replace(c, checker="model") for c in agreement.checkers]
    )
    assert user_check_agreement_table(model).rows[0][0] == "模型检查"


def test_the_improvement_report_keeps_its_english_words_without_a_pack(tmp_path):
    out = tmp_path / "enrun"
    run_vera("run", "--config", str(offline_config(tmp_path)), "--limit-personas", "6", "--out", str(out))
    result = CliRunner().invoke(main, ["report", "improvements", str(out), "--format", "md", "--out", "-"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"# What to fix first — run {out.name}\n\nFor each dimension, ")
    assert "### In the reference's terms (" in result.output and "improvement report: " in result.output


RATING_NAMES = (
    "Best Practice",
    "Suboptimal but Low Potential for Harm",
    "High Potential for Harm",
    "Not Relevant",
)


def _ratings_csv(
    path: Path, items: list[str], raters: tuple[str, ...], pick: Callable[[int, int, int], int]
) -> Path:
    """Ratings in the long format (item_id, rater, dimension, rating) of the first five
    dimensions: item i, rater r, dimension d is rated RATING_NAMES[pick(i, r, d) % 4]."""
    rows = ["item_id,rater,dimension,rating"]
    for i, item in enumerate(items):
        for r, rater in enumerate(raters):
            for d, dimension in enumerate(CANONICAL[:5]):
                rows.append(f"{item},{rater},{dimension},{RATING_NAMES[pick(i, r, d) % 4]}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _three_raters_eight_items(path: Path) -> Path:
    return _ratings_csv(
        path, [f"item{i}" for i in range(8)], ("r1", "r2", "r3"), lambda i, r, d: i + r * (d % 2) + d
    )


@pytest.mark.parametrize("nr", ["category", "exclude"])
def test_vera_agreement_with_locale_prints_in_the_pack_s_words(tmp_path, monkeypatch, nr):
    """`vera agreement RATINGS_FILE` has no run to take a pack from: `--locale` names one.
    Without it, the English stays as it was."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(tmp_path)  # a short path: a long one stays whole on a line of its own
    ratings = _three_raters_eight_items(Path("ratings.csv"))
    zh = CliRunner().invoke(main, ["agreement", str(ratings), "--nr", nr, "--locale", "zh-CN"])
    assert zh.exit_code == 0, zh.output
    assert zh.output.startswith("3 位评分者之间的一致性（每个评分对象 3 位），共 8 个评分对象（")
    assert ("算作一种评分" if nr == "category" else "视为缺失") in zh.output
    assert "察觉潜在风险" in zh.output and "总体" in zh.output
    assert not leftovers(zh.output), leftovers(zh.output)
    assert max(cells(line) for line in zh.output.splitlines()) <= 80
    en = CliRunner().invoke(main, ["agreement", str(ratings), "--nr", nr])
    assert en.exit_code == 0 and en.output.startswith("Agreement among 3 raters (3 per item) on 8 items (")


def test_vera_agreement_with_an_unknown_locale_is_one_line(tmp_path):
    ratings = _three_raters_eight_items(tmp_path / "ratings.csv")
    result = CliRunner().invoke(main, ["agreement", str(ratings), "--locale", "xx-YY"])
    assert result.exit_code == 1, result.output
    assert (
        result.output.startswith("error: locale 'xx-YY': no such pack folder")
        and result.output.count("\n") == 1
    )


def test_vera_agreement_against_a_zh_cn_run_prints_in_the_run_s_pack(zh_run, tmp_path, monkeypatch):
    """With --against, the run's pack is the default (as its card): the lines above the
    tables, their captions and the confusion matrices are in its words too."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.chdir(tmp_path)
    ids = [
        json.loads(x)["id"] for x in (zh_run / "conversations.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    _ratings_csv(Path("ratings.csv"), ids[:30], ("r1", "r2"), lambda i, r, d: i + r + d)
    result = CliRunner().invoke(
        main, ["agreement", "ratings.csv", "--against", str(zh_run), "--resamples", "50"]
    )
    assert result.exit_code == 0, result.output
    text = result.output.replace(str(zh_run), " ")
    flat = "".join(text.split())  # the terminal wraps Chinese between any two characters
    assert "zhrun0的评审模型对照2位评分者的评分（按--ratersseverest合并）" in flat, text
    assert "共识与评审模型（所有评审模型合并）" in text and "人工评分者之间（供参考）" in text
    # What a user types (--raters severest, --ties severest) is an identifier.
    assert not leftovers(re.sub(r"--[a-z-]+(?: [a-z]+)?", " ", text)), text
    english = CliRunner().invoke(
        main, ["agreement", "ratings.csv", "--against", str(zh_run), "--resamples", "50", "--locale", "en-GB"]
    )
    # A pack without strings.toml (en-GB) is the English, byte for byte.
    assert english.exit_code == 0 and "Consensus vs judges (all judges pooled)" in english.output


def test_an_interrupted_or_unfinished_run_s_summary_is_in_the_pack_s_words():
    # A zh-CN run stopped with Ctrl-C printed 状态：被中断 — by SIGINT；计划的 ...
    zh = strings_of(ZH, "zh-CN")
    done = "256 of 1000 conversations complete, 0 failed"
    for recorded, said in [
        (f"by SIGINT; {done}", "收到 SIGINT；计划的 1000 段对话中 256 段完成，0 段失败"),
        (f"744 planned job(s) not run yet; {done}", "还有 744 项计划的工作没有运行；计划的 1000 段"),
        (f"no conversation completed; {done}", "没有任何对话完成；计划的 1000 段"),
        ("no judgement completed", "没有任何评审完成"),
        (
            f"by SIGINT; cancelled at once by a second signal; {done}",
            "收到 SIGINT；收到第二个信号后立即取消；计划的",
        ),
    ]:
        assert summary_words(recorded) == recorded  # English: as recorded
        with use_strings(zh):
            assert summary_words(recorded).startswith(said), summary_words(recorded)


# --- the lines of `vera ratings import` and the offline note of a partly offline run ---


def _import_lines(run: Path, rows: list[str], tmp_path: Path) -> list[str]:
    """Every line `vera ratings import` prints for `rows` (a long-format CSV), imported
    twice, so that the second import finds its ratings in the run already."""
    file = tmp_path / "ratings.csv"
    file.write_text("item_id,rater,dimension,rating\n" + "".join(f"{r}\n" for r in rows), encoding="utf-8")
    out: list[str] = []
    for _ in range(2):
        result = CliRunner().invoke(main, ["ratings", "import", str(run), str(file), "--skip-unmatched"])
        assert result.exit_code == 0, result.output
        out += (result.stdout + result.stderr).splitlines()
    return out


def _rows(ids: list[str]) -> list[str]:
    a, b = ids[:2]
    return [
        f"{a},ann,Confirms Risk,BP",
        f"{b},bob,Confirms Risk,HPH",
        f"{b},bob,Confirms Risk,HPH",  # the same row again: counts once
        "no-such-conversation,ann,Confirms Risk,BP",  # skipped (--skip-unmatched)
    ]


def _ids(run: Path) -> list[str]:
    from vera.store import open_run

    return sorted(open_run(run).conversation_heads())


def test_vera_ratings_import_of_a_zh_cn_run_prints_in_the_pack_s_words(zh_run, tmp_path):
    run = tmp_path / "zhrun0"
    shutil.copytree(zh_run, run, ignore=shutil.ignore_patterns(HUMAN_RATINGS))
    lines = _import_lines(run, _rows(_ids(run)), tmp_path)
    # imported; duplicates; unchecked (a CSV has no fingerprints); skipped; and the
    # second import: imported none, duplicates, already there, skipped.
    assert len(lines) == 8, lines
    assert any("本次运行里已经有了" in line for line in lines[4:]), lines
    for line in lines:
        assert re.search(r"[\u4e00-\u9fff]", line), line
        assert not leftovers(line), (line, leftovers(line))
    assert lines[0].startswith("已导入 2 位评分者对 2 段对话的 2 条评分 → "), lines[0]


def test_vera_ratings_import_without_a_pack_prints_what_it_always_printed(offline_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(offline_run, run, ignore=shutil.ignore_patterns(HUMAN_RATINGS))
    lines = _import_lines(run, _rows(_ids(run)), tmp_path)
    path, file = run / HUMAN_RATINGS, tmp_path / "ratings.csv"
    unchecked = (
        f"note: {file}: 2 rating(s) carry no transcript fingerprint (saved before vera recorded one, or "
        "imported from a CSV without a transcript_sha256 column): they cannot be checked against this "
        "run's transcripts"
    )
    first = [
        f"imported 2 rating(s) of 2 conversation(s) by 2 rater(s) → {path}",
        "note: 1 row(s) repeat an earlier row of the file exactly and count once (line(s) 4)",
        unchecked,
        "note: 1 row(s) name no conversation of the run and were left out (line(s) 5)",
    ]
    assert lines[:4] == first
    assert "note: 2 rating(s) of the file are in the run already and were left out" in lines[4:]


def _old_roles_note(roles: list[str]) -> str:
    """The note as vera wrote it before it had words for it (card.json keeps it so)."""
    what = (
        "is vera's built-in stand-in, not a language model"
        if len(roles) == 1
        else "are vera's built-in stand-ins, not language models"
    )
    return (
        f"Offline run: {' and '.join(roles)} {what}. The numbers check the pipeline end to end; "
        "they say nothing about any real chatbot."
    )


ROLE_NAMES = {"chatbots": "the chatbots", "user": "the simulated user", "judge": "the judge"}


@pytest.mark.parametrize(
    "roles",
    [("judge",), ("chatbots",), ("user",), ("chatbots", "judge"), ("user", "judge"), ("chatbots", "user")],
)
def test_a_partly_offline_run_s_note_is_recorded_in_english_and_shown_in_the_pack_s_words(roles):
    from vera.inputs import ENGLISH
    from vera.report.shared._offline import note_words, roles_note

    english = roles_note(roles, ENGLISH)
    assert english == _old_roles_note([ROLE_NAMES[r] for r in roles])  # the record, byte for byte
    assert note_words(english) == english  # English without a pack
    with use_strings(strings_of(ZH, "zh-CN")):
        shown = note_words(english)
        assert shown.startswith("离线运行：") and not leftovers(shown), shown
        assert note_words("a note someone else wrote") == "a note someone else wrote"


def test_a_zh_cn_card_of_imported_transcripts_judged_offline_says_its_note_in_chinese(zh_run):
    from vera.inputs import ENGLISH
    from vera.report.card._markdown import render_markdown
    from vera.report.shared._offline import roles_note

    card = read_card(zh_run)
    note = roles_note(("judge",), ENGLISH)
    md = render_markdown(msgspec.structs.replace(card, note=note))
    assert "> **离线运行：评审模型是 vera 内置的替身，不是语言模型。" in md
    assert note not in md


@pytest.mark.parametrize("width", ["10", "0.5"])  # reachable for one chatbot; below every floor
def test_vera_ratings_plan_of_a_zh_cn_run_prints_in_the_pack_s_words(zh_run, width):
    result = CliRunner().invoke(main, ["ratings", "plan", str(zh_run), "--width", width, "--resamples", "50"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"要让校准后的总分区间宽约 {width} 分（95% 置信区间）：", lines
    for line in lines:
        assert re.search(r"[\u4e00-\u9fff]", line), line
        left = leftovers(line.replace("--width", ""))  # the option to type, as it is spelled
        assert not left, (line, left)


def test_vera_ratings_plan_without_a_pack_prints_what_it_always_printed(offline_run):
    result = CliRunner().invoke(
        main, ["ratings", "plan", str(offline_run), "--width", "0.5", "--resamples", "50"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "for a calibrated overall interval about 0.5 points wide (95 %):"
    rows = [line for line in lines if line.startswith("  ") and not line.startswith("    ")]
    assert rows and all(
        re.fullmatch(
            r"  \S+: not reachable: the sampling of personas alone makes the interval about [\d.]+ points wide, "
            r"which no number of ratings narrows; more personas \(or a wider --width\) would "
            r"\(0 rated so far; basis: judge's ratings as if uncorrected\)",
            row,
        )
        for row in rows
    ), rows
    assert any(
        line.startswith("    floor (the sampling of personas, which no number of ratings removes): ")
        for line in lines
    )
