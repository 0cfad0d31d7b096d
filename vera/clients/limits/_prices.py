"""What a call costs and how many tokens it may take, before and after it is made."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from vera.clients.budget import output_cap
from vera.records import Message, Usage

DEFAULT_OUTPUT_ESTIMATE = 1024


class Prices(msgspec.Struct, frozen=True):
    """US dollars per million tokens; cached input defaults to the input price."""

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    cached_input_per_mtok: float | None = None

    def cost(self, usage: Usage) -> float:
        cached_price = self.cached_input_per_mtok
        if cached_price is None:
            cached_price = self.input_per_mtok
        uncached = usage.input_tokens - usage.cached_input_tokens
        if uncached < 0:  # (not max(): this prices every call)
            uncached = 0
        return (
            uncached * self.input_per_mtok
            + usage.cached_input_tokens * cached_price
            + usage.output_tokens * self.output_per_mtok
        ) / 1_000_000

    def reasoning_cost(self, usage: Usage) -> float:
        """The part of `cost(usage)` that paid for reasoning: those tokens are output."""
        return usage.reasoning_tokens * self.output_per_mtok / 1_000_000

    def max_input_per_mtok(self) -> float:
        """The highest price an input token may be billed at (a budget's worst case)."""
        return max(self.input_per_mtok, self.cached_input_per_mtok or 0.0)

    def worst_cost(self, input_tokens: int, output_tokens: int) -> float:
        """What a call of at most these tokens may cost, every input token at the
        highest input price."""
        return (input_tokens * self.max_input_per_mtok() + output_tokens * self.output_per_mtok) / 1_000_000


def estimate_tokens(
    messages: Sequence[Message],
    params: dict[str, Any] | None,
    schema: dict[str, Any] | None = None,
    default_output: int = DEFAULT_OUTPUT_ESTIMATE,
) -> int:
    """A cheap upper-ish estimate of a call's tokens: ~4 characters per token of the
    request, plus the output it may produce (providers count `max_tokens` up front too)."""
    chars = sum(len(m.content) for m in messages)
    if schema:
        chars += len(repr(schema))
    return chars // 4 + 4 * len(messages) + max_output(params, default_output)


def max_output(params: dict[str, Any] | None, default: int = DEFAULT_OUTPUT_ESTIMATE) -> int:
    """The output cap `params` set, under any of the protocols' names for it."""
    cap = output_cap(params)
    return default if cap is None else cap
