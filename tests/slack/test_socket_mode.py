"""Socket Mode: `serve()` with SLACK_APP_TOKEN connects out and answers over the socket."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from bot.config import DatabaseConfig, Limits, Settings
from bot.slack.server import serve
from tests.fakes.local import free_port
from tests.fakes.model_server import FakeModelServer, say
from tests.fakes.slack_server import BOT_USER_ID, TEAM_ID, FakeSlack
from tests.slack.conftest import ASKER, BOT_TOKEN, CHANNEL, STAGING


async def test_serve_in_socket_mode_answers_a_mention(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    settings = Settings(
        slack_bot_token=BOT_TOKEN,
        slack_app_token="xapp-test-token",
        slack_signing_secret=None,  # not needed in Socket Mode
        slack_api_url=slack.api_url,
        openai_base_url=model.url,
        openai_api_key="test-key",
        databases=[DatabaseConfig(name=STAGING, url=shop_url, environment="staging")],
        limits=Limits(model_max_retries=0),
        dbagent_state_dir=tmp_path / "state",
        port=free_port(),  # /health and /metrics are served on PORT in Socket Mode too
    )
    model.script(say("Hello over the socket."))
    serving = asyncio.create_task(serve(settings))
    try:
        await slack.wait_for(lambda: slack.sockets or serving.done())
        assert not serving.done(), serving.exception()
        ts = "1800009999.000100"
        envelope = await slack.push(
            "events_api",
            {
                "type": "event_callback",
                "team_id": TEAM_ID,
                "event_id": "Ev0SOCKET",
                "event_time": int(time.time()),
                "event": {
                    "type": "app_mention",
                    "user": ASKER,
                    "text": f"<@{BOT_USER_ID}> hello",
                    "ts": ts,
                    "channel": CHANNEL,
                },
            },
        )
        await slack.wait_for(lambda: [m for m in slack.thread(CHANNEL, ts) if "socket" in m.text])
        assert {"envelope_id": envelope} in slack.socket_acks
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
