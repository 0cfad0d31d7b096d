"""OpenAI's flex tier for a role: the same model, slower, at batch prices.

`[user_agent] service_tier = "flex"` (or `[chatbot]`) sends that role's calls with
`service_tier: "flex"`. Flex runs on spare capacity: a call may wait longer (raise the
profile's `timeout_s`; OpenAI suggests up to 15 minutes) or be refused with 429 "resource
unavailable". With `flex_fallback = "standard"` a refused flex call is asked again at
once at the standard tier (the standard client retries as usual); with `"retry"`, the
flex client itself retries with the profile's backoff and then fails like any call.

Both clients are `LimitedClient`s on the same account: the flex one priced at the
profile's `flex_price_factor` and recording `tier = "flex"`. The request above this layer
(the response cache's key) is the one without the tier, so a reply is reused whichever
tier paid for it.
"""

from __future__ import annotations

import msgspec

from vera.clients.base import ChatRequest
from vera.clients.limits import LimitedClient
from vera.errors import TransientError
from vera.records import Completion

FLEX_PROTOCOLS = frozenset({"openai"})


class FlexClient:
    """A `ChatClient` that asks at the flex tier, falling back on `standard` (or None:
    no fallback) when flex gives no answer."""

    __slots__ = ("fallbacks", "flex", "model", "name", "standard")

    def __init__(self, flex: LimitedClient, standard: LimitedClient | None) -> None:
        self.flex = flex
        self.standard = standard
        self.name = flex.name
        self.model = flex.model
        self.fallbacks = 0  # calls flex did not answer, answered at the standard tier

    def __repr__(self) -> str:
        return f"FlexClient({self.flex!r})"

    async def chat(self, request: ChatRequest) -> Completion:
        flex = msgspec.structs.replace(request, params={**(request.params or {}), "service_tier": "flex"})
        try:
            return await self.flex.chat(flex)
        except TransientError:
            if self.standard is None:
                raise
        self.fallbacks += 1
        return await self.standard.chat(request)
