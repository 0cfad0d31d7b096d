"""Every page type of a zh-CN run, in a real Chromium, with no English left in what the
viewer itself writes (issue 33 item 5): the list (with its keyboard help), a conversation
page with every calls section open (and its keyboard help), the grid, a persona side by
side, the review (with its keyboard help) and the static bundle opened from file://.

The check reads every visible text node (and the menus' options and the fields'
placeholders) and fails on any run of ASCII letters that is not on a short allowlist,
each entry with its reason. Text a run holds (transcripts, the judge's reasoning, the
bodies of model calls) is data, not the page's words, and is left out by selector.
Screenshots: `VERA_SCREENSHOTS=docs/screenshots` (tests/viewer/shots.py)."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from urllib.parse import urlencode

import pytest

from vera.inputs import ui_strings
from vera.store import open_run
from vera.viewer.bundle import write_bundle

from ..conftest import ROOT
from .conftest import run_vera, start_review, start_view, stop
from .helpers import open_all
from .shots import shot
from .test_browser import browser, no_page_scroll  # noqa: F401  (fixtures)
from .test_bundle_grid_browser import SIDE_STATE, follow, grid_state, open_grid

ZH_PACK = ROOT / "locales" / "zh-CN"

# A run's own text, shown as recorded: the transcript's turns (and their exact text), the
# judge's reasoning, what each model call was sent and answered, search snippets.
DATA = ", ".join(
    (
        ".turn .text",
        ".turn pre",
        "blockquote.reasoning",
        ".call-body pre",
        ".side-turns .text",
        ".snippets",
    )
)

# Words a zh-CN page may show in ASCII letters, and why.
ALLOWED = {
    "vera",  # the tool's name
    "AI",  # the pack's own words keep it ("遵守 AI 边界")
    "ID",  # the pack's "对话 ID"
    "CSV",  # a file format, as the download gives it
    "JSON",  # the format a call's input is copied as
    "JavaScript",  # what the pages need, by its name
    "Markdown",  # the format a turn is shown formatted from
    "token",  # the pack's word for a model's unit of text (no settled Chinese term)
    "UTC",  # the time zone a run's date is given in
    "BP",  # the rubric's rating codes, defined in each page's legend beside their names
    "SUB",
    "HPH",
    "NR",
}
# Keys as printed on a keyboard (and single-letter keys), in the keyboard help only.
KEY_CAPS = {"Esc", "Tab", "Ctrl", "Enter"}

# Every visible text node under the roots (the page's body unless named), minus the
# run's data; the menus' options and the fields' placeholders, which show when used; and
# the accessible names a screen reader says.
_TEXTS = """([roots, data]) => {
  const out = [];
  for (const root of roots ? document.querySelectorAll(roots) : [document.body]) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const p = n.parentElement;
      if (!p || !n.textContent.trim()) continue;
      if (p.closest(data + ", script, style, template, noscript")) continue;
      if (!p.checkVisibility()) continue;
      out.push([n.textContent, !!p.closest(".keys")]);
    }
    for (const o of root.querySelectorAll("select option")) out.push([o.textContent, false]);
    for (const i of root.querySelectorAll("[placeholder]")) out.push([i.placeholder, false]);
    for (const i of root.querySelectorAll("[aria-label]")) out.push([i.getAttribute("aria-label"), false]);
  }
  return out;
}"""


def _initials(dimension: str) -> str:
    """The list's column code for a dimension (app.js `initials`)."""
    return "".join(w[0] for w in dimension.split() if w[0].isupper())


