"""Write-ahead records of approved changes, and the before-images Undo puts back.

An approved change is recorded `executing` before its first statement is sent, `committing`
just before COMMIT goes out, and `finished` with its outcome after. A record still
`executing` or `committing` when the bot starts again was cut off by a stop: recovery turns it
`interrupted` (never re-run). Every method is one atomic step of the store.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

from redis.asyncio.client import Pipeline

from bot.state.codec import Record, decode, encode
from bot.state.records import RecordTable
from bot.state.redis_db import RedisDb, texts
from bot.state.sqlite_db import SqliteDb

_CALLS = uuid.UUID("0d6c7d0e-5a2b-4c1e-9f3a-2b7e8d1c4a60")  # names records after their call


def call_execution_id(session_id: str, call_id: str) -> str:
    """The id of the write-ahead record of the model's call `call_id` in the session: found
    again after a crash, so no record means the change was never sent."""
    return uuid.uuid5(_CALLS, f"{session_id}\n{call_id}").hex


class Phase(StrEnum):
    EXECUTING = "executing"  # statements may be running; COMMIT not sent yet
    COMMITTING = "committing"  # COMMIT sent (or about to be): the outcome depends on it
    FINISHED = "finished"
    INTERRUPTED = "interrupted"  # the bot stopped before the outcome was recorded


@dataclass(frozen=True, slots=True)
class ExecutionRecord:
    id: str
    session_id: str
    database: str
    environment: str
    sql: str
    requester: str
    approver: str | None
    grant_id: str
    transactional: bool  # False for DDL, which commits on its own
    started_at: float
    phase: Phase = Phase.EXECUTING
    outcome: str = ""
    finished_at: float | None = None
    undo_id: str | None = None
    pending_id: str | None = None  # the approval card's record the grant came from
    origin: str = ""  # "mcp:<client name>" for a change an MCP client asked for
    role: str = ""  # the database role it runs under ([databases.access])

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "phase": self.phase.value}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExecutionRecord:
        fields = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        fields["phase"] = Phase(fields.get("phase", Phase.EXECUTING))
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class UndoRecord:
    """What one approved change did, row by row (bot.db.bounded.TableImage as JSON)."""

    id: str
    execution_id: str
    session_id: str
    database: str
    sql: str
    created_at: float
    images: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "images": list(self.images)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> UndoRecord:
        fields = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        fields["images"] = tuple(fields.get("images") or ())
        return cls(**fields)


OPEN_PHASES = (Phase.EXECUTING.value, Phase.COMMITTING.value)


class ExecutionTable(ABC):
    """Execution records by id, with the open ones (executing, committing) findable."""

    @abstractmethod
    async def put(self, record: Record) -> None: ...

    @abstractmethod
    async def get(self, execution_id: str) -> Record | None: ...

    @abstractmethod
    async def change(self, execution_id: str, change: Callable[[Record], Record | None]) -> bool:
        """Replace the record with `change(record)` atomically; nothing when it is gone or
        `change` returns None. True when it was replaced."""

    @abstractmethod
    async def open(self) -> list[Record]:
        """Records still executing or committing, oldest first."""

    @abstractmethod
    async def prune(self, started_before: float, limit: int) -> int:
        """Forget finished records started before the cutoff (open ones stay)."""


class Executions:
    def __init__(
        self, table: ExecutionTable, undo: RecordTable, clock: Callable[[], float] = time.time
    ) -> None:
        self._table = table
        self._undo = undo
        self._clock = clock

    async def begin(self, record: ExecutionRecord) -> None:
        await self._table.put(record.to_json())

    async def committing(self, execution_id: str, undo_id: str | None = None) -> None:
        """COMMIT goes out next; `undo_id` names the images it was taken with."""
        await self._update(execution_id, phase=Phase.COMMITTING, undo_id=undo_id)

    async def finish(self, execution_id: str, outcome: str, undo_id: str | None = None) -> None:
        await self._update(
            execution_id,
            phase=Phase.FINISHED,
            outcome=outcome,
            finished_at=self._clock(),
            undo_id=undo_id,
        )

    async def get(self, execution_id: str) -> ExecutionRecord | None:
        data = await self._table.get(execution_id)
        return None if data is None else ExecutionRecord.from_json(data)

    async def unfinished(self) -> list[ExecutionRecord]:
        """Records a stopped bot left executing or committing (their phase says how far they
        got), oldest first."""
        return [ExecutionRecord.from_json(data) for data in await self._table.open()]

    async def interrupt(self, execution_id: str, outcome: str) -> bool:
        """The record of a change a stop cut off: interrupted, never re-run. The claim of its
        report: True for the one caller (of every process starting at once) that moved it
        out of executing or committing; False when it was not open any more."""

        def change(data: Record) -> Record | None:
            record = ExecutionRecord.from_json(data)
            if record.phase.value not in OPEN_PHASES:
                return None
            interrupted = replace(
                record, phase=Phase.INTERRUPTED, outcome=outcome, finished_at=self._clock()
            )
            return interrupted.to_json()

        return await self._table.change(execution_id, change)

    async def save_undo(self, record: UndoRecord) -> None:
        await self._undo.put(record.id, record.created_at, record.to_json())

    async def undo(self, undo_id: str) -> UndoRecord | None:
        data = await self._undo.get(undo_id)
        return None if data is None else UndoRecord.from_json(data)

    async def prune(self, started_before: float, limit: int) -> int:
        return await self._table.prune(started_before, limit)

    async def prune_undo(self, created_before: float, limit: int) -> int:
        return await self._undo.prune(created_before, limit)

    async def _update(self, execution_id: str, **changes: Any) -> None:
        def change(data: Record) -> Record | None:
            return replace(ExecutionRecord.from_json(data), **changes).to_json()

        await self._table.change(execution_id, change)


class SqliteExecutionTable(ExecutionTable):
    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def put(self, record: Record) -> None:
        values = (record["id"], record["phase"], float(record["started_at"]), encode(record))
        await self._db.write(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO executions (id, phase, started_at, data) "
                "VALUES (?, ?, ?, ?)",
                values,
            )
        )

    async def get(self, execution_id: str) -> Record | None:
        row = await self._db.read(
            lambda c: c.execute(
                "SELECT data FROM executions WHERE id = ?", (execution_id,)
            ).fetchone()
        )
        return None if row is None else decode(row[0], f"executions/{execution_id}")

    async def change(self, execution_id: str, change: Callable[[Record], Record | None]) -> bool:
        def update(connection: sqlite3.Connection) -> bool:
            row = connection.execute(
                "SELECT data FROM executions WHERE id = ?", (execution_id,)
            ).fetchone()
            if row is None:
                return False
            record = change(decode(row[0], f"executions/{execution_id}"))
            if record is None:
                return False
            connection.execute(
                "UPDATE executions SET phase = ?, data = ? WHERE id = ?",
                (record["phase"], encode(record), execution_id),
            )
            return True

        return await self._db.write(update)

    async def open(self) -> list[Record]:
        rows = await self._db.read(
            lambda c: c.execute(
                "SELECT id, data FROM executions WHERE phase IN (?, ?) ORDER BY started_at",
                OPEN_PHASES,
            ).fetchall()
        )
        return [decode(data, f"executions/{key}") for key, data in rows]

    async def prune(self, started_before: float, limit: int) -> int:
        return await self._db.write(
            lambda c: (
                c.execute(
                    "DELETE FROM executions WHERE id IN (SELECT id FROM executions "
                    "WHERE started_at < ? AND phase NOT IN (?, ?) LIMIT ?)",
                    (started_before, *OPEN_PHASES, limit),
                ).rowcount
            )
        )


class RedisExecutionTable(ExecutionTable):
    """A key per record (expiring after the audit's retention once finished), and a sorted
    set of the open ones by start time."""

    def __init__(self, db: RedisDb, lifetime_s: float | None) -> None:
        self._db = db
        self._lifetime_ms = None if lifetime_s is None else max(1, int(lifetime_s * 1000))
        self._open = db.key("executions-open")

    def _key(self, execution_id: str) -> str:
        return self._db.key("execution", execution_id)

    def _write(self, pipe: Pipeline, record: Record) -> None:
        key, execution_id = self._key(record["id"]), record["id"]
        if record["phase"] in OPEN_PHASES:
            pipe.set(key, encode(record))  # never expires while open
            pipe.zadd(self._open, {execution_id: float(record["started_at"])})
        else:
            pipe.set(key, encode(record), px=self._lifetime_ms)
            pipe.zrem(self._open, execution_id)

    async def put(self, record: Record) -> None:
        async def write(client: Any) -> None:
            async with client.pipeline(transaction=True) as pipe:
                self._write(pipe, record)
                await pipe.execute()

        await self._db.run(write)

    async def get(self, execution_id: str) -> Record | None:
        text = await self._db.run(lambda c: c.get(self._key(execution_id)), retry=True)
        return None if text is None else decode(text, f"executions/{execution_id}")

    async def change(self, execution_id: str, change: Callable[[Record], Record | None]) -> bool:
        key = self._key(execution_id)

        async def update(pipe: Pipeline) -> bool:
            text = await pipe.get(key)  # WATCHed: a change meanwhile runs this again
            if text is None:
                return False
            record = change(decode(text, f"executions/{execution_id}"))
            if record is None:
                return False
            # redis-py leaves Pipeline.multi unannotated (redis 8.1); it takes and returns nothing.
            pipe.multi()  # type: ignore[no-untyped-call]
            self._write(pipe, record)
            return True

        return bool(
            await self._db.run(lambda c: c.transaction(update, key, value_from_callable=True))
        )

    async def open(self) -> list[Record]:
        ids = texts(await self._db.run(lambda c: c.zrange(self._open, 0, -1), retry=True))
        records = [await self.get(execution_id) for execution_id in ids]
        return [record for record in records if record is not None]

    async def prune(self, started_before: float, limit: int) -> int:
        return 0  # finished records expire by themselves
