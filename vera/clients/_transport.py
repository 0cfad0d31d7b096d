"""What every wire protocol shares: one POST over the pool's session, and errors as types.

`send` returns the body of a 2xx response and turns everything else into the error tree
of `vera.errors`: aiohttp exceptions never leave a client, and HTTP statuses become
RateLimitError / ServerError / AuthError / RequestError with the server's own message
(redacted) and any wait it asked for (Retry-After, rate-limit reset headers, Gemini's
RetryInfo).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import aiohttp
import msgspec
import orjson

from vera.errors import (
    AuthError,
    BadResponseError,
    CallTimeoutError,
    ConnectError,
    ProviderError,
    RateLimitError,
    RequestError,
    ServerError,
)
from vera.inputs import Profile, expand_env, redact

T = TypeVar("T")

JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}

# Error codes that arrive as 429 but mean "no more money/quota": waiting will not help.
_EXHAUSTED_CODES = frozenset({"insufficient_quota", "enforced_spend_limit_reached"})
_AUTH_CODES = frozenset({"API_KEY_INVALID", "authentication_error", "invalid_api_key"})


async def send(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    *,
    headers: Mapping[str, str],
    provider: str,
    method: str = "POST",
) -> bytes:
    """Send one request and return the body of a 2xx response, or raise a ProviderError."""
    try:
        async with session.request(method, url, data=body, headers=headers) as response:
            raw = await response.read()
            status = response.status
            if status >= 300:
                raise error_from_response(provider, status, response.headers, raw)
            return raw
    except ProviderError:
        raise
    except (aiohttp.ClientError, OSError) as exc:
        raise transport_error(provider, exc) from None


def transport_error(provider: str, exc: aiohttp.ClientError | OSError) -> ProviderError:
    """The error a failed request stands for (raise it `from None`: aiohttp exceptions
    carry the request headers, i.e. the key)."""
    if isinstance(exc, aiohttp.InvalidURL):
        return RequestError(provider, f"invalid URL: {redact(str(exc))}")
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return CallTimeoutError(provider, f"socket timeout: {redact(str(exc))}")
    if isinstance(exc, aiohttp.ClientConnectorError):
        # The connection was never made: nothing was sent, nothing can be billed.
        detail = redact(str(exc)) or "cannot connect"
        return ConnectError(provider, f"{type(exc).__name__}: {detail}", sent=False)
    detail = redact(str(exc)) or "connection closed"
    return ConnectError(provider, f"{type(exc).__name__}: {detail}")


def profile_headers(profile: Profile) -> dict[str, str]:
    """JSON headers plus the profile's extra `headers` (with `${VAR}` expanded)."""
    headers = dict(JSON_HEADERS)
    for name, value in profile.headers.items():
        headers[name] = expand_env(value, profile.name)
    return headers


_ENCODER = msgspec.json.Encoder()


def encode(body: Any) -> bytes:
    """A request body as JSON; records (`Message`) encode natively."""
    return _ENCODER.encode(body)


def decode(raw: bytes, type: type[T], provider: str) -> T:
    """Decode a 2xx body into a typed response shape; anything else is a bad response."""
    try:
        return msgspec.json.decode(raw, type=type)
    except msgspec.DecodeError as exc:
        raise BadResponseError(provider, f"malformed response: {exc}: {snippet(raw)}") from None


def snippet(raw: bytes, limit: int = 200) -> str:
    text = raw[:limit].decode("utf-8", "replace")
    return redact(text + ("…" if len(raw) > limit else ""))


# ---------------------------------------------------------------------------------------
# Status → error type
# ---------------------------------------------------------------------------------------


