"""One configured database: its pools (primary, and replica when `read_url` is set), statement
runs and catalog reads. Pools open nothing until first use.

A replica that cannot be reached does not stop reads: they run on the primary instead (the
execution carries a note saying so, for the answer), and the replica is tried again after
REPLICA_RETRY_S. Only a failure to connect falls back, when nothing ran yet."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

from bot.config import DatabaseConfig, Limits
from bot.db import catalog
from bot.db.pool import ConnectionPool
from bot.db.roles import current_role
from bot.db.session import NoRole, RawResult, Role, Session, open_session
from bot.db.types import (
    DbError,
    Execution,
    MissingPrivilege,
    ResultSet,
    StatementOutcome,
    Unreachable,
)
from bot.sql.lexical import statement_text

log = logging.getLogger(__name__)

REPLICA_RETRY_S = 30.0  # a replica found unreachable is tried again after this long


class Database:
    def __init__(self, config: DatabaseConfig, limits: Limits) -> None:
        self.config = config
        self.limits = limits
        self._primary: ConnectionPool | None = None
        self._replica: ConnectionPool | None = None
        self._version: str | None = None
        self._replica_down: tuple[float, str] | None = None  # (try again at, why)
        # Bumped when a write of ours starts and when it ends: what was read from the catalog
        # before (bot.db.reach's cached snapshot) is not trusted after it.
        self.writes = 0

    async def execute(
        self,
        statements: Sequence[str],
        *,
        read_only: bool,
        limit: int,
        use_replica: bool = False,
        timeout_s: float | None = None,
        cut: bool = False,
    ) -> Execution:
        """Run statements in order on one connection; every finished one is reported.

        Each text is cut and trimmed the way the classifier does (statement_text), unless
        `cut` says the texts are a classification's statements (Statement.text) as they
        are: those are already exactly that, and are not cut a second time.

        On failure raises DbError whose `.outcomes` holds the statements that finished.
        """
        if cut:
            texts = [text for text in statements if text]
        else:
            texts = [text for text in map(statement_text, statements) if text]
        if not texts:
            raise DbError("no SQL statement to run")
        if use_replica and not read_only:
            raise DbError("writes never run on the replica")
        row_limit = max(1, min(limit, self.limits.max_rows))
        timeout = self.limits.statement_timeout_s if timeout_s is None else timeout_s
        outcomes: list[StatementOutcome] = []
        failed_at: int | None = None
        note = None
        try:
            if use_replica:
                opened = self._read_session(timeout)
            else:
                opened = open_session(
                    self._primary_pool(),
                    read_only=read_only,
                    timeout_s=timeout,
                    role=self.role(),
                )
            async with opened if read_only else self._writing(opened) as session:
                if use_replica and session.pool is not self._replica:
                    note = self.replica_note()
                for position, sql in enumerate(texts, 1):
                    failed_at = position
                    started = time.perf_counter()
                    raw = await session.fetch(sql, limit=row_limit)
                    outcomes.append(self.outcome(sql, raw, started))
                failed_at = None
        except DbError as exc:
            where = ""
            if failed_at is not None and len(texts) > 1:
                where = f"statement {failed_at} of {len(texts)} failed: "
            if isinstance(exc, MissingPrivilege):
                raise MissingPrivilege(
                    where + exc.message, tuple(outcomes), code=exc.code, server=exc.server
                ) from None
            raise DbError(where + exc.message, tuple(outcomes)) from None
        return Execution(self.config.name, tuple(outcomes), note)

    async def server_version(self) -> str:
        """The server's VERSION(), e.g. "10.11.19-MariaDB-0+deb12u1"; asked once."""
        if self._version is None:
            async with self._catalog_session() as session:
                raw = await session.fetch("SELECT VERSION()", limit=1)
            self._version = str(raw.rows[0][0])
        return self._version

    async def list_tables(self) -> ResultSet:
        """Tables and views: name, type, estimated_rows, comment."""
        async with self._catalog_session() as session:
            schema = await catalog.current_schema(session, self._reads().target.schema_name)
            return await catalog.list_tables(session, schema, self.limits.cell_chars)

    async def get_columns(self, table: str) -> tuple[ResultSet, ResultSet]:
        """(columns: name, type, nullable, default, key, extra, comment;
        indexes: name, columns, unique, type)."""
        async with self._catalog_session() as session:
            schema = await catalog.current_schema(session, self._reads().target.schema_name)
            return await catalog.get_columns(session, schema, table, self.limits.cell_chars)

    async def sample(self, table: str, limit: int) -> ResultSet:
        rows = max(1, min(limit, self.limits.max_sample_rows))
        async with self._catalog_session() as session:
            schema = await catalog.current_schema(session, self._reads().target.schema_name)
            return await catalog.sample(session, schema, table, rows, self.limits.cell_chars)

    async def explain(self, sql: str) -> str:
        """`EXPLAIN FORMAT=JSON` text of one statement, in a read-only session; never ANALYZE."""
        async with self._catalog_session() as session:
            return await catalog.explain(session, sql)

    def primary_reads(self, timeout_s: float | None = None) -> AbstractAsyncContextManager[Session]:
        """A read-only session on the primary, where approved writes run: what a write will
        reach and touch is read there, never on a lagging replica."""
        timeout = self.limits.statement_timeout_s if timeout_s is None else timeout_s
        return open_session(
            self._primary_pool(), read_only=True, timeout_s=timeout, role=self.role()
        )

    def catalog_reads(self) -> AbstractAsyncContextManager[Session]:
        """A read-only session where reads go (the replica when `read_url` is set)."""
        return self._catalog_session()

    async def close(self) -> None:
        for pool in (self._primary, self._replica):
            if pool is not None:
                await pool.close()

    def write_session(self) -> AbstractAsyncContextManager[Session]:
        """A fresh connection on the primary for one approved change (bot.db.bounded)."""
        timeout = self.limits.statement_timeout_s
        return self._writing(
            open_session(self._primary_pool(), read_only=False, timeout_s=timeout, role=self.role())
        )

    @asynccontextmanager
    async def _writing(
        self, session: AbstractAsyncContextManager[Session]
    ) -> AsyncIterator[Session]:
        self.writes += 1
        try:
            async with session as opened:
                yield opened
        finally:
            self.writes += 1

    def primary_read_session(self) -> AbstractAsyncContextManager[Session]:
        """A read-only session on the primary: current rows, never a lagging replica's."""
        timeout = self.limits.statement_timeout_s
        return open_session(
            self._primary_pool(), read_only=True, timeout_s=timeout, role=self.role()
        )

    def _catalog_session(self) -> AbstractAsyncContextManager[Session]:
        return self._read_session(self.limits.statement_timeout_s)

    @asynccontextmanager
    async def _read_session(self, timeout_s: float) -> AsyncIterator[Session]:
        """A read-only session where reads go: the replica, or the primary while the replica
        cannot be reached (see `replica_note`)."""
        async with AsyncExitStack() as stack:
            pool = self._reads()
            try:
                session = await stack.enter_async_context(
                    open_session(pool, read_only=True, timeout_s=timeout_s, role=self.role())
                )
            except Unreachable as exc:
                if pool is self._primary_pool():
                    raise
                self._replica_lost(exc.message)
                session = await stack.enter_async_context(
                    open_session(
                        self._primary_pool(),
                        read_only=True,
                        timeout_s=timeout_s,
                        role=self.role(),
                    )
                )
            else:
                if pool is not self._primary and self._replica_down is not None:
                    log.warning("the replica of %s answers again", self.config.name)
                    self._replica_down = None
            yield session

    def _replica_lost(self, why: str) -> None:
        if self._replica_down is None:
            log.warning("reads of %s go to the primary for now: %s", self.config.name, why)
        self._replica_down = (time.monotonic() + REPLICA_RETRY_S, why)

    def replica_note(self) -> str | None:
        """While the replica cannot be reached: a sentence saying reads ran on the primary."""
        if self._replica_down is None:
            return None
        return f"read on the primary: the replica cannot be reached ({self._replica_down[1]})"

    async def probe(self) -> tuple[str | None, str | None]:
        """(why the primary does not answer, why the replica does not), None for each that
        does: judged separately, so a replica down does not make the database unusable."""

        async def ask(pool: ConnectionPool) -> str | None:
            try:
                async with open_session(
                    pool, read_only=True, timeout_s=self.limits.statement_timeout_s
                ) as session:
                    await session.fetch("SELECT 1", limit=1)
            except DbError as exc:
                return exc.message
            return None

        primary = await ask(self._primary_pool())
        replica = None
        if self.config.read_url is not None:
            replica = await ask(self._replica_pool())
            if replica is not None:
                self._replica_lost(replica)
            else:
                self._replica_down = None
        return primary, replica

    def role(self) -> Role:
        """The role sessions start with: the acting person's (bot.db.roles) when the database
        has an access map, SET ROLE NONE outside a person's call; None without a map."""
        if not self.config.access:
            return None
        return current_role() or NoRole()

    def _primary_pool(self) -> ConnectionPool:
        if self._primary is None:
            self._primary = ConnectionPool(
                self.config.name,
                self.config.target,
                self.limits,
                schema_after_role=bool(self.config.access),
            )
        return self._primary

    def _reads(self) -> ConnectionPool:
        """Where reads go: the replica's pool when `read_url` is set (the primary's while it
        was found unreachable less than REPLICA_RETRY_S ago)."""
        if self.config.read_url is None:
            return self._primary_pool()
        if self._replica_down is not None and time.monotonic() < self._replica_down[0]:
            return self._primary_pool()
        return self._replica_pool()

    def _replica_pool(self) -> ConnectionPool:
        if self._replica is None:
            self._replica = ConnectionPool(
                f"{self.config.name} (replica)",
                self.config.read_target,
                self.limits,
                schema_after_role=bool(self.config.access),
            )
        return self._replica

    def outcome(self, sql: str, raw: RawResult, started: float) -> StatementOutcome:
        return StatementOutcome(
            sql=sql,
            result=raw.rendered(self.limits.cell_chars),
            affected_rows=raw.affected_rows,
            last_insert_id=raw.last_insert_id,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
