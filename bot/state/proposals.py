"""Proposals: SQL an answer showed with Run buttons. A button carries only the proposal's
id, so a click can run nothing but SQL the bot itself posted; the database picked in the
message's menu is remembered on the record."""

from __future__ import annotations

from bot.state.codec import Record
from bot.state.records import RecordTable


class Proposals:
    def __init__(self, table: RecordTable) -> None:
        self._table = table

    async def add(self, record: Record) -> None:
        """Store `record` (with `id` and `created_at`) under its id."""
        await self._table.put(record["id"], float(record["created_at"]), record)

    async def get(self, proposal_id: str) -> Record | None:
        return await self._table.get(proposal_id)

    async def choose(self, proposal_id: str, database: str) -> bool:
        """Remember the database picked; False when the proposal is gone."""
        found, _ = await self._table.change(
            proposal_id, lambda r: ({**r, "chosen": database}, None)
        )
        return found

    async def prune(self, created_before: float, limit: int) -> int:
        return await self._table.prune(created_before, limit)
