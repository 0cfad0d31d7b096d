"""The client pool: one aiohttp session, one `Account` per provider account, one
client stack (vera.clients.stack) per model reference and role.

    async with ClientPool(profiles, on_call=store.record_call) as pool:
        chatbot = pool.client("openai/gpt-4o", "chatbot")
        judge = pool.client("anthropic", "judge")
        completion = await chatbot.chat([Message("user", "hello")])

Profiles that reach the same base URL with the same key share one Account, whatever
their model or role, so a judge and a user-agent on one OpenAI key share its limits. When
such profiles give different limits, the strictest applies.

A shard of a sweep (`shards=N`) takes 1/N of every account's rpm, tpm and in-flight cap
by default (`shard_limits="split"`), so N shards on N machines never exceed the account
together; `"full"` gives each shard everything (shards on different keys). With
`limits_url`, rpm and tpm live in Redis and every shard draws on the whole budget; the
in-flight cap stays per process (split as above).

The pool leaves process-wide settings alone: the collector setting a sweep wants is
applied by the command that owns the process (vera.app._gc).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

import aiohttp
import msgspec

from vera.clients.anthropic import DEFAULT_MAX_TOKENS, AnthropicClient
from vera.clients.base import ChatClient, OfflineModels
from vera.clients.batch_anthropic import MAX_BYTES as ANTHROPIC_MAX_BYTES
from vera.clients.batch_anthropic import MAX_REQUESTS as ANTHROPIC_MAX_REQUESTS
from vera.clients.batch_anthropic import AnthropicBatchAPI
from vera.clients.batch_gemini import MAX_BYTES as GEMINI_MAX_BYTES
from vera.clients.batch_gemini import MAX_REQUESTS as GEMINI_MAX_REQUESTS
from vera.clients.batch_gemini import GeminiBatchAPI
from vera.clients.batch_openai import AZURE_MAX_REQUESTS, OpenAIBatchAPI
from vera.clients.batching import (
    BATCH_PROTOCOLS,
    BatchAPI,
    BatchingClient,
    BatchJournal,
    BatchSettings,
    WaitClock,
    batch_summary,
)
from vera.clients.budget import Budget, output_bound
from vera.clients.flex import FLEX_PROTOCOLS, FlexClient, flex_problem
from vera.clients.gemini import GeminiClient
from vera.clients.http import HttpChatbotClient
from vera.clients.limits import Account, LimitedClient, Prices, RetryPolicy, max_output
from vera.clients.openai import OpenAIClient, azure_deployment
from vera.clients.shared_limits import RedisLimits
from vera.clients.stack import stack
from vera.errors import ConfigError
from vera.inputs import AzureOptions, Profile, api_key, missing_key, resolve_ref
from vera.records import AccountLimits, CallRecord, ModelSpec, Role, Usage

ShardLimits = Literal["split", "full"]


class _ClientFactory(Protocol):
    def from_profile(
        self, session: aiohttp.ClientSession, profile: Profile, model: str, key: str | None
    ) -> ChatClient: ...


PROTOCOLS: dict[str, _ClientFactory] = {
    "openai": OpenAIClient,
    "azure_openai": OpenAIClient,
    "anthropic": AnthropicClient,
    "gemini": GeminiClient,
    "http": HttpChatbotClient,
}


class CachePrices(Prices, frozen=True, kw_only=True):
    """Prices with Anthropic's cache writes priced apart (they cost more than input:
    1.25x for the 5-minute cache). Without a write price they count as input."""

    cache_write_per_mtok: float | None = None

    def cost(self, usage: Usage) -> float:
        # Prices.cost by name, not super(): every call's record is priced here, and the
        # zero-argument super() of a Struct subclass cost it 0.1-0.7 µs.
        base = Prices.cost(self, usage)  # writes counted at the input price there
        if self.cache_write_per_mtok is None or not usage.cache_write_tokens:
            return base
        extra = self.cache_write_per_mtok - self.input_per_mtok
        return base + usage.cache_write_tokens * extra / 1_000_000

    def max_input_per_mtok(self) -> float:
        return max(super().max_input_per_mtok(), self.cache_write_per_mtok or 0.0)


def tier_prices(prices: Prices, factor: float, cached_factor: float | None = None) -> CachePrices:
    """A discounted tier's prices (batch, flex): every rate times `factor`, except cached
    input, times `cached_factor` where the provider bills it apart. OpenAI and Anthropic
    discount cache reads (and Anthropic's writes) like everything else in a batch; on
    Gemini the cache discount takes precedence, so cached input keeps its live rate
    (the profile's `batch_cached_input_factor = 1.0`)."""
    write = getattr(prices, "cache_write_per_mtok", None)
    cached = prices.cached_input_per_mtok
    if cached is None and cached_factor is not None and cached_factor != factor:
        cached = prices.input_per_mtok  # without a cached price cached input is input
    return CachePrices(
        prices.input_per_mtok * factor,
        prices.output_per_mtok * factor,
        None if cached is None else cached * (factor if cached_factor is None else cached_factor),
        cache_write_per_mtok=None if write is None else write * factor,
    )


class ClientPool:
    """Owns the HTTP session and builds (and caches) the limited client for a reference.

    `connection_limit` caps open connections over all hosts (0 = no cap; the accounts'
    `max_in_flight` is the real limit). `retry_base_delay` / `retry_max_delay` shape the
    backoff of every client (tests make them small). `stand_ins` builds the offline
    models (`vera.standins.StandIns`, which knows the run's inputs and plan); without it a
    pool builds none.
    `budget` is the run's spending limit, held by every client before each priced call
    (vera.clients.budget).
    """

    def __init__(
        self,
        profiles: Mapping[str, Profile],
        *,
        on_call: Callable[[CallRecord], object] | None = None,
        connection_limit: int = 0,
        retry_base_delay: float = 1.0,
        retry_max_delay: float = 60.0,
        shards: int = 1,
        shard_limits: ShardLimits = "split",
        limits_url: str = "",
        stand_ins: OfflineModels | None = None,
        budget: Budget | None = None,
        session_tag: str = "",
    ) -> None:
        self.profiles = dict(profiles)
        # Appended to the session ids a custom http chatbot is sent (RunManifest.session_tag).
        self._session_tag = session_tag
        self.budget = budget
        self._stand_ins = stand_ins
        self._shards = shards
        self._split = shards if shard_limits == "split" else 1
        self._shared = RedisLimits(limits_url) if limits_url else None
        self._on_call = on_call
        self._connection_limit = connection_limit
        self._retry = (retry_base_delay, retry_max_delay)
        self._session: aiohttp.ClientSession | None = None
        self._limited: dict[tuple[str, str], LimitedClient] = {}
        self._clients: dict[tuple[str, str], ChatClient] = {}
        self._accounts: dict[tuple[str, str], Account] = {}
        self._batching: dict[tuple[str, str], BatchingClient] = {}
        self._wait_clock: WaitClock | None = None
        self._flex: dict[tuple[str, str], FlexClient] = {}

    async def __aenter__(self) -> ClientPool:
        if self._shared is not None:
            await self._shared.open()  # an unreachable Redis stops the run before any work
        connector = aiohttp.TCPConnector(
            limit=self._connection_limit,
            limit_per_host=0,
            ttl_dns_cache=300,
            force_close=False,
        )
        # No session-wide timeout: each call is bounded by its profile's timeout_s.
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        for batching in self._batching.values():
            await batching.aclose()  # pending batches stay in the journal for a resume
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._shared is not None:
            await self._shared.close()

    @property
    def accounts(self) -> list[Account]:
        """Every account in use, for a progress display."""
        return list(self._accounts.values())

    def limits(self) -> list[AccountLimits]:
        """The limits each provider account runs with in this process, for the manifest."""
        share = f"1/{self._shards}" if self._shards > 1 else "full"
        return [
            AccountLimits(
                account=a.label,
                rpm=a.rpm,
                tpm=a.tpm,
                max_in_flight=a.max_in_flight,
                share=share if self._split > 1 else "full",
                shared="redis" if self._shared is not None else "",
            )
            for identity, a in self._accounts.items()
            if identity[0] != "offline"
        ]

    def spec(self, ref: str) -> ModelSpec:
        """What a reference resolves to, for the run manifest (no secrets)."""
        profile, model = resolve_ref(ref, self.profiles)
        return ModelSpec(
            ref=ref,
            provider=profile.name,
            protocol=profile.protocol,
            model=model or profile.name,  # an http chatbot is named by its profile
            params=dict(profile.params),
        )

    def rubric_refusal(self, ref: str, rubric_key: str) -> str | None:
        """Why the model `ref` cannot judge the rubric `rubric_key` (None: it can). Only
        an offline stand-in ever refuses; no session is needed to ask."""
        profile, model = resolve_ref(ref, self.profiles)
        if profile.protocol != "offline" or self._stand_ins is None:
            return None
        return self._stand_ins.rubric_refusal(model, rubric_key)

    def tier_refusal(self, ref: str, tier: str) -> str | None:
        """Why `ref` cannot be asked at `tier` ("batch" or "flex"; None: it can), from
        its profile alone: no session is needed to ask (see `tier_problem`)."""
        profile, model = resolve_ref(ref, self.profiles)
        return tier_problem(profile, model, tier)

    def client(self, ref: str, role: Role = "chatbot") -> ChatClient:
        """The client for `ref` (`profile` or `profile/model`) in `role`: the limited
        client, recorded to the pool's `on_call` (vera.clients.stack), built once.

        Raises ConfigError for an unknown reference or a missing key (naming the profile
        and the variable)."""
        client = self._clients.get((ref, role))
        if client is None:
            client = stack(self.limited(ref, role), self.spec(ref), role=role, on_call=self._on_call)
            self._clients[(ref, role)] = client
        return client

    def limited(self, ref: str, role: Role = "chatbot") -> LimitedClient:
        """The bottom of the stack for `ref` in `role`: the protocol client (or offline
        stand-in) within its account's limits, with retries; built once."""
        cached = self._limited.get((ref, role))
        if cached is not None:
            return cached
        if self._session is None:
            raise RuntimeError("ClientPool is not open: use `async with ClientPool(...)`")
        profile, model = resolve_ref(ref, self.profiles)
        inner: ChatClient
        if profile.protocol == "offline":
            if self._stand_ins is None:
                raise ConfigError(
                    f"profile {profile.name!r}: offline models need the stand-ins (ClientPool(stand_ins=...))"
                )
            inner = self._stand_ins.client(model, profile.name)
            account = self._account(("offline", ""), "offline", [profile])
        else:
            if (var := missing_key(profile)) is not None:
                raise ConfigError(
                    f"profile {profile.name!r}: environment variable {var} is not set "
                    "(export it or put it in .env)"
                )
            key = api_key(profile)
            inner = PROTOCOLS[profile.protocol].from_profile(self._session, profile, model, key)
            if isinstance(inner, HttpChatbotClient):
                inner.session_tag = self._session_tag
            identity = _identity(profile, key)
            account = self._account(identity, _label(profile), self._sharing(identity), shared=True)
        client = LimitedClient(
            inner,
            account,
            RetryPolicy(profile.max_retries, base_delay=self._retry[0], max_delay=self._retry[1]),
            provider=profile.name,
            timeout_s=profile.timeout_s,
            prices=CachePrices(
                profile.price_input_per_mtok,
                profile.price_output_per_mtok,
                profile.price_cached_input_per_mtok,
                cache_write_per_mtok=profile.price_cache_write_per_mtok,
            ),
            output_estimate=max_output(profile.params),
            budget=self.budget,
            # The Messages API needs max_tokens; the client sends its default when none is given.
            output_cap=DEFAULT_MAX_TOKENS if profile.protocol == "anthropic" else None,
        )
        self._limited[(ref, role)] = client
        return client

    def budget_problem(self, ref: str, role: Role, params: dict[str, Any] | None) -> str | None:
        """Why the run's budget cannot hold calls to `ref` in `role` with `params` (None:
        it can, or there is no budget); see `budget_problem`."""
        if self.budget is None:
            return None
        return budget_problem(resolve_ref(ref, self.profiles)[0], ref, role, params)

    def batching(
        self,
        ref: str,
        role: Role,
        journal: BatchJournal,
        settings: BatchSettings,
        on_event: Callable[..., object] | None = None,
    ) -> BatchingClient:
        """The client that answers `ref` in `role` through its provider's batch API
        (vera.clients.batching), over the limited client as its fallback; built once."""
        found = self._batching.get((ref, role))
        if found is not None:
            return found
        limited = self.limited(ref, role)
        profile, model = resolve_ref(ref, self.profiles)
        if self._session is None:  # limited() has checked it; for the type checker
            raise RuntimeError("ClientPool is not open")
        api: BatchAPI
        inner = limited.inner
        if profile.protocol in ("openai", "azure_openai") and isinstance(inner, OpenAIClient):
            api = OpenAIBatchAPI(self._session, profile, inner, api_key(profile), model=model)
            if profile.protocol == "azure_openai":
                settings = msgspec.structs.replace(
                    settings, max_requests=min(settings.max_requests, AZURE_MAX_REQUESTS)
                )
        elif profile.protocol == "anthropic" and isinstance(inner, AnthropicClient):
            api = AnthropicBatchAPI(self._session, profile.endpoint, inner)
            settings = msgspec.structs.replace(
                settings,
                max_requests=min(settings.max_requests, ANTHROPIC_MAX_REQUESTS),
                max_bytes=min(settings.max_bytes, ANTHROPIC_MAX_BYTES),
            )
        elif profile.protocol == "gemini" and isinstance(inner, GeminiClient):
            api = GeminiBatchAPI(self._session, profile.endpoint, inner)
            settings = msgspec.structs.replace(
                settings,
                max_requests=min(settings.max_requests, GEMINI_MAX_REQUESTS),
                max_bytes=min(settings.max_bytes, GEMINI_MAX_BYTES),
            )
        else:
            raise ConfigError(
                f"profile {profile.name!r}: protocol {profile.protocol!r} has no batch API in vera"
            )
        if self._wait_clock is None:  # one for the run: the bound is on its waiting, all batches
            self._wait_clock = WaitClock(settings.max_wait_s)
        client = BatchingClient(
            api,
            limited,
            journal,
            settings,
            prices=tier_prices(limited.prices, profile.batch_price_factor, profile.batch_cached_input_factor),
            standard_prices=limited.prices,
            on_event=on_event,
            wait=self._wait_clock,
            on_call=self._on_call,  # billed answers no request took are calls too
        )
        self._batching[(ref, role)] = client
        return client

    def flex(self, ref: str, role: Role, fallback: str) -> FlexClient:
        """The client that asks `ref` in `role` at OpenAI's flex tier (vera.clients.flex):
        a limited client on the same account at the flex prices, with the standard one
        as its fallback (`fallback = "standard"`) or retrying itself (`"retry"`); built once."""
        found = self._flex.get((ref, role))
        if found is not None:
            return found
        standard = self.limited(ref, role)
        profile, _ = resolve_ref(ref, self.profiles)
        if profile.protocol not in FLEX_PROTOCOLS:
            raise ConfigError(f"profile {profile.name!r}: protocol {profile.protocol!r} has no flex tier")
        factor = profile.flex_price_factor
        prices = standard.prices
        flex = LimitedClient(
            standard.inner,
            standard.account,
            # falling back at once: flex's own refusals are not retried
            RetryPolicy(
                0 if fallback == "standard" else profile.max_retries,
                base_delay=self._retry[0],
                max_delay=self._retry[1],
            ),
            provider=profile.name,
            timeout_s=profile.timeout_s,
            prices=tier_prices(prices, factor),
            output_estimate=max_output(profile.params),
            budget=self.budget,  # a flex call's worst case is reserved at the flex prices
            output_cap=standard.output_cap,
            tier="flex",
            standard_prices=prices,
        )
        client = FlexClient(flex, standard if fallback == "standard" else None)
        self._flex[(ref, role)] = client
        return client

    def batch_states(self) -> str:
        """The batch clients' batches by state, one line for the progress display
        (vera.clients.batching.batch_summary); "" when there are none."""
        pending = [view for client in self._batching.values() for view in client.pending.values()]
        ended: dict[str, int] = {}
        for client in self._batching.values():
            for status, n in client.ended.items():
                ended[status] = ended.get(status, 0) + n
        return batch_summary(pending, ended)

    def batch_stats(self) -> dict[str, int]:
        """What the batch clients did, summed (vera.clients.batching.BatchStats)."""
        total: dict[str, int] = {}
        for client in self._batching.values():
            for name, n in vars(client.stats).items():
                total[name] = total.get(name, 0) + n
        if self._flex:
            total["flex_fallbacks"] = sum(c.fallbacks for c in self._flex.values())
        return total

    def _account(
        self, identity: tuple[str, str], label: str, profiles: list[Profile], *, shared: bool = False
    ) -> Account:
        account = self._accounts.get(identity)
        if account is not None:
            return account
        rpm = _strictest(p.rpm for p in profiles)
        tpm = _strictest(p.tpm for p in profiles)
        max_in_flight = _strictest(p.max_in_flight for p in profiles)
        redis = self._shared if shared else None
        if redis is None:
            rpm, tpm = _part(rpm, self._split), _part(tpm, self._split)
        max_in_flight = _part(max_in_flight, self._split)  # always per process
        buckets = pause = None
        if redis is not None:
            # Every shard names the account alike: its URL and its profiles' key variables.
            key_envs = ",".join(sorted({p.api_key_env for p in profiles}))
            buckets, pause = redis.for_account(identity[0], key_envs)
        account = Account(
            label, rpm=rpm, tpm=tpm, max_in_flight=max_in_flight, buckets=buckets, shared_pause=pause
        )
        self._accounts[identity] = account
        return account

    def _sharing(self, identity: tuple[str, str]) -> list[Profile]:
        """Every profile whose key is available and that reaches the same account."""
        return [
            p
            for p in self.profiles.values()
            if p.protocol != "offline" and missing_key(p) is None and _identity(p, api_key(p)) == identity
        ]


def budget_problem(profile: Profile, ref: str, role: Role, params: dict[str, Any] | None) -> str | None:
    """Why a run with a budget cannot call `ref` (of `profile`) in `role` with `params`
    (None: it can): a priced model whose output nothing caps has no worst case to reserve.
    Asked before a run opens anything (vera.app's pre-flight) and by the pool."""
    cap = DEFAULT_MAX_TOKENS if profile.protocol == "anthropic" else None
    if profile.protocol == "offline" or profile.price_output_per_mtok <= 0 or output_bound(params, cap):
        return None
    return (
        f"--max-cost: {ref} as {role.replace('_', '-')} is priced per output token and "
        "nothing caps its output, so no call has a worst case to reserve; set max_tokens "
        f"in profile {profile.name!r} [params] or the config's [{role}.params]"
    )


def tier_problem(profile: Profile, model: str, tier: str) -> str | None:
    """Why a model cannot work at a price tier (None: it can): "batch" needs a protocol
    whose batch API vera speaks, and on Azure a Global-Batch deployment apart from the
    live one (Azure refuses every line naming a live deployment); "flex" needs OpenAI's
    protocol and, on OpenAI's own API, a model its pricing page lists for flex."""
    if tier == "batch":
        if profile.protocol not in BATCH_PROTOCOLS:
            return f"it speaks {profile.protocol!r}, which has no batch API in vera"
        if profile.protocol == "azure_openai":
            azure = profile.azure or AzureOptions()
            live = azure_deployment(profile, model)
            batch = azure.batch_deployment if model == profile.model else ""
            if not batch or batch == live:
                return (
                    f"profile {profile.name!r} names no Global-Batch deployment for {live!r}: Azure runs "
                    "batches only on a deployment of that type, created apart from the live one, and "
                    "refuses every line that names another; set [azure] batch_deployment in the "
                    "profile (docs/batch.md)"
                )
        return None
    if tier == "flex":
        if profile.protocol not in FLEX_PROTOCOLS:
            return f"it speaks {profile.protocol!r}; the flex tier is OpenAI's (protocol openai)"
        return flex_problem(model, profile.endpoint)
    return None


def _identity(profile: Profile, key: str | None) -> tuple[str, str]:
    """(base URL, key fingerprint): the key itself is never kept as an identity."""
    fingerprint = hashlib.sha256(key.encode()).hexdigest()[:16] if key else ""
    return profile.endpoint, fingerprint


def _label(profile: Profile) -> str:
    host = urlsplit(profile.endpoint).netloc or profile.endpoint
    return f"{host}[{profile.api_key_env}]" if profile.api_key_env else host


def _part(limit: Any, n: int) -> Any:
    """1/n of a limit, rounded down to a whole number, at least 1 (None: no limit)."""
    if limit is None or n <= 1:
        return limit
    return max(1, int(limit // n))


def _strictest(values: Any) -> Any:
    present = [v for v in values if v is not None]
    return min(present) if present else None