class Words:
    """The ASCII words a page shows beyond the allowlist and the run's own names."""

    def __init__(self, run: Path) -> None:
        records = open_run(run)
        m = records.manifest
        glosses = ui_strings("zh-CN", str(ZH_PACK)).glosses
        self.names = sorted(glosses, key=len, reverse=True)
        # Model and chatbot references, the run's id and its persona set's: names, not words.
        refs = {m.run_id, m.personas.name, *(s.ref for s in (*m.chatbots, *m.user_agents, *m.judges))}
        self.refs = sorted(refs, key=len, reverse=True)
        # The list's dimension codes, each defined in its legend beside the dimension.
        self.allowed = ALLOWED | {_initials(d) for d in glosses if " " in d}

    def left(self, pairs: list[list]) -> Counter[str]:
        found: Counter[str] = Counter()
        for text, in_keys in pairs:
            t = str(text)
            # A dimension's or rating's canonical name with the pack's name beside it, as
            # the card shows them: the name scores and links key on.
            for name in self.names:
                t = t.replace(f"{name}（", "（")
            t = re.sub(r"vera (?:view|score|agreement)", " ", t)  # commands, by name
            t = t.replace("Ctrl-C", " ")  # a key, named as on the keyboard
            t = re.sub(r"--[a-z][a-z-]*", " ", t)  # command-line options
            t = re.sub(r"[\w.-]+\.(?:jsonl|html|csv)\b", " ", t)  # file names
            t = t.replace("runs/<k>/conversations/", " ")  # a folder of the run
            for ref in self.refs:
                t = t.replace(ref, " ")
            t = re.sub(r"[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*", " ", t)  # ids, seeds, question ids
            for w in re.findall(r"[A-Za-z]+", t):
                if w in self.allowed or (in_keys and (len(w) == 1 or w in KEY_CAPS)):
                    continue
                found[w] += 1
        return found

    def on(self, page, roots: str = "") -> Counter[str]:
        return self.left(page.evaluate(_TEXTS, [roots, DATA]))


@pytest.fixture(scope="module")
def zh_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("zhwords") / "run"
    run_vera(
        "run", "--locale", "zh-CN", "--out", str(out), "--seed", "2", "--limit-personas", "12", "--quiet"
    )
    return out


@pytest.fixture(scope="module")
def words(zh_run) -> Words:
    return Words(zh_run)


@pytest.fixture(scope="module")
def view_url(zh_run) -> Iterator[str]:
    proc, url = start_view(str(zh_run))
    yield url
    stop(proc)


