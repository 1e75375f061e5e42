"""Helpers for the data-layer tests: configs pointing at our own schemas, a look at the server
that does not go through the code under test, and a TCP relay that can play a dead or silent
server."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from bench.datasets import connect
from bot.config import DatabaseConfig, Limits
from tests.schemas import run_schema

SHOP_SCHEMA = run_schema("dbagent_t_db")
SCRATCH_SCHEMA = run_schema("dbagent_t_db_w")


def staging(url: str, *, name: str = "shop-staging", read_url: str | None = None) -> DatabaseConfig:
    return DatabaseConfig(name=name, url=url, environment="staging", read_url=read_url)


def limits(**overrides: Any) -> Limits:
    return Limits(**overrides)


async def server_rows(url: str, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    """Ask the server directly, on a connection of its own."""
    connection = await connect(url)
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(sql, args)
            return list(await cursor.fetchall())
    finally:
        connection.close()


async def running_queries(url: str, fragment: str) -> list[tuple[Any, ...]]:
    """PROCESSLIST rows whose statement contains `fragment` (this look-up itself excluded)."""
    rows = await server_rows(
        url,
        "SELECT ID, COMMAND, INFO FROM information_schema.PROCESSLIST"
        " WHERE INFO LIKE %s AND ID <> CONNECTION_ID()",
        (f"%{fragment}%",),
    )
    return rows


async def wait_until_running(url: str, fragment: str, within_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not await running_queries(url, fragment):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no query containing {fragment!r} started")
        await asyncio.sleep(0.02)


async def wait_until_gone(url: str, fragment: str, within_s: float = 2.0) -> list[tuple[Any, ...]]:
    """PROCESSLIST rows still running `fragment` after up to `within_s` (empty when stopped)."""
    deadline = asyncio.get_running_loop().time() + within_s
    rows = await running_queries(url, fragment)
    while rows and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
        rows = await running_queries(url, fragment)
    return rows


class Relay:
    """A TCP endpoint in front of the real server: it forwards, or accepts and says nothing."""

    def __init__(self, upstream_host: str, upstream_port: int, *, silent: bool = False) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.silent = silent
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self, port: int = 0) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in self._writers:
                writer.close()
            await self._server.wait_closed()
            self._server = None
        for task in self._tasks:
            task.cancel()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        if self.silent:
            return  # keep the socket open and never answer
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        self._writers.append(upstream_writer)
        for source, sink in ((reader, upstream_writer), (upstream_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        sink.close()
