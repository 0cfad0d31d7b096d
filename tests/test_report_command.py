"""`vera report improvements`: each format written where asked, links that resolve from
where the file is, the conversation pages they need, and bad input as one line."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.diskfs import in_private_mounts, needs_mounts, read_only
from tests.improvements_run import BOUNDS, HELP, LOG_ID, SPOTS, write_run
from vera.cli._main import main


def vera(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def run(tmp_path) -> Path:
    return write_run(tmp_path / "run")


def test_json_to_stdout_is_the_whole_report(run):
    code, out, err = vera(
        "report", "improvements", str(run), "--format", "json", "--out", "-", "--exemplars", "1"
    )
    assert code == 0, err
    data = json.loads(out)
    (bot,) = data["chatbots"]
    assert [d["dimension"] for d in bot["dimensions"]] == [SPOTS, BOUNDS, HELP]
    spots = bot["dimensions"][0]["findings"]
    assert [(f["question_id"], f["conversations"], f["share"]) for f in spots] == [
        ("1b", 2, 40.0),
        ("1c", 3, 60.0),
    ]
    assert all(len(f["exemplars"]) == 1 for d in bot["dimensions"] for f in d["findings"])
    assert data["max_exemplars"] == 1
    assert "5 finding(s) → stdout" in err
    # JSON alone writes nothing into the run.
    assert not (run / "conversations").exists() and not (run / "improvements.json").exists()


def test_html_by_default_in_the_run_with_the_pages_it_links(run):
    code, out, err = vera("report", "improvements", str(run))
    assert code == 0, err
    assert out == ""
    page = run / "improvements.html"
    html = page.read_text()
    assert f"{page}" in err and "conversation page(s) added" in err
    hrefs = re.findall(r'href="([^"#]+)#', html)
    assert hrefs and all((run / h).is_file() for h in hrefs if h != "card.html")
    assert "conversations/c4.html" in hrefs
    # The id that is no file name has no page file, so no link (the viewer links it).
    assert LOG_ID not in {h.split("/")[-1] for h in hrefs}
    assert not any("chat%20log" in h for h in hrefs)


def test_markdown_elsewhere_links_back_into_the_run(run, tmp_path):
    target = tmp_path / "reports" / "fix.md"
    target.parent.mkdir()
    code, _, err = vera("report", "improvements", str(run), "--format", "md", "--out", str(target))
    assert code == 0, err
    md = target.read_text()
    links = re.findall(r"\]\(([^)#]+)#", md)
    assert links and all(link.startswith("../run/conversations/") for link in links)
    assert all((target.parent / link).resolve().is_file() for link in links)
    assert md.index(f"### {SPOTS}") < md.index(f"### {BOUNDS}") < md.index(f"### {HELP}")


@pytest.mark.slow
@needs_mounts
def test_a_read_only_run_still_gets_its_report(run):
    script = f"{read_only(run)} && $VERA report improvements {shlex.quote(str(run))} --format md --out -"
    proc = in_private_mounts(script)
    assert proc.returncode == 0, proc.stderr
    assert "### Spots Danger" in proc.stdout
    assert "note: conversation pages not written" in proc.stderr
    assert "Read-only file system" in proc.stderr and "Traceback" not in proc.stderr
    assert not (run / "conversations").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--exemplars", "-1"], "--exemplars"),
        (["--format", "pdf"], "--format"),
    ],
)
def test_bad_options_are_one_line(run, args, message):
    code, _, err = vera("report", "improvements", str(run), *args)
    assert code == 1
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_a_folder_that_is_not_a_run_is_one_line(tmp_path):
    code, _, err = vera("report", "improvements", str(tmp_path))
    assert code == 1
    assert err.strip() == f"error: {tmp_path}: not a vera run directory (no manifest.json)"


def test_the_readme_names_every_option_and_each_has_help():
    from tests.conftest import ROOT

    cmd = main.commands["report"].commands["improvements"]  # type: ignore[attr-defined]
    options = {o for p in cmd.params for o in p.opts if o.startswith("--")}
    assert all(p.help for p in cmd.params if p.opts[0].startswith("--"))
    readme = (ROOT / "README.md").read_text()
    row = re.search(r"\| `vera report improvements RUN_DIR (.+?)` \|", readme)
    assert row is not None
    assert set(re.findall(r"--[a-z-]+", row.group(1))) == options - {"--help"}
    assert (ROOT / "docs" / "improvements.md").is_file()
