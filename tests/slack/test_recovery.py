"""At start, each thread hears of the approved change the last process stopped while it
ran: what, where, that it may or may not have been applied — never re-run; its card shows
the same, without buttons."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import asyncmy
import pytest

from bench.datasets import connect
from bot.agent.outcomes import Interrupted
from bot.slack.app import services_of_app
from bot.slack.recovery import tell_interrupted
from tests.fakes.model_server import call, calls
from tests.fakes.slack_server import TEAM_ID, Message
from tests.slack.conftest import (
    APPROVER,
    ASKER,
    CHANNEL,
    SCHEMA,
    STAGING,
    SlackHarness,
    run_sql,
)
from tests.waiting import until

MARK_PAID = "UPDATE orders SET status = 'paid' WHERE id = 11"


def interrupted(thread_ts: str, text: str, session_id: str | None = None) -> Interrupted:
    return Interrupted(
        execution_id="x1",
        session_id=session_id or f"{TEAM_ID}:{CHANNEL}:{thread_ts}",
        database=STAGING,
        environment="staging",
        sql="UPDATE orders SET status = 'paid' WHERE id = 11",
        requester=ASKER,
        approver=APPROVER,
        started_at=1_700_000_000.0,
        applied=None,
        text=text,
    )


async def test_the_thread_is_told_what_was_running_when_the_bot_stopped(
    harness: SlackHarness,
) -> None:
    thread_ts = harness.new_ts()
    text = "The bot stopped while this change ran on <shop-staging>; it may or may not apply."
    told = await tell_interrupted(services_of_app(harness.app), [interrupted(thread_ts, text)])
    assert told == 1
    (message,) = harness.thread(thread_ts)
    assert message.text.startswith(":warning: The bot stopped while this change ran")
    assert "&lt;shop-staging&gt;" in message.text  # the agent's words, escaped


async def test_a_change_from_the_console_has_no_thread_to_tell(harness: SlackHarness) -> None:
    item = interrupted("1.1", "stopped", session_id="console-alice")
    assert await tell_interrupted(services_of_app(harness.app), [item]) == 0


@pytest.fixture
async def row_11_locked(shop_url: str) -> AsyncIterator[asyncmy.Connection]:
    """Order 11 locked by another transaction, so an approved UPDATE of it waits."""
    connection = await connect(shop_url)
    async with connection.cursor() as cursor:
        await cursor.execute("START TRANSACTION")
        await cursor.execute("SELECT * FROM orders WHERE id = 11 FOR UPDATE")
        await cursor.fetchall()
    yield connection
    connection.close()


async def test_the_card_of_a_change_a_stop_cut_off_shows_its_outcome_after_the_restart(
    harness: SlackHarness, row_11_locked: asyncmy.Connection
) -> None:
    slack = harness.slack
    harness.model.script(calls(call("execute_query", {"database": STAGING, "sql": MARK_PAID})))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    await harness.click("approve_once", card, user=APPROVER)
    state = harness.state
    assert state is not None

    async def running() -> bool:
        return bool(await state.executions.unfinished())

    await until(running)  # recorded before it was sent; it waits for the row lock
    # The bot stops past its grace: the run is cut off while the change waits.
    await services_of_app(harness.app).queues.cancel(within_s=10)
    await harness.stop()
    row_11_locked.close()

    again = SlackHarness(slack, harness.model, harness.shop_url, harness.state_dir)
    await again.start()  # its recovery tells the thread and updates the card
    try:
        updated = slack.message(CHANNEL, card.ts)
        assert not has_buttons(updated)
        assert "Not applied" in shown(updated)
        assert "outcome unknown (the bot stopped while it ran)" in shown(updated)
        told = [t for t in again.texts(thread_ts) if t.startswith(":warning: The bot stopped")]
        assert len(told) == 1
        rows = await run_sql(again.shop_url, [f"SELECT status FROM {SCHEMA}.orders WHERE id = 11"])
        assert rows == [("pending",)]
    finally:
        await again.stop()


def has_buttons(message: Message) -> bool:
    return any(block.get("block_id") == "approval" for block in message.blocks)


def shown(message: Message) -> str:
    return json.dumps(message.blocks)
