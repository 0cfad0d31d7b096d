"""Provider profiles: one TOML file per model endpoint in `providers/`.

A profile says how to reach a model (protocol, base URL, model id, the *name* of the
environment variable holding the key), how hard it may be driven (requests and tokens
per minute, calls in flight, timeout, retries) and what it costs. Roles (chatbot,
user-agent, judge) are just uses of a profile, referenced as `name` or `name/model`.

Keys are never stored in a profile: they are read from the environment (or a `.env` file
in the working directory, which never overrides a real environment variable) when a
client is built, remembered for redaction, and scrubbed from every error and record by
`redact`.

    profiles = load_profiles(Path("providers"))
    profile, model = resolve_ref("openai/gpt-4o-mini", profiles)
    if (var := missing_key(profile)) is not None:
        print(f"skipping {profile.name}: {var} is not set")
"""

from __future__ import annotations

import difflib
import ipaddress
import math
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

import msgspec

from vera.errors import ConfigError, DataError
from vera.ranges import sampling_problems
from vera.text import read_text

ProtocolName = Literal["openai", "azure_openai", "anthropic", "gemini", "http", "offline"]
StructuredOutput = Literal["json_schema", "json_object", "tool", "prompt", "none"]

Positive = Annotated[float, msgspec.Meta(gt=0)]
PositiveInt = Annotated[int, msgspec.Meta(gt=0)]
NonNegative = Annotated[float, msgspec.Meta(ge=0)]

# Where each protocol's public API lives, for the message that asks a profile for its
# base_url. A profile always says where its requests (and its key) go: an empty or left
# out base_url once meant the public endpoint, so a profile meant for a local server sent
# its key to the provider.
PUBLIC_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "azure_openai": "https://YOUR-RESOURCE.openai.azure.com",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}

# What `structured_output` means when a profile leaves it out, and what each protocol can do.
DEFAULT_STRUCTURED: dict[str, StructuredOutput] = {
    "openai": "json_schema",
    "azure_openai": "json_schema",
    "anthropic": "tool",
    "gemini": "json_schema",
    "http": "none",
    "offline": "json_schema",
}
SUPPORTED_STRUCTURED: dict[str, frozenset[str]] = {
    "openai": frozenset({"json_schema", "json_object", "prompt", "none"}),
    "azure_openai": frozenset({"json_schema", "json_object", "prompt", "none"}),
    "anthropic": frozenset({"tool", "prompt", "none"}),
    "gemini": frozenset({"json_schema", "json_object", "prompt", "none"}),
    "http": frozenset({"none"}),
    "offline": frozenset({"json_schema", "json_object", "tool", "prompt", "none"}),
}


class AzureOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`[azure]`: the deployment (defaults to the profile's model) and the API version.
    `batch_deployment` is the Global-Batch deployment a judge in batch mode names (a
    batch goes to a deployment of that type, apart from the live one; default: the
    live deployment)."""

    deployment: str = ""
    api_version: str = "2024-10-21"
    batch_deployment: str = ""


class GeminiOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`[gemini]`: which schema field to use and optional safety settings.

    `responseJsonSchema` takes plain JSON Schema; older models only know `responseSchema`
    (an OpenAPI subset). `safety_settings` is sent verbatim as `safetySettings`.
    """

    schema_field: Literal["responseJsonSchema", "responseSchema"] = "responseJsonSchema"
    safety_settings: list[dict[str, str]] = msgspec.field(default_factory=list)


class HttpRoles(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Names the chatbot's API uses for each side; an empty `system` drops system turns
    (a product brings its own system prompt)."""

    user: str = "user"
    assistant: str = "assistant"
    system: str = ""
    role_key: str = "role"
    content_key: str = "content"


class HttpOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`[http]`: a user's own chatbot endpoint, described by a request template.

    `url`, header values and string values in `body` may reference environment variables
    as `${VAR}`. In `body`, the string `"{{messages}}"` becomes the history as a list of
    `{role, content}` turns, and `{{last_message}}` / `{{session_id}}` are replaced inside
    strings. `response_path` is a dotted path to the reply text (`reply.text`,
    `choices.0.message.content`); empty means the whole response body is the reply.
    """

    url: str
    method: Literal["POST", "PUT", "PATCH"] = "POST"
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    body: dict[str, Any] = msgspec.field(default_factory=lambda: {"messages": "{{messages}}"})
    response_path: str = ""
    roles: HttpRoles = msgspec.field(default_factory=HttpRoles)


MAX_RETRIES = 20

# Where no model lives: link-local addresses (169.254.0.0/16, fe80::/10), where clouds
# serve instance metadata and the credentials of the machine (169.254.169.254,
# fd00:ec2::254), and the metadata host names. A profile pointed there (a typo, or a
# config from someone else) would send requests, and the key, to that service; it is
# refused unless the profile says `allow_link_local = true`.
_METADATA_HOSTS = {"metadata.google.internal", "metadata.goog", "metadata"}
_METADATA_NETWORKS = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fd00:ec2::254/128"))


def link_local_endpoint(url: str) -> str | None:
    """Why `url` names a link-local or cloud-metadata address (None when it does not)."""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host in _METADATA_HOSTS:
        return f"{host} is a cloud metadata service"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    if ip.is_link_local or any(ip in net for net in _METADATA_NETWORKS):
        return f"{host} is a link-local address (where cloud metadata services and their credentials live)"
    return None


class Profile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One model endpoint as described by `providers/<name>.toml`.

    Limits left out (`rpm`, `tpm`, `max_in_flight`) are not enforced. Prices are US
    dollars per million tokens; `price_cached_input_per_mtok` (cache reads) and
    `price_cache_write_per_mtok` (Anthropic's cache writes) default to the input price.
    `in_all = false` keeps a profile (a local server that may not be running) out of
    `PROVIDERS=all`; it can still be named explicitly.
    """

    protocol: ProtocolName
    name: str = ""
    description: str = ""
    in_all: bool = True
    base_url: str = ""
    allow_link_local: bool = False  # see link_local_endpoint
    model: str = ""
    api_key_env: str = ""
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    rpm: Positive | None = None
    tpm: Positive | None = None
    max_in_flight: PositiveInt | None = None
    timeout_s: Positive = 120.0
    # More than MAX_RETRIES retries of one call is a typo, not a policy: backoff doubling
    # from retry_base_delay_s would wait for days.
    max_retries: Annotated[int, msgspec.Meta(ge=0, le=MAX_RETRIES)] = 6
    price_input_per_mtok: NonNegative = 0.0
    price_output_per_mtok: NonNegative = 0.0
    price_cached_input_per_mtok: NonNegative | None = None
    price_cache_write_per_mtok: NonNegative | None = None  # Anthropic cache writes; default: input price
    # What a call costs through the provider's batch API, as a share of the prices
    # above (OpenAI, Azure OpenAI, Anthropic and Gemini all bill batches at half; docs/batch.md).
    batch_price_factor: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.5
    # Cached input's share of its live price in a batch. None: `batch_price_factor`, the
    # discounts stack (OpenAI, Anthropic). Gemini bills a cache hit at the cache rate
    # alone, the batch discount not applied on top: 1.0 in its profile.
    batch_cached_input_factor: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] | None = None
    # The same for OpenAI's flex tier ([ROLE] service_tier = "flex"): billed at batch rates.
    flex_price_factor: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.5
    # OpenAI's `prompt_cache_key` (one per conversation, so its requests reach the same
    # cache). None = send it only to api.openai.com; servers that merely speak the
    # protocol may refuse an unknown parameter.
    prompt_cache_key: bool | None = None
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    structured_output: StructuredOutput | None = None
    azure: AzureOptions | None = None
    gemini: GeminiOptions | None = None
    http: HttpOptions | None = None

    @property
    def endpoint(self) -> str:
        """The base URL in use (a custom HTTP chatbot's URL when it gives none)."""
        if self.protocol == "http" and self.http is not None and not self.base_url:
            return self.http.url
        return self.base_url.rstrip("/")

    @property
    def sends_prompt_cache_key(self) -> bool:
        """Whether OpenAI requests carry `prompt_cache_key` (see the field)."""
        if self.protocol != "openai":
            return False
        if self.prompt_cache_key is not None:
            return self.prompt_cache_key
        return urlsplit(self.endpoint).hostname == "api.openai.com"

    @property
    def structured(self) -> StructuredOutput:
        """The structured-output mechanism in effect."""
        return self.structured_output or DEFAULT_STRUCTURED[self.protocol]


OFFLINE = Profile(
    protocol="offline",
    name="offline",
    description="built-in stand-ins: offline/<model>",
    in_all=False,
)


# ---------------------------------------------------------------------------------------
# Loading and validation
# ---------------------------------------------------------------------------------------


def load_profiles(directory: Path | str) -> dict[str, Profile]:
    """Load every `*.toml` profile in `directory` (plus the built-in `offline`).

    Raises `DataError` naming the file (and line, where it can be found) for unknown
    keys, wrong types, protocol tables that do not fit, or duplicate names.
    """
    directory = Path(directory)
    profiles: dict[str, Profile] = {OFFLINE.name: OFFLINE}
    origin: dict[str, Path] = {}
    try:
        # Listed here, not by glob: glob takes a folder it may not read for an empty one,
        # and every model would then be "unknown" instead of the folder being named.
        names = [e.name for e in os.scandir(directory)] if directory.is_dir() else []
    except OSError as exc:
        raise DataError(str(directory), f"cannot read the providers folder: {exc.strerror or exc}") from None
    for path in sorted(directory / n for n in names if n.endswith(".toml")):
        profile = load_profile(path)
        if profile.name == OFFLINE.name:
            raise DataError(str(path), "the name 'offline' is reserved for the built-in stand-ins")
        if profile.name in origin:
            raise DataError(
                str(path),
                f"profile name {profile.name!r} is already used by {origin[profile.name]}",
            )
        origin[profile.name] = path
        profiles[profile.name] = profile
    return profiles


def load_profile(path: Path) -> Profile:
    """Load and check one profile file; its name is the file stem unless it sets `name`.
    Every problem is one `DataError` with file:line and plain words."""
    text = read_text(path, "provider profile")[1]
    try:
        profile = msgspec.toml.decode(text, type=Profile)
    except msgspec.ValidationError as exc:
        raise DataError(_where(path, text, str(exc)), plain_problem(str(exc), text)) from None
    except msgspec.DecodeError as exc:
        line = re.search(r"at line (\d+)", str(exc))
        where = f"{path}:{line.group(1)}" if line else str(path)
        raise DataError(where, f"not valid TOML: {exc}") from None
    if not profile.name:
        profile = msgspec.structs.replace(profile, name=path.stem)
    problem = _check(profile, set(tomllib.loads(text)))  # decoded above, so it parses
    if problem is not None:
        field, message = problem
        raise DataError(_where(path, text, f"`$.{field}`"), message)
    return profile


# A variable name, as `api_key_env` must give: letters, digits and underscores.
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# How API keys begin (OpenAI, Anthropic, Google, xAI, Groq, Hugging Face, OpenRouter...).
_KEY_PREFIXES = ("sk-", "sk_", "AIza", "xai-", "gsk_", "hf_", "pk-", "key-", "Bearer ")


def looks_like_key(value: str) -> bool:
    """Whether `value`, given where a variable's name goes, is more likely a key itself:
    a key's prefix, characters no variable name has, or a long mix of lower and upper
    case letters and digits (variable names are words: OPENAI_API_KEY)."""
    v = value.strip()
    if v.startswith(_KEY_PREFIXES):
        return True
    if len(v) >= 16 and not _VARIABLE.fullmatch(v):
        return True
    mixed = any(c.islower() for c in v) and any(c.isupper() for c in v) and any(c.isdigit() for c in v)
    return len(v) >= 20 and mixed


def _check(p: Profile, given: set[str]) -> tuple[str, str] | None:
    """Cross-field rules msgspec cannot express: (field, problem) or None. `given`: the
    top-level keys the file sets."""
    if "/" in p.name:
        return "name", f"profile name {p.name!r} must not contain '/'"
    tables = {"azure": "azure_openai", "gemini": "gemini", "http": "http"}
    for table, protocol in tables.items():
        if getattr(p, table) is not None and p.protocol != protocol:
            return table, f"table [{table}] only applies to protocol {protocol!r}"
    if p.protocol == "http" and p.http is None:
        return "http", "protocol 'http' needs an [http] table with at least `url`"
    if p.http is not None and (problem := _template_problem(p.http)):
        return problem
    if p.api_key_env and looks_like_key(p.api_key_env):
        # Never repeated back: it is on the screen, in logs and in CI output otherwise.
        return (
            "api_key_env",
            "api_key_env looks like a key, not a variable name: put the key in the environment or "
            "in .env (e.g. OPENAI_API_KEY=...) and write the variable's name here (api_key_env = "
            '"OPENAI_API_KEY"); if it is a real key, revoke it, as it was saved in this file',
        )
    if p.api_key_env and not _VARIABLE.fullmatch(p.api_key_env):
        return (
            "api_key_env",
            f"api_key_env {p.api_key_env!r} is not a variable name (letters, digits and _, e.g. OPENAI_API_KEY)",
        )
    for info in msgspec.structs.fields(p):
        value = getattr(p, info.name)
        if isinstance(value, float) and not math.isfinite(value):
            return info.name, f"{info.name} must be a finite number, not {value}"
    if problems := sampling_problems(p.params, "params"):
        return problems[0].split(" ", 1)[0], problems[0]
    for field, url in (("base_url", p.base_url), ("http.url", p.http.url if p.http else "")):
        # A URL taken from the environment (${VAR}) is checked when the client is built.
        if url and not url.startswith("${") and not re.match(r"https?://[^/\s]", url, re.IGNORECASE):
            return field, f"{field} {url!r} must be an http:// or https:// URL"
        if url and not p.allow_link_local and (why := link_local_endpoint(url)):
            return field, f"{field} {url!r}: {why}; set allow_link_local = true if a model really is there"
    if p.protocol not in ("http", "offline") and not p.model:
        return "model", f"protocol {p.protocol!r} needs a model"
    if p.protocol in PUBLIC_BASE_URLS and not p.base_url.strip():
        return (
            "base_url",
            f"base_url {'is empty' if 'base_url' in given else 'is missing'}: protocol {p.protocol!r} "
            f"needs the URL its requests and its key go to (the public API: {PUBLIC_BASE_URLS[p.protocol]}; "
            "a local server: e.g. http://localhost:8000/v1)",
        )
    if "base_url" in given and not p.base_url.strip():
        return "base_url", "base_url is empty: give a URL, or leave the field out"
    if p.protocol == "openai" and _host(p.base_url) == "api.openai.com" and not p.api_key_env:
        return "api_key_env", "the OpenAI API needs api_key_env, the name of the variable holding its key"
    if p.structured not in SUPPORTED_STRUCTURED[p.protocol]:
        allowed = ", ".join(sorted(SUPPORTED_STRUCTURED[p.protocol]))
        return (
            "structured_output",
            f"structured_output {p.structured!r} is not available for protocol "
            f"{p.protocol!r} (one of: {allowed})",
        )
    return None


# What vera fills in an `[http]` template (vera.clients.http): `{{messages}}` as a whole
# string value of the body, the others inside any string of the URL or the body.
_HISTORY = "{{messages}}"
_TEXT_PLACEHOLDERS = ("last_message", "session_id", "conversation_id", "session", "session_index", "turn")
_ANY_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][\w-]*)\s*\}\}")


