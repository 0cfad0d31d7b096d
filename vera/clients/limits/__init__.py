"""Per-account limits, retries and accounting around any `ChatClient`.

TokenBucket  our own bucket (level drains at a steady rate, capped at a capacity), with
             an injectable clock; one for requests and one for tokens per account
             (`_buckets`)
Account      one per (base URL, key): the buckets, a cap on calls in flight, a pause the
             server can name, and counters for the progress display; shared by every
             profile and role that uses the same account (`_account`)
RetryPolicy  exponential backoff with full jitter; honours the server's requested
             wait; retries TransientError only (`_retry`)
Prices       what a call costs; `estimate_tokens` and `max_output` say what it may take
             before it is sent (`_prices`)
LimitedClient  a ChatClient: in-flight slot → pause and buckets → the budget's
             reservation (vera.clients.budget) → timeout → inner.chat → retry, then the
             call's cost on the account, the budget and the recorder's meter (`_client`)

account = Account("api.openai.com", rpm=500, tpm=200_000, max_in_flight=64)
client = LimitedClient(inner, account, RetryPolicy(6), provider="openai",
                       timeout_s=60, prices=Prices(2.5, 10.0))

The order matters. A call first takes its in-flight slot, and only then waits for the
account's pause and buckets, so what the buckets let through is sent at once: calls
never queue for a slot after being admitted and then leave together in a burst, and a
pause named meanwhile holds every call that has not been sent yet.

Code outside this package imports these names from `vera.clients.limits`, not from its
private modules.
"""

from __future__ import annotations

from vera.clients.limits._account import Account, SharedPause
from vera.clients.limits._buckets import (
    REQUEST_BURST_S,
    TOKEN_BURST_S,
    WINDOW_S,
    Bucket,
    BucketFactory,
    BucketKind,
    Clock,
    MonotonicClock,
    TokenBucket,
    bucket_shape,
    local_buckets,
)
from vera.clients.limits._client import LimitedClient
from vera.clients.limits._prices import DEFAULT_OUTPUT_ESTIMATE, Prices, estimate_tokens, max_output
from vera.clients.limits._retry import RetryPolicy

__all__ = [
    "DEFAULT_OUTPUT_ESTIMATE",
    "REQUEST_BURST_S",
    "TOKEN_BURST_S",
    "WINDOW_S",
    "Account",
    "Bucket",
    "BucketFactory",
    "BucketKind",
    "Clock",
    "LimitedClient",
    "MonotonicClock",
    "Prices",
    "RetryPolicy",
    "SharedPause",
    "TokenBucket",
    "bucket_shape",
    "estimate_tokens",
    "local_buckets",
    "max_output",
]
