"""Serving an aiohttp application on a free loopback port, for the fakes and the app itself."""

from __future__ import annotations

import socket
from typing import Self

from aiohttp import web


async def serve_locally(app: web.Application) -> tuple[web.AppRunner, int]:
    """Start `app` on 127.0.0.1 at a port the OS picks; returns the runner and the port."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, port


def free_port() -> int:
    """A loopback port free now, for a process the test starts (which binds it itself)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalServer:
    """A fake outside service: `start()`/`stop()` or `async with`; subclasses build the app."""

    _runner: web.AppRunner | None = None
    _port: int = 0

    def build(self) -> web.Application:
        raise NotImplementedError

    async def start(self) -> Self:
        self._runner, self._port = await serve_locally(self.build())
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
