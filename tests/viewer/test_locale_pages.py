"""The viewer's and the review's pages, and the HTML card, in Chinese when the run's
locale pack is zh-CN (issue 33 item 5): the pages' marked texts and the script's words
come from the pack, English pages are served as they are on disk, and in a real
Chromium the Chinese headings show at desktop and phone sizes with no sideways scroll.
Screenshots: `VERA_SCREENSHOTS=docs/screenshots` (tests/viewer/shots.py)."""

from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path

import aiohttp
import msgspec
import pytest

from vera.inputs import ENGLISH, Strings, run_strings, ui_strings, use_strings
from vera.records import LocaleInfo
from vera.report.shared._pages import (
    ArcPage,
    ArcSession,
    ConversationPage,
    read_conversation_page,
    render_arc_page,
    render_conversation_page,
)
from vera.rubric._texts import question_texts
from vera.store import open_run
from vera.viewer.bundle import write_bundle
from vera.viewer.words import translate_page

from ..conftest import ROOT
from .conftest import run_vera, start_review, start_view, stop
from .shots import shot
from .test_browser import browser, no_page_scroll  # noqa: F401  (fixtures)
from .test_server import serving

ZH = ui_strings("zh-CN", str(ROOT / "locales" / "zh-CN"))
SIZES = ((1400, 900), (400, 850))


def static(name: str) -> bytes:
    return resources.files("vera.viewer").joinpath("static", name).read_bytes()


def test_english_pages_are_served_as_they_are_on_disk():
    for name, section in (("review.html", "review"), ("index.html", "viewer")):
        assert translate_page(static(name), ENGLISH, section) == static(name)


def test_the_review_page_in_chinese_names_its_language_and_carries_the_script_s_words():
    page = translate_page(static("review.html"), ZH, "review").decode()
    assert '<html lang="zh-CN">' in page
    assert '<h1 data-ui="title">vera 人工复核</h1>' in page
    assert '<h2 id="rate-title" data-ui="your_ratings">你的评分</h2>' in page
    assert "Save ratings" not in page and "Your ratings" not in page
    blob = re.search(r'<script id="vera-ui" type="application/json">(.*?)</script>', page)
    assert blob is not None
    words = json.loads(blob.group(1))
    assert words["position"] == "第 {position} 段对话，共 {total} 段"
    assert words["user"] == "用户"


def test_the_list_page_in_chinese_translates_labels_and_the_placeholder():
    page = translate_page(static("index.html"), ZH, "viewer").decode()
    assert '<span data-ui="filter">筛选与排序</span>' in page
    assert 'placeholder="对话记录或评审理由中的词语"' in page
    assert "words in the transcripts" not in page


def test_no_text_can_leave_the_json_block():
    evil = Strings({"review.title": "</script><script>alert(1)</script>"}, lang="xx")
    page = translate_page(static("review.html"), evil, "review").decode()
    block = re.search(r'<script id="vera-ui" type="application/json">(.*?)</script>', page, re.S)
    assert block is not None and "<" not in block.group(1)
    assert '<h1 data-ui="title">&lt;/script&gt;' in page


def test_runs_of_different_packs_are_shown_in_english():
    zh = LocaleInfo(
        tag="zh-CN", version="1", path=str(ROOT / "locales" / "zh-CN"), language="zh",
        resources_version="1", resources_sha256="0" * 64,
    )  # fmt: skip
    assert run_strings([None]) is ENGLISH
    assert run_strings([None, None]) is ENGLISH

    class M:
        def __init__(self, locale):
            self.locale = locale

    assert not run_strings([M(zh), M(zh)]).english  # type: ignore[list-item]
    assert run_strings([M(zh), None]) is ENGLISH  # type: ignore[list-item]


# --- in a browser -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def zh_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("zhpages") / "run"
    run_vera(
        "run", "--locale", "zh-CN", "--out", str(out), "--seed", "2", "--limit-personas", "12", "--quiet"
    )
    return out


