"""A read replica (`read_url`) that cannot be reached: reads run on the primary instead, and
the result says so; the replica is judged apart from the primary."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import DatabaseConfig
from tests.fakes.model_server import FakeModelServer, call, calls, say
from tests.fakes.slack_server import FakeSlack
from tests.private_redis import free_port
from tests.slack.conftest import STAGING, SlackHarness

COUNT = "SELECT COUNT(*) AS orders FROM orders"


@pytest.fixture
async def replica_down(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> AsyncIterator[SlackHarness]:
    harness = SlackHarness(slack, model, shop_url, tmp_path / "state")
    dead = shop_url.replace(shop_url.split("@")[1].split("/")[0], f"127.0.0.1:{free_port()}")
    staging = DatabaseConfig(name=STAGING, url=shop_url, environment="staging", read_url=dead)
    harness.settings = harness.settings.model_copy(update={"databases": [staging]})
    await harness.start()
    yield harness
    await harness.stop()


async def test_reads_go_to_the_primary_while_the_replica_is_down_and_the_answer_says_so(
    replica_down: SlackHarness,
) -> None:
    harness = replica_down
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": COUNT})), say("Four orders.")
    )
    thread_ts, _ = await harness.mention("how many orders?")
    await harness.slack.wait_for(lambda: [t for t in harness.texts(thread_ts) if "Four" in t])
    await harness.idle()

    (result,) = [m for m in harness.thread(thread_ts) if "read on the primary" in str(m.blocks)]
    assert "the replica cannot be reached" in str(result.blocks) and "4" in str(result.blocks)
    told = json.loads(harness.model.new_tool_results()[0])
    assert told["rows"] == [[4]] and "read on the primary" in told["replica"]
