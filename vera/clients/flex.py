"""OpenAI's flex tier for a role: the same model, slower, at batch prices.

`[user_agent] service_tier = "flex"` (or `[chatbot]`) sends that role's calls with
`service_tier: "flex"`. Flex runs on spare capacity: a call may wait longer (raise the
profile's `timeout_s`; OpenAI suggests up to 15 minutes) or be refused with 429 "resource
unavailable"; a model without a flex tier is refused with 400. With `flex_fallback =
"standard"` a refused flex call is asked again at once at the standard tier (the
standard client retries as usual); with `"retry"`, the flex client itself retries with
the profile's backoff and then fails like any call. Which models OpenAI sells at flex:
`FLEX_MODELS`, checked before a run (docs/batch.md#flex).

Both clients are `LimitedClient`s on the same account: the flex one priced at the
profile's `flex_price_factor` and recording `tier = "flex"`. The request above this layer
(the response cache's key) is the one without the tier, so a reply is reused whichever
tier paid for it.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import msgspec

from vera.clients.base import ChatRequest
from vera.clients.limits import LimitedClient
from vera.clients.meter import current_meter
from vera.errors import ProviderError, RequestError, TransientError
from vera.records import Completion

FLEX_PROTOCOLS = frozenset({"openai"})
# The models OpenAI sells at the flex tier, as its pricing page lists them (Flex tab,
# linked from the flex-processing guide; read 2026-10-12, checked 2026-12-06; the table
# in docs/batch.md#flex names the sources). A dated snapshot of one (`o3-2025-04-16`)
# counts as it.
FLEX_MODELS = (
    "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5.1", "gpt-5.2",
    "gpt-5.4", "gpt-5.4-mini", "gpt-5.4-nano", "gpt-5.4-pro",
    "gpt-5.5", "gpt-5.5-pro", "gpt-5.6-luna", "gpt-5.6-sol", "gpt-5.6-terra",
    "gpt-6-astra", "gpt-6-luna", "gpt-6-sol", "gpt-6.1-sol", "gpt-6.1-terra",
    "o3", "o4-mini",
)  # fmt: skip
OPENAI_HOST = "api.openai.com"
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def flex_problem(model: str, endpoint: str) -> str | None:
    """Why `model` at `endpoint` cannot be asked at the flex tier (None: it can, or
    vera cannot tell). Only OpenAI's own API is checked: a compatible server decides for
    itself, and a refusal from it falls back like one from OpenAI."""
    if urlsplit(endpoint).hostname != OPENAI_HOST:
        return None
    if model in FLEX_MODELS or _SNAPSHOT.sub("", model) in FLEX_MODELS:
        return None
    return (
        f"OpenAI does not list {model!r} for the flex tier (its pricing page lists: "
        f"{', '.join(FLEX_MODELS)}; docs/batch.md#flex)"
    )


def tier_unavailable(error: ProviderError) -> bool:
    """Whether a refusal says the flex tier is not there for this model (OpenAI and
    Azure answer 400 `invalid_request_error` naming the service tier), rather than that
    the request itself is wrong."""
    if error.status != 400:
        return False
    text = error.message.lower()
    return "flex" in text or "service_tier" in text or "service tier" in text


class FlexClient:
    """A `ChatClient` that asks at the flex tier, falling back on `standard` (or None:
    no fallback) when flex gives no answer: a 429 without capacity (or any transient
    failure), or a 400 saying the model has no flex tier. After such a 400 the model's
    calls go to the standard tier at once (the refusal would only repeat).

    A fallback is a call of its own: the refused flex attempt is recorded as sent (an
    error, at the flex tier), and the standard call that answered it is recorded with
    `fallback = "flex"` (vera.clients.meter)."""

    __slots__ = ("fallbacks", "flex", "model", "name", "standard", "unavailable")

    def __init__(self, flex: LimitedClient, standard: LimitedClient | None) -> None:
        self.flex = flex
        self.standard = standard
        self.name = flex.name
        self.model = flex.model
        self.fallbacks = 0  # calls flex did not answer, answered at the standard tier
        self.unavailable = ""  # the refusal that said this model has no flex tier

    def __repr__(self) -> str:
        return f"FlexClient({self.flex!r})"

    async def chat(self, request: ChatRequest) -> Completion:
        standard = self.standard
        flex = msgspec.structs.replace(request, params={**(request.params or {}), "service_tier": "flex"})
        if standard is None:
            return await self.flex.chat(flex)
        if not self.unavailable:
            try:
                return await self.flex.chat(flex)
            except TransientError:
                pass
            except RequestError as exc:
                if not tier_unavailable(exc):
                    raise
                self.unavailable = exc.message
        self.fallbacks += 1
        meter = current_meter()
        if meter is not None:
            meter.fall_back("flex")
        return await standard.chat(request)
