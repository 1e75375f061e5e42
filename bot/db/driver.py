"""The asyncmy internals the data layer reaches, in one place and typed.

asyncmy's stubs describe its public API only; what the pool and sessions need beyond it —
turning off multi-statements, knowing a connection's stream broke, pausing the socket while a
result stays unread, the server's status flags, an unbuffered cursor's live result, the
protocol's receive buffer — is read here, as are the attributes its stubs type wrongly
(a cursor's rowcount). These names are asyncmy 0.2.18's (the dependency is
pinned below 0.2.19); when they move, only this module changes.
"""

from __future__ import annotations

from typing import Any, cast

from asyncmy.connection import Connection
from asyncmy.constants import CLIENT
from asyncmy.cursors import SSCursor

# parse_rows_from_buffer(buffer, position, length, fields, count, rows, binary) ->
# (position after the rows read, next packet sequence number); None in another asyncmy build,
# and callers fall back to fetchmany.
ROW_PARSER: Any
try:
    from asyncmy.protocol import parse_rows_from_buffer

    ROW_PARSER = parse_rows_from_buffer
except ImportError:
    ROW_PARSER = None


def open_connection(**options: Any) -> Connection:
    """A connection that is not connected yet (`await connection.connect()`), which never
    lets the server run several statements sent as one."""
    connection: Connection = cast(Any, Connection)(**options)
    # Without this capability the server itself refuses "SELECT 1; DROP TABLE t" sent as
    # one statement: each statement we run is exactly one statement.
    state = cast(Any, connection)
    state._client_flag &= ~CLIENT.MULTI_STATEMENTS
    return connection


def stream_broken(connection: Connection) -> bool:
    """Whether the connection's stream broke mid-packet (it cannot be reused)."""
    return bool(cast(Any, connection)._stream_broken)


def pause_reading(connection: Connection) -> None:
    """Stop reading from the socket, so an unread result is not buffered in memory."""
    cast(Any, connection)._transport.pause_reading()


def resume_reading(connection: Connection) -> None:
    cast(Any, connection)._transport.resume_reading()


def server_status(connection: Connection) -> int:
    """The status flags of the server's last OK packet (in transaction, read-only, …)."""
    return int(cast(Any, connection).server_status)


def unbuffered_cursor(connection: Connection) -> SSCursor:
    """A cursor that reads rows as they arrive (asyncmy's stubs type every cursor as Cursor)."""
    return cast(SSCursor, connection.cursor(SSCursor))


def live_result(cursor: SSCursor) -> Any:
    """The cursor's current unbuffered result (None once it is closed)."""
    return cast(Any, cursor)._result


def received(cursor: SSCursor) -> tuple[Any, int, int]:
    """The protocol's receive buffer: (buffer, read position, bytes held)."""
    protocol = cast(Any, cursor.connection)._proto
    return protocol.buffer, int(protocol.pos), int(protocol.length)


def affected_rows(cursor: SSCursor) -> int:
    """The cursor's rowcount (asyncmy's stubs type it as object)."""
    return int(cast(Any, cursor).rowcount)


def info_message(cursor: SSCursor) -> str:
    """The info of the server's OK packet for the last statement ("Records: 3  Duplicates: 1
    Warnings: 0" after a multi-row INSERT or REPLACE), or ""."""
    result = cast(Any, cursor)._result
    message = getattr(result, "message", None) if result is not None else None
    if isinstance(message, bytes | bytearray):
        return bytes(message).decode("utf-8", "replace")
    return str(message or "")
