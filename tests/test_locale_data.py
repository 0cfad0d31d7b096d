"""The zh-CN locale pack as data (locales/zh-CN, issue 33): the persona set has the base
set's columns, design and risk mix; every prompt has the base prompt's placeholders; the
rubric's flow is the base rubric's, loaded with vera's own loader; every crisis line has
all its fields and a public source; nothing names a method; nothing repeats the
reference data. The checks every pack must pass are `vera validate locale`
(vera.inputs.validate_locale), called here; the rest are zh-CN's own (Chinese text,
the Chinese factor descriptions, the regions and numbers it must have)."""

from __future__ import annotations

import csv
import re
import tomllib
from pathlib import Path

import pytest

import vera.records as rec
from vera.inputs import check_resources, validate_locale
from vera.inputs._personas import check_personas, label
from vera.inputs._prompts import load_judge_prompt_set, load_user_prompt_set
from vera.rubric._load import load_rubric

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "locales" / "zh-CN"
BASE_PERSONAS = ROOT / "personas" / "vera-personas.tsv"
BASE_FACTORS = ROOT / "personas" / "factors.tsv"
BASE_RUBRIC = ROOT / "rubrics" / "vera-si.tsv"
REFERENCE = ROOT.parent / "shared" / "reference"

PERSONAS = PACK / "personas.tsv"
LABELS = PACK / "factor-labels.tsv"
RUBRIC = PACK / "rubric.tsv"
RESOURCES = PACK / "resources.toml"
BASE_RESOURCES = ROOT / "resources" / "crisis-lines.toml"

NARRATIVE = (
    "Name",
    "Background",
    "Current Suicidal Thoughts and Behaviors",
    "Recent Triggers and Stressors",
    "Final Seed Phrase",
)
CJK = re.compile(r"[\u3400-\u9fff]")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][^{}\"\n]*)\}")

# Crude screen for method detail (means, methods, places, amounts), in both scripts.
# Generic words a rubric needs ("手段", "方法") are allowed; named means are not.
DENY_ZH = (
    "跳楼", "跳樓", "跳河", "跳海", "跳桥", "跳橋", "跳下", "天台", "楼顶", "樓頂", "顶楼",
    "頂樓", "顶层", "頂層", "农药", "農藥", "百草枯", "安眠药", "安眠藥", "烧炭", "燒炭",
    "木炭", "割腕", "上吊", "吊死", "绳子", "繩子", "绳索", "刀片", "刀子", "药片", "藥片",
    "剂量", "劑量", "毫克", "煤气", "煤氣", "枪", "槍", "溺水", "窒息", "吞药", "吞藥",
    "服毒", "毒药", "毒藥", "过量", "過量", "铁轨", "鐵軌", "卧轨", "臥軌", "悬崖", "懸崖",
    "攒药", "囤药", "助眠", "海边", "海邊", "江边", "江邊",
)  # fmt: skip
DENY_EN = re.compile(
    r"\b(?:overdose\w*|noose|hanging|hanged|guns?|firearms?|pistol|rifle|shotgun|bullets?|"
    r"rope|ligature|blades?|razors?|knife|knives|wrists?|poison\w*|lethal|doses?|dosage|"
    r"milligrams?|mg|pills|jump\w*|bridge|rooftop|cliff|ledge|railway|drown\w*|suffocat\w*|"
    r"cutting|slit|stab|shoot)\b",
    re.IGNORECASE,
)
# Rubric guidance may speak of lethality and doses in the abstract, as the base rubric
# does ("compares how lethal ... mentions amounts"); the English screen skips it.
RUBRIC_EN_OK = {"lethal"}


def tsv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows[0], [dict(zip(rows[0], r, strict=True)) for r in rows[1:] if any(r)]


def pack_text_files() -> list[Path]:
    return [
        *sorted(p for p in PACK.rglob("*") if p.is_file()),
        ROOT / "locales" / "README.md",
        BASE_RESOURCES,
    ]


# --- files ---------------------------------------------------------------------------


def test_pack_files_are_utf8_without_bom_or_crlf():
    for p in pack_text_files():
        raw = p.read_bytes()
        assert not raw.startswith(b"\xef\xbb\xbf"), f"{p}: byte-order mark"
        assert b"\r" not in raw, f"{p}: carriage return"
        raw.decode("utf-8")


# --- the validator ---------------------------------------------------------------------


def test_vera_validate_locale_finds_no_problem():
    """Encoding, persona columns, design and risk mix, prompt placeholders, the rubric's
    flow and every crisis line's fields: the checks any pack must pass."""
    assert validate_locale(PACK) == []
    assert check_resources(BASE_RESOURCES) == []


def test_the_pack_keeps_the_base_risk_mix():
    zh, _ = check_personas(PERSONAS)
    assert zh is not None and zh.version.name == "vera-personas-zh-CN"
    assert zh.distribution() == {"None": 10, "Low": 30, "High": 30, "Immediate": 30}


# --- personas ------------------------------------------------------------------------


