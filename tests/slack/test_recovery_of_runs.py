"""After a restart, a run the last process left going is taken up in its thread: resumed
when it was reading or thinking, or reported as interrupted with what was running."""

from __future__ import annotations

import asyncio

import pytest

from bot.slack.app import services_of_app
from bot.slack.sessions import Thread
from bot.state.grants import GrantScope
from tests.agent.support import SLOW_READ, no_slow_read_left, statement_running
from tests.fakes.model_server import answer_once_released, call, calls, say
from tests.fakes.slack_server import TEAM_ID
from tests.slack.conftest import APPROVER, CHANNEL, STAGING, SlackHarness
from tests.waiting import until


async def crash_and_restart(harness: SlackHarness) -> None:
    """The process dies mid-run (its runs are cut off with nothing of ours after them), and
    a new one starts on the same state."""
    assert harness.app is not None
    await services_of_app(harness.app).queues.cancel()
    await harness.stop()
    await harness.start()


@pytest.fixture(autouse=True)
async def no_slow_read_from_an_earlier_test(harness: SlackHarness) -> None:
    await no_slow_read_left(harness.shop_url)


async def test_a_run_cut_off_while_thinking_is_answered_after_the_restart(
    harness: SlackHarness,
) -> None:
    released = asyncio.Event()

    harness.model.responder = answer_once_released(say("too late"), released)
    thread_ts, _ = await harness.mention("how many orders?")
    await until(lambda: bool(harness.model.requests))
    await crash_and_restart(harness)
    released.set()
    harness.model.responder = None
    harness.model.script(say("There are 4 orders."))
    await harness.slack.wait_for(lambda: "There are 4 orders." in harness.texts(thread_ts))
    await harness.idle()
    assert harness.texts(thread_ts) == ["There are 4 orders."]


async def test_an_approved_change_cut_off_while_it_ran_is_reported_once(
    harness: SlackHarness,
) -> None:
    agent = harness.agent
    assert agent is not None
    # Its rows cannot be counted in time (impact_timeout_s): allowed, to get a card at all.
    harness.settings.approvals.allow_uncounted = True
    slow_write = f"UPDATE orders SET total = total + 0 WHERE id IN ({SLOW_READ})"
    harness.model.script(calls(call("execute_query", {"database": STAGING, "sql": slow_write})))
    thread_ts, _ = await harness.mention("touch the orders")
    await harness.slack.wait_for(lambda: harness.thread(thread_ts))  # the approval card
    await harness.idle()
    session = await agent.session(Thread(TEAM_ID, CHANNEL, thread_ts).session_id)
    assert session is not None and session.pending_id is not None
    approval = asyncio.create_task(
        agent.approve(session.pending_id, approver=APPROVER, scope=GrantScope.ONCE)
    )
    await until(lambda: statement_running(harness.shop_url))
    approval.cancel()  # the process dies while the approved change runs
    await asyncio.gather(approval, return_exceptions=True)
    await crash_and_restart(harness)

    # Told once, with the statement: by the change's write-ahead record when it was sent,
    # else (stopped while its impact was read) as a run interrupted during a change.
    (told,) = await harness.slack.wait_for(
        lambda: [text for text in harness.texts(thread_ts) if "UPDATE orders SET" in text]
    )
    await harness.idle()
    assert told.startswith(("<@", ":warning:")) and STAGING in told and "applied" in told
    assert [text for text in harness.texts(thread_ts) if "UPDATE orders SET" in text] == [told]


async def test_a_change_run_on_a_thread_grant_and_cut_off_is_reported_once(
    harness: SlackHarness,
) -> None:
    agent = harness.agent
    assert agent is not None
    thread_ts = harness.new_ts()
    session_id = Thread(TEAM_ID, CHANNEL, thread_ts).session_id
    slow_write = f"UPDATE orders SET total = total + 0 WHERE id IN ({SLOW_READ})"
    # An approver allowed this statement for the whole thread earlier on.
    await agent.grants.mint(session_id, STAGING, slow_write, GrantScope.THREAD, APPROVER)
    harness.model.script(calls(call("execute_query", {"database": STAGING, "sql": slow_write})))
    await harness.mention("touch the orders again", ts=thread_ts)
    await until(lambda: statement_running(harness.shop_url))
    await crash_and_restart(harness)

    # Told once, with the statement: by its write-ahead record when it has one, else as a
    # run interrupted while a change was outstanding.
    (told,) = await harness.slack.wait_for(
        lambda: [text for text in harness.texts(thread_ts) if "UPDATE orders SET" in text]
    )
    await harness.idle()
    assert told.startswith(("<@", ":warning:")) and STAGING in told
    assert "applied" in told
    assert [text for text in harness.texts(thread_ts) if "UPDATE orders SET" in text] == [told]
