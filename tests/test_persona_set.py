"""The persona set as data: design reproducibility, shape, distribution, prompt
placeholders, the rendered catalogue, originality against the reference set, and a crude
safety screen. Uses only the standard library and the scripts in personas/ (not vera)."""

from __future__ import annotations

import collections
import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PERSONAS = ROOT / "personas"
TSV = PERSONAS / "vera-personas.tsv"
FACTORS = PERSONAS / "factors.tsv"
PROMPTS = PERSONAS / "prompts"
REFERENCE = ROOT.parent / "shared" / "reference" / "vera-mh-v1.1" / "data" / "personas.tsv"

COLUMNS = [
    # the 19 columns of the format, in file order (numbered: they are field names, not prose)
    "Name",  # 1
    "Age",  # 2
    "Gender",  # 3
    "Background",  # 4
    "Current Suicide Risk Level",  # 5
    "Disclosure of Suicide Risk",  # 6
    "Short Current Suicide Risk Level",  # 7
    "Remote History of Suicidal Thoughts and Behaviors",  # 8
    "Diagnoses and Symptoms",  # 9
    "Current Suicidal Thoughts and Behaviors",  # 10
    "Treatment Engagement / Access",  # 11
    "Primary Communication Style",  # 12
    "Reaction to Chatbot Responses",  # 13
    "Recent Triggers and Stressors",  # 14
    "Financial Stress",  # 15
    "Social Isolation",  # 16
    "Discrimination Exposure",  # 17
    "Mental Health Stigma",  # 18
    "Final Seed Phrase",  # 19
]
EXTRA_PLACEHOLDERS = {"end_marker", "min_turns", "max_turns"}
EXPECTED = {"None": 10, "Low": 30, "High": 30, "Immediate": 30}
RISK = "Short Current Suicide Risk Level"
DISCLOSURE = "Disclosure of Suicide Risk"

# Crude safety screen: generic words for means or methods that must not appear in any
# persona cell or user-agent prompt. Matched as whole words, case-insensitive.
DENY = (
    "overdose",
    "overdoses",
    "overdosed",
    "noose",
    "hanged",
    "hanging",
    "gun",
    "guns",
    "firearm",
    "firearms",
    "pistol",
    "rifle",
    "shotgun",
    "bullet",
    "bullets",
    "ammunition",
    "rope",
    "ligature",
    "blade",
    "blades",
    "razor",
    "razors",
    "knife",
    "knives",
    "wrist",
    "wrists",
    "poison",
    "poisoned",
    "poisoning",
    "lethal",
    "dose",
    "doses",
    "dosage",
    "milligram",
    "milligrams",
    "mg",
    "pills",
    "jump",
    "jumped",
    "jumping",
    "bridge",
    "rooftop",
    "cliff",
    "ledge",
    "railway",
    "drown",
    "drowning",
    "suffocate",
    "suffocation",
    "cutting",
    "slit",
    "stab",
    "shoot",
)
DENY_RE = re.compile(r"\b(?:" + "|".join(DENY) + r")\b", re.IGNORECASE)
WORD = re.compile(r"[a-z0-9']+")
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def read_tsv(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows[0], rows[1:]


def as_dicts(path: Path) -> list[dict[str, str]]:
    header, rows = read_tsv(path)
    return [dict(zip(header, row, strict=False)) for row in rows]


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, **kw)


def label(value: str) -> str:
    return value.split(" (", 1)[0]


def shingles(text: str, n: int = 8) -> set[tuple[str, ...]]:
    words = WORD.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


# --- design reproducibility ----------------------------------------------------------


@pytest.mark.slow
def test_design_check_passes():
    result = run("personas/design.py", "--check")
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_design_regenerates_factor_table(tmp_path):
    first, second = tmp_path / "a.tsv", tmp_path / "b.tsv"
    assert run("personas/design.py", "--out", str(first)).returncode == 0
    assert run("personas/design.py", "--out", str(second)).returncode == 0
    assert first.read_bytes() == second.read_bytes() == FACTORS.read_bytes()


@pytest.mark.slow
def test_design_check_detects_a_changed_table(tmp_path):
    changed = tmp_path / "factors.tsv"
    changed.write_bytes(FACTORS.read_bytes().replace(b"Minimal", b"Terse", 1))
    assert run("personas/design.py", "--check", "--out", str(changed)).returncode == 1


def test_persona_factor_columns_equal_factor_table():
    factors = as_dicts(FACTORS)
    personas = as_dicts(TSV)
    assert len(factors) == len(personas) == 100
    columns = [c for c in read_tsv(FACTORS)[0] if c != "Slot"]
    assert set(columns) <= set(COLUMNS)
    assert len(columns) == 14
    for i, (f, p) in enumerate(zip(factors, personas, strict=True), start=2):
        for column in columns:
            assert p[column] == f[column], f"line {i} ({p['Name']}), {column!r}"


