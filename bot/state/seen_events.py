"""Seen events: what was delivered already, so a redelivery (a retry, the same message under
a second event) is dropped. `claim` marks all its names at once, or none when any of them
was seen: the check and the mark are one atomic step, also across processes on Redis."""

from __future__ import annotations

import sqlite3
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable

from bot.state.redis_db import RedisDb
from bot.state.sqlite_db import SqliteDb


class SeenEvents(ABC):
    @abstractmethod
    async def claim(self, *names: str) -> bool:
        """True when none of `names` was seen before; they are all seen from now on."""

    @abstractmethod
    async def prune(self, seen_before: float, limit: int) -> int: ...


class SqliteSeenEvents(SeenEvents):
    def __init__(self, db: SqliteDb, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    async def claim(self, *names: str) -> bool:
        now = self._clock()

        def mark(connection: sqlite3.Connection) -> bool:
            marks = ",".join("?" * len(names))
            if connection.execute(
                f"SELECT 1 FROM seen_events WHERE key IN ({marks}) LIMIT 1", names
            ).fetchone():
                return False
            connection.executemany(
                "INSERT INTO seen_events (key, seen_at) VALUES (?, ?)",
                [(name, now) for name in names],
            )
            return True

        return await self._db.write(mark)

    async def prune(self, seen_before: float, limit: int) -> int:
        return await self._db.write(
            lambda c: (
                c.execute(
                    "DELETE FROM seen_events WHERE key IN "
                    "(SELECT key FROM seen_events WHERE seen_at < ? LIMIT ?)",
                    (seen_before, limit),
                ).rowcount
            )
        )


# All of KEYS are set to this claim's token (ARGV[2]), with the expiry in ARGV[1] (ms; 0:
# none), only when none holds another token. Claiming again with the same token answers 1
# again, so a claim whose reply was lost can be sent twice: it is idempotent by design.
_CLAIM = """
for _, key in ipairs(KEYS) do
  local held = redis.call('GET', key)
  if held and held ~= ARGV[2] then return 0 end
end
for _, key in ipairs(KEYS) do
  if tonumber(ARGV[1]) > 0 then
    redis.call('SET', key, ARGV[2], 'PX', ARGV[1])
  else
    redis.call('SET', key, ARGV[2])
  end
end
return 1
"""


class RedisSeenEvents(SeenEvents):
    def __init__(
        self, db: RedisDb, lifetime_s: float | None, clock: Callable[[], float] = time.time
    ) -> None:
        self._db = db
        self._lifetime_ms = 0 if lifetime_s is None else max(1, int(lifetime_s * 1000))
        self._clock = clock
        self._claim = db.client.register_script(_CLAIM)

    async def claim(self, *names: str) -> bool:
        keys = [self._db.key("seen", name) for name in names]
        args: list[int | str] = [self._lifetime_ms, f"{self._clock()} {uuid.uuid4().hex}"]
        claimed = await self._db.run(  # the token (ARGV[2]) makes a second try harmless
            lambda c: self._claim(keys=keys, args=args, client=c), retry=True
        )
        return bool(claimed)

    async def prune(self, seen_before: float, limit: int) -> int:
        return 0  # keys expire by themselves
