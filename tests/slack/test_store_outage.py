"""Redis stopped and started again under two replicas (a private redis-server): the first
message and click after a restart are served, a question asked during the outage is
answered once the store is back (its person sees the bot wait), a click during it is
refused with a note (never an HTTP error), and /health tells the truth without traffic."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.slack.app import services_of_app
from tests.fakes.model_server import FakeModelServer, call, calls, say
from tests.fakes.slack_server import FakeSlack, Message
from tests.private_redis import PrivateRedis
from tests.slack.conftest import APPROVER, SCHEMA, STAGING, SlackHarness, run_sql
from tests.waiting import until

MARK_PAID = "UPDATE orders SET status = 'paid' WHERE id = 11"
# How long Redis stays down: a few seconds by default; DBAGENT_TEST_OUTAGE_S=120 for the
# long outages the operations notes speak of.
OUTAGE_S = float(os.environ.get("DBAGENT_TEST_OUTAGE_S", "4"))
ANSWER = "There are four orders."


@pytest.fixture
async def replicas(
    slack: FakeSlack,
    model: FakeModelServer,
    shop_url: str,
    tmp_path: Path,
    private_redis: PrivateRedis,
) -> AsyncIterator[tuple[SlackHarness, SlackHarness]]:
    shared = (private_redis.url, "dbagent:")
    one = await SlackHarness(slack, model, shop_url, tmp_path / "one", redis=shared).start()
    two = await SlackHarness(slack, model, shop_url, tmp_path / "two", redis=shared).start()
    yield one, two
    await private_redis.start()  # a test that failed mid-outage: let the replicas finish
    await two.stop()
    await one.stop()


async def health(harness: SlackHarness) -> int:
    async with aiohttp.ClientSession() as http, http.get(harness.url + "/health") as response:
        return response.status


async def card_waiting_for_approval(harness: SlackHarness) -> tuple[str, Message]:
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": MARK_PAID})),
        say(ANSWER),  # every run answers alike: which run takes which turn does not matter
    )
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    return thread_ts, await harness.wait_for_card(thread_ts)


async def order_11_status(harness: SlackHarness) -> object:
    rows = await run_sql(harness.shop_url, [f"SELECT status FROM {SCHEMA}.orders WHERE id = 11"])
    return rows[0][0]


def answers(harness: SlackHarness, thread_ts: str) -> list[str]:
    return [t for t in harness.texts(thread_ts) if ANSWER in t]


def refusals(harness: SlackHarness, thread_ts: str) -> list[str]:
    return [t for t in harness.texts(thread_ts) if "cannot take" in t or "could not" in t]


async def executions_of(tmp_path: Path) -> list[dict[str, object]]:
    """The audit lines both replicas wrote for order 11's change."""
    lines = []
    for name in ("one", "two"):
        journal = tmp_path / name / "audit.jsonl"
        if journal.exists():
            lines += [json.loads(line) for line in journal.read_text().splitlines()]
    return [line for line in lines if line["sql"] == MARK_PAID and line["outcome"] == "executed"]


async def test_after_redis_restarts_the_next_message_and_click_on_each_replica_are_served(
    replicas: tuple[SlackHarness, SlackHarness],
    private_redis: PrivateRedis,
    slack: FakeSlack,
    tmp_path: Path,
) -> None:
    one, two = replicas
    card_thread, card = await card_waiting_for_approval(one)
    for replica in replicas:  # each replica's pool holds connections from before
        replica.model.script(say(ANSWER))
        warm, _ = await replica.mention("how many orders?")
        await slack.wait_for(lambda r=replica, t=warm: answers(r, t))  # type: ignore[misc]

    await private_redis.stop()
    await private_redis.start()

    threads = []
    for replica in replicas:
        replica.model.script(say(ANSWER))
        thread_ts, sent = await replica.mention("how many orders now?")
        assert sent.status == 200
        threads.append((replica, thread_ts))
    for replica, thread_ts in threads:
        await slack.wait_for(lambda r=replica, t=thread_ts: answers(r, t))  # type: ignore[misc]
        await replica.idle()
        assert len(answers(replica, thread_ts)) == 1
        assert refusals(replica, thread_ts) == []

    sent = await two.click("approve_once", card, user=APPROVER)
    assert sent.status == 200
    await slack.wait_for(lambda: answers(two, card_thread))
    await two.idle()
    assert await order_11_status(two) == "paid"
    assert len(await executions_of(tmp_path)) == 1
    assert slack.ephemerals(APPROVER) == []


