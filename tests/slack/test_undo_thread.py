"""Through Slack's real entry point: an Undo click is honoured only in the thread of the
change it undoes, and an answer's Run and Edit buttons only in the answer's thread.
Elsewhere they would show the change's before-image values (what the rows held), or the
answer's SQL, to people outside that conversation."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from bot.slack.blocks import sql_actions as run_blocks
from tests.fakes.model_server import call, calls, say
from tests.slack.conftest import (
    APPROVER,
    ASKER,
    BYSTANDER,
    CHANNEL,
    DM,
    PRIVATE_CHANNEL,
    SCHEMA,
    STAGING,
    SlackHarness,
    action_elements,
    run_sql,
)

SECRET = "Ada before the change"
CHANGE = "UPDATE orders SET customer = 'someone else' WHERE id = 10"


async def approved_change(harness: SlackHarness):
    await run_sql(
        harness.shop_url, [f"UPDATE {SCHEMA}.orders SET customer = '{SECRET}' WHERE id = 10"]
    )
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": CHANGE})), say("Changed.")
    )
    thread_ts, _ = await harness.mention("change order 10's customer", channel=PRIVATE_CHANNEL)
    card = await harness.wait_for_card(thread_ts, PRIVATE_CHANNEL)
    await harness.click("approve_once", card, user=APPROVER)
    await harness.slack.wait_for(
        lambda: any(m.text == "Changed." for m in harness.thread(thread_ts, PRIVATE_CHANNEL))
    )
    await harness.idle()
    return thread_ts, copy.deepcopy(harness.slack.message(PRIVATE_CHANNEL, card.ts))


async def test_an_undo_click_from_another_thread_shows_nothing_there(
    harness: SlackHarness,
) -> None:
    _, decided = await approved_change(harness)
    elsewhere, _ = await harness.mention("hello", channel=CHANNEL, user=BYSTANDER)
    await harness.settled()
    # The same button, as if its message stood in another thread of another channel.
    forged = dataclasses.replace(decided, channel=CHANNEL, thread_ts=elsewhere)
    await harness.press(forged, "undo", user=BYSTANDER)
    await harness.settled()
    seen = json.dumps([[m.text, m.blocks] for m in harness.thread(elsewhere)])
    assert SECRET not in seen
    assert not harness.cards(elsewhere)
    assert "another conversation" in seen
    assert (
        await run_sql(harness.shop_url, [f"SELECT customer FROM {SCHEMA}.orders WHERE id = 10"])
    )[0][0] == "someone else"


async def test_an_undo_click_in_its_own_thread_offers_the_undo(harness: SlackHarness) -> None:
    thread_ts, decided = await approved_change(harness)
    await harness.press(decided, "undo", user=ASKER)
    await harness.slack.wait_for(lambda: len(harness.cards(thread_ts, PRIVATE_CHANNEL)) >= 2)
    await harness.idle()
    undo = harness.cards(thread_ts, PRIVATE_CHANNEL)[-1]
    assert SECRET in json.dumps(undo.blocks, ensure_ascii=False)


# A Run or Edit button of an answer, shared or copied into another conversation: its SQL
# would run there, or open in the clicker's editor, outside the answer's conversation.
@pytest.mark.parametrize("action", [run_blocks.RUN, run_blocks.EDIT], ids=["Run", "Edit"])
async def test_an_answers_buttons_work_only_in_its_own_thread(
    harness: SlackHarness, action: str
) -> None:
    sql = f"SELECT customer FROM orders WHERE customer = '{SECRET}'"
    harness.model.script(say(f"On {STAGING}:\n```sql\n{sql}\n```"))
    thread_ts, _ = await harness.dm("how would I find Ada?")
    await harness.slack.wait_for(lambda: harness.thread(thread_ts, DM))
    await harness.idle()
    (answer,) = [m for m in harness.thread(thread_ts, DM) if action_elements(m)]
    elsewhere, _ = await harness.mention("hello", channel=CHANNEL, user=BYSTANDER)
    await harness.settled()
    forged = dataclasses.replace(answer, channel=CHANNEL, thread_ts=elsewhere)
    await harness.press(forged, action, user=BYSTANDER)
    await harness.settled()
    assert harness.slack.views == [], "no editor opened with the answer's SQL"
    (told,) = harness.slack.ephemerals(BYSTANDER)
    assert "another conversation" in told.text and SECRET not in told.text
    outside = [
        [m.text, m.blocks]
        for m in harness.slack.messages
        if (m.channel, m.thread_ts) != (DM, thread_ts)
    ]
    assert SECRET not in json.dumps(outside, ensure_ascii=False), "nothing ran elsewhere"
