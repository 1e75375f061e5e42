"""Cards and questions still showing buttons are kept in the state store: after a restart
(or on another replica) the thread's next message still closes the card it replaced, and a
click on a card whose approval is gone takes its buttons away."""

from __future__ import annotations

import json

from bench.datasets import connect
from tests.fakes.model_server import call, calls, say
from tests.fakes.slack_server import Message
from tests.slack.conftest import APPROVER, CHANNEL, GROUP_MEMBER, STAGING, SlackHarness
from tests.waiting import until

MARK_PAID = "UPDATE orders SET status = 'paid' WHERE id = 11"


def has_buttons(message: Message) -> bool:
    return any(block.get("block_id") == "approval" for block in message.blocks)


def shown(message: Message) -> str:
    return json.dumps(message.blocks)


def pending_id_of(card: Message) -> str:
    (value,) = {
        element["value"]
        for block in card.blocks
        if block.get("block_id") == "approval"
        for element in block["elements"]
        if "value" in element
    }
    return value


async def restarted(harness: SlackHarness) -> SlackHarness:
    """A new bot process on the same state: nothing of the old one's memory is left."""
    await harness.stop()
    again = SlackHarness(harness.slack, harness.model, harness.shop_url, harness.state_dir)
    return await again.start()


async def test_a_card_from_before_a_restart_is_closed_by_the_next_message(
    harness: SlackHarness,
) -> None:
    harness.model.script(calls(call("execute_query", {"database": STAGING, "sql": MARK_PAID})))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    bot = await restarted(harness)
    try:
        bot.model.script(say("Leaving order 11 alone then."))
        await bot.message("actually, don't", thread_ts=thread_ts)
        await bot.slack.wait_for(
            lambda: any("Leaving order 11 alone" in t for t in bot.texts(thread_ts))
        )
        await bot.idle()
        closed = bot.slack.message(CHANNEL, card.ts)
        assert not has_buttons(closed)
        assert "replaced this request" in shown(closed)
    finally:
        await bot.stop()


async def test_a_click_on_a_card_whose_approval_is_gone_takes_its_buttons_away(
    harness: SlackHarness,
) -> None:
    slack = harness.slack
    harness.model.script(calls(call("execute_query", {"database": STAGING, "sql": MARK_PAID})))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    bot = await restarted(harness)
    try:
        assert bot.state is not None
        # Dropped while the bot was down (as the store forgets an old request).
        assert await bot.state.pending.claim(pending_id_of(card)) is not None
        await bot.click("approve_once", card, user=APPROVER)
        (note,) = await slack.wait_for(lambda: slack.ephemerals(APPROVER))
        assert "no longer pending" in note.text
        await slack.wait_for(lambda: not has_buttons(slack.message(CHANNEL, card.ts)))
        assert "No longer pending" in shown(slack.message(CHANNEL, card.ts))
        await bot.idle()
        assert len(bot.model.requests) == 1  # nothing ran, nothing resumed
    finally:
        await bot.stop()


async def test_a_question_from_before_a_restart_is_answered_by_the_askers_reply(
    harness: SlackHarness,
) -> None:
    harness.model.script(calls(call("ask_user", {"kind": "input", "question": "Which customer?"})))
    thread_ts, _ = await harness.mention("orders of a customer")
    (question,) = await harness.slack.wait_for(lambda: harness.thread(thread_ts))
    await harness.idle()
    bot = await restarted(harness)
    try:
        bot.model.script(say("Ada has 2 orders."))
        await bot.message("Ada", thread_ts=thread_ts)
        await bot.slack.wait_for(lambda: any("Ada has 2" in t for t in bot.texts(thread_ts)))
        await bot.idle()
        assert "answered in this thread" in shown(bot.slack.message(CHANNEL, question.ts))
    finally:
        await bot.stop()


async def test_a_click_while_the_approved_change_runs_leaves_its_card_to_the_decision(
    harness: SlackHarness,
) -> None:
    slack = harness.slack
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": MARK_PAID})), say("Paid.")
    )
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    lock = await connect(harness.shop_url)
    try:
        async with lock.cursor() as cursor:  # the approved UPDATE waits for this row
            await cursor.execute("START TRANSACTION")
            await cursor.execute("SELECT * FROM orders WHERE id = 11 FOR UPDATE")
            await cursor.fetchall()
        await harness.click("approve_once", card, user=APPROVER)
        assert harness.state is not None
        await until(harness.state.executions.unfinished, within_s=30)  # the change started
        await harness.click("approve_once", card, user=GROUP_MEMBER)
        (note,) = await slack.wait_for(lambda: slack.ephemerals(GROUP_MEMBER))
        assert "no longer pending" in note.text
    finally:
        lock.close()
    await slack.wait_for(lambda: any("Paid." in t for t in harness.texts(thread_ts)))
    await harness.idle()
    decided = slack.message(CHANNEL, card.ts)
    assert "Approved once" in shown(decided) and not has_buttons(decided)
    assert decided.edits == 1  # never closed as "no longer pending" under the running change
