"""Serving an aiohttp application on a free loopback port, for the fakes and the app itself."""

from __future__ import annotations

from aiohttp import web


async def serve_locally(app: web.Application) -> tuple[web.AppRunner, int]:
    """Start `app` on 127.0.0.1 at a port the OS picks; returns the runner and the port."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, port
