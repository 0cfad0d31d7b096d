"""Account limits shared by several processes through Redis (`--limits-url`).

Shards of one sweep, on one machine or many, draw on one budget per account: the
account's request and token buckets and its server-named pause live in Redis. Each take
is one Lua script that Redis runs atomically — the same leaky bucket as
`vera.clients.limits.TokenBucket`, on Redis's own clock, so the machines need not agree on the
time. The cap on calls in flight stays per process (see `ClientPool`).

    shared = RedisLimits("redis://limits.internal:6379/0")
    await shared.open()            # ConfigError if Redis does not answer
    buckets, pause = shared.for_account(endpoint, "OPENAI_API_KEY")
    account = Account(label, rpm=500, buckets=buckets, shared_pause=pause)

Keys are `vera:limits:<hash>:requests|tokens|pause`, the hash taken over the account's
base URL and the *name* of its key variable: never the key. A password, if the server
needs one, comes from `VERA_REDIS_PASSWORD`, never from the URL (which is recorded in
the run's manifest).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from typing import TYPE_CHECKING, Any

from vera.clients.limits import Bucket, BucketFactory, BucketKind
from vera.errors import ConfigError, LimitsLost
from vera.inputs import PASSWORD_ENV, check_limits_url

if TYPE_CHECKING:  # the redis client is loaded when a run asks for shared limits
    from redis.asyncio import Redis

_CONNECT_TIMEOUT_S = 5.0
_OUTAGE_S = 30.0  # how long a run waits for Redis to come back before it stops

# KEYS: the bucket (a hash of level and time), the account's pause.
# ARGV: capacity, rate per second, amount, and "take" or "adjust".
# Returns "0" when taken or adjusted, else the seconds to wait before trying again.
_BUCKET = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local capacity, rate, amount = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local level = tonumber(redis.call('HGET', KEYS[1], 'level') or '0')
local at = tonumber(redis.call('HGET', KEYS[1], 'at') or tostring(now))
level = math.max(0, level - math.max(0, now - at) * rate)
if ARGV[4] == 'take' then
  local paused = redis.call('PTTL', KEYS[2])
  if paused > 0 then return tostring(paused / 1000) end
  local excess = level + amount - capacity
  if excess > 1e-9 then return tostring(excess / rate) end
  level = level + amount
else
  level = math.max(0, level + amount)
end
redis.call('HSET', KEYS[1], 'level', tostring(level), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((level / rate + 60) * 1000))
return '0'
"""

# KEYS: the account's pause. ARGV: milliseconds. Only ever lengthens a pause.
_PAUSE = """
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
end
return 0
"""


def account_key(endpoint: str, key_env: str) -> str:
    """The Redis namespace of one account: a hash of its base URL and key variable name."""
    digest = hashlib.sha256(f"{endpoint}\0{key_env}".encode()).hexdigest()[:16]
    return f"vera:limits:{digest}"


