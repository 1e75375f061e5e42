"""The Agent: the entry points an adapter (Slack, the console) calls.

Runs of one session never overlap: each takes the session's lock (asyncio.Lock wakes its
waiters first come, first served). Different sessions run concurrently.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from bot.agent.loop import PENDING, OnDecided, Parts, Runner, find_call, open_calls, tool_message
from bot.agent.model import ModelClient
from bot.agent.outcomes import AlreadyDecided, Outcome, PendingApproval, Progress, Requester
from bot.agent.sessions import Session, Sessions, SessionStatus
from bot.agent.skills import Skills
from bot.config import Mode, Settings
from bot.state.audit import AuditLog
from bot.state.grants import Grants, GrantScope
from bot.state.store import StateStore, Table

if TYPE_CHECKING:
    from bot.db import DatabaseRegistry

log = logging.getLogger(__name__)

SUPERSEDED_PENDING = "not approved; superseded by a new message"
SUPERSEDED_CALL = "not run; superseded by a new message"
STOPPED_CALL = "not run; the previous run stopped before this call ran"
INTERRUPTED = "interrupted: the bot stopped during this run"


class SessionLocks:
    """One asyncio.Lock per session id, dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[key] -= 1
            if not self._users[key]:
                del self._users[key]
                del self._locks[key]


class Agent:
    def __init__(
        self,
        *,
        settings: Settings,
        store: StateStore,
        databases: DatabaseRegistry,
        model: ModelClient,
        skills: Skills,
    ) -> None:
        self.settings = settings
        self.store = store
        self.sessions = Sessions(store)
        self.audit = AuditLog(store)
        self.grants = Grants(store, settings.limits)
        self._parts = Parts(
            settings=settings,
            store=store,
            sessions=self.sessions,
            databases=databases,
            model=model,
            skills=skills,
            grants=self.grants,
            audit=self.audit,
        )
        self._locks = SessionLocks()

    async def handle_message(
        self,
        session_id: str,
        text: str,
        *,
        requester: Requester,
        mode: Mode,
        progress: Progress | None = None,
    ) -> Outcome:
        async with self._locks.hold(session_id):
            session = await self.sessions.load_or_create(session_id, mode)
            session.mode = mode
            session.requester = requester
            await self._close_open_calls(session)
            session.messages.append({"role": "user", "content": text})
            session.status = SessionStatus.RUNNING
            session.last_error = None
            session.iterations = 0
            await self.sessions.save(session)
            runner = Runner(self._parts, session, progress)
            return await runner.guarded(runner.loop)

    async def approve(
        self,
        pending_id: str,
        *,
        approver: str,
        scope: GrantScope,
        progress: Progress | None = None,
        on_decided: OnDecided | None = None,
    ) -> Outcome:
        return await self._decide(pending_id, approver, GrantScope(scope), progress, on_decided)

    async def deny(
        self,
        pending_id: str,
        *,
        approver: str,
        progress: Progress | None = None,
        on_decided: OnDecided | None = None,
    ) -> Outcome:
        return await self._decide(pending_id, approver, None, progress, on_decided)

    async def pending(self, pending_id: str) -> PendingApproval | None:
        data = await self.store.get(PENDING, pending_id)
        return None if data is None else PendingApproval.from_json(data)

    async def session(self, session_id: str) -> Session | None:
        return await self.sessions.load(session_id)

    async def recover(self) -> None:
        """At start: runs the last process left `running` are `interrupted`. Sessions awaiting
        approval stay as they are: their pending records are in the store, and a click
        resumes them here."""

        def mark(table: Table) -> int:
            count = 0
            for key, data in table.items():
                if data.get("status") == SessionStatus.RUNNING.value:
                    data["status"] = SessionStatus.INTERRUPTED.value
                    data["last_error"] = INTERRUPTED
                    table[key] = data
                    count += 1
            return count

        count = await self.store.transact("sessions", mark)
        if count:
            log.info("%d session(s) were interrupted by a restart", count)

    # -----------------------------------------------------------------------------------
    async def _decide(
        self,
        pending_id: str,
        approver: str,
        scope: GrantScope | None,
        progress: Progress | None,
        on_decided: OnDecided | None,
    ) -> Outcome:
        record = await self.store.get(PENDING, pending_id)
        if record is None:
            raise AlreadyDecided(pending_id)
        async with self._locks.hold(record["session_id"]):
            # The claim: exactly one click gets the record; a second one finds it gone.
            claimed = await self.store.transact(PENDING, lambda table: table.pop(pending_id))
            if claimed is None:
                raise AlreadyDecided(pending_id)
            pending = PendingApproval.from_json(claimed)
            session = await self.sessions.load(pending.session_id)
            call = None if session is None else find_call(session.messages, pending.tool_call_id)
            if session is None or session.pending_id != pending_id or call is None:
                log.warning("pending approval %s has no paused run to resume", pending_id)
                raise AlreadyDecided(pending_id)
            runner = Runner(self._parts, session, progress)
            return await runner.guarded(
                lambda: runner.decide(
                    pending, call, approver=approver, scope=scope, on_decided=on_decided
                )
            )

    async def _close_open_calls(self, session: Session) -> None:
        """Before a new message: answer every call the last turn left open, so the history
        stays valid. A pending approval is superseded, and its record deleted."""
        pending_call = None
        pending_id = session.pending_id
        if pending_id is not None:
            record = await self.store.transact(PENDING, lambda table: table.pop(pending_id))
            if record is not None:
                pending = PendingApproval.from_json(record)
                pending_call = pending.tool_call_id
                await self.audit.record(
                    session_id=session.id,
                    requester=pending.requester,
                    approver=None,
                    database=pending.database,
                    environment=pending.environment,
                    risk=pending.risk,
                    sql=pending.sql,
                    outcome="superseded",
                )
        superseding = session.status is SessionStatus.AWAITING_APPROVAL
        for call in open_calls(session.messages):
            if call.id == pending_call:
                content = SUPERSEDED_PENDING
            else:
                content = SUPERSEDED_CALL if superseding else STOPPED_CALL
            session.messages.append(tool_message(call.id, content))
        session.pending_id = None
