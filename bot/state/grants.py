"""Grants: an approver's permission to run one exact SQL text on one database in one session.

Bound to (session, database, sha256 of the SQL after trim). A one-time grant is consumed by
the execution it allows; a thread grant matches again until it expires. Consumption is one
atomic step of the backend (a transaction, or a Lua script on Redis), so two racing
consumers of one one-time grant, in one process or several: exactly one wins.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from bot.config import Limits
from bot.state.codec import encode
from bot.state.redis_db import RedisDb
from bot.state.sqlite_db import SqliteDb


class GrantScope(StrEnum):
    ONCE = "once"
    THREAD = "thread"


# Only the whitespace SQL itself ignores: a no-break space is part of a quoted name, and
# `DROP TABLE x` and `DROP TABLE x\u00a0` drop different tables.
SQL_WHITESPACE = " \t\r\n\f\v"


def sql_digest(sql: str) -> str:
    return hashlib.sha256(sql.strip(SQL_WHITESPACE).encode("utf-8")).hexdigest()


def _binding(session_id: str, database: str, sql: str) -> str:
    return f"{session_id}\x1f{database}\x1f{sql_digest(sql)}"


class GrantTable(ABC):
    @abstractmethod
    async def add(self, grant: dict[str, Any]) -> None: ...

    @abstractmethod
    async def take(self, binding: str, now: float) -> bool:
        """True when a live grant matches; a one-time one is removed by the same step (a
        matching thread grant covers the run, and the one-time grant stays)."""

    @abstractmethod
    async def live(self, binding: str, now: float) -> bool: ...

    @abstractmethod
    async def prune(self, now: float, limit: int) -> int: ...


class Grants:
    def __init__(
        self, table: GrantTable, limits: Limits, clock: Callable[[], float] = time.time
    ) -> None:
        self._table = table
        self._limits = limits
        self._clock = clock

    async def mint(
        self, session_id: str, database: str, sql: str, scope: GrantScope, approver: str
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
        }
        await self._table.add(grant)
        return grant

    async def consume(self, session_id: str, database: str, sql: str) -> bool:
        """True when a live grant matches; a one-time grant is removed by the same call."""
        return await self._table.take(_binding(session_id, database, sql), self._clock())

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

    async def take(self, binding: str, now: float) -> bool:
        def take(connection: sqlite3.Connection) -> bool:
            rows = connection.execute(
                "SELECT id, scope FROM grants WHERE binding = ? AND expires_at > ?",
                (binding, now),
            ).fetchall()
            if not rows:
                return False
            if any(scope == GrantScope.THREAD for _, scope in rows):
                return True
            connection.execute("DELETE FROM grants WHERE id = ?", (rows[0][0],))
            return True

        return await self._db.write(take)

    async def live(self, binding: str, now: float) -> bool:
        row = await self._db.read(
            lambda c: c.execute(
                "SELECT 1 FROM grants WHERE binding = ? AND expires_at > ?", (binding, now)
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


# KEYS[1]: the binding's sorted set (members "scope:id", scores: expiry in ms); ARGV[1]: now.
_TAKE = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
for _, member in ipairs(live) do
  if string.sub(member, 1, 7) == 'thread:' then return 1 end
end
if live[1] then
  redis.call('ZREM', KEYS[1], live[1])
  return 1
end
return 0
"""


class RedisGrantTable(GrantTable):
    """A sorted set per binding; it expires with its last grant."""

    def __init__(self, db: RedisDb) -> None:
        self._db = db
        self._take = db.client.register_script(_TAKE)

    def _key(self, binding: str) -> str:
        return self._db.key("grants", hashlib.sha256(binding.encode()).hexdigest())

    async def add(self, grant: dict[str, Any]) -> None:
        key = self._key(grant["binding"])
        expires_ms = int(grant["expires_at"] * 1000)
        member = f"{grant['scope']}:{grant['id']}"

        async def write(client: Any) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.zadd(key, {member: expires_ms})
                pipe.pexpireat(key, expires_ms, nx=True)  # a new set
                pipe.pexpireat(key, expires_ms, gt=True)  # a later grant lives longer
                await pipe.execute()

        await self._db.run(write)

    async def take(self, binding: str, now: float) -> bool:
        key, now_ms = self._key(binding), int(now * 1000)
        return bool(await self._db.run(lambda c: self._take(keys=[key], args=[now_ms], client=c)))

    async def live(self, binding: str, now: float) -> bool:
        key, now_ms = self._key(binding), int(now * 1000)
        return bool(await self._db.run(lambda c: c.zcount(key, f"({now_ms}", "+inf")))

    async def prune(self, now: float, limit: int) -> int:
        return 0  # sets expire with their last grant; take() drops expired members
