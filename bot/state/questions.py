"""Questions the model asked a person (ask_user): kept until answered or superseded. The
answer claims the record, so one question is answered once."""

from __future__ import annotations

from bot.state.codec import Record
from bot.state.records import RecordTable


class Questions:
    def __init__(self, table: RecordTable) -> None:
        self._table = table

    async def add(self, record: Record) -> None:
        """Store `record` (with `id` and `created_at`) under its id."""
        await self._table.put(record["id"], float(record["created_at"]), record)

    async def get(self, question_id: str) -> Record | None:
        return await self._table.get(question_id)

    async def claim(self, question_id: str) -> Record | None:
        """The record, removed; None when it was answered or superseded already."""
        return await self._table.pop(question_id)

    async def prune(self, created_before: float, limit: int) -> int:
        return await self._table.prune(created_before, limit)
