"""The audit log: every statement executed, refused or sent for approval."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

from bot.state.store import StateStore


class AuditLog:
    def __init__(self, store: StateStore) -> None:
        self._store = store

    async def record(
        self,
        *,
        session_id: str,
        requester: str,
        approver: str | None,
        database: str,
        environment: str,
        risk: str,
        sql: str,
        outcome: str,
        rows: int | None = None,
        error: str | None = None,
        duration_ms: float | None = None,
        execution_id: str | None = None,
    ) -> dict[str, Any]:
        now = time.time()
        entry = {
            "time": datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds"),
            "session_id": session_id,
            "requester": requester,
            "approver": approver,
            "database": database,
            "environment": environment,
            "risk": risk,
            "sql": sql,
            "outcome": outcome,
            "rows": rows,
            "error": error,
            "duration_ms": None if duration_ms is None else round(duration_ms, 3),
            "execution_id": execution_id,
        }
        # Keys sort by time, so a listing comes out in order.
        key = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        await self._store.put("audit", key, entry)
        return entry

    async def since(self, since: datetime | None = None) -> list[dict[str, Any]]:
        entries = sorted(await self._store.items("audit"))
        records = [entry for _, entry in entries]
        if since is None:
            return records
        cutoff = since if since.tzinfo else since.replace(tzinfo=UTC)
        return [r for r in records if datetime.fromisoformat(r["time"]) >= cutoff]
