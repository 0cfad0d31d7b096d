"""No silent acceptance: `vera validate config` checks everything a run would use, and
every bad value or file named in issue 9 is one clear line with exit code 1."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera.cli._main import main

from .conftest import FIXTURES, ROOT
from .test_cli import assert_one_line_error, vera

PATHS = (
    f'personas = "{ROOT / "personas" / "vera-personas.tsv"}"\nrubric = "{ROOT / "rubrics" / "vera-si.tsv"}"\n'
    f'user_prompts = "{ROOT / "personas" / "prompts"}"\njudge_prompts = "{ROOT / "rubrics" / "prompts"}"\n'
)

BROKEN_PROFILES = {
    "syntax.toml": 'protocol = "openai\nmodel = "m"\n',
    "protocol.toml": 'protocol = "opnai"\nmodel = "m"\n',
    "nomodel.toml": 'protocol = "anthropic"\napi_key_env = "K"\n',
    "rpm.toml": 'protocol = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\nrpm = -5\n',
    "field.toml": 'protocol = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodle = "m"\n',
    "ftp.toml": 'protocol = "openai"\nbase_url = "ftp://127.0.0.1/v1"\nmodel = "m"\n',
}


def config(tmp_path: Path, providers: Path, chatbots: list[str], *, extra: str = "") -> Path:
    cfg = tmp_path / "run.toml"
    refs = ", ".join(f'"{c}"' for c in chatbots)
    cfg.write_text(f'providers = "{providers}"\nchatbots = [{refs}]\n{PATHS}{extra}')
    return cfg


def test_validate_config_names_every_profile_problem_in_plain_words(tmp_path):
    providers = tmp_path / "providers"
    providers.mkdir()
    for name, text in BROKEN_PROFILES.items():
        (providers / name).write_text(text)
    cfg = config(tmp_path, providers, ["protocol", "nowhere/model-x", "offline/best-practice"])
    proc = vera("validate", "config", str(cfg))
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    out = proc.stdout
    expected = [
        f"{providers / 'syntax.toml'}:1: error: not valid TOML",
        f"{providers / 'protocol.toml'}:1: error: protocol 'opnai' is not known; use one of: openai, "
        "azure_openai, anthropic, gemini, http, offline",
        f"{providers / 'nomodel.toml'}: error: protocol 'anthropic' needs a model",
        f"{providers / 'rpm.toml'}:4: error: rpm must be a number greater than 0, not -5",
        f"{providers / 'field.toml'}:3: error: unknown field 'modle'; did you mean 'model'?",
        f"{providers / 'ftp.toml'}:2: error: base_url 'ftp://127.0.0.1/v1' must be an http:// or https:// URL",
        f"{cfg}: error: chatbots: 'protocol' uses profile {providers / 'protocol.toml'}, which has errors",
        f"{cfg}: error: chatbots: unknown model reference 'nowhere/model-x'",
    ]
    for line in expected:
        assert any(x.startswith(line) for x in out.splitlines()), f"{line}\n---\n{out}"
    assert "Invalid enum value" not in out and "`$." not in out
    assert proc.stderr.strip() == f"error: {cfg}: 8 error(s), 0 warning(s)"


def test_validate_config_warns_about_an_unset_key_by_name_and_checks_the_data(tmp_path, monkeypatch):
    providers = tmp_path / "providers"
    providers.mkdir()
    (providers / "acme.toml").write_text(
        'protocol = "openai"\nbase_url = "https://api.openai.com/v1"\nmodel = "m"\napi_key_env = "ACME_TEST_KEY_UNSET"\n'
    )
    cfg = config(tmp_path, providers, ["acme"])
    proc = vera("validate", "config", str(cfg))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        f"{providers / 'acme.toml'}: warning: environment variable ACME_TEST_KEY_UNSET is not set"
        in proc.stdout
    )
    assert "ok — rubric vera-si@1.2.0, 100 personas" in proc.stdout and "(1 warning(s) above)" in proc.stdout
    bad = cfg.read_text().replace(
        str(ROOT / "rubrics" / "vera-si.tsv"), str(FIXTURES / "rubrics" / "broken.tsv")
    )
    cfg.write_text(bad.replace(str(ROOT / "rubrics" / "prompts"), str(tmp_path / "no-prompts")))
    proc = vera("validate", "config", str(cfg))
    assert proc.returncode == 1
    assert "broken.tsv:3: error: question A1: GOTO 'Z9' points to no question" in proc.stdout
    assert f"{tmp_path / 'no-prompts' / 'prompts.toml'}: error: cannot read prompt set" in proc.stdout


def test_a_non_http_base_url_is_refused_when_the_profile_loads_before_any_work(tmp_path):
    providers = tmp_path / "providers"
    providers.mkdir()
    (providers / "ftp.toml").write_text(BROKEN_PROFILES["ftp.toml"])
    cfg = config(tmp_path, providers, ["ftp"])
    out = tmp_path / "r"
    proc = vera("run", "--config", str(cfg), "--limit-personas", "2", "--out", str(out))
    assert_one_line_error(proc, "ftp.toml:2", "must be an http:// or https:// URL")
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["run", "--max-concurrency", "0"], "'--max-concurrency': 0 is not in the range x>=1"),
        (["run", "--limit-personas", "-1"], "'--limit-personas': -1 is not in the range x>=1"),
        (["run", "--allow-failures", "1.5"], "'--allow-failures': 1.5 is not in the range 0<=x<=1"),
        (["run", "--max-cost", "-2"], "'--max-cost': -2 is not a budget: give a finite amount of US dollars"),
        (["run", "--max-cost", "nan"], "'--max-cost': nan is not a budget"),
        (["judge", "{run}", "--instances", "0"], "'--instances': 0 is not in the range x>=1"),
        (["score", "{run}", "--confidence", "1.5"], "'--confidence': 1.5 is not in the range 0<x<1"),
        (["score", "{run}", "--resamples", "0"], "'--resamples': 0 is not in the range 1<=x<=100000"),
    ],
)
def test_bad_option_values_are_one_line_and_exit_1(tmp_path, args, fragment):
    run = tmp_path / "run"
    run.mkdir()
    assert_one_line_error(vera(*[a.format(run=run) for a in args]), fragment)


def test_an_out_folder_that_is_not_a_run_is_never_written_into(tmp_path):
    out = tmp_path / "notes"
    out.mkdir()
    (out / "card.md").write_text("my own notes\n")
    (out / "conversations.jsonl").write_text('{"mine": true}\n')
    proc = vera("run", "--limit-personas", "2", "--out", str(out))
    assert_one_line_error(proc, f"{out}: folder is not empty and holds no vera run")
    assert (out / "card.md").read_text() == "my own notes\n"
    assert (out / "conversations.jsonl").read_text() == '{"mine": true}\n'
    assert sorted(p.name for p in out.iterdir()) == ["card.md", "conversations.jsonl"]


def persona_file(tmp_path: Path, edit) -> Path:
    """A copy of the built-in persona set with one data row changed by `edit(cells)`."""
    lines = (ROOT / "personas" / "vera-personas.tsv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    cells = lines[3].split("\t")
    lines[3] = "\t".join(edit(header, cells))
    path = tmp_path / "people.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_persona_row_cut_short_is_refused_with_its_line(tmp_path):
    path = persona_file(tmp_path, lambda header, cells: cells[:5])
    proc = vera("run", "--personas", str(path), "--out", str(tmp_path / "r"))
    assert_one_line_error(proc, f"{path}:4: 5 cells but the header has", "the row is cut short")
    assert not (tmp_path / "r").exists()


def test_a_placeholder_left_in_a_persona_names_the_persona_and_field(tmp_path):
    def edit(header: list[str], cells: list[str]) -> list[str]:
        i = header.index("Background")
        cells[i] = "Works nights at {Workplace} and lives alone."
        return cells

    path = persona_file(tmp_path, edit)
    name = (
        (ROOT / "personas" / "vera-personas.tsv").read_text(encoding="utf-8").splitlines()[3].split("\t")[0]
    )
    proc = vera("run", "--personas", str(path), "--out", str(tmp_path / "r"))
    assert_one_line_error(
        proc, f"{path}:4: {name}: 'Background' still holds the template placeholder {{Workplace}}"
    )
    check = vera("validate", "personas", str(path))
    assert check.returncode == 1 and "{Workplace}" in check.stdout


def test_a_rubric_row_with_extra_cells_is_refused(tmp_path):
    rubric = tmp_path / "vera-si.tsv"
    lines = (ROOT / "rubrics" / "vera-si.tsv").read_text(encoding="utf-8").splitlines()
    lines[2] += "\tstray words"
    rubric.write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.copy(ROOT / "rubrics" / "vera-si.toml", tmp_path / "vera-si.toml")
    proc = vera("validate", "rubric", str(rubric))
    assert proc.returncode == 1 and f"{rubric}:3: " in proc.stdout and "(a stray tab?)" in proc.stdout
    cfg = tmp_path / "c.toml"
    cfg.write_text(PATHS.replace(str(ROOT / "rubrics" / "vera-si.tsv"), str(rubric)))
    assert_one_line_error(vera("run", "--config", str(cfg), "--out", str(tmp_path / "r")), f"{rubric}:3")


def test_judge_has_help_for_every_option_and_simulate_has_every_option_of_run():
    for command in ("judge", "run", "simulate", "merge", "score", "card"):
        cmd = main.commands[command]
        undocumented = [p.name for p in cmd.params if isinstance(p, click_option_type()) and not p.help]
        assert not undocumented, (command, undocumented)
    run_opts = {o for p in main.commands["run"].params for o in p.opts}
    sim_opts = {o for p in main.commands["simulate"].params for o in p.opts}
    assert run_opts == sim_opts
    readme = (ROOT / "README.md").read_text()
    row = re.search(r"\| `vera run \[(.+?)` \|", readme)
    assert row is not None
    for flag in re.findall(r"--[a-z-]+", row.group(1)):
        assert flag in sim_opts, flag
    assert CliRunner().invoke(main, ["judge", "--help"]).exit_code == 0


def click_option_type() -> type:
    import click

    return click.Option


HTTP_BOT = (
    'protocol = "http"\n[http]\nurl = "http://127.0.0.1:9/chat"\n'
    'body = { history = "{{messages}}" }\n[http.roles]\nsystem = "{system}"\n'
)


def test_a_system_prompt_the_http_chatbots_profile_would_never_send_is_refused(tmp_path):
    # chatbot_system_prompt with a product whose profile drops system turns (the example
    # profile's `system = ""`) ran as if the prompt were there: the product never got it,
    # while the call bodies (vera view, export --calls) showed it as sent.
    from vera.app._checks import check_config

    providers = tmp_path / "providers"
    providers.mkdir()
    (providers / "bot.toml").write_text(HTTP_BOT.replace("{system}", ""))
    (providers / "sysbot.toml").write_text(HTTP_BOT.replace("{system}", "system"))
    prompt = '[conversation]\nchatbot_system_prompt = "You are Sunny."\n'
    lines = [f.render() for f in check_config(config(tmp_path, providers, ["bot"], extra=prompt)).errors]
    assert lines == [
        f"{tmp_path / 'run.toml'}: error: conversation.chatbot_system_prompt is set, but chatbot 'bot' "
        "sends no system turn ([http.roles] system is empty in its profile): the product would never "
        'get it; give the role its API takes for one ([http.roles] system = "system"), or leave the '
        "prompt out (the product brings its own)"
    ]
    session = (
        '[conversation]\nsessions = ["a", "b"]\n[conversation.session.b]\nchatbot_system_prompt = "Hi."\n'
    )
    [error] = check_config(config(tmp_path, providers, ["bot"], extra=session)).errors
    assert "conversation.session.b.chatbot_system_prompt is set, but chatbot 'bot'" in error.render()
    # A profile that sends system turns, or no prompt at all: nothing to say.
    assert check_config(config(tmp_path, providers, ["sysbot"], extra=prompt)).errors == []
    assert check_config(config(tmp_path, providers, ["bot"])).errors == []


def test_a_key_written_in_a_profiles_url_is_a_warning_naming_file_and_field(tmp_path):
    # Sent as written, masked in records, but saved in a file that gets shared and
    # committed: the user is told to take it from the environment instead.
    providers = tmp_path / "providers"
    providers.mkdir()
    (providers / "bot.toml").write_text(
        HTTP_BOT.replace("{system}", "").replace("/chat", "/chat?v=2&api_key=lit-0f3a9c2e7b")
    )
    (providers / "envbot.toml").write_text(
        HTTP_BOT.replace("{system}", "").replace("/chat", "/chat?api_key=${BOT_KEY}&s={{session_id}}")
    )
    proc = vera("validate", "config", str(config(tmp_path, providers, ["bot", "envbot"])))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warnings = [line for line in proc.stdout.splitlines() if ": warning: " in line]
    assert warnings[0] == (
        f"{providers / 'bot.toml'}: warning: http.url: query parameter 'api_key' holds a literal "
        "credential; write ${VAR} in its place and set VAR in the environment or .env (records show ****)"
    )
    # A key from the environment is what is asked for: only its unset variable is said.
    assert [w for w in warnings if "envbot" in w and "literal" in w] == []
    assert "lit-0f3a9c2e7b" not in proc.stdout + proc.stderr


def test_a_password_written_in_a_profiles_url_is_a_warning_and_never_printed(tmp_path):
    # `user:password@host` is a credential as much as `?api_key=`: sent as written, masked
    # in records, and said once by validate; a password from the environment is not.
    providers = tmp_path / "providers"
    providers.mkdir()
    (providers / "pwbot.toml").write_text(
        HTTP_BOT.replace("{system}", "").replace("http://127.0.0.1", "http://team:pw-7c1e@127.0.0.1")
    )
    (providers / "envpw.toml").write_text(
        HTTP_BOT.replace("{system}", "").replace("http://127.0.0.1", "http://team:${BOT_PW}@127.0.0.1")
    )
    (providers / "nopw.toml").write_text(
        HTTP_BOT.replace("{system}", "").replace("http://127.0.0.1", "http://team@127.0.0.1")
    )
    proc = vera("validate", "config", str(config(tmp_path, providers, ["pwbot", "envpw", "nopw"])))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    literal = [line for line in proc.stdout.splitlines() if ": warning: " in line and "literal" in line]
    assert literal == [
        f"{providers / 'pwbot.toml'}: warning: http.url: the password in its user information "
        "(user:password@) is written literally; write ${VAR} in its place and set VAR in the "
        "environment or .env (records show ****)"
    ]
    assert "pw-7c1e" not in proc.stdout + proc.stderr
