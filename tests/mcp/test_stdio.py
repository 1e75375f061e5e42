"""`dbagent mcp` over stdio (a real process, the SDK's stdio client) beside a serving bot
that shares its Redis state: reads, a change as a card the serving bot's click runs once,
and the one-line refusals."""

from __future__ import annotations

import asyncio
import copy
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_server import FakeSlack
from tests.mcp.support import ALICE_TOKEN, APPROVAL_CHANNEL, environment, json_of, with_mcp
from tests.slack.conftest import (
    APPROVER,
    GROUP_MEMBER,
    PRODUCTION,
    SCHEMA,
    STAGING,
    SlackHarness,
    run_sql,
)

ALICE = APPROVER
UPDATE = "UPDATE orders SET status = 'cancelled' WHERE id = 11"


@pytest.fixture
async def serving_bot(
    slack: FakeSlack,
    model: FakeModelServer,
    shop_url: str,
    tmp_path: Path,
    redis_url: str,
    redis_prefix: str,
) -> AsyncIterator[SlackHarness]:
    """The bot that serves Slack (and its clicks), on the shared Redis state."""
    harness = SlackHarness(
        slack, model, shop_url, tmp_path / "state", redis=(redis_url, redis_prefix)
    )
    harness.settings = with_mcp(harness.settings, ALICE)
    await harness.start()
    yield harness
    await harness.stop()


@asynccontextmanager
async def stdio_session(env: dict[str, str]) -> AsyncIterator[ClientSession]:
    server = StdioServerParameters(command=sys.executable, args=["-m", "bot", "mcp"], env=env)
    async with (
        stdio_client(server, errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def status_of_order(shop_url: str, order: int) -> str:
    rows = await run_sql(shop_url, [f"SELECT status FROM {SCHEMA}.orders WHERE id = {order}"])
    return str(rows[0][0])


async def test_over_stdio_reads_run_and_a_change_waits_for_the_serving_bots_click(
    serving_bot: SlackHarness,
    slack: FakeSlack,
    shop_url: str,
    tmp_path: Path,
    redis_url: str,
    redis_prefix: str,
) -> None:
    env = environment(
        tmp_path,
        shop_url,
        slack,
        DBAGENT_STATE_KEY=os.environ["DBAGENT_STATE_KEY"],
        DBAGENT_STATE_URL=f"{redis_url}?prefix={redis_prefix}",
        DBAGENT_MCP_TOKEN=ALICE_TOKEN,
    )
    async with stdio_session(env) as session:
        listed = await session.list_tools()
        assert "get_proposal" in {tool.name for tool in listed.tools}
        rows = json_of(
            await session.call_tool(
                "execute_query", {"database": STAGING, "sql": "SELECT status FROM orders"}
            )
        )
        assert rows["row_count"] == 4

        proposed = json_of(
            await session.call_tool("execute_query", {"database": STAGING, "sql": UPDATE})
        )
        assert proposed["status"] == "pending_approval"
        assert await status_of_order(shop_url, 11) == "pending"
        cards = [
            m
            for m in slack.messages
            if m.channel == APPROVAL_CHANNEL and m.text.startswith("Approval needed")
        ]
        assert len(cards) == 1
        card = copy.deepcopy(cards[0])

        # The click reaches the serving bot, which runs the change from the shared state.
        await serving_bot.click("approve_once", card, user=ALICE)
        await serving_bot.settled()
        assert await status_of_order(shop_url, 11) == "pending"
        await serving_bot.click("approve_once", card, user=GROUP_MEMBER)
        await serving_bot.settled()
        assert await status_of_order(shop_url, 11) == "cancelled"

        done = json_of(
            await session.call_tool("get_proposal", {"proposal_id": proposed["proposal_id"]})
        )
        assert done["status"] == "executed"
        assert done["result"]["affected_rows"] == 1

        refused = await session.call_tool("execute_query", {"database": PRODUCTION, "sql": UPDATE})
        assert refused.is_error


async def refusal(env: dict[str, str]) -> tuple[int | None, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "mcp",
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(b""), 60)
    assert out == b"", "nothing on stdout: it is the protocol"
    return process.returncode, err.decode()


@pytest.mark.parametrize(
    ("extra", "words", "why"),
    [
        (
            {"DBAGENT_MCP_TOKEN": ALICE_TOKEN},
            "needs the state the serving bot shares (DBAGENT_STATE_URL=redis://",
            "the embedded store: nobody else could see the card's approval",
        ),
        (
            {"DBAGENT_STATE_URL": "redis://127.0.0.1:1/0"},
            "DBAGENT_MCP_TOKEN is not set",
            "no token",
        ),
        (
            {"DBAGENT_STATE_URL": "redis://127.0.0.1:1/0", "DBAGENT_MCP_TOKEN": "x" * 40},
            "DBAGENT_MCP_TOKEN is not the token of any [[mcp.clients]] entry",
            "a token no client has",
        ),
    ],
)
async def test_dbagent_mcp_refuses_with_one_line(
    slack: FakeSlack,
    shop_url: str,
    tmp_path: Path,
    extra: dict[str, str],
    words: str,
    why: str,
) -> None:
    status, err = await refusal(environment(tmp_path, shop_url, slack, **extra))
    assert status == 2, why
    (line,) = err.strip().splitlines()
    assert words in line, why
    assert ALICE_TOKEN not in line and "x" * 40 not in line
