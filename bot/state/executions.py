"""Write-ahead records of approved changes, and the before-images Undo puts back.

An approved change is recorded `executing` before its first statement is sent, `committing`
just before COMMIT goes out, and `finished` with its outcome after. A record still
`executing` or `committing` when the bot starts again was cut off by a stop: recovery turns it
`interrupted` (never re-run). Every method is one store transaction.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

from bot.state.store import StateStore, Table

EXECUTIONS = "executions"
UNDO = "undo"


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


class Executions:
    def __init__(self, store: StateStore, clock: Any = time.time) -> None:
        self._store = store
        self._clock = clock

    async def begin(self, record: ExecutionRecord) -> None:
        await self._store.put(EXECUTIONS, record.id, record.to_json())

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
        data = await self._store.get(EXECUTIONS, execution_id)
        return None if data is None else ExecutionRecord.from_json(data)

    async def unfinished(self) -> list[ExecutionRecord]:
        """Records a stopped bot left executing or committing (their phase says how far they
        got), oldest first."""

        def work(table: Table) -> list[ExecutionRecord]:
            records = [ExecutionRecord.from_json(data) for _, data in table.items()]
            open_ = [r for r in records if r.phase in (Phase.EXECUTING, Phase.COMMITTING)]
            return sorted(open_, key=lambda record: record.started_at)

        return await self._store.transact(EXECUTIONS, work)

    async def interrupt(self, execution_id: str, outcome: str) -> None:
        """The record of a change a stop cut off: interrupted, never re-run."""
        await self._update(
            execution_id, phase=Phase.INTERRUPTED, outcome=outcome, finished_at=self._clock()
        )

    async def save_undo(self, record: UndoRecord) -> None:
        await self._store.put(UNDO, record.id, record.to_json())

    async def undo(self, undo_id: str) -> UndoRecord | None:
        data = await self._store.get(UNDO, undo_id)
        return None if data is None else UndoRecord.from_json(data)

    async def _update(self, execution_id: str, **changes: Any) -> None:
        def work(table: Table) -> None:
            data = table.get(execution_id)
            if data is None:
                return
            record = replace(ExecutionRecord.from_json(data), **changes)
            table[execution_id] = record.to_json()

        await self._store.transact(EXECUTIONS, work)
