"""Records kept by id until used or too old: pending approvals, questions, proposals, and
the before-images Undo puts back.

`RecordTable` is the storage both backends give those repositories: put, get, an atomic
`pop` (the claim: of two racing callers exactly one gets the record), an atomic `change`
(read, decide, write or delete), and pruning by age.
"""

from __future__ import annotations

import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Literal, TypeVar

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from bot.state.codec import Record, decode, encode
from bot.state.redis_db import RedisDb, texts
from bot.state.sqlite_db import SqliteDb

Kind = Literal["pending", "questions", "proposals", "undo", "requests"]
T = TypeVar("T")
# Given the stored record: what to store instead (None: delete it), and what to return.
Change = Callable[[Record], tuple[Record | None, T]]


class RecordTable(ABC):
    kind: Kind

    @abstractmethod
    async def put(self, record_id: str, created_at: float, record: Record) -> None: ...

    @abstractmethod
    async def get(self, record_id: str) -> Record | None: ...

    @abstractmethod
    async def pop(self, record_id: str) -> Record | None: ...

    @abstractmethod
    async def change(self, record_id: str, change: Change[T]) -> tuple[bool, T | None]:
        """Apply `change` to the record atomically (no other change or pop comes between
        its read and its write, in any process); (False, None) when there is no record."""

    @abstractmethod
    async def oldest(self, limit: int) -> list[Record]:
        """The first `limit` records by creation time (only for an indexed table on Redis)."""

    @abstractmethod
    async def prune(self, created_before: float, limit: int) -> int: ...


class SqliteRecordTable(RecordTable):
    def __init__(self, db: SqliteDb, kind: Kind) -> None:
        self._db = db
        self.kind = kind  # one of the fixed names of Kind: safe to put in the SQL text

    async def put(self, record_id: str, created_at: float, record: Record) -> None:
        text = encode(record)
        await self._db.write(
            lambda c: c.execute(
                f"INSERT OR REPLACE INTO {self.kind} (id, created_at, data) VALUES (?, ?, ?)",
                (record_id, created_at, text),
            )
        )

    async def get(self, record_id: str) -> Record | None:
        row = await self._db.read(
            lambda c: c.execute(
                f"SELECT data FROM {self.kind} WHERE id = ?", (record_id,)
            ).fetchone()
        )
        return None if row is None else decode(row[0], f"{self.kind}/{record_id}")

    async def pop(self, record_id: str) -> Record | None:
        row = await self._db.write(
            lambda c: c.execute(
                f"DELETE FROM {self.kind} WHERE id = ? RETURNING data", (record_id,)
            ).fetchone()
        )
        return None if row is None else decode(row[0], f"{self.kind}/{record_id}")

    async def change(self, record_id: str, change: Change[T]) -> tuple[bool, T | None]:
        def update(connection: sqlite3.Connection) -> tuple[bool, T | None]:
            row = connection.execute(
                f"SELECT data FROM {self.kind} WHERE id = ?", (record_id,)
            ).fetchone()
            if row is None:
                return False, None
            replacement, result = change(decode(row[0], f"{self.kind}/{record_id}"))
            if replacement is None:
                connection.execute(f"DELETE FROM {self.kind} WHERE id = ?", (record_id,))
            else:
                connection.execute(
                    f"UPDATE {self.kind} SET data = ? WHERE id = ?",
                    (encode(replacement), record_id),
                )
            return True, result

        return await self._db.write(update)

    async def oldest(self, limit: int) -> list[Record]:
        rows = await self._db.read(
            lambda c: c.execute(
                f"SELECT id, data FROM {self.kind} ORDER BY created_at LIMIT ?", (limit,)
            ).fetchall()
        )
        return [decode(data, f"{self.kind}/{key}") for key, data in rows]

    async def prune(self, created_before: float, limit: int) -> int:
        return await self._db.write(
            lambda c: (
                c.execute(
                    f"DELETE FROM {self.kind} WHERE id IN "
                    f"(SELECT id FROM {self.kind} WHERE created_at < ? LIMIT ?)",
                    (created_before, limit),
                ).rowcount
            )
        )


class RedisRecordTable(RecordTable):
    """One string key per record, expiring after its retention (none when kept forever);
    `indexed`: also a sorted set of the ids by creation time, for `oldest`."""

    def __init__(
        self, db: RedisDb, kind: Kind, lifetime_s: float | None, *, indexed: bool = False
    ) -> None:
        self._db = db
        self.kind = kind
        self._lifetime_ms = None if lifetime_s is None else max(1, int(lifetime_s * 1000))
        self._index = db.key(f"{kind}-by-age") if indexed else None

    def _key(self, record_id: str) -> str:
        return self._db.key(self.kind, record_id)

    async def put(self, record_id: str, created_at: float, record: Record) -> None:
        text, key = encode(record), self._key(record_id)
        if self._index is None:
            await self._db.run(lambda c: c.set(key, text, px=self._lifetime_ms))
            return
        index = self._index

        async def write(client: Redis) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.set(key, text, px=self._lifetime_ms)
                pipe.zadd(index, {record_id: created_at})
                await pipe.execute()

        await self._db.run(write)

    async def get(self, record_id: str) -> Record | None:
        text = await self._db.run(lambda c: c.get(self._key(record_id)), retry=True)
        return None if text is None else decode(text, f"{self.kind}/{record_id}")

    async def pop(self, record_id: str) -> Record | None:
        text = await self._db.run(lambda c: c.getdel(self._key(record_id)))  # the claim
        if text is None:
            return None
        if self._index is not None:
            index = self._index
            await self._db.run(lambda c: c.zrem(index, record_id))
        return decode(text, f"{self.kind}/{record_id}")

    async def change(self, record_id: str, change: Change[T]) -> tuple[bool, T | None]:
        key = self._key(record_id)

        async def update(pipe: Pipeline) -> tuple[bool, T | None]:
            # WATCH: a change or pop by anyone meanwhile fails this one, which runs again.
            text = await pipe.get(key)
            if text is None:
                return False, None
            replacement, result = change(decode(text, f"{self.kind}/{record_id}"))
            # redis-py leaves Pipeline.multi unannotated (redis 8.1); it takes and returns nothing.
            pipe.multi()  # type: ignore[no-untyped-call]
            if replacement is None:
                pipe.delete(key)
                if self._index is not None:
                    pipe.zrem(self._index, record_id)
            else:
                pipe.set(key, encode(replacement), keepttl=True, xx=True)
            return True, result

        return await self._db.run(lambda c: c.transaction(update, key, value_from_callable=True))

    async def oldest(self, limit: int) -> list[Record]:
        if self._index is None:
            raise TypeError(f"{self.kind} is not indexed by age")
        index = self._index
        ids = texts(await self._db.run(lambda c: c.zrange(index, 0, limit - 1), retry=True))
        if not ids:
            return []
        stored = await self._db.run(lambda c: c.mget([self._key(i) for i in ids]), retry=True)
        gone = [i for i, text in zip(ids, stored, strict=True) if text is None]
        if gone:  # expired with their key: drop them from the index too
            await self._db.run(lambda c: c.zrem(index, *gone))
        return [
            decode(text, f"{self.kind}/{i}")
            for i, text in zip(ids, stored, strict=True)
            if text is not None
        ]

    async def prune(self, created_before: float, limit: int) -> int:
        # Keys expire by themselves; the index forgets them here.
        if self._index is None:
            return 0
        index = self._index
        return int(
            await self._db.run(lambda c: c.zremrangebyscore(index, "-inf", f"({created_before}"))
        )
