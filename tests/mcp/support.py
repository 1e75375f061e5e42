"""What the MCP tests share: the configured client, and the SDK's client session."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bot.config import Settings

ALICE_TOKEN = "alice-" + "a1" * 20  # a client's bearer token (42 characters)
OTHER_TOKEN = "bob-" + "b2" * 20
APPROVAL_CHANNEL = "C0MCPAPPROVE"
CLIENT_NAME = "alice-laptop"


def with_mcp(settings: Settings, user: str) -> Settings:
    """`settings` with one MCP client acting for `user`, and the approval channel."""
    mcp = {
        "approval_channel": APPROVAL_CHANNEL,
        "clients": [{"name": CLIENT_NAME, "token": ALICE_TOKEN, "user": user}],
    }
    return settings.model_validate({**settings.model_dump(), "mcp": mcp})


@asynccontextmanager
async def http_session(url: str, token: str = ALICE_TOKEN) -> AsyncIterator[ClientSession]:
    """An initialized MCP session over Streamable HTTP at `url`, with `token`."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


def json_of(result: types.CallToolResult) -> Any:
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))