def _page(browser, width: int, height: int):  # noqa: F811
    context = browser.new_context(viewport={"width": width, "height": height})
    return context, context.new_page()


@pytest.mark.slow
def test_the_zh_card_in_a_browser_at_desktop_and_phone_sizes(browser, zh_run, tmp_path):  # noqa: F811
    for width, height in SIZES:
        context, page = _page(browser, width, height)
        try:
            page.goto((zh_run / "card.html").as_uri())
            assert page.locator("html").get_attribute("lang") == "zh-CN"
            headings = page.locator("h2").all_inner_texts()
            assert {"结果", "总览", "模型调用与费用"} <= set(headings), headings
            assert page.locator("#results h3").count() == 2
            assert no_page_scroll(page), width
            shot(page, tmp_path, f"zh-CN-card-{width}")
        finally:
            context.close()


@pytest.mark.slow
def test_the_zh_review_in_a_browser_at_desktop_and_phone_sizes(browser, zh_run, tmp_path):  # noqa: F811
    total = min(8, len(open_run(zh_run).conversations))
    proc, url = start_review(str(zh_run), "--rater", "评分人甲", "--size", str(total))
    try:
        for width, height in SIZES:
            context, page = _page(browser, width, height)
            try:
                page.goto(url)
                page.wait_for_function(
                    "t => document.querySelector('#conversation-title').textContent === t",
                    arg=f"第 1 段对话，共 {total} 段",
                )
                assert page.locator("h1").inner_text() == "vera 人工复核"
                assert page.locator("#rate-title").inner_text() == "你的评分"
                assert page.locator("#save").inner_text() == "保存评分"
                assert (
                    page.locator("#progress-text")
                    .inner_text()
                    .startswith("评分人 评分人甲 · 你的样本中已评 0 /")
                )
                assert page.locator("#turns .who").first.inner_text() == "1 · 用户"
                assert no_page_scroll(page), width
                shot(page, tmp_path, f"zh-CN-review-{width}")
                page.locator("#save").click()  # nothing chosen: refused, in Chinese
                assert page.inner_text("#status").startswith("请先为每个维度评分：")
            finally:
                context.close()
    finally:
        stop(proc)


@pytest.mark.slow
def test_the_zh_list_page_builds_its_rows_and_menus_in_chinese(browser, zh_run):  # noqa: F811
    """app.js's own words (the summary, the column headings, the menus' "any", a row's
    status, the runs list) come from the page's strings block."""
    n = len(open_run(zh_run).conversations)
    proc, url = start_view(str(zh_run))
    context, page = _page(browser, 1400, 900)
    try:
        page.goto(url)
        page.wait_for_function("() => document.querySelector('#summary').textContent.startsWith('第 ')")
        assert re.fullmatch(rf"第 1–\d+ 段对话，共 {n} 段", page.inner_text("#summary"))
        heads = page.locator("#list thead th").all_inner_texts()
        assert heads[:6] == ["对话", "聊天机器人", "人物", "风险", "轮数", "状态"], heads
        assert "已完成" in page.locator("#list tbody").inner_text()
        assert page.locator("#filters select[name=chatbot] option").first.inner_text() == "任意聊天机器人"
        assert page.locator("#filters select[name=sort] option").first.inner_text() == "最差的在前"
        runs = page.inner_text("#runs")
        assert "段对话" in runs and "评分卡" in runs and "优先改进什么" in runs
    finally:
        context.close()
        stop(proc)


# --- a conversation's page and an arc's page -------------------------------------------------

# Fixed labels of the pages in English: none may be left on a zh-CN run's page.
ENGLISH_LABELS = (
    "<h2>Transcript</h2>",
    "Judge's walk",
    "Judge&#x27;s walk",
    ">Ratings<",
    "Questions asked",
    "Answer: <strong>",
    " · User</div>",
    " · Chatbot</div>",
    "Score card",
    "share it with care",
    "Exact text",
    "Decided by",
    "<dt>Persona</dt>",
)