class RedisLimits:
    """The connection to the Redis server that holds every shard's account budgets."""

    __slots__ = ("_bucket", "_client", "_lost", "_pause", "url")

    def __init__(self, url: str) -> None:
        self.url = check_limits_url(url)
        self._client: Redis | None = None
        # Set once Redis stayed away too long: every later take fails at once, so the
        # run stops after one wait, not one per caller queued behind a bucket's lock.
        self._lost: LimitsLost | None = None
        self._bucket: Any = None
        self._pause: Any = None

    def __repr__(self) -> str:
        return f"RedisLimits({self.url!r})"

    async def open(self) -> None:
        """Connect and check that Redis answers; ConfigError (one line) if not."""
        try:
            import redis.asyncio
            from redis.exceptions import AuthenticationError, RedisError
        except ImportError:
            raise ConfigError(
                "--limits-url needs the redis package: pip install 'vera-eval[redis]'"
            ) from None
        password = os.environ.get(PASSWORD_ENV) or None
        client = redis.asyncio.from_url(
            self.url,
            password=password,
            socket_connect_timeout=_CONNECT_TIMEOUT_S,
            socket_timeout=_CONNECT_TIMEOUT_S,
        )
        try:
            await client.ping()
        except AuthenticationError as exc:  # it answered: it wants a password, or another
            await client.aclose()
            wants = (
                f"refused the password in {PASSWORD_ENV}"
                if password
                else f"wants a password: set {PASSWORD_ENV} to it"
            )
            raise ConfigError(f"--limits-url {self.url}: Redis {wants} ({exc})") from None
        except (RedisError, OSError) as exc:
            await client.aclose()
            raise ConfigError(f"--limits-url {self.url}: Redis does not answer ({exc})") from None
        self._client = client
        self._bucket = client.register_script(_BUCKET)
        self._pause = client.register_script(_PAUSE)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def for_account(self, endpoint: str, key_env: str) -> tuple[BucketFactory, RedisPause]:
        """The bucket factory and pause for one account, shared with every process that
        uses the same Redis server and account."""
        namespace = account_key(endpoint, key_env)
        pause = RedisPause(self, f"{namespace}:pause")

        def make(kind: BucketKind, capacity: float, rate: float) -> Bucket:
            return RedisBucket(self, f"{namespace}:{kind}", pause.key, capacity, rate)

        return make, pause

    async def run(self, script: str, keys: list[str], args: list[Any]) -> Any:
        """Run one of the scripts; while Redis is away, retry for up to `_OUTAGE_S`, then
        raise `LimitsLost`, which stops the run (a lost limiter is never a chatbot failure)."""
        from redis.exceptions import RedisError

        if self._client is None:
            raise RuntimeError("RedisLimits is not open")
        code = self._bucket if script == "bucket" else self._pause
        delay, waited = 0.1, 0.0
        while True:
            if self._lost is not None:
                raise self._lost
            try:
                return await code(keys=keys, args=args)
            except (RedisError, OSError) as exc:
                if waited >= _OUTAGE_S:
                    self._lost = LimitsLost(
                        f"Redis at {self.url} (--limits-url) stopped answering for "
                        f"{_OUTAGE_S:g} s ({exc}); resume once it is back"
                    )
                    raise self._lost from None
                await asyncio.sleep(delay)
                waited += delay
                delay = min(2.0, delay * 2)

    async def pttl(self, key: str) -> int:
        if self._client is None:
            raise RuntimeError("RedisLimits is not open")
        from redis.exceptions import RedisError

        try:
            return int(await self._client.pttl(key))
        except (RedisError, OSError):
            return 0  # the next bucket take waits for Redis (and sees the pause) anyway


class RedisBucket:
    """A `Bucket` whose level lives in Redis. Takers in this process go one at a time
    (so they keep their order); across processes Redis decides, atomically."""

    __slots__ = ("_lock", "_pause_key", "capacity", "key", "rate", "shared")

    def __init__(self, shared: RedisLimits, key: str, pause_key: str, capacity: float, rate: float) -> None:
        self.shared = shared
        self.key = key
        self._pause_key = pause_key
        self.capacity = float(capacity)
        self.rate = float(rate)
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"RedisBucket({self.key!r}, capacity={self.capacity:g}, rate={self.rate:g}/s)"

    async def take(self, amount: float) -> None:
        amount = min(amount, self.capacity)
        args = [repr(self.capacity), repr(self.rate), repr(float(amount)), "take"]
        async with self._lock:
            while (wait := float(await self.shared.run("bucket", [self.key, self._pause_key], args))) > 0:
                await asyncio.sleep(wait)

    async def adjust(self, delta: float) -> None:
        args = [repr(self.capacity), repr(self.rate), repr(float(delta)), "adjust"]
        await self.shared.run("bucket", [self.key, self._pause_key], args)


class RedisPause:
    """A server-named wait that every process on the account honours."""

    __slots__ = ("key", "shared")

    def __init__(self, shared: RedisLimits, key: str) -> None:
        self.shared = shared
        self.key = key

    async def pause(self, seconds: float) -> None:
        await self.shared.run("pause", [self.key], [max(1, round(seconds * 1000))])

    async def remaining(self) -> float:
        return max(0, await self.shared.pttl(self.key)) / 1000
