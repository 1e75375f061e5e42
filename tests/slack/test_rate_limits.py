"""Slack's rate limits, reacted to rather than pre-empted: through the signed HTTP entry
point, with a fake Slack that enforces Slack's documented limits (one post per second per
channel with short bursts, per-method tiers, a stream-append limit; 429 + Retry-After
beyond) — every answer arrives, none is lost, and every Retry-After is honoured."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.web_api import ProgressDropped, make_client, progress_calls
from tests.fakes.model_server import FakeModelServer, Turn
from tests.fakes.slack_server import FakeSlack, SlackLimits
from tests.slack.conftest import BOT_TOKEN, CHANNEL, SlackHarness

THREADS = 30


def answer_to(body: dict) -> Turn:
    question = next(m["content"] for m in body["messages"] if m.get("role") == "user")
    return Turn(text=f"Answer to {question}.")


@pytest.fixture
async def busy_channel(
    slack: FakeSlack, shop_url: str, tmp_path: Path
) -> AsyncIterator[SlackHarness]:
    model = FakeModelServer(responder=answer_to, api_key="test-key")
    async with model:
        harness = SlackHarness(slack, model, shop_url, tmp_path / "state")
        await harness.start()
        try:
            yield harness
        finally:
            await harness.stop()


async def ask_at_once(harness: SlackHarness) -> dict[str, int]:
    sent = await asyncio.gather(
        *(harness.mention(f"question {i}", channel=CHANNEL) for i in range(THREADS))
    )
    assert {response.status for _, response in sent} == {200}
    return {thread_ts: i for i, (thread_ts, _) in enumerate(sent)}


async def all_answered(harness: SlackHarness, threads: dict[str, int], within_s: float) -> None:
    def answered() -> bool:
        return all(
            any(t.startswith("Answer to") for t in harness.texts(ts, CHANNEL)) for ts in threads
        )

    await harness.slack.wait_for(answered, within_s=within_s)
    await harness.idle()
    for thread_ts, i in threads.items():  # each once, in its own thread
        assert harness.texts(thread_ts, CHANNEL) == [f"Answer to question {i}."]


def answer_times(harness: SlackHarness) -> list[float]:
    return sorted(
        c.at
        for c in harness.slack.calls_to("chat.postMessage")
        if str(c.args.get("text", "")).startswith("Answer to")
    )


async def test_thirty_threads_in_one_channel_are_answered_at_once_when_slack_allows_bursts(
    busy_channel: SlackHarness,
) -> None:
    slack = busy_channel.slack
    slack.enforce_limits(SlackLimits(post_burst=2 * THREADS))
    started = time.monotonic()
    threads = await ask_at_once(busy_channel)
    await all_answered(busy_channel, threads, within_s=30)
    times = answer_times(busy_channel)
    # Nothing waits before Slack says so: the last answer comes right after the first.
    assert times[-1] - times[0] < 3.0
    assert times[-1] - started < 10.0
    assert slack.rate_limited == []


async def test_thirty_threads_in_one_channel_honour_every_retry_after_when_slack_does_not(
    busy_channel: SlackHarness,
) -> None:
    slack = busy_channel.slack
    # Slack's rules at ten times their speed (ten posts a second per channel, no burst),
    # so a minute's traffic takes seconds; Retry-After as precise as the fake's clock.
    slack.enforce_limits(SlackLimits(speed=10.0, post_burst=1))
    threads = await ask_at_once(busy_channel)
    await all_answered(busy_channel, threads, within_s=60)
    assert "chat.postMessage" in slack.rate_limited  # Slack did say to slow down…
    assert slack.ignored_retry_after == []  # …and was listened to, each time
    times = answer_times(busy_channel)
    assert times[-1] - times[0] < THREADS / 10.0 + 3.0  # close to Slack's own pace


async def test_after_a_429_progress_is_dropped_and_answers_wait_their_turn_in_order(
    slack: FakeSlack, busy_channel: SlackHarness
) -> None:
    client = make_client(busy_channel.settings, session=busy_channel.session)
    slack.rate_limit_next("chat.postMessage", retry_after_s=0.5)
    answered: list[int] = []

    async def answer(index: int) -> None:
        await client.chat_postMessage(channel=CHANNEL, text=f"answer {index}")
        answered.append(index)

    async def progress() -> None:
        progress_calls()
        await client.chat_postMessage(channel=CHANNEL, text="still working")

    first = asyncio.create_task(answer(0))
    await slack.wait_for(lambda: slack.rate_limited)  # Slack said: wait half a second
    limited_at = next(c.at for c in slack.calls if c.rate_limited)
    rest = [asyncio.create_task(answer(i)) for i in range(1, 5)]
    with pytest.raises(ProgressDropped):
        await progress()  # not queued behind the answers: dropped
    await asyncio.gather(first, *rest)
    assert answered == [0, 1, 2, 3, 4]  # in the order they came
    posts = slack.calls_to("chat.postMessage")
    assert [c.args["text"] for c in posts] == [f"answer {i}" for i in range(5)]
    assert min(c.at for c in posts) >= limited_at + 0.5  # Retry-After, honoured
    assert slack.ignored_retry_after == []


async def test_a_method_over_its_tier_waits_without_holding_up_posts(
    slack: FakeSlack, busy_channel: SlackHarness
) -> None:
    client = make_client(busy_channel.settings, session=busy_channel.session)
    slack.rate_limit_next("chat.update", retry_after_s=1)
    posted = await client.chat_postMessage(channel=CHANNEL, text="first")
    update = asyncio.create_task(
        client.chat_update(channel=CHANNEL, ts=posted["ts"], text="edited")
    )
    await slack.wait_for(lambda: slack.rate_limited)
    await client.chat_postMessage(channel=CHANNEL, text="second")  # not behind the update
    assert not update.done()
    await update
    assert slack.message(CHANNEL, posted["ts"]).text == "edited"
    assert slack.ignored_retry_after == []


async def test_an_error_that_is_not_a_429_is_not_waited_on(
    slack: FakeSlack, busy_channel: SlackHarness
) -> None:
    client = make_client(busy_channel.settings, session=busy_channel.session)
    slack.fail_next("chat.postMessage", "channel_not_found")
    with pytest.raises(SlackApiError):
        await client.chat_postMessage(channel=CHANNEL, text="x")
    assert client.slow_downs.waits == 0


async def test_the_fake_slack_catches_a_call_that_ignores_retry_after(slack: FakeSlack) -> None:
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.api_url)  # no retries at all
    slack.enforce_limits(SlackLimits(post_burst=1, retry_after_s=5))
    await client.chat_postMessage(channel=CHANNEL, text="one")
    for _ in range(2):  # the second 429 comes before the first's Retry-After ran out
        with pytest.raises(SlackApiError):
            await client.chat_postMessage(channel=CHANNEL, text="two")
    assert len(slack.ignored_retry_after) == 1
