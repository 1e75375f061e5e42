"""Grants: an approver's permission to run one exact SQL text on one database in one session.

Bound to (session, database, sha256 of the SQL after trim). A one-time grant is consumed by
the execution it allows; a thread grant matches again until it expires, and while one
execution holds it (`claim` … `release`) it matches no other. Consumption is one atomic
step of the backend (a transaction, or a Lua script on Redis), so two racing consumers of
one one-time grant, in one process or several: exactly one wins.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.config import Limits
from bot.sql.lexical import SQL_WHITESPACE as SQL_WHITESPACE  # re-exported for the cards
from bot.sql.lexical import trim_sql
from bot.state.codec import Record, decode, encode
from bot.state.redis_db import RedisDb, texts
from bot.state.seal import UNSEALED, Seal
from bot.state.sqlite_db import SqliteDb


class GrantScope(StrEnum):
    ONCE = "once"
    THREAD = "thread"


@dataclass(frozen=True, slots=True)
class GrantClaim:
    """A grant taken for one execution: a one-time grant is gone, a thread grant is held
    (no other execution may use it) until `release`."""

    id: str
    scope: GrantScope
    approver: str
    bounds: tuple[int | None, ...] | None
    pending_id: str | None = None  # the approval (its card) the grant came from


def sql_digest(sql: str) -> str:
    # Trimmed like every statement the classifier judges and the executor sends: only the
    # server's whitespace, so `DROP TABLE x` and `DROP TABLE x\u00a0` differ.
    return hashlib.sha256(trim_sql(sql).encode("utf-8")).hexdigest()


def _binding(session_id: str, database: str, sql: str) -> str:
    return f"{session_id}\x1f{database}\x1f{sql_digest(sql)}"


class GrantTable(ABC):
    @abstractmethod
    async def add(self, grant: dict[str, Any]) -> None: ...

    @abstractmethod
    async def take(self, binding: str, now: float, *, hold: bool) -> Record | None:
        """The live grant that matches, if any; a one-time one is removed by the same step,
        a thread grant (preferred: it covers the run, and the one-time grant stays) is
        marked held when `hold`. Held grants match nothing."""

    @abstractmethod
    async def release(self, grant_id: str) -> None: ...

    @abstractmethod
    async def drop_held(self) -> int: ...

    @abstractmethod
    async def live(self, binding: str, now: float) -> bool: ...

    @abstractmethod
    async def prune(self, now: float, limit: int) -> int: ...


class Grants:
    def __init__(
        self,
        table: GrantTable,
        limits: Limits,
        clock: Callable[[], float] = time.time,
        seal: Seal = UNSEALED,
    ) -> None:
        self._table = table
        self._limits = limits
        self._clock = clock
        self._seal = seal  # bot.state.seal: a grant nobody minted matches nothing

    async def mint(
        self,
        session_id: str,
        database: str,
        sql: str,
        scope: GrantScope,
        approver: str,
        bounds: Sequence[int | None] | None = None,
        pending_id: str | None = None,
    ) -> dict[str, Any]:
        now = self._clock()
        ttl = (
            self._limits.once_grant_ttl_s
            if scope is GrantScope.ONCE
            else self._limits.thread_grant_ttl_s
        )
        grant = {
            "id": uuid.uuid4().hex,
            "binding": _binding(session_id, database, sql),
            "session_id": session_id,
            "database": database,
            "sql_sha256": sql_digest(sql),
            "scope": GrantScope(scope).value,
            "approver": approver,
            "created_at": now,
            "expires_at": now + ttl,
            # The most rows each statement may change: what the approver saw on the card.
            "bounds": None if bounds is None else list(bounds),
            "pending_id": pending_id,
        }
        await self._table.add(self._seal.sign("grant", grant))
        return grant

    async def consume(self, session_id: str, database: str, sql: str) -> bool:
        """True when a live grant matches; a one-time grant is removed by the same call."""
        binding, now = _binding(session_id, database, sql), self._clock()
        taken = await self._table.take(binding, now, hold=False)
        return self._checked(taken, binding, now) is not None

    def _checked(self, grant: Record | None, binding: str, now: float) -> Record | None:
        """The grant taken, when the bot minted it for this binding and it has not expired
        (its MAC covers both); else None: a planted or altered grant allows nothing."""
        if grant is None:
            return None
        opened = self._seal.opened("grant", grant, f"grants/{grant.get('id')}")
        if opened is None or opened.get("binding") != binding:
            return None
        expires_at = opened.get("expires_at")
        if not isinstance(expires_at, int | float) or expires_at <= now:
            return None
        return opened

    async def claim(self, session_id: str, database: str, sql: str) -> GrantClaim | None:
        """Take a live grant for one execution, atomically. A thread grant held by an
        execution not yet finished (or cut off by a stop) does not match."""
        binding, now = _binding(session_id, database, sql), self._clock()
        grant = self._checked(await self._table.take(binding, now, hold=True), binding, now)
        if grant is None:
            return None
        bounds = grant.get("bounds")
        return GrantClaim(
            id=grant["id"],
            scope=GrantScope(grant["scope"]),
            approver=grant["approver"],
            bounds=None if bounds is None else tuple(bounds),
            pending_id=grant.get("pending_id"),
        )

    async def release(self, grant_id: str) -> None:
        """The execution holding a thread grant finished: the grant matches again."""
        await self._table.release(grant_id)

    async def drop_held(self) -> int:
        """At start: grants an execution held when the bot stopped are gone (never re-run)."""
        return await self._table.drop_held()

    async def live(self, session_id: str, database: str, sql: str) -> bool:
        """Whether a grant would match now, without consuming it."""
        return await self._table.live(_binding(session_id, database, sql), self._clock())

    async def prune(self, limit: int) -> int:
        """Drop expired grants (they never match again)."""
        return await self._table.prune(self._clock(), limit)


class SqliteGrantTable(GrantTable):
    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def add(self, grant: dict[str, Any]) -> None:
        values = (grant["id"], grant["binding"], grant["scope"], grant["expires_at"], encode(grant))
        await self._db.write(
            lambda c: c.execute(
                "INSERT INTO grants (id, binding, scope, expires_at, data) VALUES (?, ?, ?, ?, ?)",
                values,
            )
        )

    async def take(self, binding: str, now: float, *, hold: bool) -> Record | None:
        def take(connection: sqlite3.Connection) -> Record | None:
            rows = connection.execute(
                "SELECT id, scope, data FROM grants "
                "WHERE binding = ? AND expires_at > ? AND NOT held ORDER BY scope = 'once'",
                (binding, now),
            ).fetchall()
            if not rows:
                return None
            grant_id, scope, data = rows[0]  # a thread grant first, when there is one
            if scope == GrantScope.ONCE:
                connection.execute("DELETE FROM grants WHERE id = ?", (grant_id,))
            elif hold:
                connection.execute("UPDATE grants SET held = 1 WHERE id = ?", (grant_id,))
            return decode(data, f"grants/{grant_id}")

        return await self._db.write(take)

    async def release(self, grant_id: str) -> None:
        await self._db.write(
            lambda c: c.execute("UPDATE grants SET held = 0 WHERE id = ?", (grant_id,))
        )

    async def drop_held(self) -> int:
        return await self._db.write(lambda c: c.execute("DELETE FROM grants WHERE held").rowcount)

    async def live(self, binding: str, now: float) -> bool:
        row = await self._db.read(
            lambda c: c.execute(
                "SELECT 1 FROM grants WHERE binding = ? AND expires_at > ? AND NOT held",
                (binding, now),
            ).fetchone()
        )
        return row is not None

    async def prune(self, now: float, limit: int) -> int:
        return await self._db.write(
            lambda c: (
                c.execute(
                    "DELETE FROM grants WHERE id IN "
                    "(SELECT id FROM grants WHERE expires_at <= ? LIMIT ?)",
                    (now, limit),
                ).rowcount
            )
        )


# KEYS[1]: the binding's sorted set (member: grant id, score: expiry in ms), KEYS[2]: the
# set of held grant ids; ARGV: now (ms), hold (1/0), the grant key prefix. Returns the grant
# taken, as its JSON text, or nothing.
_TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf')
local once = nil
for _, id in ipairs(live) do
  if redis.call('SISMEMBER', KEYS[2], id) == 0 then
    local data = redis.call('GET', ARGV[3] .. id)
    if data then
      if string.find(data, '"scope":"thread"', 1, true) then
        if ARGV[2] == '1' then redis.call('SADD', KEYS[2], id) end
        return data
      end
      once = once or id
    end
  end
end
if once then
  local data = redis.call('GET', ARGV[3] .. once)
  redis.call('ZREM', KEYS[1], once)
  redis.call('DEL', ARGV[3] .. once)
  return data
end
return false
"""