def error_from_response(provider: str, status: int, headers: Mapping[str, str], raw: bytes) -> ProviderError:
    """The error a non-2xx response stands for, with the server's message redacted."""
    data = _loads(raw)
    message, codes = _error_message(data, raw)
    text = redact(f"HTTP {status}: {message}"[:600])
    wait = retry_after(headers, data)
    if status == 429:
        if codes & _EXHAUSTED_CODES:
            return RequestError(provider, f"quota or spend limit exhausted; {text}", status=status)
        return RateLimitError(provider, text, retry_after=wait)
    if status in (401, 403) or codes & _AUTH_CODES:
        return AuthError(provider, text, status=status)
    if status == 408:
        return CallTimeoutError(provider, text, status=status)
    if status >= 500 or status in (409, 425):
        # 409/425 are "try again" conflicts in OpenAI's and Anthropic's own SDKs.
        return ServerError(provider, text, status=status, retry_after=wait)
    if 300 <= status < 400:
        return BadResponseError(provider, f"unexpected redirect {text}", status=status)
    return RequestError(provider, text, status=status)


def _loads(raw: bytes) -> Any:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    # Gemini sometimes wraps its error object in a one-element list.
    if isinstance(data, list) and data:
        data = data[0]
    return data


def _error_message(data: Any, raw: bytes) -> tuple[str, set[str]]:
    """The human message and machine codes of the error bodies of OpenAI
    (`error.message/type/code`), Anthropic (`error.type/message`, `error.details`),
    Gemini (`error.message/status/details[].reason`) and common compatible servers."""
    if not isinstance(data, dict):
        return snippet(raw), set()
    error = data.get("error")
    codes: set[str] = set()
    if isinstance(error, dict):
        for key in ("type", "code", "status"):
            if isinstance(error.get(key), str):
                codes.add(error[key])
        details = error.get("details")
        for detail in details if isinstance(details, list) else [details]:
            if isinstance(detail, dict):
                codes.update(v for k, v in detail.items() if k in ("reason", "error_code"))
        message = str(error.get("message") or snippet(raw))
        kind = next((c for c in (error.get("type"), error.get("status")) if c), None)
        return (f"{kind}: {message}" if kind else message), {c for c in codes if c}
    if isinstance(error, str):
        return error, codes
    detail = data.get("message") or data.get("detail")
    return (str(detail) if detail else snippet(raw)), codes


# ---------------------------------------------------------------------------------------
# How long the server asked us to wait
# ---------------------------------------------------------------------------------------

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_RESET_HEADERS = (
    # (remaining header, reset header): OpenAI uses durations ("6m0s"), Anthropic RFC 3339.
    ("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"),
    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"),
    ("anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset"),
    ("anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset"),
    ("anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-reset"),
    ("anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-output-tokens-reset"),
)


def retry_after(headers: Mapping[str, str], data: Any = None) -> float | None:
    """Seconds the server asked us to wait, from (in order) `retry-after-ms`,
    `retry-after` (seconds or an HTTP date), the reset header of an exhausted rate-limit
    bucket, or a Gemini `RetryInfo.retryDelay` in the error body; None if none says."""
    if value := headers.get("retry-after-ms"):
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    if value := headers.get("retry-after"):
        seconds = parse_wait(value)
        if seconds is not None:
            return seconds
    resets = [
        parse_wait(headers[reset])
        for remaining, reset in _RESET_HEADERS
        if headers.get(remaining) == "0" and headers.get(reset)
    ]
    if waits := [w for w in resets if w is not None]:
        return max(waits)
    return _retry_info(data)


def parse_wait(value: str) -> float | None:
    """Seconds from `"12"`, `"1.5"`, `"6m0s"`, `"20ms"`, an HTTP date or an RFC 3339 time."""
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    if (parts := _DURATION.findall(value)) and _DURATION.sub("", value) == "":
        return sum(float(n) * _UNIT_SECONDS[unit] for n, unit in parts)
    moment: datetime | None = None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
    if moment is None or moment.tzinfo is None:
        return None
    return max(0.0, moment.timestamp() - time.time())


def _retry_info(data: Any) -> float | None:
    error = data.get("error") if isinstance(data, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            delay = detail.get("retryDelay")
            if isinstance(delay, str):
                return parse_wait(delay)
    return None
