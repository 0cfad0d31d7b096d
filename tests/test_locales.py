"""Locale packs as a mechanism: `--locale TAG|DIR` (and `locale =` in a config or a
target) points a run at a pack's files and falls back to the base for the rest;
`vera validate locale` checks a pack against the base, each problem one line naming the
file, row and field."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from vera.engine._simulate import CHATBOT_OPENER, USER_AGENT_OPENER, chatbot_view, user_view
from vera.errors import ConfigError
from vera.inputs import (
    REPO_ROOT,
    find_locale,
    load_config,
    load_locale,
    validate_locale,
)
from vera.inputs._prompts import load_user_prompt_set
from vera.records import Turn

from .targets import vera

ZH = REPO_ROOT / "locales" / "zh-CN"
GB = REPO_ROOT / "locales" / "en-GB"


def pack_copy(tmp_path: Path, source: Path = ZH) -> Path:
    dest = tmp_path / source.name
    shutil.copytree(source, dest)
    return dest


# --- finding and applying a pack -----------------------------------------------------


def test_a_tag_names_vera_s_own_pack_and_a_folder_any_pack(tmp_path):
    assert find_locale("zh-CN") == ZH.resolve()
    assert find_locale("ZH-cn") == ZH.resolve()
    mine = pack_copy(tmp_path)
    assert find_locale(str(mine)) == mine.resolve()
    with pytest.raises(ConfigError, match=r"locale 'xx-YY': no such pack folder.*zh-CN"):
        find_locale("xx-YY")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="not a locale pack"):
        find_locale(str(tmp_path / "empty"))


def test_a_config_s_locale_replaces_the_files_the_pack_holds(tmp_path):
    cfg_file = tmp_path / "run.toml"
    cfg_file.write_text('locale = "zh-CN"\n')
    cfg = load_config(cfg_file)
    assert Path(cfg.rubric) == ZH / "rubric.tsv"
    assert Path(str(cfg.personas)) == ZH / "personas.tsv"
    assert Path(cfg.user_prompts) == ZH / "prompts" / "user"
    assert Path(cfg.judge_prompts) == ZH / "prompts" / "judge"
    assert cfg.locale == "zh-CN"


def test_files_the_config_names_win_over_the_pack_s(tmp_path):
    cfg_file = tmp_path / "run.toml"
    cfg_file.write_text(f'locale = "zh-CN"\npersonas = "{REPO_ROOT / "personas" / "vera-personas.tsv"}"\n')
    cfg = load_config(cfg_file)
    assert Path(str(cfg.personas)) == REPO_ROOT / "personas" / "vera-personas.tsv"
    assert Path(cfg.rubric) == ZH / "rubric.tsv"


def test_what_a_pack_lacks_is_the_base(tmp_path):
    """A pack of a locale.toml and resources alone: every file is the base's, the
    resources are the pack's."""
    pack = tmp_path / "xx"
    pack.mkdir()
    (pack / "locale.toml").write_text(
        'format = "vera-locale/1"\ntag = "xx"\nversion = "0.1.0"\nlanguage = "en"\n'
    )
    shutil.copy(GB / "resources.toml", pack / "resources.toml")
    text = (pack / "resources.toml").read_text().replace('locale = "en-GB"', 'locale = "xx"')
    (pack / "resources.toml").write_text(text)
    loaded = load_locale(pack)
    assert loaded.files == {}
    assert loaded.resources.default_region == "GB"
    cfg_file = tmp_path / "run.toml"
    cfg_file.write_text(f'locale = "{pack}"\n')
    cfg = load_config(cfg_file)
    assert Path(cfg.rubric) == REPO_ROOT / "rubrics" / "vera-si.tsv"
    assert Path(cfg.user_prompts) == REPO_ROOT / "personas" / "prompts"
    assert validate_locale(pack) == []


def test_a_target_names_its_locale_and_its_files_stay_the_target_s():
    from vera.inputs import RunConfig, apply_target

    cfg = RunConfig(base_dir=str(REPO_ROOT))
    apply_target(cfg, str(ZH))
    assert cfg.locale == "zh-CN"
    assert Path(cfg.rubric) == ZH / "rubric.tsv"


def test_the_pack_s_opener_lines_replace_the_engine_s_english_ones():
    zh = load_user_prompt_set(ZH / "prompts" / "user")
    base = load_user_prompt_set(REPO_ROOT / "personas" / "prompts")
    assert zh.opener.startswith("[") and re.search(r"[\u3400-\u9fff]", zh.opener)
    first = user_view([], "REMINDER", zh)[0].content
    assert first.startswith(zh.opener) and first.endswith("REMINDER")
    assert user_view([], "REMINDER", base)[0].content.startswith(USER_AGENT_OPENER)
    bot = chatbot_view([Turn("chatbot", "hi")], "", opener=zh.chatbot_opener)
    assert bot[0].content == zh.chatbot_opener != CHATBOT_OPENER


