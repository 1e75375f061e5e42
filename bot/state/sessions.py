"""Sessions: one conversation's record (its history, its status), saved after every step.

A record is a JSON object with at least `id`, `status` and `updated_at`; the repository
indexes the status (a restart looks up the runs left `running`) and the last update
(idle sessions are forgotten after `[retention] sessions_days`).

The history (the record's `messages`) is stored one message per entry, by position, beside
the rest of the record (its head). `save` stores a record whole; `update` stores what a save
changed: the head, the messages at new or changed positions, and the deletion of the
positions the history no longer holds (the oldest, dropped to fit the model's budget). So a
save costs the head and the new messages, however long the thread has been.

Every save stamps the stored session with a new version, and `update` applies only on top
of the version it was computed against (None otherwise): a writer whose picture of the
store is out of date (its own last save cut off by a cancellation, another process's save)
then stores the whole record instead, never a mix of two histories. Both are one atomic
step of the store, and a load reads head and history in one, so it never sees half a save.

Records written by earlier versions hold their history inside the head: they load as they
are (version ""), and their next save stores them in this layout.
"""

from __future__ import annotations

import os
import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.state.codec import Record, decode, decode_value, encode
from bot.state.sqlite_db import SqliteDb

RUNNING = "running"
MESSAGES = "messages"


@dataclass(frozen=True, slots=True)
class Stored:
    """A loaded session: the record with its `messages`, the position of its first message,
    and the stored version ("" for a record an earlier version stored whole). `same`: the
    stored version is the one the load said it knew, whose history was not read again (the
    record has no `messages`, and `start` means nothing)."""

    record: Record
    start: int
    version: str
    same: bool = False


@dataclass(frozen=True, slots=True)
class HistoryUpdate:
    """A save on top of the stored `version`, whose history held positions `before`: the
    head (the record without `messages`), the history's positions now ([start, end)), and
    the messages at the positions that are new or changed."""

    head: Record
    version: str
    before: tuple[int, int]
    start: int
    end: int
    written: Mapping[int, Any]


class Sessions(ABC):
    async def get(self, session_id: str) -> Record | None:
        """The record, its `messages` included."""
        stored = await self.load(session_id)
        return None if stored is None else stored.record

    @abstractmethod
    async def load(self, session_id: str, *, known: str | None = None) -> Stored | None:
        """The session; only the rest of its record when its stored version is `known` (a
        history the caller holds already)."""

    @abstractmethod
    async def save(self, record: Record) -> str:
        """Store the record whole under `record["id"]`, replacing the previous one; returns
        the new version."""

    @abstractmethod
    async def update(self, change: HistoryUpdate) -> str | None:
        """Apply `change` if the stored version is still `change.version`: the new version,
        or None (nothing written) when it is not."""

    @abstractmethod
    async def exists(self, session_id: str) -> bool:
        """Whether the session is stored, without reading its history."""

    @abstractmethod
    async def running(self) -> list[str]:
        """Ids of the sessions whose last save said `running`."""

    @abstractmethod
    async def prune(self, idle_since: float, limit: int) -> int: ...


@dataclass(frozen=True, slots=True)
class Head:
    id: str
    status: str
    updated_at: float
    text: str


def head_of(record: Record) -> Head:
    updated_at = record.get("updated_at")
    return Head(
        str(record["id"]),
        str(record.get("status") or ""),
        float(updated_at) if isinstance(updated_at, int | float) else time.time(),
        encode({key: value for key, value in record.items() if key != MESSAGES}),
    )


def split(record: Record) -> tuple[Record, list[Any]]:
    messages = record.get(MESSAGES)
    if not isinstance(messages, list):
        return record, []
    return {key: value for key, value in record.items() if key != MESSAGES}, messages


def new_version() -> str:
    return os.urandom(8).hex()


def stored_session(
    session_id: str, head: str, version: str | None, entries: list[tuple[int, str]] | None
) -> Stored:
    """A session from its stored texts: a head that holds its own history (an earlier
    version's whole record) as it is, else the head with its entries in position order
    (None: not read, the version is the one the caller knows)."""
    where = f"sessions/{session_id}"
    record = decode(head, where)
    if version is None or MESSAGES in record:
        return Stored(record, 0, "")
    if entries is None:
        return Stored(record, 0, version, same=True)
    entries.sort()
    messages = [decode_value(text, f"{where} message {at}") for at, text in entries]
    return Stored({**record, MESSAGES: messages}, entries[0][0] if entries else 0, version)


class SqliteSessions(Sessions):
    """The heads in `sessions` (`version` NULL: an earlier version's whole record), the
    history in `session_messages`, a row per message."""

    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def load(self, session_id: str, *, known: str | None = None) -> Stored | None:
        # One job: every write of this process runs on the same thread, so none comes
        # between the two reads (and no other process writes this file).
        def read(
            c: sqlite3.Connection,
        ) -> tuple[str, str | None, list[tuple[int, str]] | None] | None:
            row = c.execute(
                "SELECT data, version FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                return None
            if known is not None and row[1] == known:
                return row[0], row[1], None
            entries = c.execute(
                "SELECT position, data FROM session_messages WHERE session_id = ?",
                (session_id,),
            ).fetchall()
            return row[0], row[1], entries

        found = await self._db.read(read)
        return None if found is None else stored_session(session_id, *found)

    async def save(self, record: Record) -> str:
        head_record, messages = split(record)
        head, version = head_of(head_record), new_version()
        rows = [(head.id, at, encode(message)) for at, message in enumerate(messages)]

        def write(c: sqlite3.Connection) -> None:
            c.execute(
                "INSERT OR REPLACE INTO sessions (id, status, updated_at, data, version) "
                "VALUES (?, ?, ?, ?, ?)",
                (head.id, head.status, head.updated_at, head.text, version),
            )
            c.execute("DELETE FROM session_messages WHERE session_id = ?", (head.id,))
            c.executemany(_INSERT_MESSAGE, rows)

        await self._db.write(write)
        return version

    async def update(self, change: HistoryUpdate) -> str | None:
        head, version = head_of(change.head), new_version()
        rows = [(head.id, at, encode(message)) for at, message in change.written.items()]

        def write(c: sqlite3.Connection) -> bool:
            row = c.execute("SELECT version FROM sessions WHERE id = ?", (head.id,)).fetchone()
            if row is None or row[0] != change.version:
                return False
            c.execute(
                "UPDATE sessions SET status = ?, updated_at = ?, data = ?, version = ? "
                "WHERE id = ?",
                (head.status, head.updated_at, head.text, version, head.id),
            )
            for condition, at in (("position < ?", change.start), ("position >= ?", change.end)):
                c.execute(
                    f"DELETE FROM session_messages WHERE session_id = ? AND {condition}",
                    (head.id, at),
                )
            c.executemany(_INSERT_MESSAGE, rows)
            return True

        return version if await self._db.write(write) else None

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
        def forget(c: sqlite3.Connection) -> int:
            ids = [
                row[0]
                for row in c.execute(
                    "SELECT id FROM sessions WHERE updated_at < ? LIMIT ?", (idle_since, limit)
                )
            ]
            marks = ",".join("?" * len(ids))  # `limit` (a batch) stays far below SQLite's cap
            c.execute(f"DELETE FROM session_messages WHERE session_id IN ({marks})", ids)
            c.execute(f"DELETE FROM sessions WHERE id IN ({marks})", ids)
            return len(ids)

        return await self._db.write(forget)


_INSERT_MESSAGE = (
    "INSERT OR REPLACE INTO session_messages (session_id, position, data) VALUES (?, ?, ?)"
)