def test_persona_factors_are_the_base_design_slot_for_slot():
    """Every factor cell is the base factor's canonical label (what the code keys on)
    followed by its Chinese description from factor-labels.tsv, in factors.tsv order."""
    _, factors = tsv(BASE_FACTORS)
    _, personas = tsv(PERSONAS)
    _, mapping = tsv(LABELS)
    zh = {(m["column"], m["label"]): m for m in mapping}

    def cell(column: str, lab: str) -> str:
        m = zh[(column, lab)]
        desc = f"{m['label_zh']}：{m['description_zh']}" if m["description_zh"] else m["label_zh"]
        return f"{lab} ({desc})"

    assert len(personas) == len(factors) == 100
    for slot, person in zip(factors, personas, strict=True):
        for column, base_value in slot.items():
            if column == "Slot":
                continue
            value = person[column]
            if column == "Short Current Suicide Risk Level":
                assert value == base_value, (slot["Slot"], column)
            elif column == "Current Suicide Risk Level":
                assert value == cell(column, label(base_value)), (slot["Slot"], column)
            else:
                labels = [label(part) for part in base_value.split(" | ")]
                expected = " | ".join(cell(column, lab) for lab in labels)
                assert value == expected, (slot["Slot"], column, value)


def test_factor_label_mapping_covers_exactly_the_design_lists():
    _, factors = tsv(BASE_FACTORS)
    used = set()
    for slot in factors:
        for column, value in slot.items():
            if column in ("Slot", "Short Current Suicide Risk Level"):
                continue
            used |= {(column, label(part)) for part in value.split(" | ")}
    _, mapping = tsv(LABELS)
    keys = [(m["column"], m["label"]) for m in mapping]
    assert len(keys) == len(set(keys))
    assert used <= set(keys)
    for m in mapping:
        assert CJK.search(m["label_zh"]), m


def test_personas_have_unique_names_and_seed_phrases_written_in_chinese():
    _, personas = tsv(PERSONAS)
    names = [p["Name"] for p in personas]
    assert len(set(names)) == 100
    assert len({p["Final Seed Phrase"] for p in personas}) == 100
    for p in personas:
        for column in NARRATIVE:
            assert CJK.search(p[column]), (p["Name"], column)
            assert not PLACEHOLDER.search(p[column]), (p["Name"], column)


# --- prompts -------------------------------------------------------------------------


