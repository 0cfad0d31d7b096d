"""Provider profiles: loading, validation messages, references, keys and .env."""

from __future__ import annotations

from pathlib import Path

import pytest

from vera.errors import ConfigError, DataError
from vera.inputs._profiles import OFFLINE, load_profile, load_profiles, resolve_ref
from vera.inputs._secrets import env_value, missing_key

from .conftest import KEY_ENV, make_profile

REPO_PROVIDERS = Path(__file__).resolve().parents[2] / "providers"
# Every profile says where its requests and its key go.
OPENAI = 'base_url = "https://api.openai.com/v1"\n'
ANTHROPIC = 'base_url = "https://api.anthropic.com"\n'


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_example_profiles_in_the_repository_load() -> None:
    profiles = load_profiles(REPO_PROVIDERS)
    assert {"openai", "anthropic", "gemini", "ollama", "azure-openai", "my-chatbot-http"} <= set(profiles)
    assert profiles["offline"] is OFFLINE
    assert profiles["ollama"].api_key_env == ""  # local, no key
    assert profiles["my-chatbot-http"].http is not None


def test_name_is_the_file_stem_unless_given(tmp_path: Path) -> None:
    write(tmp_path, "fast.toml", f'protocol = "openai"\n{OPENAI}model = "gpt-4o-mini"\napi_key_env = "K"\n')
    write(tmp_path, "other.toml", f'name = "judge"\nprotocol = "anthropic"\n{ANTHROPIC}model = "claude"\n')
    profiles = load_profiles(tmp_path)
    assert set(profiles) == {"fast", "judge", "offline"}
    assert profiles["judge"].endpoint == "https://api.anthropic.com"
    assert profiles["fast"].endpoint == "https://api.openai.com/v1"
    assert profiles["judge"].structured == "tool"


def test_missing_directory_gives_only_the_offline_profile(tmp_path: Path) -> None:
    assert list(load_profiles(tmp_path / "nowhere")) == ["offline"]


def test_unknown_key_names_file_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.toml", 'protocol = "openai"\nmodel = "m"\napi_key_env = "K"\nrmp = 500\n')
    with pytest.raises(DataError) as caught:
        load_profile(path)
    assert caught.value.where == f"{path}:4"
    assert caught.value.problem == "unknown field 'rmp'; did you mean 'rpm'?"


def test_wrong_type_names_the_field_path(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.toml", 'protocol = "openai"\nmodel = "m"\nrpm = "fast"\n')
    with pytest.raises(DataError) as caught:
        load_profile(path)
    assert caught.value.where == f"{path}:3"
    assert caught.value.problem == "rpm must be a number, not 'fast'"


def test_error_inside_a_table_points_at_the_key_in_that_table(tmp_path: Path) -> None:
    text = (
        'protocol = "azure_openai"\nbase_url = "https://x.openai.azure.com"\nmodel = "m"\n'
        '[azure]\ndeployment = "d"\ndeploymnt = "typo"\n'
    )
    path = write(tmp_path, "az.toml", text)
    with pytest.raises(DataError) as caught:
        load_profile(path)
    assert caught.value.where == f"{path}:6"
    assert caught.value.problem == "unknown field 'deploymnt' in [azure]; did you mean 'deployment'?"


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ('protocol = "openai"\nmodel = "m"\napi_key_env = "K"\nrpm = 0\n', "rpm", "greater than 0, not 0"),
        ('protocol = "smoke-signals"\n', "protocol", "is not known; use one of: openai, azure_openai"),
        (
            'protocol = "openai"\nmodel = "m"\napi_key_env = "K"\n[http]\nurl = "x"\n',
            "http",
            "only applies to protocol 'http'",
        ),
        ('protocol = "http"\n', "http", "needs an [http] table"),
        (
            'protocol = "openai"\nmodel = "m"\nbase_url = "ftp://h/v1"\n',
            "base_url",
            "must be an http:// or https:// URL",
        ),
        (
            'protocol = "http"\n[http]\nurl = "file:///tmp/x"\n',
            "http.url",
            "must be an http:// or https:// URL",
        ),
        ('protocol = "gemini"\napi_key_env = "K"\n', "model", "needs a model"),
        (
            f'protocol = "anthropic"\n{ANTHROPIC}model = "m"\nstructured_output = "json_schema"\n',
            "structured_output",
            "not available for protocol 'anthropic'",
        ),
    ],
)
def test_invalid_profiles_are_data_errors(tmp_path: Path, text: str, field: str, message: str) -> None:
    path = write(tmp_path, "p.toml", text)
    with pytest.raises(DataError) as caught:
        load_profile(path)
    assert str(path) in caught.value.where
    assert message in caught.value.problem


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "p.toml", 'protocol = "openai"\nmodel = \n')
    with pytest.raises(DataError) as caught:
        load_profile(path)
    assert caught.value.where == f"{path}:2"


