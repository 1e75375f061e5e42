"""Grants: an approver's permission to run one exact SQL text on one database in one session.

Bound to (session, database, sha256 of the SQL after trim). A one-time grant is consumed by
the execution it allows; a thread grant matches again until it expires. Consumption runs in a
single store transaction, so two racing consumers of one one-time grant: exactly one wins.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from enum import StrEnum
from typing import Any

from bot.config import Limits
from bot.sql.lexical import SQL_WHITESPACE as SQL_WHITESPACE  # re-exported for the cards
from bot.sql.lexical import trim_sql
from bot.state.store import StateStore, Table


class GrantScope(StrEnum):
    ONCE = "once"
    THREAD = "thread"


def sql_digest(sql: str) -> str:
    # Trimmed like every statement the classifier judges and the executor sends: only the
    # server's whitespace, so `DROP TABLE x` and `DROP TABLE x\u00a0` differ.
    return hashlib.sha256(trim_sql(sql).encode("utf-8")).hexdigest()


def _binding(session_id: str, database: str, sql: str) -> str:
    return f"{session_id}\x1f{database}\x1f{sql_digest(sql)}"


class Grants:
    def __init__(self, store: StateStore, limits: Limits, clock: Any = time.time) -> None:
        self._store = store
        self._limits = limits
        self._clock = clock

    async def mint(
        self, session_id: str, database: str, sql: str, scope: GrantScope, approver: str
    ) -> dict[str, Any]:
        now = self._clock()
        ttl = (
            self._limits.once_grant_ttl_s
            if scope is GrantScope.ONCE
            else self._limits.thread_grant_ttl_s
        )
        grant = {
            "id": uuid.uuid4().hex,
            "binding": _binding(session_id, database, sql),
            "session_id": session_id,
            "database": database,
            "sql_sha256": sql_digest(sql),
            "scope": scope.value,
            "approver": approver,
            "created_at": now,
            "expires_at": now + ttl,
        }
        await self._store.put("grants", grant["id"], grant)
        return grant

    async def consume(self, session_id: str, database: str, sql: str) -> bool:
        """True when a live grant matches; a one-time grant is removed by the same call."""
        binding = _binding(session_id, database, sql)
        now = self._clock()

        def take(table: Table) -> bool:
            matched: tuple[str, dict[str, Any]] | None = None
            for key, grant in table.items():
                if grant["expires_at"] <= now:
                    table.pop(key)  # expired grants are dead weight
                    continue
                if grant["binding"] != binding:
                    continue
                # When a thread grant also matches, it covers this run: keep the one-time one.
                if matched is None or matched[1]["scope"] == GrantScope.ONCE:
                    matched = (key, grant)
            if matched is None:
                return False
            key, grant = matched
            if grant["scope"] == GrantScope.ONCE:
                table.pop(key)
            return True

        return await self._store.transact("grants", take)
