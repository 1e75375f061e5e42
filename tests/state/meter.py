"""How many bytes a store is sent: what a save costs, seen from outside the code that saves.

Redis: the client talks to the server through a relay that counts the bytes it forwards.
SQLite: the bytes the store's worker thread writes to its files (Linux's per-thread I/O
accounting; skipped loudly where there is none).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from bot.state.sqlite_db import SqliteDb

Meter = Callable[[], int]


class CountingRelay:
    """A TCP relay to `target` counting the bytes clients send through it."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self.sent = 0
        self._server: asyncio.Server | None = None
        self._pumps: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(*self._target)
        for pump in (
            self._pump(reader, upstream_writer, counted=True),
            self._pump(upstream_reader, writer, counted=False),
        ):
            task = asyncio.create_task(pump)
            self._pumps.add(task)
            task.add_done_callback(self._pumps.discard)

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, counted: bool
    ) -> None:
        try:
            while data := await reader.read(65536):
                if counted:
                    self.sent += len(data)
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._pumps):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


@contextlib.asynccontextmanager
async def relayed(url: str) -> AsyncIterator[tuple[str, CountingRelay]]:
    """`url` rewritten to reach the Redis server through a counting relay."""
    parts = urlsplit(url)
    relay = CountingRelay(parts.hostname or "127.0.0.1", parts.port or 6379)
    port = await relay.start()
    netloc = parts.netloc.rpartition("@")
    host = f"{netloc[0]}{netloc[1]}127.0.0.1:{port}"
    try:
        yield urlunsplit(parts._replace(netloc=host)), relay
    finally:
        await relay.close()


def thread_writes(thread: int) -> Meter:
    """The bytes thread `thread` (a native id) of this process has written so far."""
    accounting = Path(f"/proc/self/task/{thread}/io")
    if not accounting.exists():
        pytest.skip("!!! SKIPPED: no per-thread I/O accounting here (/proc/self/task/…/io)")

    def written() -> int:
        for line in accounting.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == "wchar":
                return int(value)
        raise AssertionError(f"no wchar in {accounting}")

    return written


async def sqlite_meter(db: SqliteDb) -> Meter:
    """The bytes the store's worker thread has written so far."""
    return thread_writes(await db.read(lambda _: threading.get_native_id()))
