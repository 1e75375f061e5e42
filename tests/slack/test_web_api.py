"""The Web API client: timeouts, retries on what Slack fails with, and the channels Slack
says it cannot reach — through the real slack_sdk client and the fake. Rate limits:
test_rate_limits.py."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import aiohttp
import pytest

from bot.slack.web_api import make_client
from tests.fakes.model_server import FakeModelServer, say
from tests.fakes.slack_server import FakeSlack, block_kit_problem
from tests.slack.conftest import CHANNEL, SlackHarness


async def answered(harness: SlackHarness, thread_ts: str, text: str, channel: str = CHANNEL):
    await harness.slack.wait_for(
        lambda: any(text in t for t in harness.texts(thread_ts, channel)), within_s=20
    )
    await harness.idle()
    return harness.texts(thread_ts, channel)


# (what Slack does to the answer's post, why the answer must still arrive)
FAULTS = [
    (lambda s: s.http_error_next("chat.postMessage", 500), "one HTTP 500"),
    (lambda s: s.http_error_next("chat.postMessage", 503, times=2), "two HTTP 503s"),
    (lambda s: s.http_error_next("chat.postMessage", 502), "a proxy's 502"),
    (lambda s: s.fail_next("chat.postMessage", "internal_error"), "ok:false internal_error"),
    (
        lambda s: [s.rate_limit_next("chat.postMessage", retry_after_s=0) for _ in range(4)],
        "four 429s in a row, honouring Retry-After",
    ),
]


@pytest.mark.parametrize(("inject", "reason"), FAULTS, ids=[reason for _, reason in FAULTS])
async def test_an_answer_survives_what_slack_fails_with(
    harness: SlackHarness, inject, reason: str
) -> None:
    harness.model.script(say("Still here."))
    inject(harness.slack)
    thread_ts, _ = await harness.mention("hello")
    assert await answered(harness, thread_ts, "Still here.") == ["Still here."], reason


async def test_a_hung_post_is_given_up_after_the_timeout_and_retried(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    harness = SlackHarness(slack, model, shop_url, tmp_path / "state")
    harness.api_timeout_s = 1.0
    await harness.start()
    try:
        model.script(say("After the hang."))
        slack.hang_next("chat.postMessage", seconds=60)
        started = time.monotonic()
        thread_ts, _ = await harness.mention("hello")
        assert await answered(harness, thread_ts, "After the hang.") == ["After the hang."]
        assert time.monotonic() - started < 10  # the hung call did not hold the thread
        hung = [c for c in slack.calls if c.method == "chat.postMessage" and c.failed]
        assert len(hung) == 1
    finally:
        await harness.stop()


async def test_a_session_without_the_timeout_is_refused(harness: SlackHarness) -> None:
    # aiohttp's own default waits five minutes: the session must carry the client's timeout.
    async with aiohttp.ClientSession() as plain:
        with pytest.raises(ValueError, match="api_session"):
            make_client(harness.settings, session=plain)


async def test_posts_are_not_unfurled(harness: SlackHarness) -> None:
    harness.model.script(say("See https://example.com/runbook"))
    thread_ts, _ = await harness.mention("runbook?")
    await answered(harness, thread_ts, "runbook")
    (post,) = harness.slack.calls_to("chat.postMessage")
    assert post.args["unfurl_links"] is False and post.args["unfurl_media"] is False


async def test_a_channel_the_bot_cannot_reach_is_logged_once_and_shown_in_health(
    harness: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    harness.slack.refuse_channel("C0GONE", "not_in_channel")
    harness.model.script(say("Lost."), say("Lost again."))
    with caplog.at_level(logging.ERROR, logger="bot.slack.web_api"):
        await harness.mention("one", channel="C0GONE")
        await harness.mention("two", channel="C0GONE")
        await harness.slack.wait_for(lambda: harness.model.remaining == 0)
        await harness.idle()
    lines = [r for r in caplog.records if "cannot reach channel C0GONE" in r.getMessage()]
    assert len(lines) == 1
    async with (
        aiohttp.ClientSession() as http,
        http.get(harness.url + "/health") as response,
    ):
        assert response.status == 200
        health = await response.json()
    assert health["slack"]["unreachable_channels"] == {"C0GONE": "not_in_channel"}


# (blocks, why the fake Slack refuses them like Slack would)
BAD_BLOCKS = [
    ([{"type": "section", "txt": {"type": "mrkdwn", "text": "x"}}], "a misspelt key"),
    ([{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}], "a long section"),
    ([{"type": "no_such_block"}], "an unknown block type"),
    ([{"type": "divider"}] * 51, "more than 50 blocks"),
]


@pytest.mark.parametrize(("blocks", "reason"), BAD_BLOCKS, ids=[r for _, r in BAD_BLOCKS])
def test_the_fake_slack_refuses_blocks_slack_would_refuse(blocks: list, reason: str) -> None:
    assert block_kit_problem(blocks) is not None, reason
