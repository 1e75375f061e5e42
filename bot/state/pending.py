"""Pending approvals: a statement waiting for an approver's click. A click claims the record
(`claim` removes and returns it in one step), so a double click, a replay or two replicas
handling one click decide it once."""

from __future__ import annotations

from typing import TypeVar

from bot.state.codec import Record
from bot.state.records import Change, RecordTable

T = TypeVar("T")


class PendingApprovals:
    def __init__(self, table: RecordTable) -> None:
        self._table = table

    async def add(self, record: Record) -> None:
        """Store `record` (with `id` and `created_at`) under its id."""
        await self._table.put(record["id"], float(record["created_at"]), record)

    async def get(self, pending_id: str) -> Record | None:
        return await self._table.get(pending_id)

    async def waiting(self, limit: int = 100) -> list[Record]:
        """The oldest `limit` records not yet decided, oldest first."""
        return await self._table.oldest(limit)

    async def claim(self, pending_id: str) -> Record | None:
        """The record, removed; None when someone else claimed it first (or it never was)."""
        return await self._table.pop(pending_id)

    async def update(self, pending_id: str, change: Change[T]) -> tuple[bool, T | None]:
        """One atomic step on the record (counting an approval, or taking it when the count
        is complete): `change` gets the record and returns what to store instead (None:
        remove it) and what to return. (False, None) when the record is gone."""
        return await self._table.change(pending_id, change)

    async def prune(self, created_before: float, limit: int) -> int:
        return await self._table.prune(created_before, limit)
