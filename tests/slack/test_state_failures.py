"""A full disk under the state store, through the real Slack app: the person is told why
and that the bot waits, /health answers 503 meanwhile (also with no traffic), and the bot
answers (the waiting question too) once space is back."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path

import aiohttp

from tests.fakes.model_server import FakeModelServer, say
from tests.fakes.slack_server import FakeSlack
from tests.slack.conftest import CHANNEL, SlackHarness
from tests.state.disk import fill, small_disk
from tests.waiting import until


async def health(harness: SlackHarness) -> int:
    async with aiohttp.ClientSession() as http, http.get(harness.url + "/health") as response:
        return response.status


async def _is(status: Awaitable[int], expected: int) -> bool:
    return await status == expected


async def test_a_full_disk_is_reported_in_the_thread_and_in_health_until_it_heals(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    with small_disk(tmp_path / "disk") as disk:
        harness = SlackHarness(slack, model, shop_url, disk / "state")
        await harness.start()
        try:
            assert await health(harness) == 200
            ballast = fill(disk)
            # The store is asked (at most once a second), not the last operation's result.
            await until(lambda: _is(health(harness), 503), within_s=5)
            model.script(say("Four."), say("Four."))
            waiting_ts, _ = await harness.mention("how many orders?")
            (told,) = await slack.wait_for(lambda: slack.thread(CHANNEL, waiting_ts))
            assert "disk is full" in told.text and "free some disk space" in told.text
            assert "as soon as it can" in told.text

            ballast.unlink()
            await until(lambda: _is(health(harness), 200), within_s=5)
            thread_ts, _ = await harness.mention("how many orders?")
            for asked in (waiting_ts, thread_ts):
                answered = await slack.wait_for(
                    lambda t=asked: [m for m in slack.thread(CHANNEL, t) if "Four." in m.text]  # type: ignore[misc]
                )
                assert len(answered) == 1
            await harness.idle()
            assert "disk is full" not in " ".join(m.text for m in slack.thread(CHANNEL, waiting_ts))
        finally:
            await harness.stop()