# --- shape and distribution ----------------------------------------------------------


def test_shape_and_no_empty_cells():
    header, rows = read_tsv(TSV)
    assert header == COLUMNS
    assert len(rows) == 100
    for i, row in enumerate(rows, start=2):
        assert len(row) == 19, f"line {i}: {len(row)} cells"
        for column, cell in zip(header, row, strict=True):
            assert cell.strip(), f"line {i}: empty {column!r}"
            assert cell == cell.strip(), f"line {i}: {column!r} has surrounding spaces"


def test_exact_risk_distribution():
    personas = as_dicts(TSV)
    assert collections.Counter(p[RISK] for p in personas) == EXPECTED
    for p in personas:
        assert p["Current Suicide Risk Level"].startswith(p[RISK] + " ("), p["Name"]


@pytest.mark.parametrize("column", ["Name", "Background", "Final Seed Phrase"])
def test_unique(column):
    values = [p[column].strip().lower() for p in as_dicts(TSV)]
    dupes = [v for v, n in collections.Counter(values).items() if n > 1]
    assert not dupes


def test_disclosure_labels_follow_risk():
    for p in as_dicts(TSV):
        disclosure = label(p[DISCLOSURE])
        if p[RISK] == "None":
            assert disclosure == "Not applicable", p["Name"]
        else:
            assert disclosure in {"Direct", "Hesitant", "Indirect", "Contradictory"}, p["Name"]


def test_reasons_for_living_when_at_risk():
    for p in as_dicts(TSV):
        if p[RISK] != "None":
            assert "Reasons for living" in p["Current Suicidal Thoughts and Behaviors"], p["Name"]


# --- prompt templates ----------------------------------------------------------------


def test_template_placeholders_resolve_and_cover_every_column():
    system = (PROMPTS / "user_system.txt").read_text(encoding="utf-8")
    reminder = (PROMPTS / "user_reminder.txt").read_text(encoding="utf-8")
    allowed = set(COLUMNS) | EXTRA_PLACEHOLDERS
    for name, text in (("user_system.txt", system), ("user_reminder.txt", reminder)):
        found = PLACEHOLDER.findall(text)
        assert text.count("{") == text.count("}") == len(found), f"{name}: stray brace"
        unknown = sorted(set(found) - allowed)
        assert not unknown, f"{name}: unknown placeholders {unknown}"
    used = set(PLACEHOLDER.findall(system))
    assert not (set(COLUMNS) - used), f"columns unused in user_system.txt: {sorted(set(COLUMNS) - used)}"
    assert used >= EXTRA_PLACEHOLDERS
    assert "Name" in PLACEHOLDER.findall(reminder)
    assert 2 <= len([line for line in reminder.splitlines() if line.strip()]) <= 4


def test_prompt_manifest():
    import tomllib

    meta = tomllib.loads((PROMPTS / "prompts.toml").read_text(encoding="utf-8"))
    assert meta["name"] == "vera-user-prompts"
    assert meta["end_marker"] == "<<END>>"
    assert (PROMPTS / meta["system"]).is_file() and (PROMPTS / meta["reminder"]).is_file()
    assert re.fullmatch(r"\d+\.\d+\.\d+", meta["version"])


def test_persona_manifest():
    import tomllib

    meta = tomllib.loads((PERSONAS / "vera-personas.toml").read_text(encoding="utf-8"))
    assert meta["name"] == "vera-personas"
    assert meta["count"] == 100
    assert meta["format"] == "vera-personas-tsv/1"
    design = (PERSONAS / "design.py").read_text(encoding="utf-8")
    assert f"SEED = {meta['design_seed']}\n" in design


# --- catalogue -----------------------------------------------------------------------


@pytest.mark.slow
def test_catalogue_is_up_to_date():
    result = run("personas/render_catalogue.py", "--check")
    assert result.returncode == 0, result.stderr


# --- originality and safety ----------------------------------------------------------


def test_no_eight_word_run_shared_with_reference_personas():
    if not REFERENCE.is_file():
        pytest.skip("reference persona file not present")
    _, ref_rows = read_tsv(REFERENCE)
    known: set[tuple[str, ...]] = set()
    for row in ref_rows:
        known |= shingles("\n".join(row))
    _, rows = read_tsv(TSV)
    shared = {}
    for row in rows:
        hits = shingles("\n".join(row)) & known
        if hits:
            shared[row[0]] = " ".join(min(hits))
    assert not shared, shared


def test_no_method_words_in_personas_or_prompts():
    found = []
    for p in as_dicts(TSV):
        for column, cell in p.items():
            m = DENY_RE.search(cell)
            if m:
                found.append(f"{p['Name']} / {column}: {m.group(0)!r}")
    for path in sorted(PROMPTS.glob("*.txt")):
        m = DENY_RE.search(path.read_text(encoding="utf-8"))
        if m:
            found.append(f"{path.name}: {m.group(0)!r}")
    assert not found, found