def test_duplicate_names_are_refused(tmp_path: Path) -> None:
    write(tmp_path, "a.toml", f'name = "same"\nprotocol = "anthropic"\n{ANTHROPIC}model = "m"\n')
    write(tmp_path, "b.toml", f'name = "same"\nprotocol = "anthropic"\n{ANTHROPIC}model = "m"\n')
    with pytest.raises(DataError, match="already used"):
        load_profiles(tmp_path)


def test_the_offline_name_is_reserved(tmp_path: Path) -> None:
    write(tmp_path, "offline.toml", f'protocol = "anthropic"\n{ANTHROPIC}model = "m"\n')
    with pytest.raises(DataError, match="reserved"):
        load_profiles(tmp_path)


def test_resolve_ref_by_name_and_with_a_model_override() -> None:
    openai = make_profile("openrouter", "openai", "https://openrouter.ai/api/v1", model="gpt-4o")
    profiles = {"openrouter": openai, "offline": OFFLINE}
    assert resolve_ref("openrouter", profiles) == (openai, "gpt-4o")
    assert resolve_ref("openrouter/meta-llama/llama-3.1-70b", profiles) == (
        openai,
        "meta-llama/llama-3.1-70b",
    )
    assert resolve_ref("offline/best-practice", profiles) == (OFFLINE, "best-practice")


def test_unknown_ref_lists_the_known_profiles() -> None:
    profiles = {"openai": make_profile("openai", "openai", ""), "offline": OFFLINE}
    with pytest.raises(ConfigError, match="known profiles: offline, openai"):
        resolve_ref("meta-llama/llama-3", profiles)
    with pytest.raises(ConfigError):
        resolve_ref("openai/", profiles)


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    profile = make_profile("p", "openai", "", api_key_env="NOT_SET_ANYWHERE")
    assert missing_key(profile) == "NOT_SET_ANYWHERE"
    assert missing_key(make_profile("q", "openai", "")) is None  # KEY_ENV is set
    assert missing_key(OFFLINE) is None
    bot = make_profile(
        "bot",
        "http",
        "",
        http={"url": "https://x/${BOT_HOST_PATH}", "headers": {"A": "${BOT_TOKEN}"}},
    )
    monkeypatch.setenv("BOT_HOST_PATH", "chat")
    assert missing_key(bot) == "BOT_TOKEN"


def test_dotenv_is_read_but_never_overrides_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text(f"{KEY_ENV}=from-dotenv-file\nONLY_IN_DOTENV=dotenv-value-1\n")
    monkeypatch.chdir(tmp_path)
    assert env_value(KEY_ENV) == "sk-test-key-0123456789"  # the real variable wins
    assert env_value("ONLY_IN_DOTENV") == "dotenv-value-1"
    assert missing_key(make_profile("p", "openai", "", api_key_env="ONLY_IN_DOTENV")) is None
    monkeypatch.delenv(KEY_ENV)
    assert env_value(KEY_ENV) == "from-dotenv-file"


