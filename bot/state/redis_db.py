"""The Redis backend: one asyncio client shared by the repositories, keys under a prefix.

Several bot processes share one Redis, so each claim is one Redis command or one Lua
script (atomic on the server), never a read then a write.

Redis restarting closes every pooled connection: the pool replaces a closed one before
handing it out (see `_pool`), so the first message after a restart is served like any
other. Beyond that, only what is safe to send twice is retried (with backoff, on
connection errors and timeouts): reads, and writes idempotent by design (`run(…,
retry=True)`). A claim retried after a lost reply could report "already taken" for a
claim that was ours, so those run once: a failure surfaces as StateError, and the store
reports itself unhealthy until a command succeeds again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.exceptions import RedisError
from redis.maint_notifications import MaintNotificationsConfig

from bot.observability import observe
from bot.state.errors import StateError

log = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_PREFIX = "dbagent:"
TIMEOUT_S = 5.0
MAX_CONNECTIONS = 100  # per process and pool; the Stop listener holds one the whole time
RETRIES = 3  # for what is safe to send twice: 0.05, 0.1, 0.2 s apart (capped at 1 s)
PROBE_TIMEOUT_S = 1.0  # /health's PING


def _pool(url: str, retry: Retry) -> redis.BlockingConnectionPool:
    # A burst of events (a hundred threads at once) may want more connections than the
    # pool holds: a call then waits for one to be free, within the timeout, rather than
    # failing with "Too many connections" and refusing the event.
    pool = redis.BlockingConnectionPool.from_url(
        url,
        max_connections=MAX_CONNECTIONS,
        timeout=TIMEOUT_S,
        decode_responses=True,
        socket_timeout=TIMEOUT_S,
        socket_connect_timeout=TIMEOUT_S,
        retry=retry,
        # With maintenance notifications on (redis-py's default for RESP3), the pool skips
        # its check that a connection it hands out is not closed: after a Redis restart
        # every pooled connection would then fail its next command. Off, a closed one is
        # replaced before use. (They serve Redis Enterprise and cluster moves only.)
        maint_notifications_config=MaintNotificationsConfig(enabled=False),
    )
    return pool


def describe(url: str) -> str:
    """The URL without its password, for messages."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.rpartition('@')[2].partition('?')[0]}"


def _split_prefix(url: str, default: str) -> tuple[str, str]:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefixes = [value for name, value in query if name == "prefix"]
    rest = urlencode([(name, value) for name, value in query if name != "prefix"])
    return urlunsplit(parts._replace(query=rest)), (prefixes[-1] if prefixes else default)


def text(reply: bytes | str) -> str:
    """A reply as text. The client decodes every reply (`decode_responses`), but redis-py's
    types cannot say so and allow bytes too."""
    return reply.decode() if isinstance(reply, bytes) else reply


def texts(replies: Iterable[object]) -> list[str]:
    """The members of a list or set reply as text (see `text`); anything else (a score
    pair, from a command asked without scores) is a reply we do not understand."""
    members = []
    for reply in replies:
        if not isinstance(reply, bytes | str):
            raise StateError(f"unexpected reply from the state store: {reply!r}")
        members.append(text(reply))
    return members


class RedisDb:
    def __init__(
        self, client: redis.Redis, url: str, prefix: str, retrying: redis.Redis | None = None
    ) -> None:
        self.client = client  # commands sent once
        self.retrying = retrying or client  # commands safe to send twice
        self.where = describe(url)
        self.prefix = prefix
        self.healthy = True
        self.last_error: str | None = None
        self.last_error_at: float | None = None

    @classmethod
    async def open(cls, url: str, *, prefix: str = DEFAULT_PREFIX) -> RedisDb:
        """`?prefix=…` in the URL puts the keys under that prefix instead (deployments, or
        test runs, sharing one Redis)."""
        url, prefix = _split_prefix(url, prefix)
        try:
            client = redis.Redis.from_pool(_pool(url, Retry(NoBackoff(), 0)))
            backoff = ExponentialBackoff(cap=1.0, base=0.05)
            retrying = redis.Redis.from_pool(_pool(url, Retry(backoff, RETRIES)))
        except ValueError as exc:
            raise StateError(
                f"DBAGENT_STATE_URL {describe(url)!r} is not a Redis URL: {exc}"
            ) from None
        db = cls(client, url, prefix, retrying)
        try:
            await db.run(lambda c: c.ping())
        except StateError:
            await db.close()
            raise
        return db

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    async def run(
        self, command: Callable[[redis.Redis], Awaitable[T]], *, retry: bool = False
    ) -> T:
        """Run `command` on a client; with `retry` (only for what is safe to send twice:
        reads, and writes idempotent by design) on one that retries with backoff."""
        try:
            result = await command(self.retrying if retry else self.client)
        except RedisError as exc:
            message = f"state store {self.where} cannot be reached: {exc}"
            observe.state_error("redis")
            if self.healthy:
                log.error("state store failed: %s", message)
            self.healthy = False
            self.last_error = message
            self.last_error_at = time.time()
            raise StateError(message) from None
        if not self.healthy:
            log.warning("state store %s answers again", self.where)
            self.healthy = True
            self.last_error = None
        return result

    async def probe(self) -> str | None:
        """Ask Redis now (PING, within a second): None when it answers, else why not."""
        try:
            await asyncio.wait_for(self.run(lambda c: c.ping()), PROBE_TIMEOUT_S)
        except StateError as exc:
            return str(exc)
        except TimeoutError:
            return f"state store {self.where} did not answer PING within {PROBE_TIMEOUT_S:.0f} s"
        return None

    async def eviction_policy(self) -> str | None:
        """Redis's `maxmemory-policy`; None where CONFIG is not allowed (managed services)."""
        try:
            reply = await self.client.config_get("maxmemory-policy")
        except RedisError:
            return None
        policy = reply.get("maxmemory-policy")
        return None if policy is None else text(policy)

    async def close(self) -> None:
        await self.client.aclose()
        if self.retrying is not self.client:
            await self.retrying.aclose()
