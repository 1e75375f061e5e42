"""Pending approvals: a statement waiting for an approver's click. A click claims the record
(`claim` removes and returns it in one step), so a double click, a replay or two replicas
handling one click decide it once."""

from __future__ import annotations

from bot.state.codec import Record
from bot.state.records import RecordTable


class PendingApprovals:
    def __init__(self, table: RecordTable) -> None:
        self._table = table

    async def add(self, record: Record) -> None:
        """Store `record` (with `id` and `created_at`) under its id."""
        await self._table.put(record["id"], float(record["created_at"]), record)

    async def get(self, pending_id: str) -> Record | None:
        return await self._table.get(pending_id)

    async def claim(self, pending_id: str) -> Record | None:
        """The record, removed; None when someone else claimed it first (or it never was)."""
        return await self._table.pop(pending_id)

    async def prune(self, created_before: float, limit: int) -> int:
        return await self._table.prune(created_before, limit)
