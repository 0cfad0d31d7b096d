"""Status codes to error types, server-requested waits, lenient JSON reading."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import formatdate

import orjson
import pytest

from vera.clients._transport import error_from_response, parse_wait, retry_after
from vera.clients.structured import extract_json, merge_params, schema_name
from vera.errors import (
    AuthError,
    BadResponseError,
    CallTimeoutError,
    RateLimitError,
    RequestError,
    ServerError,
)


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (429, {"error": {"message": "slow", "code": "rate_limit_exceeded"}}, RateLimitError),
        (429, {"error": {"message": "no money", "code": "insufficient_quota"}}, RequestError),
        (401, {"error": {"message": "bad key"}}, AuthError),
        (403, {"type": "error", "error": {"type": "permission_error", "message": "no"}}, AuthError),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "status": "INVALID_ARGUMENT",
                    "message": "bad key",
                    "details": [{"reason": "API_KEY_INVALID"}],
                }
            },
            AuthError,
        ),
        (400, {"error": {"message": "bad schema"}}, RequestError),
        (404, {"detail": "no such model"}, RequestError),
        (408, {}, CallTimeoutError),
        (409, {}, ServerError),
        (500, {"error": "boom"}, ServerError),
        (
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "x"}},
            ServerError,
        ),
        (302, {}, BadResponseError),
    ],
)
def test_status_maps_to_an_error_type(status: int, body: object, expected: type) -> None:
    error = error_from_response("p", status, {}, orjson.dumps(body))
    assert type(error) is expected
    assert error.provider == "p" and error.status == status


def test_error_text_carries_the_servers_message_and_type() -> None:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Too many tokens"}}
    error = error_from_response("claude", 429, {"retry-after": "7"}, orjson.dumps(body))
    assert str(error) == "[claude] HTTP 429: rate_limit_error: Too many tokens"
    assert isinstance(error, RateLimitError) and error.retry_after == 7.0


def test_non_json_error_body_is_quoted() -> None:
    error = error_from_response("p", 502, {}, b"<html>Bad Gateway</html>")
    assert "Bad Gateway" in str(error)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("12", 12.0),
        ("1.5", 1.5),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3s", 3723.0),
        ("0.5s", 0.5),
    ],
)
def test_parse_wait_durations(value: str, seconds: float) -> None:
    assert parse_wait(value) == pytest.approx(seconds)


def test_parse_wait_dates() -> None:
    http_date = formatdate(time.time() + 30, usegmt=True)
    assert 28 <= (parse_wait(http_date) or 0) <= 30
    rfc3339 = (datetime.now(UTC) + timedelta(seconds=20)).isoformat().replace("+00:00", "Z")
    assert 18 <= (parse_wait(rfc3339) or 0) <= 20
    assert parse_wait(formatdate(time.time() - 100, usegmt=True)) == 0.0  # already past
    assert parse_wait("soon") is None


def test_retry_after_sources_in_order() -> None:
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "9"}) == 9.0
    # Reset headers count only for a bucket that is actually empty.
    openai = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1.5s",
        "x-ratelimit-remaining-tokens": "5000",
        "x-ratelimit-reset-tokens": "6m0s",
    }
    assert retry_after(openai) == 1.5
    reset_at = (datetime.now(UTC) + timedelta(seconds=10)).isoformat()
    anthropic = {
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": reset_at,
    }
    assert 8 <= (retry_after(anthropic) or 0) <= 10
    gemini = {
        "error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]}
    }
    assert retry_after({}, gemini) == 37.0
    assert retry_after({}) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"answer": "Yes"}', {"answer": "Yes"}),
        ('```json\n{"answer": "No"}\n```', {"answer": "No"}),
        (
            'Sure. {"answer": "Yes", "reasoning": "a {curly} thing"} Hope that helps!',
            {"answer": "Yes", "reasoning": "a {curly} thing"},
        ),
        ('I think {not json} but then {"a": 1}', {"a": 1}),
        ("no json here", None),
        ("", None),
    ],
)
def test_extract_json_is_lenient(text: str, expected: object) -> None:
    assert extract_json(text) == expected


def test_schema_name_and_param_merging() -> None:
    assert schema_name({"title": "Judge answer!"}) == "Judge_answer"
    assert schema_name({}) == "response"
    assert merge_params({"temperature": 1, "seed": 3}, {"temperature": 0, "seed": None}) == {"temperature": 0}