@pytest.fixture
def page(browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    yield context.new_page()
    context.close()


def test_every_marked_text_of_the_static_pages_has_the_pack_s_words():
    """A data-ui text the pack lacks would be shown in English: the pack has them all."""
    own = ui_strings("zh-CN", str(ZH_PACK)).own
    for name, section in (("index.html", "viewer"), ("review.html", "review")):
        page = resources.files("vera.viewer").joinpath("static", name).read_text(encoding="utf-8")
        keys = set(re.findall(r'data-ui(?:-placeholder)?="([a-z_]+)"', page))
        assert keys, name
        missing = sorted(k for k in keys if f"{section}.{k}" not in own)
        assert not missing, (name, missing)


def test_the_rating_guide_in_the_pack_s_words_and_in_english(zh_run):
    from vera.inputs import run_strings
    from vera.rubric import GUIDE_WORDS, rating_guide, run_rubric
    from vera.viewer.words import guide_words, option_namer

    records = open_run(zh_run)
    rubric, why = run_rubric(records.manifest, records.root)
    assert rubric is not None, why
    zh = run_strings([records.manifest])
    guide = rating_guide(rubric, guide_words(zh), option_namer(records.manifest, records.root, zh))
    text = " ".join(
        f"{m.summary} {' '.join(m.questions)}" for ratings in guide.values() for m in ratings.values()
    )
    assert "“否”" in text and "回答为" in text
    assert set(re.findall(r"[A-Za-z]+", text)) <= ALLOWED, text[:300]
    # Without a pack: the guide's own English, options by their quoted labels.
    english = rating_guide(rubric)
    assert english[rubric.dimensions[0]]["Best Practice"].summary == GUIDE_WORDS["best"]


def test_the_way_back_from_the_card_and_the_comparison_in_both_languages():
    from vera.inputs import use_strings
    from vera.viewer.compare import back_nav, frame_page

    assert back_nav("../../index.html") == (
        '<nav aria-label="Page"><a href="../../index.html">← All conversations</a></nav>'
    )
    with use_strings(ui_strings("zh-CN", str(ZH_PACK))):
        assert back_nav() == '<nav aria-label="页面"><a href="index.html">← 全部对话</a></nav>'
        frame = frame_page(2, by_seed=False)
    assert '<html lang="zh-CN">' in frame and "<h1>vera 比较</h1>" in frame and "正在比较 2 个运行" in frame


def _open_all(page) -> None:
    open_all(page)


def _none(found: Counter[str]) -> None:
    assert not found, f"English left on the page: {dict(found)}"


@pytest.mark.slow
def test_the_list_page_and_its_keyboard_help(page, view_url, words):
    page.goto(view_url)
    page.wait_for_selector("#list tbody tr")
    assert page.locator("#pager button[data-step=next]").inner_text() == "下一页 →"
    _none(words.on(page))
    page.keyboard.press("?")
    assert page.locator("#keys h2").inner_text() == "键盘快捷键"
    _none(words.on(page))


@pytest.mark.slow
def test_a_search_names_where_it_found_each_passage_in_chinese(page, view_url, words):
    page.goto(f"{view_url}?q=真人")
    page.wait_for_selector(".snippets a")
    where = page.locator(".snippets a").all_inner_texts()
    assert any(re.fullmatch(r"第 \d+ 轮 · 聊天机器人", w) for w in where), where
    _none(words.on(page, ".snippets a"))
    _none(words.on(page))


@pytest.mark.slow
def test_the_runs_of_a_folder(page, zh_run, words):
    """`vera view FOLDER` of zh-CN runs: the runs list in the pack's words."""
    proc, url = start_view(str(zh_run.parent))
    try:
        page.goto(url)
        page.wait_for_selector("#run-list tbody tr")
        assert page.locator("#run-list .state").first.inner_text() == "已完成"
        words.refs.insert(0, str(zh_run.parent))  # the folder's path, as the page names it
        _none(words.on(page))
    finally:
        words.refs.remove(str(zh_run.parent))
        stop(proc)


@pytest.mark.slow
def test_n_and_p_find_the_pager_buttons_by_data_step_whatever_their_words(page, view_url):
    page.goto(f"{view_url}?per_page=10")
    page.wait_for_selector("#pager button[data-step=next]:not([disabled])")
    page.keyboard.press("n")
    page.wait_for_function("() => new URLSearchParams(location.search).get('page') === '2'")
    page.wait_for_function("() => document.querySelector('#pager span').textContent.startsWith('第 2 页')")
    page.keyboard.press("p")
    page.wait_for_function("() => !new URLSearchParams(location.search).get('page')")


# The parts of a conversation page the viewer writes: its calls sections, the step bar,
# the keyboard hint and help.
VIEWER_PARTS = "#calls, #call-bodies, .question-calls, nav.steps, .keys-hint, #keys"


@pytest.mark.slow
def test_a_conversation_page_with_its_calls_open_and_its_keyboard_help(browser, view_url, words, tmp_path):  # noqa: F811
    for width, height in ((1400, 900), (400, 850)):
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        try:
            page.goto(view_url)
            page.wait_for_selector("#list tbody tr")
            page.locator("#list tbody td.id a").first.click()
            page.wait_for_selector("#call-bodies")
            _open_all(page)
            assert page.locator("button.copy").first.inner_text() == "复制"
            assert page.locator("nav.steps a[rel=next]").inner_text() == "下一段 →"
            _none(words.on(page, VIEWER_PARTS))
            # The whole page, its own part (vera/report/shared/_pages.py) included: the
            # run's values (risk, status, the judge's answers) in the pack's words too.
            _none(words.on(page))
            assert no_page_scroll(page), width
            # The calls table's top, then the first call's body open (copy buttons and all).
            page.evaluate("() => document.getElementById('calls').scrollIntoView()")
            shot(page, tmp_path, f"zh-CN-conversation-calls-{width}")
            page.evaluate("() => document.getElementById('call-bodies').scrollIntoView()")
            shot(page, tmp_path, f"zh-CN-conversation-bodies-{width}")
            page.keyboard.press("?")
            assert page.locator("#keys h2").inner_text() == "键盘快捷键"
            _none(words.on(page, VIEWER_PARTS))
        finally:
            context.close()


@pytest.mark.slow
def test_the_grid_a_persona_side_by_side_and_the_way_back_from_the_card(page, view_url, words):
    page.goto(f"{view_url}grid")
    assert page.locator("h1").inner_text() == "聊天机器人 × 人物"
    _none(words.on(page))
    page.locator("a.side").first.click()
    page.wait_for_selector("#side-by-side")
    _none(words.on(page))
    # The card (vera/report's) served by the viewer: the way back the viewer adds.
    page.goto(f"{view_url}runs/0/card.html")
    assert page.locator("body > nav a").first.inner_text() == "← 全部对话"
    assert page.locator("body > nav").first.get_attribute("aria-label") == "页面"


@pytest.mark.slow
def test_the_review_and_its_keyboard_help(page, zh_run, words):
    proc, url = start_review(str(zh_run), "--rater", "评分人乙", "--size", "3")
    try:
        page.goto(url)
        page.wait_for_selector("#turns .who")
        _open_all(page)
        _none(words.on(page))
        page.locator("#save").click()  # refused, in Chinese, naming the dimensions
        assert page.inner_text("#status").startswith("请先为每个维度评分：")
        _none(words.on(page))
        page.keyboard.press("?")
        assert not page.locator("#review-keys").is_hidden()
        _none(words.on(page))
    finally:
        stop(proc)


@pytest.mark.slow
def test_the_reviews_mishaps_and_its_end_in_chinese(page, zh_run, words, tmp_path):
    run = tmp_path / "run"  # a copy: saving writes human_ratings.jsonl
    shutil.copytree(zh_run, run)
    proc, url = start_review(str(run), "--rater", "评分人丙", "--size", "1")
    try:
        other = page.context.new_page()
        for p in (page, other):
            p.goto(url)
            p.wait_for_selector("#turns .who")
            for i in range(p.locator("fieldset.dimension").count()):
                p.locator(f"input[name=dim-{i}]").first.check()
        page.locator("#save").click()
        page.wait_for_function(
            "() => document.querySelector('#form-status').textContent.startsWith('已保存')"
        )
        other.locator("#save").click()  # the same conversation in a second tab
        other.wait_for_function(
            "() => document.querySelector('#form-status').textContent.startsWith('未保存')"
        )
        said = other.inner_text("#form-status")
        assert "）：Best Practice（最佳做法）、" in said, said  # the pack's colon and separator
        _none(words.on(other))
        page.locator("#next").click()
        page.wait_for_selector("#done", state="visible")
        assert "vera score" in page.inner_text("#done-next")
        _none(words.on(page))
    finally:
        stop(proc)


@pytest.mark.slow
def test_the_bundle_from_file(page, zh_run, view_url, words, tmp_path):
    write_bundle(zh_run, tmp_path / "bundle")
    page.goto((tmp_path / "bundle" / "index.html").as_uri())
    page.wait_for_selector("#list tbody tr")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    _none(words.on(page))
    page.locator("#list tbody td.id a").first.click()
    page.wait_for_selector("nav.steps a[rel=next]")  # the bundle's step bar, made by its script
    _open_all(page)
    assert page.locator("nav.steps a[rel=next]").inner_text() == "下一段 →"
    _none(words.on(page, VIEWER_PARTS))
    _none(words.on(page))
    page.goto((tmp_path / "bundle" / "grid.html").as_uri())
    _none(words.on(page))
    # Narrowed by the list's filters (a judge's: each square's title made again by the
    # script, from the pack's words): the server's grid, word for word.
    judge = open_run(zh_run).manifest.judges[0].ref
    query = urlencode({"judge": judge, "status": "complete", "sort": "id"})
    page.goto(f"{(tmp_path / 'bundle' / 'index.html').as_uri()}?{query}")
    page.wait_for_selector("#list tbody tr")
    follow(page, "#grid-link", "#grid")
    got = grid_state(page)
    titles = [c["title"] for r in got["rows"] for cell in r["cells"] for c in cell["chips"]]
    assert got["counts"].endswith("（已筛选）") and any("最差评分" in t for t in titles)
    _none(words.on(page))
    page.goto(f"{view_url}grid?{query}")
    assert grid_state(page) == got
    # A persona side by side from it, the same on both.
    follow(page, "#grid a.side", "#side-by-side")
    want = page.evaluate(SIDE_STATE)
    open_grid(page, f"{(tmp_path / 'bundle' / 'grid.html').as_uri()}?{query}")
    follow(page, "#grid a.side", "#side-by-side")
    assert page.evaluate(SIDE_STATE) == want and want["summary"].endswith("段对话。")
    _none(words.on(page))
    page.goto(f"{(tmp_path / 'bundle' / 'grid.html').as_uri()}#sort=nope")
    assert page.inner_text("#grid-refused").startswith("此网格无法套用列表的筛选条件：")
