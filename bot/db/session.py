"""One run's hold on one connection: server-held read-only or an approved write session,
statement timeouts that kill on the server, and row caps that never read a read's result to
its end (an approved write's result is always read to its end: killing it would leave the
change half done).

Read-only runs: `SET SESSION TRANSACTION READ ONLY`, then `START TRANSACTION READ ONLY`, then
the statements, then COM_RESET_CONNECTION (a rollback that also wipes locks, variables and
settings before the pooled connection serves someone else). The server refuses any write or
DDL in that transaction (error 1792); before each statement after the first we check the
transaction is still the read-only one (a misjudged COMMIT or ANALYZE TABLE would end it), and
stop if not.

What the read-only transaction does NOT stop (MariaDB 10.11, checked as root): administrative
and session statements that write no table data: SHUTDOWN, KILL, SET GLOBAL, FLUSH, ANALYZE
TABLE, HANDLER, GET_LOCK(), SELECT … INTO OUTFILE, LOAD_FILE() (FILE privilege), and whatever
a stored function does beyond table writes. Those are the classifier's to refuse, and the
database account's: give the bot a user without SUPER, SHUTDOWN, FILE or PROCESS, and without
EXECUTE on routines whose DEFINER holds those.

Write runs (approved by a person) get a fresh connection in autocommit, which is closed after
the run, so nothing an approved statement changes in the session reaches a later run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from asyncmy.connection import Connection
from asyncmy.cursors import Cursor, SSCursor
from asyncmy.errors import MySQLError

from bot.db.cells import render_row
from bot.db.driver import (
    affected_rows,
    info_message,
    live_result,
    pause_reading,
    resume_reading,
    server_status,
    unbuffered_cursor,
)
from bot.db.names import quote_identifier
from bot.db.pool import ConnectionPool, error_code, server_message
from bot.db.rows import next_packet_is_here, read_rows
from bot.db.types import DbError, MissingPrivilege, ResultSet
from bot.observability import observe

# Server status flags (protocol): in a transaction, and that transaction is READ ONLY.
_IN_TRANSACTION = 0x0001
_IN_READ_ONLY_TRANSACTION = 0x2000
ER_QUERY_INTERRUPTED = 1317
COM_RESET_CONNECTION = 0x1F  # protocol command: wipe the session, keep the connection
_DRAIN_BATCH = 1000
_TIMEOUT_ERRORS = {1969, 3024}  # MariaDB max_statement_time, MySQL MAX_EXECUTION_TIME
_CONNECTION_LOST = {2006, 2013, 2055}
# The server's own limit trails the client's: the client's KILL normally acts first, and the
# server still stops the statement if the client or its KILL never gets there.
SERVER_TIMEOUT_MARGIN_S = 1.0

# Kills run to completion even when the task that asked for them is cancelled; keep them
# referenced until they finish.
_background: set[asyncio.Task[Any]] = set()
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RawResult:
    """What one statement produced, before cells are rendered."""

    columns: tuple[str, ...] | None  # None: the statement returns no rows
    type_codes: tuple[int, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool
    affected_rows: int | None
    last_insert_id: int | None
    info: str = ""  # the server's note on a change ("Records: 3  Duplicates: 1  Warnings: 0")

    def rendered(self, cell_chars: int) -> ResultSet | None:
        if self.columns is None:
            return None
        return ResultSet(
            columns=self.columns,
            rows=tuple(render_row(row, self.type_codes, cell_chars) for row in self.rows),
            truncated=self.truncated,
        )


class NoRole:
    """SET ROLE NONE: a session of a database with an access map, outside any person's call."""


Role = str | NoRole | None  # None: the database has no access map; no SET ROLE at all


