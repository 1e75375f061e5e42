"""`python -m bot` as deployed (HTTP mode, a real process): MCP at /mcp on PORT beside
/slack/events, behind the clients' tokens."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from tests.fakes.local import free_port
from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_server import FakeSlack
from tests.mcp.support import ALICE_TOKEN, environment, http_session, json_of
from tests.slack.conftest import SIGNING_SECRET, STAGING


@pytest.fixture
async def bot_process(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> AsyncIterator[str]:
    """A serving bot process; its base URL."""
    port = free_port()
    env = environment(
        tmp_path,
        shop_url,
        slack,
        SLACK_SIGNING_SECRET=SIGNING_SECRET,
        OPENAI_BASE_URL=model.url,
        OPENAI_API_KEY="test-key",
        PORT=str(port),
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", env=env, stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    try:
        async with asyncio.timeout(60):
            while True:
                line = (await process.stderr.readline()).decode()
                assert line, "the bot stopped before serving"
                if "is serving Slack over HTTP" in line:
                    break
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)


async def test_the_serving_process_answers_mcp_and_refuses_a_bad_token(bot_process: str) -> None:
    async with http_session(f"{bot_process}/mcp", ALICE_TOKEN) as session:
        rows = json_of(
            await session.call_tool(
                "execute_query", {"database": STAGING, "sql": "SELECT COUNT(*) AS n FROM orders"}
            )
        )
    assert rows["rows"] == [[4]]
    async with httpx2.AsyncClient() as http:
        refused = await http.post(
            f"{bot_process}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Authorization": "Bearer not-a-token", "Accept": "application/json"},
        )
    assert refused.status_code == 401
