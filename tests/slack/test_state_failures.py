"""A full disk under the state store, through the real Slack app: the person is told why,
/health answers 503 meanwhile, and the bot answers again once space is back."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.fakes.model_server import FakeModelServer, say
from tests.fakes.slack_server import FakeSlack
from tests.slack.conftest import CHANNEL, SlackHarness
from tests.state.disk import fill, small_disk


async def health(harness: SlackHarness) -> int:
    async with aiohttp.ClientSession() as http, http.get(harness.url + "/health") as response:
        return response.status


async def test_a_full_disk_is_reported_in_the_thread_and_in_health_until_it_heals(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    with small_disk(tmp_path / "disk") as disk:
        harness = SlackHarness(slack, model, shop_url, disk / "state")
        await harness.start()
        try:
            assert await health(harness) == 200
            ballast = fill(disk)
            thread_ts, _ = await harness.mention("how many orders? " + "x" * 30_000)
            (told,) = await slack.wait_for(lambda: slack.thread(CHANNEL, thread_ts))
            assert "disk is full" in told.text and "free some disk space" in told.text
            assert await health(harness) == 503

            ballast.unlink()
            model.script(say("Four."))
            thread_ts, _ = await harness.mention("how many orders?")
            await harness.idle()
            answered = await slack.wait_for(
                lambda: [m for m in slack.thread(CHANNEL, thread_ts) if "Four." in m.text]
            )
            assert answered
            assert await health(harness) == 200
        finally:
            await harness.stop()