class Session:
    def __init__(
        self,
        pool: ConnectionPool,
        connection: Connection,
        *,
        read_only: bool,
        timeout_s: float,
        role: Role = None,
    ) -> None:
        self.pool = pool
        self.role = role
        self.read_only = read_only
        self.timeout_s = timeout_s
        self.broken = False  # the connection must not go back to the pool
        self._connection = connection
        self._thread_id: int = connection.thread_id()
        self._unread: SSCursor | None = None  # a truncated result whose rest was never read
        self._statements_run = 0

    async def begin(self) -> None:
        # Write sessions get a fresh connection: the server's own defaults apply to them.
        if self.read_only:
            await self._admin("SET SESSION TRANSACTION READ ONLY")
        await self._admin(self._server_timeout_sql())
        if self.role is not None:
            await self._set_role(self.role)
        if self.read_only:
            await self._admin("START TRANSACTION READ ONLY")

    async def _set_role(self, role: str | NoRole) -> None:
        """`SET ROLE` for the person a call acts for (bot.db.roles); refused by the server
        when the login was not granted the role, and then nothing runs."""
        sql = "SET ROLE NONE" if isinstance(role, NoRole) else f"SET ROLE {quote_identifier(role)}"
        try:
            await self._admin(sql)
        except DbError as exc:
            name = "NONE" if isinstance(role, NoRole) else role
            raise DbError(
                f"cannot SET ROLE {name} on {self.pool.database_name}: {exc.message} "
                "(grant the role to the bot's login: GRANT role TO login)"
            ) from None
        schema = self.pool.target.schema_name
        if self.pool.schema_after_role and schema and not isinstance(role, NoRole):
            await self._admin(f"USE {quote_identifier(schema)}")

    async def finish(self) -> None:
        if self._unread is not None:
            self.stop_unread()  # the last statement's rows: drop the connection, kill
        elif self.read_only:
            await self._reset()

    async def _reset(self) -> None:
        """End the read-only run and wipe the session before the connection is reused by
        someone else's run: COM_RESET_CONNECTION rolls back, and drops user variables,
        GET_LOCK() locks, temporary tables and session settings, whatever a statement the
        classifier misjudged left behind. ROLLBACK plus RELEASE_ALL_LOCKS() where the driver
        cannot send it."""
        send = getattr(self._connection, "_execute_command", None)
        read_ok = getattr(self._connection, "_read_ok_packet", None)
        if send is None or read_ok is None:
            await self._admin("ROLLBACK")
            await self._admin("DO RELEASE_ALL_LOCKS()")
            return
        try:
            async with asyncio.timeout(self.pool.limits.connect_timeout_s):
                await send(COM_RESET_CONNECTION, "")
                await read_ok()
        except (TimeoutError, MySQLError):
            self.broken = True  # not reset: it must not go back to the pool
        except asyncio.CancelledError:
            self.broken = True
            self._connection.close()
            raise

    @observe.db_statement
    async def fetch(self, sql: str, args: Any = None, *, limit: int) -> RawResult:
        """Run one statement; keep at most `limit` rows and read one more to know if it had more."""
        await self._settle_unread()
        if self.read_only and self._statements_run:
            await self._check_still_read_only()
        self._statements_run += 1
        cursor = unbuffered_cursor(self._connection)
        try:
            async with asyncio.timeout(self.timeout_s):
                await cursor.execute(sql, args)
                if not cursor.description:  # no result set (asyncmy types it as always set)
                    return RawResult(
                        None,
                        (),
                        [],
                        False,
                        affected_rows(cursor),
                        cursor.lastrowid or None,
                        info_message(cursor),
                    )
                rows = await read_rows(cursor, limit + 1)
                truncated = len(rows) > limit
                if truncated and not self.read_only:
                    # An approved change (… RETURNING) must run to its end, not be killed
                    # half done: read the rest and throw it away.
                    while await read_rows(cursor, _DRAIN_BATCH):
                        pass
                elif truncated and not await _ended_without_waiting(cursor):
                    # Stop reading now: asyncmy would otherwise buffer what the server sends.
                    pause_reading(self._connection)
                    self._unread = cursor
        except TimeoutError:
            failure = await self._abandon_running()
            observe.statement_killed(failure is None)
            raise DbError(_timeout_message(self.timeout_s, failure)) from None
        except asyncio.CancelledError:
            await self._abandon_running()
            raise
        except MySQLError as exc:
            self.broken = True
            raise self._statement_error(exc) from None
        except (RuntimeError, UnicodeError, ValueError) as exc:
            # The driver refused to send it (LOAD DATA LOCAL INFILE, a lone surrogate…).
            self.broken = True
            raise DbError(f"the statement could not be sent: {exc}") from None
        description = cursor.description
        return RawResult(
            columns=tuple(column[0] for column in description),
            type_codes=tuple(column[1] for column in description),
            rows=rows[:limit],
            truncated=truncated,
            affected_rows=None,
            last_insert_id=None,
        )

    def stop_unread(self) -> None:
        """Abandon a truncated result: close the connection and kill the query.

        Closing alone already stops the server at its next write; the KILL, which makes sure,
        goes out in the background so the caller does not wait for the server to act on it.
        """
        self._unread = None
        self.broken = True
        self._connection.close()
        _in_background(self.pool.kill_query(self._thread_id))

    async def _settle_unread(self) -> None:
        """Before the next statement on this connection: kill the unread result's query and
        read only what was already in flight (bounded by socket buffers), not the whole result."""
        cursor, self._unread = self._unread, None
        if cursor is None:
            return
        failure = await asyncio.shield(_in_background(self.pool.kill_query(self._thread_id)))
        if failure is not None:
            self.broken = True
            self._connection.close()
            raise DbError(f"could not stop the previous statement on the server ({failure})")
        resume_reading(self._connection)
        try:
            async with asyncio.timeout(self.pool.limits.connect_timeout_s):
                await cursor.close()
        except MySQLError as exc:
            if error_code(exc) != ER_QUERY_INTERRUPTED:  # our own KILL ends it this way
                self.broken = True
                raise self._statement_error(exc) from None
        except TimeoutError:
            await self._abandon_running()
            raise DbError("the previous statement's unread rows did not stop in time") from None
        except asyncio.CancelledError:
            await self._abandon_running()
            raise

    async def _check_still_read_only(self) -> None:
        await self._admin("DO 0")  # its OK packet carries the server's transaction state
        wanted = _IN_TRANSACTION | _IN_READ_ONLY_TRANSACTION
        if server_status(self._connection) & wanted != wanted:
            self.broken = True
            raise DbError(
                "the read-only transaction was ended by the previous statement; "
                "stopped before running more"
            )

    async def _abandon_running(self) -> str | None:
        """Close our end and `KILL QUERY` from another connection; None when it was killed."""
        self.broken = True
        self._connection.close()
        return await asyncio.shield(_in_background(self.pool.kill_query(self._thread_id)))

    async def _admin(self, sql: str) -> None:
        """Our own short statements, bounded by the connect timeout."""
        try:
            async with asyncio.timeout(self.pool.limits.connect_timeout_s):
                await self._connection.cursor(Cursor).execute(sql)
        except TimeoutError:
            self.broken = True
            self._connection.close()
            raise DbError(
                f"{self.pool.database_name} did not answer within "
                f"{self.pool.limits.connect_timeout_s:g} s"
            ) from None
        except asyncio.CancelledError:
            self.broken = True
            self._connection.close()
            raise
        except MySQLError as exc:
            self.broken = True
            raise self._statement_error(exc) from None

    def _server_timeout_sql(self) -> str:
        limit_s = self.timeout_s + SERVER_TIMEOUT_MARGIN_S
        if self.pool.is_mariadb:
            return f"SET SESSION max_statement_time = {limit_s:.3f}"
        # MySQL's limit is in milliseconds and covers SELECT only; the client's KILL covers all.
        return f"SET SESSION max_execution_time = {round(limit_s * 1000)}"

    def _statement_error(self, exc: MySQLError) -> DbError:
        code = error_code(exc)
        message = server_message(exc)
        if code in _TIMEOUT_ERRORS:
            return DbError(_timeout_message(self.timeout_s + SERVER_TIMEOUT_MARGIN_S, None))
        if code in _CONNECTION_LOST or code is None or code < 1000:
            return DbError(f"lost the connection to {self.pool.database_name} ({message})")
        flavour = "MariaDB" if self.pool.is_mariadb else "MySQL"
        if code in MissingPrivilege.CODES:
            return MissingPrivilege(f"{flavour} error {code}: {message}", code=code, server=message)
        return DbError(f"{flavour} error {code}: {message}")


