"""`vera score` writes a conversation page only when the page would come out different
from the file on disk: a second score with nothing changed writes none, a changed
input redraws exactly the pages it shows on, and what is left on disk is byte for byte
what a score into an empty folder writes. Nothing the page shows may be trusted stale:
the judgements, the rubric's texts, the locale pack's words, the code that draws it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import msgspec
import pytest

from vera.records import LocaleInfo
from vera.report.shared import _pages
from vera.report.shared._pages import PAGES_DIR, PAGES_NOTE, sources_signature, write_card_pages
from vera.store import open_run

from ..conftest import ROOT
from .conftest import MARKUP_ID, SUB, invoke_vera

MARKUP_PAGE = f"{MARKUP_ID}.html"


def score(run: Path) -> None:
    result = invoke_vera("score", str(run), "--resamples", "50")
    assert result.exit_code == 0, result.output


def signature(path: Path) -> tuple[int, int] | None:
    """A file's inode and mtime: a file written again (a temporary file renamed over
    it) gets a new inode, however quickly it was written."""
    return (path.stat().st_ino, path.stat().st_mtime_ns) if path.exists() else None


def files(run: Path) -> dict[str, tuple[int, int] | None]:
    return {p.name: signature(p) for p in (run / PAGES_DIR).glob("*.html")}


def contents(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run / PAGES_DIR).glob("*.html"))}


def rewritten(before: dict[str, tuple[int, int] | None], run: Path) -> set[str]:
    after = files(run)
    assert after.keys() == before.keys()
    return {name for name, sig in after.items() if sig != before[name]}


def fresh_pages(run: Path, tmp_path: Path) -> dict[str, bytes]:
    """The pages a score writes into a copy of `run` without any."""
    fresh = tmp_path / "fresh"
    shutil.copytree(run, fresh)
    shutil.rmtree(fresh / PAGES_DIR)
    score(fresh)
    return contents(fresh)


@pytest.fixture
def run(tmp_path: Path, viewer_run: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(viewer_run, out)
    score(out)
    return out


def test_a_second_score_with_nothing_changed_writes_no_page(run: Path) -> None:
    before, note = files(run), signature(run / PAGES_NOTE)
    assert len(before) > 2 and MARKUP_PAGE in before
    score(run)
    assert rewritten(before, run) == set()
    assert signature(run / PAGES_NOTE) == note  # nor the note of what was drawn


def test_a_changed_rating_redraws_that_page_only_as_a_fresh_score_draws_it(run: Path, tmp_path: Path) -> None:
    # The second judge now finds the markup conversation's care Suboptimal: the
    # conversation stays on the card (the first judge's High Potential for Harm), and
    # its page shows one rating more.
    path = run / "judgements.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    changed = 0
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record["id"] == "markup-judgement-2":
            for r in record["ratings"]:
                if r["dimension"] == "Guides to Human Care":
                    r.update(rating=SUB, question_id="G1", reasoning="A new reasoning.")
            lines[i] = json.dumps(record).encode() + b"\n"
            changed += 1
    assert changed == 1
    path.write_bytes(b"".join(lines))
    before = files(run)
    score(run)
    assert rewritten(before, run) == {MARKUP_PAGE}
    assert "A new reasoning." in (run / PAGES_DIR / MARKUP_PAGE).read_text()
    assert contents(run) == fresh_pages(run, tmp_path)


def test_a_page_changed_or_gone_on_disk_is_drawn_again(run: Path) -> None:
    pages = contents(run)
    others = sorted(name for name in pages if name != MARKUP_PAGE)
    edited, gone = others[0], others[1]
    (run / PAGES_DIR / edited).write_bytes(pages[edited][:100])  # a torn page
    (run / PAGES_DIR / gone).unlink()
    before = files(run)
    score(run)
    assert contents(run) == pages
    after = files(run)
    assert {name for name in before if after[name] != before[name]} == {edited}
    assert gone in after


def test_without_its_note_every_page_is_drawn_and_none_that_is_the_same_written(run: Path) -> None:
    (run / PAGES_NOTE).write_text("{not json")
    before, pages = files(run), contents(run)
    score(run)
    assert rewritten(before, run) == set() and contents(run) == pages
    assert msgspec.json.decode((run / PAGES_NOTE).read_bytes())["pages"].keys() == pages.keys()


def test_a_rubric_changed_since_the_run_redraws_every_page(run: Path, tmp_path: Path) -> None:
    rubric = tmp_path / "rubric.tsv"
    manifest = json.loads((run / "manifest.json").read_text())
    shutil.copy(manifest["rubric"]["path"], rubric)
    manifest["rubric"]["path"] = str(rubric)
    (run / "manifest.json").write_text(json.dumps(manifest))
    score(run)  # the same rubric, found elsewhere: the same pages
    before = files(run)
    rubric.write_text(rubric.read_text() + "\n")  # edited since the run: its texts are not shown
    score(run)
    assert rewritten(before, run) == set(before)
    assert all("has changed since this run" in html.decode() for html in contents(run).values())
    assert contents(run) == fresh_pages(run, tmp_path)


def card_pages_inputs(run: Path) -> tuple[list[str], dict, list]:
    records = open_run(run)
    linked = sorted(p.stem for p in (run / PAGES_DIR).glob("*.html"))
    conversations = {cid: records.read_conversation(cid) for cid in linked}
    judgements = [records.read_judgement(j.id) for cid in linked for j in records.judgements_of(cid)]
    return linked, conversations, judgements


def test_the_locale_pack_s_words_as_read_now_redraw_every_page(run: Path, tmp_path: Path) -> None:
    pack = tmp_path / "zh-CN"
    shutil.copytree(ROOT / "locales" / "zh-CN", pack)
    records = open_run(run)
    locale = LocaleInfo(
        tag="zh-CN", version="1", path=str(pack), language="中文", resources_version="", resources_sha256=""
    )
    zh = msgspec.structs.replace(records.manifest, locale=locale)
    linked, conversations, judgements = card_pages_inputs(run)
    assert write_card_pages(run, linked, zh, conversations, judgements) == len(linked)  # English to Chinese
    assert all("评分卡" in html.decode() for html in contents(run).values())
    assert write_card_pages(run, linked, zh, conversations, judgements) == 0
    # A translation fixed in the pack since: the run's manifest is the same.
    strings = pack / "strings.toml"
    text = strings.read_text(encoding="utf-8")
    page = text.index("\n[page]\n")
    strings.write_text(
        text[:page] + text[page:].replace('score_card = "评分卡"', 'score_card = "安全评分卡"', 1),
        encoding="utf-8",
    )
    assert write_card_pages(run, linked, zh, conversations, judgements) == len(linked)
    assert all("安全评分卡" in html.decode() for html in contents(run).values())
    before = files(run)
    assert write_card_pages(run, linked, records.manifest, conversations, judgements) == len(linked)
    assert rewritten(before, run) == set(before)  # back to English


def test_a_page_drawn_by_other_code_is_drawn_again(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    linked, conversations, judgements = card_pages_inputs(run)
    manifest = open_run(run).manifest
    pages = contents(run)
    # Code that draws the pages alike (any other source of vera): every page is drawn,
    # none written.
    monkeypatch.setattr(_pages, "_CODE", "other code")
    assert write_card_pages(run, linked, manifest, conversations, judgements) == 0
    assert contents(run) == pages
    # Another version: its footer names it, on every page.
    monkeypatch.setattr(_pages, "__version__", "9.9.9-test")
    before = files(run)
    assert write_card_pages(run, linked, manifest, conversations, judgements) == len(linked)
    assert rewritten(before, run) == set(before)
    assert all("9.9.9-test" in html.decode() for html in contents(run).values())


def test_the_sources_signature_follows_every_source_file(tmp_path: Path) -> None:
    src = tmp_path / "pkg"
    (src / "sub" / "__pycache__").mkdir(parents=True)
    (src / "a.py").write_text("A = 1\n")
    css = src / "sub" / "page.css"
    css.write_text("p {}\n")
    st = css.stat()
    first = sources_signature(src)
    assert sources_signature(src) == first
    (src / "sub" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"compiled")
    assert sources_signature(src) == first  # compiled bytecode is not a source
    css.write_text("p { color: red }\n")
    assert sources_signature(src) != first
    css.write_text("p {}\n")
    os.utime(css, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert sources_signature(src) == first  # the same file again
    os.utime(css, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert sources_signature(src) != first  # touched: drawn again (and written only if different)
    os.utime(css, ns=(st.st_atime_ns, st.st_mtime_ns))
    css.rename(src / "sub" / "other.css")  # renamed: another file
    assert sources_signature(src) != first
    missing = tmp_path / "gone"
    assert sources_signature(missing) != sources_signature(missing)  # unreadable: never the same