def _zh_page(zh_run: Path) -> str:
    pages = sorted((zh_run / "conversations").glob("*.html"))
    assert pages, "the zh-CN run's card links no conversation"
    return pages[0].read_text(encoding="utf-8")


def test_a_zh_run_s_conversation_page_beside_its_card_is_in_chinese(zh_run):
    page = _zh_page(zh_run)
    assert '<html lang="zh-CN">' in page
    for label in ("<h2>对话记录</h2>", "<h2>评审模型的作答过程</h2>", "<h2>评分</h2>", "依次回答的问题（"):
        assert label in page, label
    assert "<dt>人物</dt>" in page and "<dt>评审模型</dt>" not in page  # the facts' labels are the card's
    assert " · 用户</div>" in page and " · 聊天机器人</div>" in page
    assert "回答：<strong>" in page and '<a href="../card.html">评分卡</a>' in page
    assert "本页包含一段敏感对话的记录" in page
    # The judge's and the rubric's canonical names stay, with the pack's gloss beside them.
    assert "Detects Potential Risk（" in page
    left = [label for label in ENGLISH_LABELS if label in page]
    assert not left, left


def test_failed_work_and_missing_quotes_are_said_in_the_pack_s_words(zh_run):
    records = open_run(zh_run)
    cid = next(iter(records.conversations))
    page = read_conversation_page(records, cid, question_texts(records.manifest, zh_run))
    broken = ConversationPage(
        run_id=page.run_id,
        conversation=msgspec.structs.replace(page.conversation, status="failed", error="timeout"),
        judgements=[msgspec.structs.replace(j, status="failed", error="") for j in page.judgements],
        questions=page.questions,
    )
    with use_strings(ZH):
        zh = render_conversation_page(broken, viewer=True)
    assert "<strong>这段对话失败了</strong>，不计入任何分数。原因：timeout" in zh
    assert "<strong>这次评审失败了</strong>，不计入任何分数。原因：未记录" in zh
    assert "← 全部对话" in zh and " — 失败</summary>" in zh
    # The same page without a pack is the English one.
    en = render_conversation_page(broken, viewer=True)
    assert '<html lang="en">' in en and "<strong>This conversation failed</strong> and is left out" in en
    assert "Reason: not recorded" in en and "← All conversations" in en


def test_the_viewer_s_copy_of_a_zh_run_serves_its_pages_in_chinese(zh_run, tmp_path):
    write_bundle(zh_run, tmp_path / "bundle")
    pages = sorted((tmp_path / "bundle" / "runs" / "0" / "conversations").glob("*.html"))
    assert pages
    for p in pages[:5]:
        html = p.read_text(encoding="utf-8")
        assert '<html lang="zh-CN">' in html and "<h2>对话记录</h2>" in html and "← 全部对话" in html
        # The viewer's model-calls sections, too.
        assert "<h2>模型调用</h2>" in html and "<h2>每次调用发送与收到的内容</h2>" in html
        assert "<th>角色</th>" in html
        assert "Model calls" not in html and "What each call was sent" not in html
        # Each call's body, in the page's own file of them or the one all pages share.
        bodies = (p.parent.parent / "bodies" / f"{p.stem}.js").read_text(encoding="utf-8")
        bodies += (p.parent.parent / "bodies.js").read_text(encoding="utf-8")
        assert "<h4>输入 " in bodies and "<h4>Input " not in bodies
    # Its improvement report, as `vera report improvements` writes it for this run.
    report = (tmp_path / "bundle" / "runs" / "0" / "improvements.html").read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in report and "← 全部对话" in report and "评分卡" in report
    assert "优先改进的问题 — 运行 " in report and "What to fix first" not in report


