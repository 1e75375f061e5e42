"""`/mcp` on the bot's own HTTP server (aiohttp): the SDK's Streamable HTTP transport behind
a bearer-token check, in HTTP and in Socket Mode alike (`add_mcp_routes`).

A request without a token, or with one no `[[mcp.clients]]` entry has, gets 401 before the
SDK reads it: nothing runs. The transport is stateless and answers in JSON: each POST
stands alone, so several serving processes behind one port (`serve --workers N`) serve
any request, and a process restart loses no client session.

The SDK serves ASGI; a small bridge hands it the aiohttp request (its body read whole,
within the app's size limit) and streams back what it sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from aiohttp import web
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from bot.config import McpClient
from bot.mcp.clients import bearer_owner
from bot.mcp.server import build_server
from bot.mcp.slack import SlackApprovals
from bot.mcp.tools import McpTools
from bot.slack.services import Services

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
CLIENT_KEY = "dbagent.mcp_client"  # where the ASGI scope carries the authenticated client
NOT_ALLOWED = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32600, "message": "Method Not Allowed: POST each message"},
}
UNAUTHORIZED = {
    "error": "invalid_token",
    "error_description": "a bearer token of a configured [[mcp.clients]] entry is required",
}

Message = MutableMapping[str, Any]
AsgiApp = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[Message]],
        Callable[[Message], Awaitable[None]],
    ],
    Awaitable[None],
]


def client_of(ctx: ServerRequestContext[Any, Any]) -> McpClient | None:
    """The client the token check put in this request's scope."""
    request = ctx.request
    scope = getattr(request, "scope", None)
    if not isinstance(scope, MutableMapping):
        return None
    client = scope.get(CLIENT_KEY)
    return client if isinstance(client, McpClient) else None


class _Manager:
    """The SDK's session manager runs in a task of its own for as long as the web app."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def _run(self, started: asyncio.Event) -> None:
        async with self.manager.run():
            started.set()
            await self._stop.wait()

    async def start(self, _: web.Application) -> None:
        started = asyncio.Event()
        self._task = asyncio.create_task(self._run(started), name="mcp sessions")
        waiting = asyncio.ensure_future(started.wait())
        await asyncio.wait({waiting, self._task}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self._task.done():
            self._task.result()  # it failed to start: say why

    async def stop(self, _: web.Application) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def add_mcp_routes(web_app: web.Application, services: Services) -> None:
    """Serve MCP at /mcp on `web_app` (before it starts), when `[[mcp.clients]]` are
    configured; else leave it as it is."""
    settings = services.settings.mcp
    if not settings.enabled or settings.approval_channel is None:
        return
    slack = SlackApprovals(services, settings.approval_channel)
    tools = McpTools(services.agent, services.settings, services.state, slack)
    serve_tools(web_app, tools, settings.clients)


def serve_tools(
    web_app: web.Application, mcp_tools: McpTools, clients: Sequence[McpClient]
) -> None:
    """MCP at /mcp on `web_app` for `clients`, running `mcp_tools`."""
    server = build_server(mcp_tools, client_of)
    manager = _Manager(StreamableHTTPSessionManager(app=server, json_response=True, stateless=True))
    web_app.on_startup.append(manager.start)
    web_app.on_cleanup.append(manager.stop)
    known = tuple(clients)

    async def mcp(request: web.Request) -> web.StreamResponse:
        client = bearer_owner(known, request.headers.get("Authorization"))
        if client is None:
            log.warning("MCP request without a known token refused (%s)", request.remote)
            return web.json_response(
                UNAUTHORIZED, status=401, headers={"WWW-Authenticate": 'Bearer realm="dbagent"'}
            )
        if request.method != "POST":
            # Stateless: no session whose messages a GET stream could carry, none to DELETE.
            return web.json_response(NOT_ALLOWED, status=405, headers={"Allow": "POST"})
        return await serve_asgi(manager.manager.handle_request, request, {CLIENT_KEY: client})

    web_app.router.add_route("*", MCP_PATH, mcp)


def _scope(request: web.Request, extra: dict[str, Any]) -> dict[str, Any]:
    host, port = "127.0.0.1", 0
    peer = request.transport.get_extra_info("sockname") if request.transport else None
    if isinstance(peer, tuple) and len(peer) >= 2:
        host, port = str(peer[0]), int(peer[1])
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": (request.remote or "", 0),
        "server": (host, port),
        "state": {},
        **extra,
    }


async def serve_asgi(
    app: AsgiApp, request: web.Request, extra: dict[str, Any]
) -> web.StreamResponse:
    """Run an ASGI app on one aiohttp request: the body as one message, then a disconnect
    once the response is complete (or the app is done)."""
    body = await request.read()
    response: web.StreamResponse | None = None
    delivered = False
    finished = asyncio.Event()

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=int(message["status"]))
            for name, value in message.get("headers") or ():
                response.headers.add(bytes(name).decode("latin-1"), bytes(value).decode("latin-1"))
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            chunk = bytes(message.get("body") or b"")
            if chunk:
                await response.write(chunk)
            if not message.get("more_body", False):
                await response.write_eof()
                finished.set()

    try:
        await app(_scope(request, extra), receive, send)
    finally:
        finished.set()
    if response is None:
        log.error("MCP request %s %s got no response", request.method, request.path)
        return web.json_response({"error": "no response"}, status=500)
    return response
