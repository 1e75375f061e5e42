"""In Socket Mode the bot has no HTTP server of its own for Slack; with MCP clients
configured it serves /mcp on PORT all the same, and a card's click over the socket runs the
change."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import httpx2

from bot.config import DatabaseConfig, Limits, Settings
from bot.slack.server import serve
from tests.fakes.local import free_port
from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_server import TEAM_ID, FakeSlack
from tests.mcp.support import APPROVAL_CHANNEL, http_session, json_of, with_mcp
from tests.slack.conftest import APPROVER, BOT_TOKEN, GROUP, GROUP_MEMBER, SCHEMA, STAGING, run_sql
from tests.waiting import until

UPDATE = "UPDATE orders SET status = 'cancelled' WHERE id = 13"


async def until_listening(port: int, serving: asyncio.Task[None]) -> None:
    async def answers() -> bool:
        assert not serving.done(), serving.exception()
        async with httpx2.AsyncClient() as http:
            try:
                response = await http.get(f"http://127.0.0.1:{port}/mcp")
            except httpx2.TransportError:
                return False
        return response.status_code == 401  # no token: refused, but served

    await until(answers)


def click(card_ts: str, card_blocks: list[dict], user: str) -> dict:
    button = next(
        element
        for block in card_blocks
        if block.get("type") == "actions"
        for element in block["elements"]
        if element["action_id"] == "approve_once"
    )
    return {
        "type": "block_actions",
        "user": {"id": user, "team_id": TEAM_ID},
        "team": {"id": TEAM_ID},
        "container": {"type": "message", "message_ts": card_ts, "channel_id": APPROVAL_CHANNEL},
        "channel": {"id": APPROVAL_CHANNEL},
        "message": {"ts": card_ts, "blocks": card_blocks},
        "trigger_id": f"1.{int(time.time())}.socket",
        "actions": [
            {
                "type": "button",
                "action_id": "approve_once",
                "block_id": "approval",
                "value": button["value"],
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


async def test_socket_mode_serves_mcp_on_port_and_the_socket_click_runs_the_change(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    port = free_port()
    settings = with_mcp(
        Settings(
            slack_bot_token=BOT_TOKEN,
            slack_app_token="xapp-test-token",
            slack_api_url=slack.api_url,
            openai_base_url=model.url,
            openai_api_key="test-key",
            databases=[DatabaseConfig(name=STAGING, url=shop_url, environment="staging")],
            approvals={"approvers": [APPROVER, GROUP]},
            limits=Limits(model_max_retries=0),
            dbagent_state_dir=tmp_path / "state",
            port=port,
        ),
        APPROVER,
    )
    serving = asyncio.create_task(serve(settings))
    try:
        await slack.wait_for(lambda: slack.sockets or serving.done())
        await until_listening(port, serving)
        async with http_session(f"http://127.0.0.1:{port}/mcp") as session:
            proposed = json_of(
                await session.call_tool("execute_query", {"database": STAGING, "sql": UPDATE})
            )
            card = next(
                m
                for m in slack.messages
                if m.channel == APPROVAL_CHANNEL and m.text.startswith("Approval needed")
            )
            await slack.push("interactive", click(card.ts, card.blocks, GROUP_MEMBER))

            async def executed() -> bool:
                reply = await session.call_tool(
                    "get_proposal", {"proposal_id": proposed["proposal_id"]}
                )
                return bool(json_of(reply)["status"] == "executed")

            await until(executed)
        rows = await run_sql(shop_url, [f"SELECT status FROM {SCHEMA}.orders WHERE id = 13"])
        assert rows[0][0] == "cancelled"
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
