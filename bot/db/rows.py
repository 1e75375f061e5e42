"""Read exactly the rows we keep from an unbuffered asyncmy result.

asyncmy's SSCursor converts every row that has already arrived whenever it fetches one. On a
result of a million rows the receive buffer holds thousands of them by the first fetch, so a
capped query would pay for converting rows it then throws away (about 3 ms against 0.5 ms for
the same query with LIMIT, measured with bench/bench_truncation.py). Here only complete row
packets up to the count we want are converted; anything else (end of result, error, a packet
still arriving, a 16 MB row) goes through asyncmy's own one-packet path.

This leans on asyncmy 0.2.18 internals (`parse_rows_from_buffer`, the protocol buffer), reached
through bot/db/driver.py; when they are missing it falls back to `fetchmany`, which is
correct, only slower.
"""

from __future__ import annotations

from typing import Any

from asyncmy.cursors import SSCursor

from bot.db.driver import ROW_PARSER, live_result, received


async def read_rows(cursor: SSCursor, count: int) -> list[tuple[Any, ...]]:
    """Up to `count` rows; fewer only when the result ended."""
    result = live_result(cursor)
    if ROW_PARSER is None or result is None or not hasattr(result, "_take_pending_rows"):
        return list(await cursor.fetchmany(count))
    rows: list[tuple[Any, ...]] = list(result._take_pending_rows(count))
    connection: Any = cursor.connection  # its protocol state is advanced below
    converters = tuple(result.converters)
    while len(rows) < count and result.unbuffered_active:
        received = connection._proto
        end = _end_of_complete_packets(
            received.buffer, received.pos, received.length, count - len(rows)
        )
        if end > received.pos:
            position, sequence = ROW_PARSER(
                received.buffer,
                received.pos,
                end,
                converters,
                connection._next_seq_id,
                rows,
                connection._deprecate_eof,
            )
            if position != received.pos:
                received.pos = position
                connection._next_seq_id = sequence
                continue
        # The next packet is not a complete row: the end, an error, or still arriving.
        row = await cursor.fetchone()
        if row is None:
            break
        rows.append(row)
    return rows


def next_packet_is_here(cursor: SSCursor) -> bool:
    """Whether the next packet of the result has fully arrived (so reading it cannot wait)."""
    buffer, position, length = received(cursor)
    return _end_of_complete_packets(buffer, position, length, 1) > position


def _end_of_complete_packets(buffer: bytearray, start: int, length: int, count: int) -> int:
    """Offset just past the first `count` complete packets in buffer[start:length]."""
    end = start
    for _ in range(count):
        if length - end < 4:
            break
        size = buffer[end] | (buffer[end + 1] << 8) | (buffer[end + 2] << 16)
        if length - end - 4 < size:
            break
        end += 4 + size
    return end
