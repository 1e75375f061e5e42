"""An audit journal that cannot be written (its disk is full; the store is Redis): tools go
on working (each line is in the store's audit table), /health says 503 naming the journal,
and once the disk has room the lines kept are written, in order, with no traffic needed."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from pathlib import Path

import aiohttp

from tests.fakes.model_server import FakeModelServer, call, calls, say
from tests.fakes.slack_server import FakeSlack
from tests.slack.conftest import STAGING, SlackHarness
from tests.state.disk import fill, small_disk
from tests.waiting import until

COUNT = "SELECT COUNT(*) AS orders FROM orders"


async def health(harness: SlackHarness) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(harness.url + "/health") as response:
        return response.status, await response.text()


async def _is(answer: Awaitable[tuple[int, str]], status: int) -> bool:
    return (await answer)[0] == status


async def test_tools_work_while_the_journal_cannot_be_written_and_it_catches_up(
    slack: FakeSlack,
    model: FakeModelServer,
    shop_url: str,
    tmp_path: Path,
    redis_url: str,
    redis_prefix: str,
) -> None:
    with small_disk(tmp_path / "disk") as disk:
        harness = SlackHarness(
            slack, model, shop_url, disk / "state", redis=(redis_url, redis_prefix)
        )
        await harness.start()
        try:
            assert harness.state is not None
            ballast = fill(disk)
            model.script(
                calls(call("execute_query", {"database": STAGING, "sql": COUNT})),
                say("There are four orders."),
            )
            thread_ts, _ = await harness.mention("how many orders?")
            await slack.wait_for(lambda: [t for t in harness.texts(thread_ts) if "four" in t])
            await harness.idle()
            assert json.loads(model.new_tool_results()[0])["rows"] == [[4]]  # it ran, told
            (line,) = [r for r in await harness.state.audit.since(None) if r["sql"] == COUNT]
            assert line["outcome"] == "executed"  # in the store's audit table

            await until(lambda: _is(health(harness), 503), within_s=5)
            _, body = await health(harness)
            assert "audit journal" in body and "1 line(s) kept in memory" in body

            ballast.unlink()  # room again: no traffic, /health asks and the lines go out
            await until(lambda: _is(health(harness), 200), within_s=5)
            journal = disk / "state" / "audit.jsonl"
            written = [json.loads(text) for text in journal.read_text().splitlines()]
            assert [(w["sql"], w["outcome"]) for w in written] == [(COUNT, "executed")]
        finally:
            await harness.stop()
