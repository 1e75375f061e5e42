"""Pending approvals: a statement waiting for an approver's click. A click claims the record
(`claim` removes and returns it in one step), so a double click, a replay or two replicas
handling one click decide it once."""

from __future__ import annotations

from typing import TypeVar

from bot.state.codec import Record
from bot.state.records import Change, RecordTable
from bot.state.seal import UNSEALED, Seal

T = TypeVar("T")


class PendingApprovals:
    """Records are sealed (bot.state.seal): one the bot did not write, or whose SQL or
    approvals were altered in the store, reads as absent, so no click can run it."""

    def __init__(self, table: RecordTable, seal: Seal = UNSEALED) -> None:
        self._table = table
        self._seal = seal

    async def add(self, record: Record) -> None:
        """Store `record` (with `id` and `created_at`) under its id."""
        sealed = self._seal.sign("pending", record)
        await self._table.put(record["id"], float(record["created_at"]), sealed)

    def _opened(self, record: Record | None, pending_id: object) -> Record | None:
        if record is None:
            return None
        return self._seal.opened("pending", record, f"pending/{pending_id}")

    async def get(self, pending_id: str) -> Record | None:
        return self._opened(await self._table.get(pending_id), pending_id)

    async def waiting(self, limit: int = 100) -> list[Record]:
        """The oldest `limit` records not yet decided, oldest first."""
        found = [self._opened(r, r.get("id")) for r in await self._table.oldest(limit)]
        return [record for record in found if record is not None]

    async def claim(self, pending_id: str) -> Record | None:
        """The record, removed; None when someone else claimed it first (or it never was)."""
        return self._opened(await self._table.pop(pending_id), pending_id)

    async def update(self, pending_id: str, change: Change[T]) -> tuple[bool, T | None]:
        """One atomic step on the record (counting an approval, or taking it when the count
        is complete): `change` gets the record and returns what to store instead (None:
        remove it) and what to return. (False, None) when the record is gone; (True, None)
        when it failed its integrity check (it is removed, deciding nothing)."""

        def checked(record: Record) -> tuple[Record | None, T | None]:
            opened = self._opened(record, pending_id)
            if opened is None:
                return None, None
            replacement, result = change(opened)
            return (
                None if replacement is None else self._seal.sign("pending", replacement)
            ), result

        return await self._table.change(pending_id, checked)

    async def prune(self, created_before: float, limit: int) -> int:
        return await self._table.prune(created_before, limit)
