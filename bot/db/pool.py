"""A small pool of asyncmy connections for one server address, plus a side connection to kill.

Not `asyncmy.create_pool`: its pool opens connections one at a time under a lock and bounds
only the TCP connect, so one silent server makes every waiter queue behind a full handshake
timeout. Here each connect (TCP, handshake and login) has its own deadline, a connection that
errored is closed instead of being returned, and nothing stays broken: the next call dials again.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections import deque

from asyncmy.connection import Connection
from asyncmy.cursors import Cursor
from asyncmy.errors import MySQLError

from bot.config import ConnectionTarget, Limits
from bot.db.driver import open_connection, stream_broken
from bot.db.types import DbError, Unreachable

log = logging.getLogger(__name__)

# Server error: the thread to kill is gone already (it finished, or its socket was closed).
ER_NO_SUCH_THREAD = 1094
# An idle connection older than this is pinged before use: the server may have dropped it.
_PING_AFTER_IDLE_S = 30.0


class ConnectionPool:
    """Up to `limits.pool_size` connections to one server; no connection is opened before use."""

    def __init__(
        self,
        database_name: str,
        target: ConnectionTarget,
        limits: Limits,
        *,
        schema_after_role: bool = False,
    ) -> None:
        self.database_name = database_name
        self.target = target
        # A login holding only roles may not open its schema before SET ROLE: connections
        # open with no default schema, and each session USEs it after its SET ROLE.
        self.schema_after_role = schema_after_role
        self.limits = limits
        self.is_mariadb = True  # corrected by the first connection's handshake
        self._slots = asyncio.Semaphore(limits.pool_size)
        self._idle: deque[Connection] = deque()
        self._killer: Connection | None = None
        self._killer_lock = asyncio.Lock()
        self._refill: asyncio.Task[None] | None = None
        self._closed = False

    async def acquire(self, *, fresh: bool = False) -> Connection:
        """A connection for one run. `fresh` skips idle ones: a new session carries no state."""
        if self._closed:
            raise DbError(f"connections to {self.database_name} are closed")
        # Holders are bounded by statement timeouts, so a full pool frees up; still never hang.
        wait_s = self.limits.statement_timeout_s + self.limits.connect_timeout_s
        try:
            async with asyncio.timeout(wait_s):
                await self._slots.acquire()
        except TimeoutError:
            raise DbError(
                f"all {self.limits.pool_size} connections to {self.database_name} stayed busy "
                f"for {wait_s:g} s; try again"
            ) from None
        try:
            if not fresh:
                while self._idle:
                    connection = self._idle.pop()  # the most recently used is the likeliest alive
                    if await self._still_alive(connection):
                        return connection
                    connection.close()
            return await self.connect()
        except BaseException:
            self._slots.release()
            raise

    def release(self, connection: Connection, *, reuse: bool) -> None:
        """Give the slot back; the connection is kept only when the run ended cleanly."""
        try:
            if reuse and self._may_keep() and _is_usable(connection):
                self._idle.append(connection)
            else:
                connection.close()
                self._start_refill()
        finally:
            self._slots.release()

    def _start_refill(self) -> None:
        """After dropping a connection (say, to abandon a capped result), open a replacement in
        the background when none is idle, so the next run does not pay for the handshake."""
        if self._closed or self._idle or self._refill is not None:
            return
        self._refill = asyncio.get_running_loop().create_task(self._open_spare())

    async def _open_spare(self) -> None:
        try:
            connection = await self.connect()
        except DbError:
            return  # the next run dials and reports the problem itself
        finally:
            self._refill = None
        if self._may_keep():
            self._idle.append(connection)
        else:
            connection.close()

    def _may_keep(self) -> bool:
        return not self._closed and len(self._idle) < self.limits.pool_size

    async def connect(self) -> Connection:
        """Open one connection, within the connect timeout, or raise DbError."""
        target = self.target
        timeout_s = self.limits.connect_timeout_s
        connection = open_connection(
            host=target.host,
            port=target.port,
            user=target.user,
            password=target.password.get_secret_value(),
            database=None if self.schema_after_role else target.schema_name,
            charset="utf8mb4",
            autocommit=True,
            connect_timeout=timeout_s,
            program_name="dbagent",
        )
        try:
            async with asyncio.timeout(timeout_s):
                await connection.connect()
        except TimeoutError:
            connection.close()
            raise Unreachable(
                f"cannot connect to {self.database_name} (no answer from "
                f"{target.host}:{target.port} within {timeout_s:g} s)"
            ) from None
        except (MySQLError, OSError) as exc:
            connection.close()
            raise Unreachable(
                f"cannot connect to {self.database_name} ({self._connect_reason(exc)})"
            ) from None
        except BaseException:
            connection.close()
            raise
        self.is_mariadb = "mariadb" in connection.get_server_info().lower()
        return connection

    async def kill_query(self, thread_id: int) -> str | None:
        """`KILL QUERY thread_id` from the side connection; None on success, else why not.

        The side connection lives outside the pool's slots: a pool full of runaway queries must
        still be able to stop them.
        """
        async with self._killer_lock:
            for attempt in (1, 2):
                try:
                    if self._killer is None or not _is_usable(self._killer):
                        self._killer = await self.connect()
                    async with asyncio.timeout(self.limits.connect_timeout_s):
                        cursor = self._killer.cursor(Cursor)
                        await cursor.execute(f"KILL QUERY {int(thread_id)}")
                    return None
                except MySQLError as exc:
                    if error_code(exc) == ER_NO_SUCH_THREAD:
                        return None  # it ended on its own
                    reason = server_message(exc)
                except DbError as exc:
                    reason = exc.message
                except TimeoutError:
                    reason = "the kill itself timed out"
                if self._killer is not None:
                    self._killer.close()
                    self._killer = None
                log.warning(
                    "KILL QUERY %s on %s failed (attempt %s): %s",
                    thread_id,
                    self.database_name,
                    attempt,
                    reason,
                )
            return reason

    async def close(self) -> None:
        """Close idle connections now; connections in use are closed when released."""
        self._closed = True
        if self._refill is not None:
            self._refill.cancel()
        connections = [*self._idle, *([self._killer] if self._killer else [])]
        self._idle.clear()
        self._killer = None
        for connection in connections:
            try:
                async with asyncio.timeout(1.0):
                    await connection.ensure_closed()
            except (TimeoutError, MySQLError, OSError):
                connection.close()

    async def _still_alive(self, connection: Connection) -> bool:
        if not _is_usable(connection):
            return False
        loop = asyncio.get_running_loop()
        if loop.time() - connection.last_usage < _PING_AFTER_IDLE_S:
            return True
        try:
            async with asyncio.timeout(self.limits.connect_timeout_s):
                await connection.ping(reconnect=False)
        except (TimeoutError, MySQLError, OSError):
            return False
        return True

    def _connect_reason(self, exc: BaseException) -> str:
        """A short reason, with the address but never the password."""
        cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
        address = f"{self.target.host}:{self.target.port}"
        if isinstance(cause, OSError):
            if cause.errno == errno.ECONNREFUSED:
                reason = f"connection refused at {address}"
            elif cause.errno is not None:
                reason = f"{os.strerror(cause.errno).lower()} at {address}"
            else:
                reason = f"{cause} at {address}"
        else:
            reason = server_message(exc)
        secret = self.target.password.get_secret_value()
        return reason.replace(secret, "***") if secret else reason


def _is_usable(connection: Connection) -> bool:
    return connection.connected and not stream_broken(connection)


def error_code(exc: BaseException) -> int | None:
    code = exc.args[0] if exc.args else None
    return code if isinstance(code, int) else None


def server_message(exc: BaseException) -> str:
    if len(exc.args) >= 2 and isinstance(exc.args[1], str):
        return exc.args[1]
    return str(exc) or type(exc).__name__
