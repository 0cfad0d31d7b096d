"""Text files in the encodings people save (issue 27): UTF-8 with or without a
byte-order mark in every format vera reads, TOML configs and profiles too; any other
encoding refused in one line naming the file and the encoding it looks like. And
`vera validate rubric` checks dimensions as documented: the method's five, or those
the rubric's sidecar lists."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from vera.errors import UserError
from vera.inputs import load_config

from .conftest import FIXTURES, REFERENCE, ROOT
from .door import BOT, invoke, refused
from .run_config import write_run_config

REFERENCE_2 = ROOT.parent / "shared" / "reference" / "vera-mh-2.0" / "data"


def test_a_config_with_a_byte_order_mark_validates_and_runs(tmp_path) -> None:
    cfg = write_run_config(
        tmp_path / "bom.toml",
        providers=ROOT / "providers",
        runs_dir=tmp_path / "runs",
        chatbots=["offline/best-practice"],
        persona_limit=1,
    )
    cfg.write_bytes(b"\xef\xbb\xbf" + cfg.read_bytes())
    checked = invoke(["validate", "config", str(cfg)])
    assert checked.exit_code == 0, checked.output
    ran = invoke(["run", "--config", str(cfg), "--quiet"])
    assert ran.exit_code == 0, ran.output


def _persona_text() -> str:
    return (ROOT / "personas" / "vera-personas.tsv").read_text()


def _formats(tmp: Path) -> dict[str, tuple[Path, Callable[[], object]]]:
    """Every kind of text file vera reads: (the file, how vera reads it)."""
    from vera.inputs import load_personas, load_profile, load_target, load_user_prompts, read_transcripts
    from vera.rubric import load_rubric
    from vera.stats.humans import read_human_ratings

    prompts = tmp / "prompts"
    shutil.copytree(FIXTURES / "user_prompts", prompts)
    target = tmp / "target"
    shutil.copytree(FIXTURES / "targets" / "DEMO", target)
    (tmp / "bot.toml").write_text(BOT)
    (tmp / "run.toml").write_text('chatbots = ["offline/best-practice"]\n')
    (tmp / "rubric.tsv").write_text((ROOT / "rubrics" / "vera-si.tsv").read_text())
    (tmp / "personas.tsv").write_text(_persona_text())
    (tmp / "t.txt").write_text("user: hello there\n\nchatbot: hi, how are you?\n")
    (tmp / "t.jsonl").write_text(
        '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}\n'
    )
    (tmp / "ratings.csv").write_text("item_id,rater,dimension,rating\nabc,r1,Confirms Risk,Best Practice\n")
    return {
        "run config": (tmp / "run.toml", lambda: load_config(tmp / "run.toml")),
        "provider profile": (tmp / "bot.toml", lambda: load_profile(tmp / "bot.toml")),
        "rubric": (tmp / "rubric.tsv", lambda: load_rubric(tmp / "rubric.tsv").questions),
        "personas": (tmp / "personas.tsv", lambda: load_personas(tmp / "personas.tsv").personas),
        "prompt set": (prompts / "prompts.toml", lambda: load_user_prompts(prompts).end_marker),
        "prompt template": (prompts / "system.txt", lambda: load_user_prompts(prompts).system.text),
        "target manifest": (target / "manifest.json", lambda: load_target(target / "manifest.json").rubric),
        "transcript": (tmp / "t.txt", lambda: [c.turns for c in read_transcripts(tmp / "t.txt")]),
        "transcripts (JSON lines)": (
            tmp / "t.jsonl",
            lambda: [c.turns for c in read_transcripts(tmp / "t.jsonl")],
        ),
        "ratings": (tmp / "ratings.csv", lambda: read_human_ratings(tmp / "ratings.csv").to_dicts()),
    }


def test_a_byte_order_mark_is_read_in_every_format(tmp_path) -> None:
    for what, (path, read) in _formats(tmp_path).items():
        plain = read()
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
        assert read() == plain, what


@pytest.mark.parametrize(
    ("encoding", "named"), [("cp1252", "Windows-1252 (cp1252)"), ("utf-16", "UTF-16 (little-endian, with")]
)
def test_a_file_in_another_encoding_is_named_with_its_encoding(tmp_path, encoding, named) -> None:
    for what, (path, read) in _formats(tmp_path).items():
        original = path.read_bytes()
        # A curly quote and an accent, as a spreadsheet or a Windows editor saves them.
        text = original.decode() + "\n# \u201cnaïve\u201d\n"
        path.write_bytes(text.encode(encoding, errors="replace"))
        with pytest.raises(UserError) as caught:
            read()
        message = str(caught.value)
        assert message.startswith(str(path)) and "is not UTF-8 text" in message and named in message, what
        path.write_bytes(original)  # the next format may read this file too


def test_validate_rubric_names_an_unknown_dimension_with_its_file_line_and_the_allowed_ones(tmp_path):
    rubric = tmp_path / "mine.tsv"
    rubric.write_text(
        (ROOT / "rubrics" / "vera-si.tsv").read_text().replace("\tSupportive Conversation\t", "\tVibes\t", 1)
    )
    result = invoke(["validate", "rubric", str(rubric)])
    refused(result, f"{rubric}: 1 problem(s)")
    [line] = [x for x in result.stdout.splitlines() if "Vibes" in x]
    assert line.startswith(f"{rubric}:") and "unknown dimension 'Vibes'" in line
    assert (
        "Detects Potential Risk, Confirms Risk, Guides to Human Care, Supportive Conversation, Follows AI Boundaries"
        in line
    )
    rubric.with_suffix(".toml").write_text(
        'dimensions = ["Vibes", "Detects Potential Risk", "Confirms Risk", "Guides to Human Care", "Supportive Conversation", "Follows AI Boundaries"]\n'
    )
    assert invoke(["validate", "rubric", str(rubric)]).exit_code == 0  # a rubric that lists its own


def test_the_published_rubrics_still_validate() -> None:
    rubrics = [ROOT / "rubrics" / "vera-si.tsv", FIXTURES / "targets" / "DEMO" / "rubric.tsv"]
    rubrics += [
        p
        for p in (
            REFERENCE / "data" / "rubric.tsv",
            REFERENCE_2 / "SI" / "rubric.tsv",
            REFERENCE_2 / "HFO" / "rubric_HFO.tsv",
        )
        if p.is_file()
    ]
    for rubric in rubrics:
        result = invoke(["validate", "rubric", str(rubric)])
        assert result.exit_code == 0, result.output
