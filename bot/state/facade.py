"""`State`: every repository of one store, opened from the settings by `open_state`.

`DBAGENT_STATE_URL=redis://…` selects Redis (several bot processes may share it); unset,
the store is embedded SQLite in `DBAGENT_STATE_DIR`, for this process alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bot.config import Limits, Settings
from bot.state.audit import JOURNAL_FILE, AuditLog, RedisAuditTable, SqliteAuditTable
from bot.state.errors import StateError
from bot.state.executions import Executions, RedisExecutionTable, SqliteExecutionTable
from bot.state.grants import Grants, RedisGrantTable, SqliteGrantTable
from bot.state.journal import AuditJournal
from bot.state.leases import LocalLeases, RedisLeases, SessionLeases
from bot.state.pending import PendingApprovals
from bot.state.posted import PostedMessages, RedisPostedTable, SqlitePostedTable
from bot.state.probe import StoreProbe, directory_problem
from bot.state.proposals import Proposals
from bot.state.questions import Questions
from bot.state.records import RedisRecordTable, SqliteRecordTable
from bot.state.redis_db import DEFAULT_PREFIX, RedisDb
from bot.state.redis_sessions import RedisSessions
from bot.state.requests import Requests
from bot.state.retention import Lifetimes, Pruner, lifetimes
from bot.state.seal import KEY_ENV, Seal, state_key
from bot.state.seen_events import RedisSeenEvents, SeenEvents, SqliteSeenEvents
from bot.state.sessions import Sessions, SqliteSessions
from bot.state.sqlite_db import SqliteDb, private_directory
from bot.state.stops import LocalStopRequests, RedisStopRequests, StopRequests

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass
class State:
    sessions: Sessions
    pending: PendingApprovals
    questions: Questions
    proposals: Proposals
    seen_events: SeenEvents
    grants: Grants
    audit: AuditLog
    executions: Executions  # write-ahead records of approved changes, and before-images
    leases: SessionLeases  # a session's runs never overlap, in this process or any other
    posted: PostedMessages  # cards and questions still showing buttons, for every replica
    stops: StopRequests  # Stop clicks for runs another process is running
    requests: Requests  # changes MCP clients asked for, and what became of them
    backend: SqliteDb | RedisDb
    lifetimes: Lifetimes
    clock: Clock = time.time
    directory: Path | None = None  # the state directory: the audit journal (and SQLite)
    _pruning: asyncio.Task[None] | None = field(default=None, repr=False)
    _probe: StoreProbe | None = field(default=None, repr=False)

    @property
    def shared(self) -> bool:
        """True when other processes may use this store at once (Redis)."""
        return isinstance(self.backend, RedisDb)

    @property
    def healthy(self) -> bool:
        """False from a failed write until one succeeds again (then /health says 503)."""
        return self.backend.healthy

    @property
    def last_error(self) -> str | None:
        return self.backend.last_error

    async def problem(self) -> str | None:
        """Why the store cannot be used now, or None; the store is asked (at most once a
        second), not the last operation's result reported (see probe.py)."""
        if self._probe is None:
            self._probe = StoreProbe(self._ask)
        return await self._probe.problem()

    async def _ask(self) -> str | None:
        problem = await self.backend.probe()
        if problem is None and self.directory is not None:
            problem = await directory_problem(self.directory)
        journal = await self.audit.journal_problem()
        return "; ".join(p for p in (problem, journal) if p is not None) or None

    def pruner(self) -> Pruner:
        return Pruner(self, self.lifetimes, self.clock)

    def start_pruning(self) -> None:
        """Forget old records in the background, a small batch at a time."""
        if self._pruning is None:
            self._pruning = asyncio.create_task(self.pruner().run_forever(), name="state pruning")

    async def close(self) -> None:
        if self._pruning is not None:
            self._pruning.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pruning
            self._pruning = None
        await self.audit.close()
        await self.backend.close()


async def open_state(
    settings: Settings,
    *,
    read_only: bool = False,
    redis_prefix: str = DEFAULT_PREFIX,
    clock: Clock = time.time,
) -> State:
    """The store the settings name. `read_only` opens an embedded store beside the process
    that serves it (`python -m bot audit`); it raises StateError when there is none."""
    directory = Path(settings.dbagent_state_dir)
    kept, limits = lifetimes(settings.retention, settings.limits), settings.limits
    if settings.dbagent_state_url:
        seal = Seal(state_key(settings))
        if not seal.enabled and not read_only:
            raise StateError(
                f"{KEY_ENV} is not set, nor SLACK_BOT_TOKEN to derive it from: with Redis "
                "state the grants, pending approvals and forwarded Stop clicks are signed "
                "(at least 32 random characters, openssl rand -hex 32; the same for every "
                "process of the app)"
            )
        if not read_only:
            private_directory(directory)  # for the audit journal
        redis_db = await RedisDb.open(settings.dbagent_state_url, prefix=redis_prefix)
        return _redis_state(redis_db, directory, kept, limits, clock, seal)
    sqlite_db = await SqliteDb.open(directory, read_only=read_only)
    # The embedded store is a private file of the process (0600): nothing else writes it.
    return _sqlite_state(sqlite_db, directory, kept, limits, clock)


def _sqlite_state(
    db: SqliteDb, directory: Path, kept: Lifetimes, limits: Limits, clock: Clock
) -> State:
    return State(
        sessions=SqliteSessions(db),
        pending=PendingApprovals(SqliteRecordTable(db, "pending")),
        questions=Questions(SqliteRecordTable(db, "questions")),
        proposals=Proposals(SqliteRecordTable(db, "proposals")),
        seen_events=SqliteSeenEvents(db, clock),
        grants=Grants(SqliteGrantTable(db), limits, clock),
        audit=AuditLog(SqliteAuditTable(db), AuditJournal(directory / JOURNAL_FILE), clock),
        executions=Executions(SqliteExecutionTable(db), SqliteRecordTable(db, "undo"), clock),
        leases=LocalLeases(),
        posted=PostedMessages(SqlitePostedTable(db)),
        stops=LocalStopRequests(),
        requests=Requests(SqliteRecordTable(db, "requests")),
        backend=db,
        lifetimes=kept,
        clock=clock,
        directory=directory,
    )


def _redis_state(
    db: RedisDb, directory: Path, kept: Lifetimes, limits: Limits, clock: Clock, seal: Seal
) -> State:
    return State(
        sessions=RedisSessions(db, kept["sessions"]),
        pending=PendingApprovals(
            RedisRecordTable(db, "pending", kept["pending"], indexed=True), seal
        ),
        questions=Questions(RedisRecordTable(db, "questions", kept["questions"])),
        proposals=Proposals(RedisRecordTable(db, "proposals", kept["proposals"])),
        seen_events=RedisSeenEvents(db, kept["seen_events"], clock),
        grants=Grants(RedisGrantTable(db), limits, clock, seal),
        audit=AuditLog(RedisAuditTable(db), AuditJournal(directory / JOURNAL_FILE), clock),
        executions=Executions(
            RedisExecutionTable(db, kept["executions"]),
            RedisRecordTable(db, "undo", kept["undo"]),
            clock,
        ),
        leases=RedisLeases(db),
        posted=PostedMessages(RedisPostedTable(db, kept["posted"])),
        stops=RedisStopRequests(db, seal),
        requests=Requests(RedisRecordTable(db, "requests", kept["requests"])),
        backend=db,
        lifetimes=kept,
        clock=clock,
        directory=directory,
    )
