"""Stop works wherever the run is and however it started: a Run button's statement stops
like a model's run, and a Stop click that reaches another replica (several processes share
Redis; Slack or the load balancer picks one per request) stops the run where it runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.slack.app import services_of_app
from bot.slack.blocks import sql_actions as run_blocks
from tests.agent.support import SLOW_READ, no_slow_read_left, statement_running, wait_for
from tests.fakes.model_server import FakeModelServer, call, calls, say
from tests.fakes.slack_server import FakeSlack, Message
from tests.slack.conftest import (
    ASKER,
    BYSTANDER,
    CHANNEL,
    DM,
    STAGING,
    SlackHarness,
    action_elements,
)


def stopped_notes(harness: SlackHarness, thread_ts: str, channel: str) -> list[str]:
    return [t for t in harness.texts(thread_ts, channel) if "Stopped by" in t]


async def slow_read_running(harness: SlackHarness, thread_ts: str, channel: str) -> Message:
    """Once SLOW_READ runs on the server for the thread: its working message, with Stop."""
    await wait_for(lambda: statement_running(harness.shop_url))
    return await harness.slack.wait_for(lambda: harness.working_message(thread_ts, channel))


async def stopped_by(harness: SlackHarness, user: str, thread_ts: str, channel: str) -> None:
    """The statement is gone from the server and the thread says who stopped it."""
    await wait_for(lambda: _stopped(harness), timeout_s=5.0)
    note = await harness.slack.wait_for(lambda: stopped_notes(harness, thread_ts, channel))
    assert f"Stopped by <@{user}>" in note[0]


async def test_a_run_buttons_statement_can_be_stopped_by_who_clicked_run(
    harness: SlackHarness,
) -> None:
    await no_slow_read_left(harness.shop_url)
    services_of_app(harness.app).status_grace_s = 0.05
    harness.model.script(say(f"On {STAGING}:\n```sql\n{SLOW_READ}\n```\nClick Run."))
    thread_ts, _ = await harness.dm("count a lot")
    await harness.slack.wait_for(lambda: harness.thread(thread_ts, DM))
    await harness.idle()
    (answer,) = [m for m in harness.thread(thread_ts, DM) if action_elements(m)]

    await harness.press(answer, run_blocks.RUN, user=BYSTANDER)
    working = await slow_read_running(harness, thread_ts, DM)
    await harness.press(working, "stop_run", user=BYSTANDER)

    await stopped_by(harness, BYSTANDER, thread_ts, DM)
    await harness.idle()
    assert harness.working_message(thread_ts, DM) is None
    assert not any("ran:" in t for t in harness.texts(thread_ts, DM))  # no result posted


async def _stopped(harness: SlackHarness) -> bool:
    return not await statement_running(harness.shop_url)


@pytest.fixture
async def replicas(
    slack: FakeSlack,
    model: FakeModelServer,
    shop_url: str,
    tmp_path: Path,
    redis_url: str,
    redis_prefix: str,
) -> AsyncIterator[tuple[SlackHarness, SlackHarness]]:
    """Two bot processes' worth of app, agent and state, sharing one Redis."""
    shared = (redis_url, redis_prefix)
    one = await SlackHarness(slack, model, shop_url, tmp_path / "one", redis=shared).start()
    two = await SlackHarness(slack, model, shop_url, tmp_path / "two", redis=shared).start()
    yield one, two
    await two.stop()
    await one.stop()


async def mention_running_a_slow_read(running: SlackHarness) -> tuple[str, Message]:
    """A mention whose execute_query (SLOW_READ) runs on `running`: the thread, and its
    working message."""
    await no_slow_read_left(running.shop_url)
    services_of_app(running.app).status_grace_s = 0.05
    running.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": SLOW_READ})), say("Done.")
    )
    thread_ts, _ = await running.mention("count a lot")
    return thread_ts, await slow_read_running(running, thread_ts, CHANNEL)


async def test_a_stop_click_on_another_replica_stops_the_run_where_it_runs(
    replicas: tuple[SlackHarness, SlackHarness],
) -> None:
    running, other = replicas
    thread_ts, working = await mention_running_a_slow_read(running)

    await other.press(working, "stop_run", user=ASKER)

    await stopped_by(running, ASKER, thread_ts, CHANNEL)
    assert not other.slack.ephemerals(ASKER), "the click was not answered with 'too late'"


async def test_a_bystanders_stop_on_another_replica_is_refused_by_the_one_running_it(
    replicas: tuple[SlackHarness, SlackHarness],
) -> None:
    running, other = replicas
    _, working = await mention_running_a_slow_read(running)

    await other.press(working, "stop_run", user=BYSTANDER)

    (refusal,) = await running.slack.wait_for(lambda: running.slack.ephemerals(BYSTANDER))
    assert f"<@{ASKER}>" in refusal.text
    assert await statement_running(running.shop_url)
    await running.press(working, "stop_run", user=ASKER)  # let the test end quickly
    await wait_for(lambda: _stopped(running), timeout_s=5.0)
