"""Sessions: one conversation's record (its history, its status), saved after every step.

A record is a JSON object with at least `id`, `status` and `updated_at`; the repository
indexes the status (a restart looks up the runs left `running`) and the last update
(idle sessions are forgotten after `[retention] sessions_days`).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod

from redis.asyncio import Redis

from bot.state.codec import Record, decode, encode
from bot.state.redis_db import RedisDb, texts
from bot.state.sqlite_db import SqliteDb

RUNNING = "running"


class Sessions(ABC):
    @abstractmethod
    async def get(self, session_id: str) -> Record | None: ...

    @abstractmethod
    async def save(self, record: Record) -> None:
        """Store the record under `record["id"]`, replacing the previous one."""

    @abstractmethod
    async def exists(self, session_id: str) -> bool:
        """Whether the session is stored, without reading its history."""

    @abstractmethod
    async def running(self) -> list[str]:
        """Ids of the sessions whose last save said `running`."""

    @abstractmethod
    async def prune(self, idle_since: float, limit: int) -> int: ...


def _fields(record: Record) -> tuple[str, str, float, str]:
    updated_at = record.get("updated_at")
    return (
        str(record["id"]),
        str(record.get("status") or ""),
        float(updated_at) if isinstance(updated_at, int | float) else time.time(),
        encode(record),
    )


class SqliteSessions(Sessions):
    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def get(self, session_id: str) -> Record | None:
        row = await self._db.read(
            lambda c: c.execute("SELECT data FROM sessions WHERE id = ?", (session_id,)).fetchone()
        )
        return None if row is None else decode(row[0], f"sessions/{session_id}")

    async def save(self, record: Record) -> None:
        values = _fields(record)
        await self._db.write(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO sessions (id, status, updated_at, data) "
                "VALUES (?, ?, ?, ?)",
                values,
            )
        )

    async def exists(self, session_id: str) -> bool:
        row = await self._db.read(
            lambda c: c.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
        )
        return row is not None

    async def running(self) -> list[str]:
        rows = await self._db.read(
            lambda c: c.execute("SELECT id FROM sessions WHERE status = ?", (RUNNING,)).fetchall()
        )
        return [row[0] for row in rows]

    async def prune(self, idle_since: float, limit: int) -> int:
        return await self._db.write(
            lambda c: (
                c.execute(
                    "DELETE FROM sessions WHERE id IN "
                    "(SELECT id FROM sessions WHERE updated_at < ? LIMIT ?)",
                    (idle_since, limit),
                ).rowcount
            )
        )


class RedisSessions(Sessions):
    """A string key per session, expiring `sessions_days` after its last save, and one set
    of the running ones (small: the runs going on now)."""

    def __init__(self, db: RedisDb, lifetime_s: float | None) -> None:
        self._db = db
        self._lifetime_ms = None if lifetime_s is None else max(1, int(lifetime_s * 1000))
        self._running = db.key("sessions-running")

    def _key(self, session_id: str) -> str:
        return self._db.key("session", session_id)

    async def get(self, session_id: str) -> Record | None:
        text = await self._db.run(lambda c: c.get(self._key(session_id)))
        return None if text is None else decode(text, f"sessions/{session_id}")

    async def save(self, record: Record) -> None:
        session_id, status, _, text = _fields(record)

        async def write(client: Redis) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.set(self._key(session_id), text, px=self._lifetime_ms)
                if status == RUNNING:
                    pipe.sadd(self._running, session_id)
                else:
                    pipe.srem(self._running, session_id)
                await pipe.execute()

        await self._db.run(write)

    async def exists(self, session_id: str) -> bool:
        return bool(await self._db.run(lambda c: c.exists(self._key(session_id))))

    async def running(self) -> list[str]:
        members = await self._db.run(lambda c: c.smembers(self._running))
        return sorted(texts(members))

    async def prune(self, idle_since: float, limit: int) -> int:
        # Sessions expire by themselves; only drop running marks whose session is gone.
        members = sorted(texts(await self._db.run(lambda c: c.smembers(self._running))))[:limit]
        gone = [m for m in members if not await self.exists(m)]
        if gone:
            await self._db.run(lambda c: c.srem(self._running, *gone))
        return len(gone)
