"""The audit log: every statement executed, refused or sent for approval.

Kept in the store (a table indexed by time; a stream on Redis) for `python -m bot audit`,
and always also appended as one JSON line to `audit.jsonl` in the state directory, for log
shipping: the log must outlive the loss of a cache, and a line is written even when the
store refuses the record. A journal that cannot be written does not stop the bot: its lines
wait in memory and are written once it can be (bot/state/journal.py).
"""

from __future__ import annotations

import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError
from redis.typing import EncodableT, FieldT

from bot.observability import observe
from bot.state.codec import Record, decode, encode
from bot.state.journal import AuditJournal
from bot.state.redis_db import RedisDb
from bot.state.sqlite_db import SqliteDb

JOURNAL_FILE = "audit.jsonl"


class AuditTable(ABC):
    @abstractmethod
    async def append(self, at: float, entry: Record) -> None: ...

    @abstractmethod
    async def since(self, since: float | None) -> list[Record]:
        """Entries from `since` on (all when None), oldest first."""

    @abstractmethod
    async def prune(self, before: float, limit: int) -> int: ...


class AuditLog:
    def __init__(
        self, table: AuditTable, journal: AuditJournal, clock: Callable[[], float] = time.time
    ) -> None:
        self._table = table
        self._journal = journal
        self._clock = clock

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
        origin: str | None = None,
        role: str | None = None,
    ) -> dict[str, Any]:
        observe.statement_recorded(risk, outcome, error)
        now = self._clock()
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
        if origin:  # not a Slack thread: "mcp:<client name>"
            entry["origin"] = origin
        if role:  # the database role the statement ran under ([databases.access])
            entry["role"] = role
        try:
            await self._table.append(now, entry)
        finally:
            await self._journal.append(entry)  # never raises: see bot/state/journal.py
        return entry

    async def journal_problem(self) -> str | None:
        return await self._journal.problem()

    async def close(self) -> None:
        await self._journal.close()

    async def since(self, since: datetime | None = None) -> list[dict[str, Any]]:
        if since is None:
            return await self._table.since(None)
        cutoff = since if since.tzinfo else since.replace(tzinfo=UTC)
        return await self._table.since(cutoff.timestamp())

    async def prune(self, older_than_s: float, limit: int) -> int:
        return await self._table.prune(self._clock() - older_than_s, limit)


class SqliteAuditTable(AuditTable):
    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def append(self, at: float, entry: Record) -> None:
        text = encode(entry)
        await self._db.write(
            lambda c: c.execute("INSERT INTO audit (time, data) VALUES (?, ?)", (at, text))
        )

    async def since(self, since: float | None) -> list[Record]:
        def select(connection: sqlite3.Connection) -> list[tuple[int, str]]:
            if since is None:
                return connection.execute(
                    "SELECT seq, data FROM audit ORDER BY time, seq"
                ).fetchall()
            return connection.execute(
                "SELECT seq, data FROM audit WHERE time >= ? ORDER BY time, seq", (since,)
            ).fetchall()

        return [decode(data, f"audit/{seq}") for seq, data in await self._db.read(select)]

    async def prune(self, before: float, limit: int) -> int:
        return await self._db.write(
            lambda c: (
                c.execute(
                    "DELETE FROM audit WHERE seq IN (SELECT seq FROM audit WHERE time < ? LIMIT ?)",
                    (before, limit),
                ).rowcount
            )
        )


# Stream ids follow the recording processes' clocks, which may differ a little between
# replicas: a range starts this much early and is cut by each entry's own time.
_CLOCK_SKEW_MS = 60_000


class RedisAuditTable(AuditTable):
    """One stream; each entry's `at` field is the recording process's clock."""

    def __init__(self, db: RedisDb) -> None:
        self._db = db
        self._key = db.key("audit")

    async def append(self, at: float, entry: Record) -> None:
        fields: dict[FieldT, EncodableT] = {"at": repr(at), "entry": encode(entry)}

        async def add(client: Redis) -> None:
            try:
                await client.xadd(self._key, fields, id=f"{int(at * 1000)}-*")
            except ResponseError:
                # Our clock is behind the stream's last entry (another replica's): `*`
                # takes the next id after it.
                await client.xadd(self._key, fields)

        await self._db.run(add)

    async def since(self, since: float | None) -> list[Record]:
        start = "-" if since is None else str(max(0, int(since * 1000) - _CLOCK_SKEW_MS))
        rows = await self._db.run(lambda c: c.xrange(self._key, min=start), retry=True)
        entries = []
        for stream_id, fields in rows or []:
            if fields is None:  # a deleted entry: redis-py's types allow one
                continue
            if since is None or float(fields.get("at", 0)) >= since:
                entries.append(decode(fields["entry"], f"audit/{stream_id!s}"))
        return entries

    async def prune(self, before: float, limit: int) -> int:
        # MINID drops the entries older than the cutoff in one step that costs what it
        # removes (an hour's entries at each pass), never a walk through the rest.
        cutoff = str(max(0, int(before * 1000) - _CLOCK_SKEW_MS))
        return int(
            await self._db.run(lambda c: c.xtrim(self._key, minid=cutoff, approximate=False))
        )
