"""Grants: an approver's permission to run one exact SQL text on one database in one session.

Bound to (session, database, sha256 of the SQL after trim). A one-time grant is consumed by
the execution it allows; a thread grant matches again until it expires. Consumption runs in a
single store transaction, so two racing consumers of one one-time grant: exactly one wins.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.config import Limits
from bot.sql.lexical import SQL_WHITESPACE as SQL_WHITESPACE  # re-exported for the cards
from bot.sql.lexical import trim_sql
from bot.state.store import StateStore, Table


class GrantScope(StrEnum):
    ONCE = "once"
    THREAD = "thread"


@dataclass(frozen=True, slots=True)
class GrantClaim:
    """A grant taken for one execution: a one-time grant is gone, a thread grant is held
    (no other execution may use it) until `release`."""

    id: str
    scope: GrantScope
    approver: str
    bounds: tuple[int | None, ...] | None


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
        self,
        session_id: str,
        database: str,
        sql: str,
        scope: GrantScope,
        approver: str,
        bounds: Sequence[int | None] | None = None,
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
            # The most rows each statement may change: what the approver saw on the card.
            "bounds": None if bounds is None else list(bounds),
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
                if grant["binding"] != binding or grant.get("held"):
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

    async def claim(self, session_id: str, database: str, sql: str) -> GrantClaim | None:
        """Take a live grant for one execution, atomically. A thread grant held by an
        execution not yet finished (or cut off by a stop) does not match."""
        binding = _binding(session_id, database, sql)
        now = self._clock()

        def take(table: Table) -> GrantClaim | None:
            matched: tuple[str, dict[str, Any]] | None = None
            for key, grant in table.items():
                if grant["expires_at"] <= now:
                    table.pop(key)
                    continue
                if grant["binding"] != binding or grant.get("held"):
                    continue
                if matched is None or matched[1]["scope"] == GrantScope.ONCE:
                    matched = (key, grant)
            if matched is None:
                return None
            key, grant = matched
            if grant["scope"] == GrantScope.ONCE:
                table.pop(key)
            else:
                table[key] = {**grant, "held": True}
            bounds = grant.get("bounds")
            return GrantClaim(
                id=grant["id"],
                scope=GrantScope(grant["scope"]),
                approver=grant["approver"],
                bounds=None if bounds is None else tuple(bounds),
            )

        return await self._store.transact("grants", take)

    async def release(self, grant_id: str) -> None:
        """The execution holding a thread grant finished: the grant matches again."""

        def free(table: Table) -> None:
            grant = table.get(grant_id)
            if grant is not None and grant.get("held"):
                table[grant_id] = {**grant, "held": False}

        await self._store.transact("grants", free)

    async def drop_held(self) -> int:
        """At start: grants an execution held when the bot stopped are gone (never re-run)."""

        def drop(table: Table) -> int:
            held = [key for key, grant in table.items() if grant.get("held")]
            for key in held:
                table.pop(key)
            return len(held)

        return await self._store.transact("grants", drop)
