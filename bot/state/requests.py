"""Requests for a change from outside a Slack thread (an MCP client): who asked through
which client, where the card is, and what became of it.

Keyed by the id of the request's pending approval, so the client can ask after it with
`get_proposal` once the approval itself is gone (decided, expired). The Agent settles a
request as its approval is decided; a settled request never goes back to pending.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from bot.state.codec import Record
from bot.state.records import RecordTable


class RequestStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"  # the last approval came; the change runs now
    DENIED = "denied"
    EXPIRED = "expired"
    EXECUTED = "executed"
    FAILED = "failed"  # it ran and failed (rolled back, refused at run time, outcome unknown)


# Where a request may go from each status: a decided request is never pending again, and
# an outcome is final.
_NEXT: dict[RequestStatus, frozenset[RequestStatus]] = {
    RequestStatus.PENDING: frozenset(RequestStatus) - {RequestStatus.PENDING},
    RequestStatus.APPROVED: frozenset({RequestStatus.EXECUTED, RequestStatus.FAILED}),
}


class Requests:
    def __init__(self, table: RecordTable) -> None:
        self._table = table

    async def add(self, record: Record) -> None:
        """Store `record` (with `id`, `created_at` and `status`) under its id."""
        await self._table.put(record["id"], float(record["created_at"]), record)

    async def get(self, request_id: str) -> Record | None:
        return await self._table.get(request_id)

    async def settle(self, request_id: str, status: RequestStatus, **details: Any) -> bool:
        """Move the request to `status` with `details` (outcome, rows, undo…), atomically;
        False when there is no such request or it is past that point already."""

        def change(record: Record) -> tuple[Record, bool]:
            current = RequestStatus(record.get("status", RequestStatus.PENDING))
            if status not in _NEXT.get(current, frozenset()):
                return record, False
            return {**record, **details, "status": status.value}, True

        found, moved = await self._table.change(request_id, change)
        return bool(found and moved)

    async def note(self, request_id: str, **details: Any) -> bool:
        """Add `details` (the card's link) without moving the status; False when gone."""
        found, _ = await self._table.change(
            request_id, lambda record: ({**record, **details}, None)
        )
        return found

    async def prune(self, created_before: float, limit: int) -> int:
        return await self._table.prune(created_before, limit)
