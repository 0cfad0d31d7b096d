"""Persona loading and validation, and the prompts a user-agent receives."""

from __future__ import annotations

import pytest

from vera.errors import DataError
from vera.inputs import load_user_prompts
from vera.inputs._personas import (
    check_personas,
    check_templates,
    load_personas,
    render_user_reminder,
    render_user_system,
)

from .conftest import REFERENCE, ROOT
from .helpers import user_prompts

HEADER = "Name\tShort Current Suicide Risk Level\tCurrent Suicide Risk Level\tFinal Seed Phrase\n"


def write(tmp_path, body: str, name: str = "p.tsv"):
    p = tmp_path / name
    p.write_text(HEADER + body)
    return p


def test_good_file_loads_with_normalised_risk(tmp_path):
    p = write(tmp_path, "Ada\thigh\tHigh (active thoughts)\tugh\nBo\tNone\tNone (none)\tfine\n")
    pset = load_personas(p)
    assert [(x.name, x.risk, x.line) for x in pset.personas] == [("Ada", "High", 2), ("Bo", "None", 3)]
    assert pset.distribution() == {"None": 1, "Low": 0, "High": 1, "Immediate": 0}
    assert pset.by_name("ada").field("Final Seed Phrase") == "ugh"
    assert pset.version.version == "unversioned" and len(pset.version.sha256) == 64


def test_errors_and_warnings_are_reported_with_lines(tmp_path):
    p = write(
        tmp_path,
        "Ada\tHigh\tHigh (x)\tsame words\n"
        "\tLow\tLow (x)\tz\n"
        "Cy\tSevere\tSevere\tz2\n"
        "ada\tLow\tHigh (mismatch)\tsame words\n",
    )
    _, issues = check_personas(p)
    rendered = [i.render(str(p)) for i in issues]
    assert any(r.endswith(":3: error: empty Name") for r in rendered)
    assert any(":4: error: Cy: risk level 'Severe'" in r for r in rendered)
    assert any(":5: error: duplicate name 'ada' (first on line 2)" in r for r in rendered)
    assert any(":5: warning:" in r and "does not start with the short level 'Low'" in r for r in rendered)
    assert any(":5: warning: ada: same seed phrase as line 2" in r for r in rendered)
    with pytest.raises(DataError, match=r"p.tsv:3: empty Name \(and 2 more"):
        load_personas(p)


def test_structural_errors(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("Who\tWhat\nA\tB\n")
    with pytest.raises(DataError, match=r"bad\.tsv:1: missing column"):
        load_personas(bad)
    stray = write(tmp_path, "Ada\tHigh\tHigh\tx\textra cell\n", "stray.tsv")
    with pytest.raises(DataError, match=r"stray.tsv:2: 5 cells but the header has 4"):
        load_personas(stray)
    with pytest.raises(DataError, match="cannot read personas"):
        load_personas(tmp_path / "nope.tsv")


def test_templates_render_every_field_and_unknown_placeholders_are_caught(tmp_path):
    p = write(tmp_path, "Ada\tHigh\tHigh (x)\tugh\n")
    pset = load_personas(p)
    up = user_prompts()
    system = render_user_system(pset.personas[0], up, min_turns=4, max_turns=20)
    assert system == "You are Ada, risk High. You may end with <<END>> from turn 4 (max 20).\n"
    assert render_user_reminder(pset.personas[0], up, min_turns=4, max_turns=20) == "REMINDER: stay Ada.\n"
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "prompts.toml").write_text('system="s.txt"\nreminder="r.txt"\nend_marker="<<END>>"\n')
    (folder / "s.txt").write_text("Hi {Name}\nand {Favourite Colour}")
    (folder / "r.txt").write_text("ok")
    issues = check_templates(load_user_prompts(folder), pset.columns)
    assert [i.render("") for i in issues] == [
        f"{folder / 's.txt'}:2: error: placeholder {{Favourite Colour}} is not a persona column"
    ]


def test_our_persona_set_renders_for_every_persona():
    path = ROOT / "personas" / "vera-personas.tsv"
    prompts_dir = ROOT / "personas" / "prompts"
    if not prompts_dir.exists():
        pytest.skip("persona prompts not present")
    pset = load_personas(path)
    up = load_user_prompts(prompts_dir)
    assert check_templates(up, pset.columns) == []
    for p in pset.personas:
        text = render_user_system(p, up, min_turns=10, max_turns=30)
        assert p.name in text and "{" + "Name}" not in text


@pytest.mark.skipif(not REFERENCE.exists(), reason="reference data absent")
def test_reference_personas_load_and_the_malformed_row_is_a_warning():
    pset, issues = check_personas(REFERENCE / "data" / "personas.tsv")
    assert pset is not None and len(pset.personas) == 100
    assert pset.distribution() == {"None": 10, "Low": 30, "High": 30, "Immediate": 30}
    assert [i.severity for i in issues] == ["warning"]
    assert "Skylar" in issues[0].message


def test_template_render_is_the_placeholder_substitution():
    """`Template.render` cuts a template at its placeholders once and joins the pieces
    (vera.inputs._prompts._pieces): the same text as substituting each placeholder with a
    regular expression, JSON braces and unknown-looking text left alone, and a missing
    value named by the line of its first use."""
    import random

    from vera.inputs._prompts import _FIELD, Template

    rng = random.Random(7)
    bits = [
        "{Name}",
        "{Age}",
        "{min_turns}",
        '{"answer": 1}',
        "{ spaced }",
        "{",
        "}",
        "\n",
        "text ",
        "é",
        "{A-b c}",
    ]
    values = {"Name": "Ada", "Age": "", "min_turns": "4", " spaced ": "x\\1", "A-b c": "{Name}"}
    for _ in range(300):
        text = "".join(rng.choice(bits) for _ in range(rng.randint(0, 12)))
        t = Template(path="t.txt", text=text)
        missing = [m for m in _FIELD.finditer(text) if m.group(1) not in values]
        if missing:
            line = text.count("\n", 0, missing[0].start()) + 1
            with pytest.raises(DataError, match=rf"t\.txt:{line}: no value for placeholder"):
                t.render(values)
        else:
            assert t.render(values) == _FIELD.sub(lambda m: values[m.group(1)], text)
