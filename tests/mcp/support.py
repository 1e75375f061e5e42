"""What the MCP tests share: the configured client, and the SDK's client session."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bot.config import Settings
from tests.fakes.slack_server import FakeSlack
from tests.slack.conftest import APPROVER, BOT_TOKEN, GROUP, PRODUCTION, STAGING

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


CONFIG = """
[[databases]]
name = "{staging}"
url = "{url}"
environment = "staging"

[[databases]]
name = "{production}"
url = "{url}"
environment = "production"

[approvals]
approvers = ["{approver}", "{group}"]

[mcp]
approval_channel = "{channel}"

[[mcp.clients]]
name = "{client}"
token = "${{MCP_TOKEN_ALICE}}"
user = "{alice}"
"""


def environment(tmp_path: Path, shop_url: str, slack: FakeSlack, **extra: str) -> dict[str, str]:
    """The environment of a `python -m bot …` process: a config file with both databases,
    the approvers and the MCP client (acting for APPROVER, whose token is ALICE_TOKEN)."""
    config = tmp_path / "dbagent.toml"
    config.write_text(
        CONFIG.format(
            staging=STAGING,
            production=PRODUCTION,
            url=shop_url,
            approver=APPROVER,
            group=GROUP,
            channel=APPROVAL_CHANNEL,
            client=CLIENT_NAME,
            alice=APPROVER,
        )
    )
    inherited = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DBAGENT_", "SLACK_", "OPENAI_", "MCP_"))
    }
    return {
        **inherited,
        "DBAGENT_CONFIG": str(config),
        "DBAGENT_STATE_DIR": str(tmp_path / "mcp-state"),
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "MCP_TOKEN_ALICE": ALICE_TOKEN,
        **extra,
    }
