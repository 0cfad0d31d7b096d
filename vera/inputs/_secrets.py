"""API keys: read from the environment or a `.env` file, never from a profile, and
scrubbed from every error, log line and record.

A profile names the variable that holds its key (`api_key_env`) or refers to variables in
its URL and headers as `${NAME}`. The value is looked up when a client is built,
remembered, and `redact` removes every remembered value (and anything shaped like a key)
from text before it is shown or stored.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from dotenv import dotenv_values

from vera.errors import ConfigError
from vera.inputs._profiles import Profile, strings_in

MASK = "****"

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SECRETS: set[str] = set()
_dotenv_cache: dict[tuple[str, float], dict[str, str]] = {}


def env_value(name: str) -> str | None:
    """A variable from the environment, else from `./.env` (never overriding the former)."""
    value = os.environ.get(name)
    if value:
        return value
    return _dotenv().get(name) or None


def _dotenv() -> dict[str, str]:
    path = Path.cwd() / ".env"
    try:
        stamp = (str(path), path.stat().st_mtime)
    except OSError:
        return {}
    if stamp not in _dotenv_cache:
        try:
            values = dotenv_values(path)
        except OSError as exc:
            # Unreadable (chmod 000, another user's file): the user's to fix, said in one
            # line; the file's content, keys included, is never part of the message.
            raise ConfigError(f"{path}: cannot read .env: {exc.strerror or exc}") from None
        _dotenv_cache[stamp] = {k: v for k, v in values.items() if v is not None}
    return _dotenv_cache[stamp]


def env_refs(profile: Profile) -> list[str]:
    """Every environment variable a profile needs: its key and any `${VAR}` it uses."""
    names = [profile.api_key_env] if profile.api_key_env else []
    texts = list(profile.headers.values())
    if profile.http is not None:
        texts += [profile.http.url, *profile.http.headers.values(), *strings_in(profile.http.body)]
    for text in texts:
        names += [n for n in _ENV_REF.findall(text) if n not in names]
    return names


def missing_key(profile: Profile) -> str | None:
    """The name of the first environment variable the profile needs but is not set."""
    for name in env_refs(profile):
        if env_value(name) is None:
            return name
    return None


def skip_reason(profile: Profile) -> str | None:
    """Why `PROVIDERS=all` leaves this profile out, or None when it can run."""
    if not profile.in_all:
        return "not part of PROVIDERS=all (in_all = false); name it to use it"
    if (var := missing_key(profile)) is not None:
        return f"environment variable {var} is not set"
    return None


def api_key(profile: Profile) -> str | None:
    """The profile's key (None when it uses none), remembered for redaction."""
    if not profile.api_key_env:
        return None
    value = env_value(profile.api_key_env)
    if value is None:
        raise ConfigError(
            f"profile {profile.name!r}: environment variable {profile.api_key_env} is not set "
            "(export it or put it in .env)"
        )
    remember_secret(value)
    return value


def expand_env(text: str, profile_name: str) -> str:
    """Replace `${VAR}` with its value; every value substituted counts as a secret."""

    def substitute(match: re.Match[str]) -> str:
        value = env_value(match.group(1))
        if value is None:
            raise ConfigError(f"profile {profile_name!r}: environment variable {match.group(1)} is not set")
        remember_secret(value)
        return value

    return _ENV_REF.sub(substitute, text)


def remember_secret(value: str) -> None:
    """Register a value that `redact` must scrub (too-short values would mangle text)."""
    if len(value) >= 6:
        _SECRETS.add(value)


# Key shapes worth scrubbing even when they are not ours (a server echoing another key).
_KEY_PATTERNS = re.compile(r"(?:sk-[A-Za-z0-9_\-*]{6,}|AIza[0-9A-Za-z_\-]{20,}|(?<=Bearer )[^\s\"',]+)")


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """`text` with every known secret (and anything shaped like an API key) as `****`,
    and the value of every credential-named query parameter of a URL in it masked."""
    for secret in (*_SECRETS, *extra):
        if secret and secret in text:
            text = text.replace(secret, MASK)
    if "://" in text:
        text = _URL.sub(lambda m: mask_url(m.group(0)), text)
    return _KEY_PATTERNS.sub(MASK, text)


# A query parameter is taken for a credential by its name, lower-cased with `-`, `_` and
# `.` left out: the names services use for a key or a signed request, matched whole
# (`key`: Google's APIs; `code`: Azure Functions' function key; `sig`: Azure SAS; `auth`,
# `pass`, `pwd`...), or a name ending in one of the words keys are called by (`api_key`,
# `subscription-key`, `access_token`, `client_secret`, `X-Amz-Signature`,
# `X-Amz-Credential`). A plain setting (`v`, `model`, `session`) never matches; a name
# that merely ends like one (`monkey`) is masked too, which costs a value in a record,
# never a key.
CREDENTIAL_NAMES = frozenset(
    {
        *("key", "apikey", "token", "auth", "authorization", "sig", "signature", "secret"),
        *("password", "passwd", "pass", "pwd", "code", "credential", "credentials"),
    }
)
CREDENTIAL_SUFFIXES = ("key", "token", "secret", "signature", "password", "credential")

# A URL inside a text: up to a space or quote, a sentence's last stop or colon not in it.
_URL = re.compile(r"https?://[^\s\"'<>\\]*[^\s\"'<>\\.,;:)\]]", re.IGNORECASE)
_PARAM = re.compile(r"(^|[?&;])([^=&;#]+)=([^&;#]*)")
# The password of a URL's user information: after the scheme, a name, a colon, up to
# the last @ before the host (a password may hold an @; the host and path cannot).
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://[^/?#@:]*:)[^/?#]*@")


def is_credential_name(name: str) -> bool:
    """Whether a query parameter so named holds a credential (see CREDENTIAL_NAMES)."""
    plain = re.sub(r"[-_.]", "", name).lower()
    return plain in CREDENTIAL_NAMES or plain.endswith(CREDENTIAL_SUFFIXES)


def mask_url(url: str) -> str:
    """`url` with the password of its user information (`https://user:pw@host`) and the
    value of each credential-named query parameter as `****`; the rest (the user name,
    the path, the other parameters, a fragment) as written. What is sent is never this:
    only a copy to record or print."""
    url = _USERINFO.sub(rf"\g<1>{MASK}@", url, count=1)
    head, sep, rest = url.partition("?")
    if not sep:
        return url
    query, hash_, fragment = rest.partition("#")

    def mask(m: re.Match[str]) -> str:
        lead, name, value = m.groups()
        return f"{lead}{name}={MASK}" if value and is_credential_name(name) else m.group(0)

    return f"{head}?{_PARAM.sub(mask, query)}{hash_}{fragment}"


def literal_url_password(url: str) -> bool:
    """Whether a profile's URL holds a password in its user information
    (`https://user:pw@host`) written in the file rather than taken from the environment."""
    m = _USERINFO.match(url)
    if m is None:
        return False
    password = url[m.end(1) : m.end() - 1]
    return bool(_ENV_REF.sub("", password))


def literal_url_credentials(url: str) -> list[str]:
    """The credential-named query parameters of a profile's URL whose value is written in
    the file rather than taken from the environment (`${VAR}`) or filled by vera
    (`{{session_id}}`)."""
    _, sep, rest = url.partition("?")
    if not sep:
        return []
    names = []
    for _, name, value in _PARAM.findall(rest.partition("#")[0]):
        literal = re.sub(r"\{\{[^}]*\}\}", "", _ENV_REF.sub("", value))
        if literal and is_credential_name(name) and name not in names:
            names.append(name)
    return names