# --- vera validate locale ------------------------------------------------------------


def test_vera_s_packs_are_sound():
    assert validate_locale(ZH) == []
    assert validate_locale(GB) == []


def _edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def _row(path: Path, qid: str, column: str, value: str) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    header = lines[0].split("\t")
    for i, line in enumerate(lines):
        cells = line.split("\t")
        if cells[0] == qid:
            cells[header.index(column)] = value
            lines[i] = "\t".join(cells)
            break
    path.write_text("\n".join(lines), encoding="utf-8")


BREAKS = {
    "a GOTO": (
        lambda p: _row(p / "rubric.tsv", "D1", "goto", "G0"),
        r"rubric\.tsv:\d+: error: question D1: options and GOTOs differ",
    ),
    "a severity": (
        lambda p: _row(p / "rubric.tsv", "B3", "severity", "Yellow"),
        r"rubric\.tsv:\d+: error: question B3: severity",
    ),
    "a judge placeholder": (
        lambda p: _edit(p / "prompts" / "judge" / "judge_question.txt", "{options}", "选项"),
        r"judge_question\.txt: error: judge question prompt: placeholder \{options\} missing",
    ),
    "a persona column": (
        lambda p: _edit(p / "personas.tsv", "Name\t", "名字\t"),
        r"personas\.tsv:1: error: lacks column 'Name'",
    ),
    "a persona's risk": (
        lambda p: _edit(p / "personas.tsv", "\tImmediate\t", "\tHigh\t"),
        r"personas\.tsv: error: risk mix",
    ),
    "a resource's source": (
        lambda p: _edit(p / "resources.toml", 'source = "http', 'source = "see the website http'),
        r"resources\.toml:\d+: error: \[\[resource\]\] 1 \(全国心理援助热线\): source must be the public page",
    ),
    "a resource's international mark": (
        lambda p: _edit(
            p / "resources.toml", "checked = 2026-12-06\n", 'checked = 2026-12-06\ninternational = "yes"\n'
        ),
        r"resources\.toml:\d+: error: \[\[resource\]\] 1 \(.*\): international must be true or false",
    ),
    "a resource's date": (
        lambda p: _edit(p / "resources.toml", "checked = 2026-12-06\n", ""),
        r"resources\.toml:\d+: error: \[\[resource\]\] 1 \(.*\): checked missing or empty",
    ),
}


@pytest.mark.parametrize("what", list(BREAKS))
def test_a_broken_pack_is_named_file_row_and_field(tmp_path, what):
    pack = pack_copy(tmp_path)
    breaks, expected = BREAKS[what]
    breaks(pack)
    lines = [i.render(str(pack)) for i in validate_locale(pack)]
    assert lines, what
    assert any(re.search(expected, line) for line in lines), lines


def test_vera_validate_locale_exits_non_zero_with_one_line_per_problem(tmp_path):
    pack = pack_copy(tmp_path)
    _row(pack / "rubric.tsv", "B3", "severity", "Yellow")
    bad = vera("validate", "locale", str(pack))
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert re.search(
        r"rubric\.tsv:\d+: error: question B3: severity 'Yellow' is not the base's 'Red'", bad.stdout
    ), bad.stdout
    good = vera("validate", "locale", "zh-CN")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "ok — locale zh-CN 1.2.0" in good.stdout
    gone = vera("validate", "locale", str(tmp_path / "nowhere"))
    assert gone.returncode != 0 and "Traceback" not in gone.stderr


# --- a run names its pack --------------------------------------------------------------


def test_a_run_with_a_locale_names_the_pack_in_its_manifest_and_card(tmp_path):
    out = tmp_path / "run"
    made = vera("run", "--locale", "en-GB", "--limit-personas", "2", "--out", str(out), "--quiet")
    assert made.returncode == 0, made.stdout + made.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["locale"] == "en-GB"
    assert (manifest["locale"]["tag"], manifest["locale"]["version"]) == ("en-GB", "1.0.0")
    assert manifest["rubric"]["name"] == "vera-si-en-GB"  # the pack's rubric ...
    assert manifest["personas"]["name"] == "vera-personas"  # ... and the base's personas
    card = json.loads((out / "card.json").read_text())
    assert card["locale"]["tag"] == "en-GB"
    assert "**Locale pack:** en-GB 1.0.0" in (out / "card.md").read_text()


def test_a_run_without_a_locale_writes_no_locale_key(tmp_path):
    out = tmp_path / "run"
    made = vera("run", "--limit-personas", "1", "--seed", "1", "--out", str(out), "--quiet")
    assert made.returncode == 0, made.stdout + made.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert "locale" not in manifest and "locale" not in manifest["config"]
    card = json.loads((out / "card.json").read_text())
    assert "locale" not in card and "language" not in card