class RedisGrantTable(GrantTable):
    """A key per grant (expiring with it), a sorted set per binding to find them, and the
    set of grants held by a running execution."""

    def __init__(self, db: RedisDb) -> None:
        self._db = db
        self._take = db.client.register_script(_TAKE)
        self._held = db.key("grants-held")
        self._grant_prefix = db.key("grant", "")

    def _index(self, binding: str) -> str:
        return self._db.key("grants", hashlib.sha256(binding.encode()).hexdigest())

    async def add(self, grant: dict[str, Any]) -> None:
        index = self._index(grant["binding"])
        expires_ms = int(grant["expires_at"] * 1000)
        text = encode(grant)

        async def write(client: Any) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.set(self._grant_prefix + grant["id"], text, pxat=expires_ms)
                pipe.zadd(index, {grant["id"]: expires_ms})
                pipe.pexpireat(index, expires_ms, nx=True)  # a new set
                pipe.pexpireat(index, expires_ms, gt=True)  # a later grant lives longer
                await pipe.execute()

        await self._db.run(write)

    async def take(self, binding: str, now: float, *, hold: bool) -> Record | None:
        keys = [self._index(binding), self._held]
        args = [int(now * 1000), "1" if hold else "0", self._grant_prefix]
        text = await self._db.run(lambda c: self._take(keys=keys, args=args, client=c))
        return None if not text else decode(text, f"grants/{binding}")

    async def release(self, grant_id: str) -> None:
        await self._db.run(lambda c: c.srem(self._held, grant_id))

    async def drop_held(self) -> int:
        held = texts(await self._db.run(lambda c: c.smembers(self._held), retry=True))
        for grant_id in held:
            await self._drop(grant_id)
        return len(held)

    async def _drop(self, grant_id: str) -> None:
        text = await self._db.run(lambda c: c.getdel(self._grant_prefix + grant_id))
        if text:
            index = self._index(decode(text, f"grants/{grant_id}")["binding"])
            await self._db.run(lambda c: c.zrem(index, grant_id))
        await self._db.run(lambda c: c.srem(self._held, grant_id))

    async def live(self, binding: str, now: float) -> bool:
        index, now_ms = self._index(binding), int(now * 1000)
        latest = f"({now_ms}"
        ids = texts(
            await self._db.run(lambda c: c.zrangebyscore(index, latest, "+inf"), retry=True)
        )
        for grant_id in ids:
            if not await self._is_held(grant_id):
                return True
        return False

    async def _is_held(self, grant_id: str) -> bool:
        return bool(await self._db.run(lambda c: c.sismember(self._held, grant_id), retry=True))

    async def prune(self, now: float, limit: int) -> int:
        return 0  # grant keys and their sets expire with the last grant
