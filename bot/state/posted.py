"""Messages still showing buttons: approval cards and questions, by the id of the pending
approval or question they show, findable by session.

Shared by every process of the bot, and kept across restarts, so whichever replica handles
a thread's next message (or its restart) can close the card or question that message made
obsolete. `take` is the claim: of the replicas and clicks racing to close one message,
exactly one gets it and updates it.
"""

from __future__ import annotations

import sqlite3
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from redis.asyncio import Redis

from bot.state.codec import Record, decode, encode
from bot.state.redis_db import RedisDb, texts
from bot.state.sqlite_db import SqliteDb

# "deciding": a card whose decision is running (its buttons still show until it ends);
# "stream", "working": a run's streamed message and working message, open while it runs
# (live_messages.py)
Kind = Literal["card", "deciding", "question", "stream", "working"]


@dataclass(frozen=True, slots=True)
class PostedMessage:
    kind: Kind
    id: str  # the pending approval's or the question's id
    session_id: str
    channel: str
    ts: str
    posted_at: float
    item: Record = field(default_factory=dict)  # what the message shows, to redraw it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Record) -> PostedMessage:
        fields = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**fields)


class PostedTable(ABC):
    @abstractmethod
    async def put(self, message: PostedMessage) -> None: ...

    @abstractmethod
    async def get(self, kind: Kind, item_id: str) -> Record | None: ...

    @abstractmethod
    async def of_session(self, kind: Kind, session_id: str) -> list[Record]:
        """The session's records of `kind`, oldest first."""

    @abstractmethod
    async def pop(self, kind: Kind, item_id: str) -> Record | None:
        """The record, removed in the same step; None when someone took it first."""

    @abstractmethod
    async def prune(self, posted_before: float, limit: int) -> int: ...


class PostedMessages:
    def __init__(self, table: PostedTable) -> None:
        self._table = table

    async def remember(self, message: PostedMessage) -> None:
        await self._table.put(message)

    async def get(self, kind: Kind, item_id: str) -> PostedMessage | None:
        data = await self._table.get(kind, item_id)
        return None if data is None else PostedMessage.from_json(data)

    async def open_in(self, session_id: str, kind: Kind) -> list[PostedMessage]:
        return [PostedMessage.from_json(d) for d in await self._table.of_session(kind, session_id)]

    async def take(self, kind: Kind, item_id: str) -> PostedMessage | None:
        """The message, forgotten: it is the caller's to update. None when another replica
        or a click took it first (or it was never posted)."""
        data = await self._table.pop(kind, item_id)
        return None if data is None else PostedMessage.from_json(data)

    async def prune(self, posted_before: float, limit: int) -> int:
        return await self._table.prune(posted_before, limit)


class SqlitePostedTable(PostedTable):
    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def put(self, message: PostedMessage) -> None:
        values = (
            message.kind,
            message.id,
            message.session_id,
            message.posted_at,
            encode(message.to_json()),
        )
        await self._db.write(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO posted (kind, id, session_id, posted_at, data) "
                "VALUES (?, ?, ?, ?, ?)",
                values,
            )
        )

    async def get(self, kind: Kind, item_id: str) -> Record | None:
        row = await self._db.read(
            lambda c: c.execute(
                "SELECT data FROM posted WHERE kind = ? AND id = ?", (kind, item_id)
            ).fetchone()
        )
        return None if row is None else decode(row[0], f"posted/{kind}/{item_id}")

    async def of_session(self, kind: Kind, session_id: str) -> list[Record]:
        rows = await self._db.read(
            lambda c: c.execute(
                "SELECT id, data FROM posted WHERE session_id = ? AND kind = ? ORDER BY posted_at",
                (session_id, kind),
            ).fetchall()
        )
        return [decode(data, f"posted/{kind}/{key}") for key, data in rows]

    async def pop(self, kind: Kind, item_id: str) -> Record | None:
        def take(connection: sqlite3.Connection) -> Any:
            return connection.execute(
                "DELETE FROM posted WHERE kind = ? AND id = ? RETURNING data", (kind, item_id)
            ).fetchone()

        row = await self._db.write(take)
        return None if row is None else decode(row[0], f"posted/{kind}/{item_id}")

    async def prune(self, posted_before: float, limit: int) -> int:
        return await self._db.write(
            lambda c: (
                c.execute(
                    "DELETE FROM posted WHERE rowid IN "
                    "(SELECT rowid FROM posted WHERE posted_at < ? LIMIT ?)",
                    (posted_before, limit),
                ).rowcount
            )
        )


class RedisPostedTable(PostedTable):
    """A key per message and a sorted set per session of its ids by posting time, both
    expiring after the retention (the set's expiry renewed with each message)."""

    def __init__(self, db: RedisDb, lifetime_s: float | None) -> None:
        self._db = db
        self._lifetime_ms = None if lifetime_s is None else max(1, int(lifetime_s * 1000))

    def _key(self, kind: Kind, item_id: str) -> str:
        return self._db.key("posted", kind, item_id)

    def _index(self, kind: Kind, session_id: str) -> str:
        return self._db.key("posted-in", kind, session_id)

    async def put(self, message: PostedMessage) -> None:
        key, index = (
            self._key(message.kind, message.id),
            self._index(message.kind, message.session_id),
        )
        text = encode(message.to_json())

        async def write(client: Redis) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.set(key, text, px=self._lifetime_ms)
                pipe.zadd(index, {message.id: message.posted_at})
                if self._lifetime_ms is not None:
                    pipe.pexpire(index, self._lifetime_ms)
                await pipe.execute()

        await self._db.run(write)

    async def get(self, kind: Kind, item_id: str) -> Record | None:
        text = await self._db.run(lambda c: c.get(self._key(kind, item_id)), retry=True)
        return None if text is None else decode(text, f"posted/{kind}/{item_id}")

    async def of_session(self, kind: Kind, session_id: str) -> list[Record]:
        index = self._index(kind, session_id)
        ids = texts(await self._db.run(lambda c: c.zrange(index, 0, -1), retry=True))
        if not ids:
            return []
        stored = await self._db.run(lambda c: c.mget([self._key(kind, i) for i in ids]), retry=True)
        gone = [i for i, text in zip(ids, stored, strict=True) if text is None]
        if gone:  # taken, or expired with their key
            await self._db.run(lambda c: c.zrem(index, *gone))
        return [
            decode(text, f"posted/{kind}/{i}")
            for i, text in zip(ids, stored, strict=True)
            if text is not None
        ]

    async def pop(self, kind: Kind, item_id: str) -> Record | None:
        text = await self._db.run(lambda c: c.getdel(self._key(kind, item_id)))  # the claim
        if text is None:
            return None
        data = decode(text, f"posted/{kind}/{item_id}")
        index = self._index(kind, str(data.get("session_id", "")))
        await self._db.run(lambda c: c.zrem(index, item_id))
        return data

    async def prune(self, posted_before: float, limit: int) -> int:
        return 0  # keys and indexes expire by themselves