def fields(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


def test_user_prompts_load_and_have_the_base_placeholders():
    zh = load_user_prompt_set(PACK / "prompts" / "user")
    base = load_user_prompt_set(ROOT / "personas" / "prompts")
    assert set(zh.system.fields) == set(base.system.fields)
    assert set(zh.reminder.fields) == set(base.reminder.fields)
    assert zh.end_marker == base.end_marker
    assert zh.opening == base.opening == ""  # same flow: the reminder rides on the first message
    for t in (zh.system, zh.reminder):
        assert CJK.search(t.text)
    meta = tomllib.loads((PACK / "prompts" / "user" / "prompts.toml").read_text(encoding="utf-8"))
    for key in ("opener", "chatbot_opener"):  # the engine's two opener lines have no placeholders
        text = (PACK / "prompts" / "user" / meta[key]).read_text(encoding="utf-8")
        assert fields(text) == set() and CJK.search(text), key


def test_judge_prompts_load_and_have_the_base_placeholders():
    zh = load_judge_prompt_set(PACK / "prompts" / "judge")
    base = load_judge_prompt_set(ROOT / "rubrics" / "prompts")
    for part in ("system", "question", "retry"):
        assert set(getattr(zh, part).fields) == set(getattr(base, part).fields), part
        assert CJK.search(getattr(zh, part).text), part
    assert (zh.placeholders, zh.answer_format) == (base.placeholders, base.answer_format)


def test_user_prompts_render_for_every_zh_persona():
    from vera.inputs._personas import check_templates, render_user_reminder, render_user_system

    pset, _ = check_personas(PERSONAS)
    prompts = load_user_prompt_set(PACK / "prompts" / "user")
    assert pset is not None
    assert check_templates(prompts, pset.columns) == []
    for p in pset.personas:
        text = render_user_system(p, prompts, min_turns=3, max_turns=10)
        assert p.name in text and "{" not in text.replace('{"', "")
        assert p.name in render_user_reminder(p, prompts, min_turns=3, max_turns=10)


# --- rubric --------------------------------------------------------------------------


def flow(path: Path) -> list[tuple[object, ...]]:
    r = load_rubric(path)
    return [
        (q.id, q.dimension, q.severity, q.risk, q.auto, tuple((o.label, o.goto) for o in q.options))
        for q in r.questions
    ]


def test_rubric_texts_are_chinese_and_every_option_has_display_text():
    zh, base = load_rubric(RUBRIC), load_rubric(BASE_RUBRIC)
    for q, b in zip(zh.questions, base.questions, strict=True):
        assert CJK.search(q.text) and CJK.search(q.guidance), q.id
        assert q.text != b.text and q.guidance != b.guidance, q.id
    _, rows = tsv(RUBRIC)
    for row in rows:
        assert bool(row["option"]) == bool(row["option_text"]), row["id"]
        if row["option_text"]:
            assert CJK.search(row["option_text"]), row
    meta = tomllib.loads((PACK / "rubric.toml").read_text(encoding="utf-8"))
    shown = {(d["of"], d["name"]) for d in meta["display"] if CJK.search(d["text"])}
    assert {("dimension", d) for d in zh.dimensions} <= shown
    ratings = (rec.BEST_PRACTICE, rec.SUBOPTIMAL, rec.HIGH_POTENTIAL_FOR_HARM, rec.NOT_RELEVANT)
    assert {("rating", r) for r in ratings} <= shown


def test_guides_to_human_care_names_the_locale_lines_not_988():
    """The judge rates guidance by the user's region: 12356 counts for a user in mainland
    China, 988 alone does not (G1 and G7 say so in their guidance)."""
    questions = {q.id: q for q in load_rubric(RUBRIC).questions}
    for qid in ("G1", "G7", "G11"):
        assert "12356" in questions[qid].guidance, qid
    for number in ("12356", "18111", "2389 2222", "1925", "2852 5222", "1767"):
        assert number in questions["G1"].guidance, number
    assert "988" in questions["G1"].guidance and "打不通" in questions["G1"].guidance


# --- resources -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "regions", "must"),
    [
        (RESOURCES, {"CN", "HK", "TW", "MO", "SG"}, {("CN", "12356"), ("TW", "1925"), ("MO", "2852 5222"), ("SG", "1767"), ("HK", "2389 2222")}),
        (BASE_RESOURCES, {"US", "GB", "CA", "AU"}, {("US", "988"), ("GB", "116 123"), ("CA", "988"), ("AU", "13 11 14")}),
    ],
)  # fmt: skip
def test_resources_cover_their_regions_and_lines(path, regions, must):
    """Fields, sources and dates are the validator's; here, which regions and lines."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert set(data["regions"]) == regions
    assert must <= {(e["region"], e["number"]) for e in data["resource"]}


# --- safety and originality ----------------------------------------------------------


def test_no_method_words_anywhere_in_the_pack():
    found = []
    for p in pack_text_files():
        text = p.read_text(encoding="utf-8")
        for word in DENY_ZH:
            if word in text:
                found.append(f"{p.name}: {word}")
        for m in DENY_EN.finditer(text):
            if not (p == RUBRIC and m.group(0).lower() in RUBRIC_EN_OK):
                found.append(f"{p.name}: {m.group(0)}")
    assert not found, found


def word_runs(text: str, n: int = 8) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9']+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def cjk_runs(text: str, n: int = 10) -> set[str]:
    chars = "".join(CJK.findall(text))
    return {chars[i : i + n] for i in range(len(chars) - n + 1)}


def test_no_overlap_with_the_reference_data():
    if not REFERENCE.is_dir():
        pytest.skip("reference data not present")
    words: set[tuple[str, ...]] = set()
    chars: set[str] = set()
    for p in REFERENCE.rglob("*"):
        if not p.is_file() or p.suffix not in {".tsv", ".csv", ".txt", ".md", ".json", ".toml"}:
            continue
        text = p.read_text(encoding="utf-8", errors="ignore")
        if p.suffix in {".tsv", ".csv"}:
            text = text.split("\n", 1)[1] if "\n" in text else ""  # field names are facts
        words |= word_runs(text)
        chars |= cjk_runs(text)
    shared = {}
    for p in pack_text_files():
        text = p.read_text(encoding="utf-8")
        if p.suffix == ".tsv":
            text = text.split("\n", 1)[1]
        hits = sorted(word_runs(text) & words) + sorted(cjk_runs(text) & chars)
        if hits:
            shared[str(p.relative_to(ROOT))] = hits[0]
    assert not shared, shared


# --- the pack as a target ------------------------------------------------------------


def test_the_pack_loads_as_a_target_with_its_own_files():
    """Until `--locale` exists, the pack runs as a target: `vera run --target locales/zh-CN`."""
    from vera.inputs._targets import find_target, load_target

    target = load_target(find_target(str(PACK)))
    assert Path(target.rubric) == RUBRIC.resolve()
    assert [Path(p) for p in target.personas] == [PERSONAS.resolve()]
    assert Path(target.user_prompts) == (PACK / "prompts" / "user").resolve()
    assert Path(target.judge_prompts) == (PACK / "prompts" / "judge").resolve()
    assert target.group_by == "risk"


def test_the_rating_names_use_one_word_for_harm_everywhere():
    # "Harm" is 伤害 in the HPH name, the card's reading guide and the agreement legend;
    # the Suboptimal name the viewer and the review show (rubric.toml [[display]]) must
    # say it the same way, not 危害.
    display = {d["name"]: d["text"] for d in tomllib.loads((PACK / "rubric.toml").read_text())["display"]}
    strings = (PACK / "strings.toml").read_text(encoding="utf-8")
    sub, hph = display["Suboptimal but Low Potential for Harm"], display["High Potential for Harm"]
    assert "伤害" in hph and "伤害" in sub and "危害" not in sub, (sub, hph)
    assert f"SUB {sub}" in strings  # the agreement legend names it with the same words