async def test_during_a_redis_outage_questions_wait_clicks_are_refused_and_health_says_so(
    replicas: tuple[SlackHarness, SlackHarness],
    private_redis: PrivateRedis,
    slack: FakeSlack,
    tmp_path: Path,
) -> None:
    one, two = replicas
    card_thread, card = await card_waiting_for_approval(one)
    assert [await health(one), await health(two)] == [200, 200]

    await private_redis.stop()
    down_at = time.monotonic()
    # Idle replicas: 503 within seconds, with no traffic to find out from.
    await until(lambda: _is(health(one), 503), within_s=5)
    await until(lambda: _is(health(two), 503), within_s=5)

    threads = []
    for replica in replicas:
        replica.model.script(say(ANSWER))
        thread_ts, sent = await replica.mention("how many orders?")
        assert sent.status == 200  # taken: kept until the store is back
        threads.append((replica, thread_ts))
    for replica, thread_ts in threads:
        await slack.wait_for(
            lambda r=replica, t=thread_ts: [  # type: ignore[misc]
                m for m in r.thread(t) if "cannot be used now" in m.text
            ]
        )

    # An Approve click on either replica: a note in the thread, never an HTTP error.
    for replica in replicas:
        sent = await replica.click("approve_once", card, user=APPROVER)
        assert sent.status == 200
    notes = await slack.wait_for(lambda: len(slack.ephemerals(APPROVER)) >= 2 or None)
    assert notes
    for note in slack.ephemerals(APPROVER):
        assert "could not take this click" in note.text and note.thread_ts == card_thread
    assert await order_11_status(one) == "pending"

    await until(lambda: time.monotonic() - down_at >= OUTAGE_S, within_s=OUTAGE_S + 5)
    await private_redis.start()
    back_at = time.monotonic()
    await until(lambda: _is(health(one), 200), within_s=5)
    await until(lambda: _is(health(two), 200), within_s=5)
    assert time.monotonic() - back_at < 5

    for replica, thread_ts in threads:  # answered once, the waiting line gone
        await slack.wait_for(lambda r=replica, t=thread_ts: answers(r, t), within_s=15)  # type: ignore[misc]
        await replica.idle()
        assert len(answers(replica, thread_ts)) == 1
        assert refusals(replica, thread_ts) == []
        assert not [m for m in replica.thread(thread_ts) if "cannot be used now" in m.text]

    # The approval survived (AOF) and is applied once, by a click after the outage.
    sent = await two.click("approve_once", card, user=APPROVER)
    assert sent.status == 200
    await slack.wait_for(lambda: answers(two, card_thread))
    await two.idle()
    assert await order_11_status(two) == "paid"
    assert len(await executions_of(tmp_path)) == 1


async def _is(status: object, expected: int) -> bool:
    return await status == expected  # type: ignore[misc]


async def test_a_question_that_waits_longer_than_the_store_wait_is_told_to_ask_again(
    replicas: tuple[SlackHarness, SlackHarness],
    private_redis: PrivateRedis,
    slack: FakeSlack,
) -> None:
    one, _ = replicas
    assert one.app is not None
    services_of_app(one.app).store_wait_s = 1.0  # ten minutes in production
    await private_redis.stop()
    thread_ts, sent = await one.mention("how many orders?")
    assert sent.status == 200
    (told,) = await slack.wait_for(
        lambda: [m for m in one.thread(thread_ts) if "Please ask again" in m.text]
    )
    assert "could not take this message" in told.text
    await one.idle()
    assert not [m for m in one.thread(thread_ts) if "cannot be used now" in m.text]


async def test_a_question_waiting_for_the_store_when_the_bot_stops_is_told_to_ask_again(
    replicas: tuple[SlackHarness, SlackHarness],
    private_redis: PrivateRedis,
    slack: FakeSlack,
) -> None:
    one, _ = replicas
    assert one.app is not None
    await private_redis.stop()
    thread_ts, _ = await one.mention("how many orders?")
    await slack.wait_for(lambda: [m for m in one.thread(thread_ts) if "cannot be used" in m.text])
    # What serve() does once the grace period is over: what still runs is cancelled.
    await services_of_app(one.app).queues.cancel(within_s=5)
    (told,) = [m for m in one.thread(thread_ts) if "Please ask again" in m.text]
    assert "restarting" in told.text
    assert not [m for m in one.thread(thread_ts) if "cannot be used now" in m.text]
