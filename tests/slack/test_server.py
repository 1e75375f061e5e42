"""HTTP mode: signatures, malformed bodies, health, and credentials at start."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import time
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest

from bot.config import ConfigError, DatabaseConfig, Limits, Settings
from bot.slack.server import serve
from tests.fakes.local import free_port
from tests.fakes.model_server import FakeModelServer, answer_once_released, say
from tests.fakes.slack_server import BOT_USER_ID, TEAM_ID, FakeSlack
from tests.slack.conftest import (
    ASKER,
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    STAGING,
    SlackHarness,
    signed_headers,
)


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


# -- stopping -----------------------------------------------------------------------------


def serving_settings(slack: FakeSlack, model, shop_url: str, tmp_path: Path, **slack_section):
    return Settings(
        slack_bot_token=BOT_TOKEN,
        slack_signing_secret=SIGNING_SECRET,
        slack_app_token=None,
        slack_api_url=slack.api_url,
        openai_base_url=model.url,
        openai_api_key="test-key",
        databases=[DatabaseConfig(name=STAGING, url=shop_url, environment="staging")],
        limits=Limits(model_max_retries=0),
        dbagent_state_dir=tmp_path / "state",
        port=free_port(),
        slack=slack_section,
    )


async def send_mention(port: int, ts: str, text: str) -> int:
    body = json.dumps(
        {
            "type": "event_callback",
            "team_id": TEAM_ID,
            "event_id": f"Ev{ts}",
            "event": {
                "type": "app_mention",
                "user": ASKER,
                "text": f"<@{BOT_USER_ID}> {text}",
                "ts": ts,
                "channel": CHANNEL,
            },
        }
    )
    headers = {"Content-Type": "application/json", **signed_headers(body)}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"http://127.0.0.1:{port}/slack/events", data=body, headers=headers) as sent,
    ):
        return sent.status


async def serving(settings: Settings, slack: FakeSlack) -> asyncio.Task[None]:
    task = asyncio.create_task(serve(settings))
    await slack.wait_for(lambda: slack.calls_to("auth.test") or task.done())
    for _ in range(100):  # the port opens just after auth.test
        if task.done():
            break
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", settings.port)
            writer.close()
            break
        await asyncio.sleep(0.05)
    assert not task.done(), task.exception()
    return task


async def test_sigterm_lets_the_running_turn_finish_and_takes_no_new_events(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    settings = serving_settings(slack, model, shop_url, tmp_path, shutdown_grace_s=20)
    release = asyncio.Event()

    model.responder = answer_once_released(say("Finished while stopping."), release)
    task = await serving(settings, slack)
    ts = "1800000001.000100"
    assert await send_mention(settings.port, ts, "a question in flight") == 200
    await slack.wait_for(lambda: model.requests)
    os.kill(os.getpid(), signal.SIGTERM)
    # Stopped taking events: the port is closed while the turn still runs.
    await asyncio.sleep(0.3)
    with pytest.raises(aiohttp.ClientError):
        await send_mention(settings.port, "1800000002.000100", "too late")
    assert not task.done()
    release.set()
    await asyncio.wait_for(task, 10)
    assert [m.text for m in slack.thread(CHANNEL, ts)] == ["Finished while stopping."]


async def test_after_the_grace_period_the_turn_is_cut_and_leaves_no_status_line(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    settings = serving_settings(slack, model, shop_url, tmp_path, shutdown_grace_s=0.5)
    never = asyncio.Event()

    model.responder = answer_once_released(say("never"), never, within_s=30)
    task = await serving(settings, slack)
    ts = "1800000003.000100"
    await send_mention(settings.port, ts, "a question that will not finish")
    await slack.wait_for(lambda: any("Working on it" in m.text for m in slack.thread(CHANNEL, ts)))
    started = time.monotonic()
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(task, 10)
    assert time.monotonic() - started < 5
    assert slack.thread(CHANNEL, ts) == []  # the "Working on it…" line was deleted
    never.set()


async def test_a_second_signal_exits_at_once(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    settings = serving_settings(slack, model, shop_url, tmp_path, shutdown_grace_s=60)
    never = asyncio.Event()

    model.responder = answer_once_released(say("never"), never, within_s=30)
    task = await serving(settings, slack)
    await send_mention(settings.port, "1800000004.000100", "a question that will not finish")
    await slack.wait_for(lambda: model.requests)
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.sleep(0.3)
    assert not task.done()  # waiting for the turn, up to a minute
    started = time.monotonic()
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(task, 10)
    assert time.monotonic() - started < 3
    never.set()


# -- signed but malformed -----------------------------------------------------------------

JSON, FORM = "application/json", "application/x-www-form-urlencoded"


def form(payload: object) -> str:
    return urlencode({"payload": json.dumps(payload)})


# (content type, body, what is wrong with it)
MALFORMED = [
    (JSON, "[1, 2]", "a list, not an object"),
    (JSON, '"just a string"', "a string"),
    (JSON, '{"type": "event_callback", "event": "nope"}', "an event that is not an object"),
    (JSON, '{"type": "event_callback", "event": {"type": 5}}', "an event type that is a number"),
    (JSON, '{"type": ["event_callback"]}', "a type that is a list"),
    (
        JSON,
        '{"type": "event_callback", "event": {"type": "app_mention", "user": "U1", '
        '"ts": "1.1", "channel": "C1", "text": "\\ud800"}}',
        "a lone surrogate, which cannot be stored or posted",
    ),
    (FORM, "payload=notjson", "a payload that is not JSON"),
    (FORM, form([1]), "a payload that is a list"),
    (FORM, form({"type": "block_actions", "actions": "x", "user": "y"}), "actions not a list"),
    (FORM, form({"type": "block_actions", "actions": [1], "user": {"id": "U1"}}), "an action 1"),
    (FORM, form({"type": "view_submission", "view": "x", "user": {"id": "U1"}}), "a string view"),
    (
        FORM,
        form({"type": "view_submission", "view": {"callback_id": "sql_edit_view", "state": 5}}),
        "a view state that is a number",
    ),
    (FORM, "nothing=here", "a form without a payload"),
    ("text/plain", "hello", "a content type Slack does not send"),
]


@pytest.mark.parametrize(
    ("content_type", "body", "reason"), MALFORMED, ids=[r for *_, r in MALFORMED]
)
async def test_a_signed_malformed_request_gets_400_and_one_log_line(
    harness: SlackHarness,
    caplog: pytest.LogCaptureFixture,
    content_type: str,
    body: str,
    reason: str,
) -> None:
    with caplog.at_level(logging.INFO):
        sent = await harness.post(body, content_type)
        await harness.idle()
    assert sent.status == 400, reason
    serious = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert serious == [], reason
    lines = [r for r in caplog.records if r.name == "bot.slack.server"]
    assert len(lines) == 1 and "\n" not in lines[0].getMessage(), reason
    await nothing_happened(harness)


# (the signature headers as sent, why): none is a number of seconds, or a signature the
# check can compare; each gets 401 and one log line, never an error and its traceback.
BAD_HEADERS = [
    ({"X-Slack-Request-Timestamp": "", "X-Slack-Signature": "v0=00"}, "an empty timestamp"),
    ({"X-Slack-Request-Timestamp": "soon", "X-Slack-Signature": "v0=00"}, "a word"),
    ({"X-Slack-Request-Timestamp": "12.5", "X-Slack-Signature": "v0=00"}, "a fraction"),
    ({"X-Slack-Request-Timestamp": "-1", "X-Slack-Signature": "v0=00"}, "a sign"),
    ({"X-Slack-Request-Timestamp": "9" * 5000, "X-Slack-Signature": "v0=00"}, "5,000 digits"),
    ({"X-Slack-Request-Timestamp": "١٧٠٠", "X-Slack-Signature": "v0=00"}, "Arabic-Indic digits"),
    (
        {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v0=é"},
        "a signature with a character compare_digest refuses",
    ),
]


@pytest.mark.parametrize(("headers", "why"), BAD_HEADERS, ids=[why for _, why in BAD_HEADERS])
async def test_a_malformed_timestamp_or_signature_gets_401_and_one_log_line(
    harness: SlackHarness, caplog: pytest.LogCaptureFixture, headers: dict, why: str
) -> None:
    body = mention_body(harness.new_ts())
    with caplog.at_level(logging.INFO):
        sent = await harness.post(body, "application/json", headers)
        await harness.idle()
    assert sent.status == 401, why
    serious = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert serious == [], why
    lines = [r for r in caplog.records if r.name.startswith(("bot.", "aiohttp"))]
    assert len(lines) == 1 and "\n" not in lines[0].getMessage(), why
    await nothing_happened(harness)