@asynccontextmanager
async def open_session(
    pool: ConnectionPool, *, read_only: bool, timeout_s: float, role: Role = None
) -> AsyncIterator[Session]:
    """Hold one connection for a run; it returns to the pool only after a clean read-only run.
    With a `role`, the session starts with SET ROLE (NoRole: SET ROLE NONE)."""
    connection = await pool.acquire(fresh=not read_only)
    session = Session(pool, connection, read_only=read_only, timeout_s=timeout_s, role=role)
    clean = False
    try:
        await session.begin()
        yield session
        await session.finish()
        clean = True
    finally:
        if session._unread is not None:
            session.stop_unread()
        pool.release(connection, reuse=clean and read_only and not session.broken)


def _in_background(work: Awaitable[T]) -> asyncio.Task[T]:
    """Work that finishes even if whoever asked for it is cancelled or moves on; awaiting it
    through asyncio.shield lets a cancelled waiter stop waiting while the work goes on."""
    task = asyncio.ensure_future(work)
    _background.add(task)
    task.add_done_callback(_background.discard)
    return task


async def _ended_without_waiting(cursor: SSCursor) -> bool:
    """Whether a result we stopped reading has in fact ended, judged from bytes already here.

    A result of exactly limit+1 rows (every sample: LIMIT n+1) usually has its end packet in
    the same read; consuming it keeps the connection for reuse instead of killing the query.
    """
    result = live_result(cursor)
    if result is None or not result.unbuffered_active:
        return True
    if not next_packet_is_here(cursor):
        return False
    await read_rows(cursor, 1)  # a row (it goes on) or the end; either way no waiting
    return not result.unbuffered_active


def _timeout_message(timeout_s: float, kill_failure: str | None) -> str:
    if kill_failure is None:
        return f"statement timed out after {_seconds(timeout_s)} s (killed on the server)"
    return (
        f"statement timed out after {_seconds(timeout_s)} s (could not kill it on the server: "
        f"{kill_failure}; the server's own limit stops it)"
    )


def _seconds(value: float) -> str:
    return f"{value:.1f}" if round(value, 1) == value else f"{value:g}"
