"""`dbagent mcp`: the MCP tools over stdio, for a client that starts the server itself
(Claude Code, Cursor and others launch a command).

It acts for the one `[[mcp.clients]]` entry whose token is in DBAGENT_MCP_TOKEN. A change it
is asked for is posted as a card in Slack and decided there, by a click the serving bot
handles: so the state must be the one the serving bot uses (Redis). With the embedded store,
or without a known token, it refuses with one line on stderr before reading stdin.

stdout is the protocol: everything else (logs) goes to stderr.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from bot.config import ConfigError, McpClient, Settings, load_settings
from bot.mcp.clients import token_owner
from bot.observability import tracing

log = logging.getLogger(__name__)

TOKEN_ENV = "DBAGENT_MCP_TOKEN"


def stdio_client(settings: Settings, environ: dict[str, str] | None = None) -> McpClient:
    """The client this process acts for; ConfigError (one line) when it may not serve."""
    environ = dict(os.environ) if environ is None else environ
    if not settings.mcp.enabled:
        raise ConfigError(
            f"no MCP client configured: add an [[mcp.clients]] entry (name, token, user) and "
            f"[mcp] approval_channel to {settings.dbagent_config}"
        )
    token = environ.get(TOKEN_ENV, "")
    if not token:
        raise ConfigError(
            f"{TOKEN_ENV} is not set: set it to the token of your [[mcp.clients]] entry"
        )
    client = token_owner(settings.mcp.clients, token)
    if client is None:
        raise ConfigError(f"{TOKEN_ENV} is not the token of any [[mcp.clients]] entry")
    if not settings.dbagent_state_url:
        raise ConfigError(
            "dbagent mcp needs the state the serving bot shares (DBAGENT_STATE_URL=redis://…): "
            "a change is approved by a click the serving bot handles; with the embedded store, "
            "connect to /mcp on the bot's PORT instead"
        )
    if not settings.databases:
        raise ConfigError(
            "no database configured: set DBAGENT_DATABASE_URL or add a [[databases]] entry to "
            f"{settings.dbagent_config}"
        )
    bot_token = settings.slack_bot_token
    if bot_token is None or not bot_token.get_secret_value():
        raise ConfigError(
            "SLACK_BOT_TOKEN is not set (dbagent mcp posts the approval cards of changes)"
        )
    return client


async def mcp_main(args: list[str]) -> int:
    if args:
        raise ConfigError(f"dbagent mcp takes no arguments (got {' '.join(args)!r})")
    settings = load_settings()
    client = stdio_client(settings)
    with tracing.exporting():  # OTEL_EXPORTER_OTLP_ENDPOINT: a trace per MCP call
        await serve_stdio(settings, client)
    return 0


async def serve_stdio(settings: Settings, client: McpClient) -> None:
    # Imported here: a refusal above is one line, before the heavy parts load.
    from mcp.server.stdio import stdio_server

    from bot.app import build_app
    from bot.mcp.server import build_server
    from bot.mcp.slack import SlackApprovals
    from bot.mcp.tools import McpTools
    from bot.slack.services import Services
    from bot.slack.web_api import api_session, make_client

    # The serving bot recovers what a stop cut off; this process only adds requests.
    parts = await build_app(settings, recover=False)
    session = api_session()
    try:
        slack_client = make_client(settings, session=session)
        services = Services.create(settings, parts.agent, parts.state, slack_client)
        channel = settings.mcp.approval_channel or ""
        tools = McpTools(parts.agent, settings, parts.state, SlackApprovals(services, channel))

        def caller(_: Any) -> McpClient:
            return client

        server = build_server(tools, caller)
        log.info("dbagent mcp serving %s over stdio", client.name)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await session.close()
        await parts.close()