def strings_in(value: Any) -> list[str]:
    """Every string inside a TOML value (an `[http]` body template), however deep."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


def keeps_history(profile: Profile) -> bool:
    """A custom chatbot that is never sent the conversation (no `{{messages}}` in its
    body): the product keeps the history itself, by the session id."""
    return profile.http is not None and _HISTORY not in strings_in(profile.http.body)


def _template_problem(http: HttpOptions) -> tuple[str, str] | None:
    """A placeholder vera would not fill, so the product would be sent it as written (a
    typo, `{{messages}}` inside a text, one in a header), or a body without what the
    simulated user said: each stops a run that could only test nothing."""
    known = [*_TEXT_PLACEHOLDERS, "messages"]
    body = strings_in(http.body)
    for field, texts in (("http.url", [http.url]), ("http.body", body)):
        for text in texts:
            if text == _HISTORY and field == "http.body":
                continue
            for m in _ANY_PLACEHOLDER.finditer(text):
                name = m.group(1)
                if name == "messages":
                    return field, (
                        f"'{_HISTORY}' must be a whole string value in {field} (it becomes a list of "
                        f'turns); write history = "{_HISTORY}", or use {{{{last_message}}}} inside a text'
                    )
                if name not in _TEXT_PLACEHOLDERS or m.group(0) != f"{{{{{name}}}}}":
                    close = difflib.get_close_matches(name, known, n=1)
                    hint = (
                        f"; did you mean '{{{{{close[0]}}}}}'?"
                        if close
                        else (f"; known: {', '.join(f'{{{{{k}}}}}' for k in known)}")
                    )
                    return field, f"unknown placeholder {m.group(0)!r} in {field}{hint}"
    for value in http.headers.values():
        if found := _ANY_PLACEHOLDER.search(value):
            return "http.headers", (
                "placeholders are filled in http.url and http.body only, not in http.headers "
                f"({found.group(0)!r})"
            )
    if _HISTORY not in body and not any("{{last_message}}" in s for s in body):
        return "http.body", (
            f"http.body sends neither '{_HISTORY}' nor '{{{{last_message}}}}': the chatbot would never "
            "see what the simulated user said"
        )
    return None


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


# The choices of every enumerated field, for messages that say which values exist.
_CHOICES: dict[str, tuple[str, ...]] = {
    "protocol": get_args(ProtocolName),
    "structured_output": get_args(StructuredOutput),
    "gemini.schema_field": ("responseJsonSchema", "responseSchema"),
    "http.method": ("POST", "PUT", "PATCH"),
}
_TABLES: dict[str, type[msgspec.Struct]] = {
    "": Profile,
    "azure": AzureOptions,
    "gemini": GeminiOptions,
    "http": HttpOptions,
    "http.roles": HttpRoles,
}
_KINDS = {
    "int": "a whole number",
    "float": "a number",
    "str": "text in quotes",
    "bool": "true or false",
    "array": "a list",
    "object": "a table",
}


def plain_problem(message: str, text: str) -> str:
    """A msgspec validation message about a profile, in the words of the file's author:
    which values exist, what kind of value is expected and what was given."""
    try:
        raw: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raw = {}
    at = _PATH_RE.search(message)
    field = at.group(1) if at else ""
    given = _lookup(raw, field)
    if m := re.match(r"Invalid enum value '(.*)'", message):
        choices = _CHOICES.get(re.sub(r"\[\d+\]", "", field), ())
        known = f"; use one of: {', '.join(choices)}" if choices else ""
        return f"{field} {m.group(1)!r} is not known{known}"
    if m := re.match(r"Expected `(\w+)` (>=|>|<=|<) ([\d.]+)", message):
        kind, op, bound = _KINDS.get(m.group(1), m.group(1)), m.group(2), m.group(3).removesuffix(".0")
        words = {">=": "at least", ">": "greater than", "<=": "at most", "<": "less than"}[op]
        return f"{field} must be {kind} {words} {bound}, not {given!r}"
    if m := re.match(r"Expected `([\w |]+)`, got `(\w+)`", message):
        kinds = [k.strip() for k in m.group(1).split("|") if k.strip() != "null"]
        return f"{field} must be {' or '.join(_KINDS.get(k, k) for k in kinds)}, not {given!r}"
    if m := re.match(r"Object contains unknown field `([^`]+)`", message):
        fields = msgspec.structs.fields(_TABLES.get(field, Profile))
        names = [f.encode_name for f in fields]
        close = difflib.get_close_matches(m.group(1), names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known fields: {', '.join(names)}"
        table = f" in [{field}]" if field else ""
        return f"unknown field {m.group(1)!r}{table}{hint}"
    if m := re.match(r"Object missing required field `([^`]+)`", message):
        table = f" in [{field}]" if field else ""
        wanted = _CHOICES.get(m.group(1))
        return f"missing required field {m.group(1)!r}{table}" + (
            f" (one of: {', '.join(wanted)})" if wanted else ""
        )
    return message


def _lookup(raw: Any, field: str) -> Any:
    for key in (k for k in re.split(r"[.\[\]]", field) if k):
        if isinstance(raw, dict):
            raw = raw.get(key)
        elif isinstance(raw, list) and key.isdigit() and int(key) < len(raw):
            raw = raw[int(key)]
        else:
            return None
    return raw


_PATH_RE = re.compile(r"`\$\.([\w.\[\]]+)`")
_UNKNOWN_RE = re.compile(r"unknown field `([^`]+)`")


def _where(path: Path, text: str, message: str) -> str:
    """`file:line` of the key a msgspec error points at, or `file` when it is not found.

    tomllib keeps no positions, so this finds the key's line inside its table."""
    keys: list[str] = []
    if m := _PATH_RE.search(message):
        keys = [k for k in re.split(r"[.\[\]]", m.group(1)) if k and not k.isdigit()]
    if m := _UNKNOWN_RE.search(message):
        keys.append(m.group(1))
    if not keys:
        return str(path)
    table, key = ".".join(keys[:-1]), keys[-1]
    key_re = re.compile(r"\s*[\"']?" + re.escape(key) + r"[\"']?\s*=")
    current = ""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            current = stripped.strip("[]").strip()
            if current == ".".join(keys):
                return f"{path}:{number}"
        elif current == table and key_re.match(line):
            return f"{path}:{number}"
    return str(path)


# ---------------------------------------------------------------------------------------
# Model references
# ---------------------------------------------------------------------------------------


def resolve_ref(ref: str, profiles: Mapping[str, Profile]) -> tuple[Profile, str]:
    """Turn `name` or `name/model` into (profile, model).

    A model id may itself contain slashes (`openrouter/meta-llama/llama-3.1-70b`): the
    reference is split at its first `/` only when the part before it is a profile name.

    >>> resolve_ref("openai/gpt-4o-mini", profiles)  # doctest: +SKIP
    (Profile(protocol='openai', name='openai', ...), 'gpt-4o-mini')
    """
    profile = profiles.get(ref)
    if profile is not None:
        return profile, profile.model
    prefix, sep, model = ref.partition("/")
    if sep and model and prefix in profiles:
        return profiles[prefix], model
    known = ", ".join(sorted(profiles)) or "(none)"
    raise ConfigError(f"unknown model reference {ref!r}; known profiles: {known}")
