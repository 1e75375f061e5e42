"""Through Slack's real entry point: an Undo click is honoured only in the thread of the
change it undoes. Elsewhere its card would show the change's before-image values (what the
rows held) to people outside that conversation."""

from __future__ import annotations

import copy
import dataclasses
import json

from tests.fakes.model_server import call, calls, say
from tests.slack.conftest import (
    APPROVER,
    ASKER,
    BYSTANDER,
    CHANNEL,
    PRIVATE_CHANNEL,
    SCHEMA,
    STAGING,
    SlackHarness,
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