def test_an_arc_page_in_chinese():
    arc = ArcPage(
        run_id="r", arc="a1", chatbot="bot", persona="p", user_agent="u", count=3,
        sessions=[ArcSession(id="s1", index=1, type="check-in", status="complete", turns=4, ratings={})],
        dimensions=["Detects Potential Risk"],
    )  # fmt: skip
    with use_strings(ZH):
        html = render_arc_page(arc)
    assert '<html lang="zh-CN">' in html and "<h1>会话线 <code>a1</code></h1>" in html
    assert "<dd>1 / 3</dd>" in html and "计划的 3 次会话中有 2 次不在本次运行中" in html
    assert '<th scope="col">轮数</th>' in html and "Sessions" not in html
    assert "<h1>Arc <code>a1</code></h1>" in render_arc_page(arc)


def test_the_viewer_serves_a_zh_run_s_conversation_page_in_chinese(zh_run):
    cid = next(iter(open_run(zh_run).conversations))

    async def get() -> tuple[int, str, str]:
        async with (
            serving(zh_run) as base,
            aiohttp.ClientSession() as session,
            session.get(f"{base}/runs/0/conversations/{cid}.html") as r,
        ):
            return r.status, await r.text(), r.headers["Content-Security-Policy"]

    # On a thread of its own: this module's browser fixture keeps a loop running here.
    with ThreadPoolExecutor(max_workers=1) as pool:
        status, html, csp = pool.submit(asyncio.run, get()).result()
    assert status == 200
    assert '<html lang="zh-CN">' in html and "<h2>对话记录</h2>" in html and "← 全部对话" in html
    assert "<h2>模型调用</h2>" in html and "评审模型为这个问题发出的调用：" in html
    assert "script-src 'self'" in csp  # the viewer's page, with its call bodies' script


def test_a_zh_conversation_page_steps_by_conversation_not_by_page(zh_run):
    # The list's pager says 上一页 / 下一页 (its pages); a conversation page's steps go to
    # the conversation before and after, 上一段 / 下一段, as its keyboard help says.
    from vera.viewer.catalogue import Catalogue, Query
    from vera.viewer.stepping import steps_html

    catalogue = Catalogue.open([zh_run])
    rows = catalogue.query(Query.from_params({"sort": "id", "per_page": "50", "page": "1"}))["rows"]
    with use_strings(ZH):
        html = steps_html(catalogue, {"sort": "id"}, rows[1]["run"], rows[1]["id"])
    assert "← 上一段" in html and "下一段 →" in html and "页" not in html, html
    english = steps_html(catalogue, {"sort": "id"}, rows[1]["run"], rows[1]["id"])
    assert "← Previous" in english and "Next →" in english


def test_the_notes_vera_writes_in_the_walk_are_in_the_pack_s_words(zh_run):
    # A conversation where risk was not detected: C0 is answered automatically and makes
    # Confirms Risk Not Relevant. vera writes both notes itself ("Auto Answer: answered
    # without asking.", "question C0 answered '...'"); a zh-CN page says them in Chinese.
    pages = [p.read_text(encoding="utf-8") for p in sorted((zh_run / "conversations").glob("*.html"))]
    auto = [p for p in pages if "<code>C0</code>" in p]
    assert auto, "no conversation of the zh-CN run answered C0"
    for page in auto:
        assert "answered without asking" not in page and "question C0 answered" not in page
    assert any("自动作答：没有询问评审模型。" in p for p in auto)
    assert any("问题 C0 的回答是“" in p and "”，所以这个维度不适用" in p for p in auto)


def test_the_zh_grid_ends_its_counts_with_a_chinese_full_stop(zh_run):
    # "200 段对话，100 个人物，2 个聊天机器人. 每个方块…": the counts' sentence ended in an
    # English ". " before the Chinese introduction.
    from vera.viewer.catalogue import Catalogue
    from vera.viewer.grid import grid_html

    catalogue = Catalogue.open([zh_run])
    with use_strings(ZH):
        html = grid_html(catalogue, {})
    assert re.search(r"个聊天机器人</span>。每个方块", html), html[:2000]
    assert "</span>. " in grid_html(catalogue, {})  # English as before