def test_an_unreadable_dotenv_is_one_error_naming_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A `.env` the user cannot read (chmod 000, another user's file) is named with the
    reason, as a ConfigError (one line, exit 1), not a PermissionError traceback."""
    dotenv = tmp_path / ".env"
    dotenv.write_text("ONLY_IN_DOTENV=dotenv-value-2\n")
    monkeypatch.chdir(tmp_path)
    real_open = open

    def refusing_open(file, *args, **kwargs):  # the OS's answer to a file without read permission
        if str(file) == str(dotenv):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refusing_open)
    with pytest.raises(ConfigError) as err:
        env_value("ONLY_IN_DOTENV")
    assert str(err.value) == f"{dotenv}: cannot read .env: Permission denied"
    assert "dotenv-value-2" not in str(err.value)
    monkeypatch.setattr("builtins.open", real_open)
    assert env_value("ONLY_IN_DOTENV") == "dotenv-value-2"  # readable again: read, not a remembered failure


def test_a_providers_folder_vera_cannot_read_is_named_not_taken_for_empty(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A providers folder the user may not list (chmod 000, another user's) read as an
    empty one: `--providers openai/gpt-4o` then said "unknown model reference ...; known
    profiles: offline", pointing at the name rather than at the folder."""
    import errno
    import os

    write(tmp_path, "openai.toml", OPENAI + 'protocol = "openai"\nmodels = ["gpt-4o"]\n')
    real_scandir = os.scandir

    def refusing_scandir(path=".", *args, **kwargs):  # os.scandir's own signature
        if os.fspath(path) in (str(tmp_path), str(tmp_path) + "/"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_scandir(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", refusing_scandir)
    with pytest.raises(DataError) as err:
        load_profiles(tmp_path)
    assert str(err.value) == f"{tmp_path}: cannot read the providers folder: Permission denied"


HTTP_HEAD = 'protocol = "http"\n[http]\nurl = "http://127.0.0.1:8080/chat"\n'


@pytest.mark.parametrize(
    ("table", "line", "message"),
    [
        # A misspelt placeholder used to be sent to the product as it was written: the
        # chatbot got the text "{{mesages}}" for the history and the run went on.
        (
            'body = { history = "{{mesages}}", message = "{{last_message}}" }\n',
            4,
            "unknown placeholder '{{mesages}}' in http.body; did you mean '{{messages}}'?",
        ),
        (
            'body = { history = "{{messages}}", message = "{{last_msg}}" }\n',
            4,
            "unknown placeholder '{{last_msg}}' in http.body; did you mean '{{last_message}}'?",
        ),
        (
            'body = { turns = ["{{messages}}"], meta = { sid = "{{sesion_id}}" } }\n',
            4,
            "unknown placeholder '{{sesion_id}}' in http.body; did you mean '{{session_id}}'?",
        ),
        # The history is a list: it replaces a whole string value, never part of one.
        (
            'body = { prompt = "Conversation: {{messages}}" }\n',
            4,
            "'{{messages}}' must be a whole string value in http.body (it becomes a list of turns); "
            'write history = "{{messages}}", or use {{last_message}} inside a text',
        ),
        # Headers are only read for ${VAR}: a placeholder there was sent as written.
        (
            'headers = { X-Session = "{{session_id}}" }\nbody = { m = "{{last_message}}" }\n',
            4,
            "placeholders are filled in http.url and http.body only, not in http.headers ('{{session_id}}')",
        ),
        # A body that carries neither the history nor the user's message tests nothing.
        (
            'body = { session = "{{session_id}}" }\n',
            4,
            "http.body sends neither '{{messages}}' nor '{{last_message}}': the chatbot would never see "
            "what the simulated user said",
        ),
    ],
)
def test_http_templates_with_placeholders_that_would_be_sent_as_written_are_refused(
    tmp_path: Path, table: str, line: int, message: str
) -> None:
    path = write(tmp_path, "bot.toml", HTTP_HEAD + table)
    with pytest.raises(DataError) as caught:
        load_profile(path)
    assert caught.value.where == f"{path}:{line}"
    assert caught.value.problem == message


def test_an_unknown_placeholder_in_the_http_url_is_refused(tmp_path: Path) -> None:
    text = 'protocol = "http"\n[http]\nurl = "http://127.0.0.1:8080/s/{{sessionid}}/chat"\n'
    path = write(tmp_path, "bot.toml", text)
    with pytest.raises(DataError) as caught:
        load_profile(path)
    assert caught.value.where == f"{path}:3"
    assert (
        caught.value.problem
        == "unknown placeholder '{{sessionid}}' in http.url; did you mean '{{session_id}}'?"
    )


def test_every_documented_http_placeholder_is_accepted(tmp_path: Path) -> None:
    text = (
        'protocol = "http"\n[http]\n'
        'url = "http://127.0.0.1:8080/u/{{conversation_id}}/{{session}}/{{session_index}}/{{session_id}}"\n'
        'body = { history = "{{messages}}", m = "{{last_message}} ({{session_id}}, {{session}})", n = 3 }\n'
    )
    profile = load_profile(write(tmp_path, "bot.toml", text))
    assert profile.http is not None and profile.http.body["history"] == "{{messages}}"
