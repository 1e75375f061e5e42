"""HTTP mode: signatures, malformed bodies, health, and credentials at start."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import aiohttp
import pytest

from bot.config import ConfigError, Settings
from bot.slack.server import serve
from tests.fakes.slack_server import BOT_USER_ID, TEAM_ID, FakeSlack
from tests.slack.conftest import ASKER, BOT_TOKEN, CHANNEL, SlackHarness, signed_headers


def mention_body(ts: str) -> str:
    return json.dumps(
        {
            "type": "event_callback",
            "team_id": TEAM_ID,
            "event_id": f"Ev{ts}",
            "event": {
                "type": "app_mention",
                "user": ASKER,
                "text": f"<@{BOT_USER_ID}> drop everything",
                "ts": ts,
                "channel": CHANNEL,
            },
        }
    )


async def nothing_happened(harness: SlackHarness) -> None:
    await harness.settled()
    assert harness.model.requests == []
    assert [c.method for c in harness.slack.calls if c.method != "auth.test"] == []


async def test_a_forged_signature_gets_401_and_does_nothing(harness: SlackHarness) -> None:
    body = mention_body(harness.new_ts())
    sent = await harness.post(body, "application/json", signed_headers(body, secret="wrong"))
    assert sent.status == 401
    await nothing_happened(harness)


async def test_a_stale_signature_gets_401(harness: SlackHarness) -> None:
    body = mention_body(harness.new_ts())
    stale = signed_headers(body, at=int(time.time()) - 600)
    assert (await harness.post(body, "application/json", stale)).status == 401
    await nothing_happened(harness)


async def test_an_unsigned_request_gets_401(harness: SlackHarness) -> None:
    body = mention_body(harness.new_ts())
    assert (await harness.post(body, "application/json", {"X-Other": "1"})).status == 401
    await nothing_happened(harness)


async def test_a_signed_but_malformed_body_is_refused(harness: SlackHarness) -> None:
    sent = await harness.post('{"type": "event_callback", "event": ', "application/json")
    assert sent.status == 400
    await nothing_happened(harness)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "app_mention"},
        {"type": "app_mention", "user": ASKER, "channel": CHANNEL},
        {"type": "message", "channel_type": "im", "text": 5},
        {"type": "app_mention", "user": ["x"], "ts": 1, "channel": None},
    ],
    ids=["bare", "no-ts", "dm-without-user", "wrong-types"],
)
async def test_a_malformed_event_is_acknowledged_and_dropped(
    harness: SlackHarness, event: dict
) -> None:
    sent = await harness.send_event(event)
    assert sent.status == 200
    await nothing_happened(harness)


async def test_url_verification_is_answered(harness: SlackHarness) -> None:
    body = json.dumps({"type": "url_verification", "challenge": "abc123", "token": "t"})
    sent = await harness.post(body, "application/json")
    assert sent.status == 200 and "abc123" in sent.text


async def test_health(harness: SlackHarness) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.get(harness.url + "/health") as response,
    ):
        assert response.status == 200


@pytest.mark.parametrize(
    ("environment", "missing"),
    [
        ({}, "SLACK_BOT_TOKEN"),
        ({"slack_bot_token": "xoxb-1"}, "SLACK_SIGNING_SECRET"),
    ],
)
async def test_missing_credentials_name_the_variable(
    environment: dict, missing: str, tmp_path
) -> None:
    unset = {"slack_bot_token": None, "slack_signing_secret": None, "slack_app_token": None}
    settings = Settings(dbagent_state_dir=tmp_path / "state", **{**unset, **environment})
    with pytest.raises(ConfigError, match=missing) as raised:
        await serve(settings)
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "state").exists()  # nothing was started


async def test_a_busy_port_is_one_clear_line(slack: FakeSlack, tmp_path: Path) -> None:
    holder = socket.socket()
    holder.bind(("0.0.0.0", 0))
    holder.listen()
    port = holder.getsockname()[1]
    settings = Settings(
        slack_bot_token=BOT_TOKEN,
        slack_signing_secret="secret",
        slack_app_token=None,
        slack_api_url=slack.api_url,
        port=port,
        dbagent_state_dir=tmp_path / "state",
    )
    try:
        with pytest.raises(ConfigError, match=f"cannot listen on port {port}: .*PORT"):
            await serve(settings)
    finally:
        holder.close()


async def test_a_bot_token_slack_refuses_is_one_clear_line(
    slack: FakeSlack, tmp_path: Path
) -> None:
    settings = Settings(
        slack_bot_token="xoxb-revoked",
        slack_signing_secret="secret",
        slack_app_token=None,
        slack_api_url=slack.api_url,
        dbagent_state_dir=tmp_path / "state",
    )
    with pytest.raises(ConfigError, match=r"Slack refused SLACK_BOT_TOKEN \(invalid_auth\)"):
        await serve(settings)
